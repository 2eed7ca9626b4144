//! `docs/coverage.md` covers WebGPU: every method web-sys binds on a `GPU*`
//! interface has a row, every row names such a method, and every counterpart a
//! row names exists in the library (a `fn` of that name in a file of `src/web`
//! that names the type), or the row says why none is needed.

#![cfg(not(target_arch = "wasm32"))]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[path = "support/metadata.rs"]
mod metadata;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The `src/features` folder of the web-sys the library builds with.
fn web_sys_features() -> PathBuf {
    let metadata = metadata::cargo_metadata(root());
    let web_sys = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "web-sys")
        .expect("web-sys in the metadata");
    let manifest = PathBuf::from(web_sys["manifest_path"].as_str().unwrap());
    manifest.parent().unwrap().join("src").join("features")
}

/// Every `GPUInterface.method` web-sys binds (methods only: no getters,
/// setters, constructors), from its generated files.
fn web_sys_methods() -> BTreeSet<String> {
    let mut methods = BTreeSet::new();
    let dir = web_sys_features();
    for entry in std::fs::read_dir(&dir).expect("web-sys sources") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.starts_with("gen_Gpu") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut attribute: Option<String> = None;
        let mut collecting = false;
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with("#[wasm_bindgen(") {
                attribute = Some(String::new());
                collecting = true;
            }
            if collecting {
                if let Some(a) = attribute.as_mut() {
                    a.push_str(line);
                    a.push(' ');
                }
                if line.ends_with(")]") {
                    collecting = false;
                }
                continue;
            }
            let Some(rest) = line.strip_prefix("pub fn ") else {
                continue;
            };
            let Some(attr) = attribute.take() else {
                continue;
            };
            let is_method = attr.contains("method")
                && !attr.contains("getter")
                && !attr.contains("setter")
                && !attr.contains("constructor");
            let Some(class) = quoted_after(&attr, "js_class = ") else {
                continue;
            };
            if !is_method || !class.starts_with("GPU") {
                continue;
            }
            let rust_name = rest.split(['(', '<']).next().unwrap_or_default();
            let js_name =
                quoted_after(&attr, "js_name = ").unwrap_or_else(|| rust_name.to_string());
            methods.insert(format!("{class}.{js_name}"));
        }
    }
    methods
}

/// The text between the quotes after `key` in `text`, if any.
fn quoted_after(text: &str, key: &str) -> Option<String> {
    let after = text.split_once(key)?.1.trim_start();
    let after = after.strip_prefix('"')?;
    Some(after.split('"').next()?.to_string())
}

/// The rows of `docs/coverage.md`: method, counterpart cell.
fn rows() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(root().join("docs/coverage.md")).unwrap();
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 || !cells[1].starts_with("`GPU") {
            continue;
        }
        let method = cells[1].trim_matches('`').to_string();
        assert!(
            rows.insert(method.clone(), cells[2].to_string()).is_none(),
            "{method} has two rows"
        );
    }
    rows
}

/// The library's browser sources, each with its text.
fn sources() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![root().join("src/web")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push((path.clone(), std::fs::read_to_string(path).unwrap()));
            }
        }
    }
    out
}

/// Whether a file names `ty` and defines a `fn` called `method`.
fn has_counterpart(sources: &[(PathBuf, String)], ty: &str, method: &str) -> bool {
    let defines = |text: &str| {
        [format!("fn {method}("), format!("fn {method}<")]
            .iter()
            .any(|needle| text.contains(needle.as_str()))
    };
    let module = ty.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    sources.iter().any(|(path, text)| {
        let names_type = if module {
            path.file_stem().is_some_and(|s| s == ty)
        } else {
            text.contains(ty)
        };
        names_type && defines(text)
    })
}

#[test]
fn every_webgpu_method_has_a_guarded_counterpart_or_a_reason() {
    let methods = web_sys_methods();
    assert!(
        methods.len() > 80,
        "web-sys's bindings were not read: {methods:?}"
    );
    let rows = rows();
    let missing: Vec<&String> = methods.iter().filter(|m| !rows.contains_key(*m)).collect();
    assert!(
        missing.is_empty(),
        "methods without a row in docs/coverage.md: {missing:?}"
    );
    let stale: Vec<&String> = rows.keys().filter(|m| !methods.contains(*m)).collect();
    assert!(
        stale.is_empty(),
        "rows for methods web-sys does not bind: {stale:?}"
    );
    let sources = sources();
    let mut covered = 0;
    for (method, cell) in &rows {
        if cell.starts_with("none needed: ") {
            continue;
        }
        let paths: Vec<&str> = cell
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|p| p.contains("::"))
            .collect();
        assert!(
            !paths.is_empty(),
            "{method}: no counterpart and no reason: {cell}"
        );
        for path in paths {
            let (ty, name) = path.rsplit_once("::").unwrap();
            assert!(
                has_counterpart(&sources, ty, name),
                "{method}: the counterpart {path} does not exist"
            );
        }
        covered += 1;
    }
    eprintln!(
        "coverage: {covered} of {} WebGPU methods have a guarded counterpart; the other {} need none (docs/coverage.md)",
        rows.len(),
        rows.len() - covered
    );
}
