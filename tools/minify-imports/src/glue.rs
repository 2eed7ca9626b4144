//! The JavaScript side: each renamed import's key in the glue's import
//! object, each renamed export where the glue reads it (`wasm.name`).

use crate::Error;

/// Whether the glue reads the export `name` of the module, as `wasm.name`.
pub fn reads_export(js: &str, name: &str) -> bool {
    whole_words(js, &format!("wasm.{name}")).next().is_some()
}

/// `js` with each `(old, new)` of `imports` and of `exports` renamed. Each
/// old import must be found exactly once as a whole word, and as a property's
/// key (followed by `:`); otherwise nothing is renamed and the error names the
/// first one that is not. Each export is renamed wherever the glue reads it
/// as `wasm.old`.
pub fn rename_in_glue(
    js: &str,
    imports: &[(String, String)],
    exports: &[(String, String)],
) -> Result<String, Error> {
    // (where, how many bytes, what instead)
    let mut places: Vec<(usize, usize, &str)> = Vec::new();
    for (old, new) in imports {
        let found: Vec<usize> = whole_words(js, old).collect();
        let is_key = |&at: &usize| js[at + old.len()..].trim_start().starts_with(':');
        match found.as_slice() {
            [at] if is_key(at) => places.push((*at, old.len(), new)),
            _ => {
                return Err(Error::Glue {
                    name: old.clone(),
                    found: found.len(),
                })
            }
        }
    }
    for (old, new) in exports {
        let read = format!("wasm.{old}");
        let prefix = "wasm.".len();
        places.extend(whole_words(js, &read).map(|at| (at + prefix, old.len(), new.as_str())));
    }
    places.sort_unstable_by_key(|&(at, _, _)| at);
    let mut out = String::with_capacity(js.len());
    let mut copied = 0;
    for (at, len, new) in places {
        out.push_str(&js[copied..at]);
        out.push_str(new);
        copied = at + len;
    }
    out.push_str(&js[copied..]);
    Ok(out)
}

/// Where `word` stands in `text` as a whole identifier (not inside a longer one).
fn whole_words<'a>(text: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    let is_ident =
        |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    text.match_indices(word)
        .map(|(at, _)| at)
        .filter(move |&at| {
            !is_ident(text[..at].chars().next_back())
                && !is_ident(text[at + word.len()..].chars().next())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GLUE: &str = r#"function __wbg_get_imports() {
    const import0 = {
        __proto__: null,
        __wbg_new_0123: function(arg0) {
            return new Foo(arg0);
        },
        __wbg_new_0123_x: function() {},
        __wbindgen_init_externref_table: function() {
            const table = wasm.__wbindgen_externrefs;
        },
    };
    return { __proto__: null, "./app_bg.js": import0 };
}
function invoke_h01(a) { wasm.invoke_h01(a, wasm.__wbindgen_malloc); }
const t = makeClosure(1, 2, invoke_h01);
const m = wasm.__wbindgen_malloc_x;"#;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(o, n)| (o.to_string(), n.to_string()))
            .collect()
    }

    #[test]
    fn each_key_is_renamed_and_nothing_else() {
        let out = rename_in_glue(
            GLUE,
            &pairs(&[
                ("__wbindgen_init_externref_table", "b"),
                ("__wbg_new_0123", "a"),
            ]),
            &[],
        )
        .unwrap();
        assert!(out.contains("\n        a: function(arg0) {"));
        assert!(out.contains("\n        b: function() {"));
        // A longer name that starts the same is another import.
        assert!(out.contains("__wbg_new_0123_x: function() {}"));
        assert!(out.contains("wasm.__wbindgen_externrefs"));
        let shorter = "__wbindgen_init_externref_table".len() + "__wbg_new_0123".len() - 2;
        assert_eq!(out.len(), GLUE.len() - shorter);
    }

    #[test]
    fn exports_are_renamed_where_the_glue_reads_them() {
        assert!(reads_export(GLUE, "__wbindgen_malloc"));
        assert!(reads_export(GLUE, "invoke_h01"));
        assert!(!reads_export(GLUE, "__wbindgen_free"));
        // Read only as part of a longer name.
        assert!(!reads_export(GLUE, "__wbindgen_externref"));
        let out = rename_in_glue(
            GLUE,
            &pairs(&[("__wbg_new_0123", "c")]),
            &pairs(&[("__wbindgen_malloc", "a"), ("invoke_h01", "b")]),
        )
        .unwrap();
        assert!(out.contains("function invoke_h01(a) { wasm.b(a, wasm.a); }"));
        // The glue's own function of the same name is not the export.
        assert!(out.contains("makeClosure(1, 2, invoke_h01)"));
        assert!(out.contains("wasm.__wbindgen_malloc_x;"));
        assert!(out.contains("\n        c: function(arg0) {"));
    }

    #[test]
    fn a_name_missing_doubled_or_not_a_key_renames_nothing() {
        let missing = rename_in_glue(
            GLUE,
            &pairs(&[("__wbg_new_0123", "a"), ("__wbg_gone_9", "b")]),
            &[],
        );
        assert_eq!(
            missing.unwrap_err(),
            Error::Glue {
                name: "__wbg_gone_9".into(),
                found: 0
            }
        );
        let doubled = format!("{GLUE}\nimport0.__wbg_new_0123;");
        assert_eq!(
            rename_in_glue(&doubled, &pairs(&[("__wbg_new_0123", "a")]), &[]).unwrap_err(),
            Error::Glue {
                name: "__wbg_new_0123".into(),
                found: 2
            }
        );
        let not_a_key = rename_in_glue(GLUE, &pairs(&[("__wbindgen_externrefs", "a")]), &[]);
        assert_eq!(
            not_a_key.unwrap_err(),
            Error::Glue {
                name: "__wbindgen_externrefs".into(),
                found: 1
            }
        );
    }
}
