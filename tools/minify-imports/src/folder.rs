//! A build's folder: every module in it (`*_bg.wasm`, in any subfolder) with
//! its glue beside it (`*.js`), and the pages (`*.html`) whose integrity
//! hashes name them. Every file is worked out before any is written, and each
//! is written beside itself then renamed over the old one: a module whose glue
//! does not match leaves the whole folder as it was.

use std::fs;
use std::path::{Path, PathBuf};

use crate::{minify, Rehash};

/// What was done to one module.
#[derive(Debug, PartialEq, Eq)]
pub struct Report {
    /// The module's path inside the folder.
    pub module: String,
    /// How many imports were renamed.
    pub imports: usize,
    /// How many exports were renamed.
    pub exports: usize,
    /// Its size before, in bytes.
    pub before: usize,
    /// Its size after.
    pub after: usize,
    /// How many integrity hashes of it or its glue the pages had (0 when
    /// they ask for none).
    pub hashes: usize,
}

/// Shortens the names of every module in `dir` and its glue, and mends the
/// pages' hashes; `Err` (and nothing written) saying which file and why.
pub fn minify_folder(dir: &Path) -> Result<Vec<Report>, String> {
    let files = walk(dir)?;
    let mut pages: Vec<(&PathBuf, String, bool)> = Vec::new();
    for page in files.iter().filter(|p| has_suffix(p, ".html")) {
        pages.push((page, read_text(page)?, false));
    }
    let mut writes: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let mut reports = Vec::new();
    for wasm_path in files.iter().filter(|p| has_suffix(p, "_bg.wasm")) {
        let module = wasm_path
            .strip_prefix(dir)
            .unwrap_or(wasm_path)
            .display()
            .to_string();
        let name = wasm_path.file_name().unwrap_or_default().to_string_lossy();
        let js_path = wasm_path.with_file_name(format!("{}.js", name.trim_end_matches("_bg.wasm")));
        let wasm = fs::read(wasm_path).map_err(|e| format!("{module}: {e}"))?;
        let js = read_text(&js_path).map_err(|e| format!("{e} (the glue of {module})"))?;
        let minified = minify(&wasm, &js).map_err(|e| format!("{module}: {e}"))?;
        let wasm_hashes = Rehash::new(&wasm, &minified.wasm);
        let js_hashes = Rehash::new(js.as_bytes(), minified.js.as_bytes());
        let mut hashes = 0;
        for (_, html, changed) in pages.iter_mut() {
            let (with_wasm, n) = wasm_hashes.apply(html);
            let (with_js, m) = js_hashes.apply(&with_wasm);
            if n + m > 0 {
                *html = with_js;
                *changed = true;
                hashes += n + m;
            }
        }
        reports.push(Report {
            module,
            imports: minified.imports,
            exports: minified.exports,
            before: wasm.len(),
            after: minified.wasm.len(),
            hashes,
        });
        writes.push((wasm_path.clone(), minified.wasm));
        writes.push((js_path, minified.js.into_bytes()));
    }
    for (page, html, changed) in pages {
        if changed {
            writes.push((page.clone(), html.into_bytes()));
        }
    }
    let beside = |path: &Path| {
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(".minify-imports");
        path.with_file_name(name)
    };
    for (path, bytes) in &writes {
        fs::write(beside(path), bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    for (path, _) in &writes {
        fs::rename(beside(path), path).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(reports)
}

/// Every file under `dir`, sorted.
fn walk(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries = fs::read_dir(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        for entry in entries {
            let path = entry
                .map_err(|e| format!("{}: {e}", folder.display()))?
                .path();
            if path.is_dir() {
                folders.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

fn read_text(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn has_suffix(path: &Path, suffix: &str) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().ends_with(suffix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wasm::tests::with_exports;

    /// The value trunk writes by default: sha384.
    fn sri(bytes: &[u8]) -> String {
        let [_, sha384, _] = crate::integrity::digests(bytes);
        sha384
    }

    /// A fresh folder under the system's temporary one.
    fn folder(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("minify-imports-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("sub")).unwrap();
        dir
    }

    const GLUE: &str =
        "const import0 = { __wbg_new_01: function() { return wasm.__wbindgen_malloc(1); } };";

    fn build(dir: &Path, glue: &str) -> (Vec<u8>, String) {
        let wasm = with_exports(
            &[("./app_bg.js", "__wbg_new_01", &[0, 0])],
            &["memory", "__wbindgen_malloc"],
        );
        fs::write(dir.join("sub/app-1f_bg.wasm"), &wasm).unwrap();
        fs::write(dir.join("sub/app-1f.js"), glue).unwrap();
        let html = format!(
            r#"<link rel=modulepreload href="./sub/app-1f.js" integrity="{}"><link rel=preload href="./sub/app-1f_bg.wasm" integrity="{}" as=fetch>"#,
            sri(glue.as_bytes()),
            sri(&wasm)
        );
        fs::write(dir.join("index.html"), &html).unwrap();
        (wasm, html)
    }

    #[test]
    fn a_folder_s_module_glue_and_page_hashes_are_rewritten_together() {
        let dir = folder("whole");
        let (wasm, _) = build(&dir, GLUE);
        let reports = minify_folder(&dir).unwrap();
        let after_wasm = fs::read(dir.join("sub/app-1f_bg.wasm")).unwrap();
        let after_js = fs::read_to_string(dir.join("sub/app-1f.js")).unwrap();
        let html = fs::read_to_string(dir.join("index.html")).unwrap();
        assert_eq!(
            reports,
            [Report {
                module: Path::new("sub")
                    .join("app-1f_bg.wasm")
                    .display()
                    .to_string(),
                imports: 1,
                exports: 1,
                before: wasm.len(),
                after: after_wasm.len(),
                hashes: 2,
            }]
        );
        assert!(after_wasm.len() < wasm.len());
        assert_eq!(
            after_js,
            "const import0 = { a: function() { return wasm.a(1); } };"
        );
        assert!(html.contains(&sri(&after_wasm)), "{html}");
        assert!(html.contains(&sri(after_js.as_bytes())), "{html}");
        // Nothing left beside the files.
        assert_eq!(walk(&dir).unwrap().len(), 3);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_glue_that_does_not_match_leaves_every_file_as_it_was() {
        let dir = folder("refused");
        let glue = "const import0 = { __wbg_other_02: 1 };";
        let (wasm, html) = build(&dir, glue);
        let err = minify_folder(&dir).unwrap_err();
        assert!(
            err.contains("__wbg_new_01") && err.contains("app-1f_bg.wasm"),
            "{err}"
        );
        assert_eq!(fs::read(dir.join("sub/app-1f_bg.wasm")).unwrap(), wasm);
        assert_eq!(fs::read_to_string(dir.join("sub/app-1f.js")).unwrap(), glue);
        assert_eq!(fs::read_to_string(dir.join("index.html")).unwrap(), html);
        fs::remove_dir_all(&dir).unwrap();
    }
}
