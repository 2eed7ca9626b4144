//! The short names, in order.

const LETTERS: &[u8; 52] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// Words JavaScript reserves (in any mode, now or for the future) and the
/// global names that read like them: a property may carry them, but a name
/// that reads as one is left out, so that the glue stays plain to read.
const RESERVED: &[&str] = &[
    "do",
    "if",
    "in",
    "for",
    "let",
    "new",
    "try",
    "var",
    "NaN",
    "case",
    "else",
    "enum",
    "eval",
    "null",
    "this",
    "true",
    "void",
    "with",
    "await",
    "break",
    "catch",
    "class",
    "const",
    "false",
    "super",
    "throw",
    "while",
    "yield",
    "delete",
    "export",
    "import",
    "public",
    "return",
    "static",
    "switch",
    "typeof",
    "default",
    "extends",
    "finally",
    "package",
    "private",
    "continue",
    "debugger",
    "function",
    "Infinity",
    "arguments",
    "interface",
    "protected",
    "undefined",
    "implements",
    "instanceof",
];

/// The short names in order: `a` to `Z`, then two letters (`aa`, `ab`, ...
/// `ZZ`), then three, never a reserved word; all distinct.
pub fn short_names() -> impl Iterator<Item = String> {
    (0..)
        .map(nth)
        .filter(|name| !RESERVED.contains(&name.as_str()))
}

/// The `n`th name over the letters, shortest first.
fn nth(mut n: usize) -> String {
    let base = LETTERS.len();
    let mut width = 1;
    let mut count = base;
    while n >= count {
        n -= count;
        width += 1;
        count *= base;
    }
    let mut out = vec![b'a'; width];
    for slot in out.iter_mut().rev() {
        *slot = LETTERS[n % base];
        n /= base;
    }
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_run_from_one_letter_to_two_and_three() {
        let names: Vec<String> = short_names().take(52 + 52 * 52).collect();
        assert_eq!(names[0], "a");
        assert_eq!(names[51], "Z");
        assert_eq!(names[52], "aa");
        assert_eq!(names[53], "ab");
        // 52 + 52 * 52 names of one and two letters, less the three reserved.
        assert_eq!(names[52 + 52 * 52 - 4], "ZZ");
        assert_eq!(names[52 + 52 * 52 - 3], "aaa");
    }

    #[test]
    fn names_are_distinct_and_never_reserved() {
        let names: Vec<String> = short_names().take(52 + 52 * 52 + 52 * 52 * 52).collect();
        let distinct: HashSet<&String> = names.iter().collect();
        assert_eq!(distinct.len(), names.len());
        // Reached in three letters: those words are skipped, the ones beside
        // them given.
        for word in ["for", "let", "new", "try", "var", "NaN"] {
            assert!(!names.iter().any(|n| n == word), "{word} was given");
        }
        for near in ["foo", "leu", "neu", "trx", "vas", "NaM"] {
            assert!(names.iter().any(|n| n == near), "{near} was not given");
        }
        assert!(names
            .iter()
            .all(|n| n.bytes().all(|b| b.is_ascii_alphabetic())));
    }
}
