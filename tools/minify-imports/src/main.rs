//! trunk's post-build hook (Trunk.toml): in the staging folder trunk names
//! (`TRUNK_STAGING_DIR`, or the first argument), renames the glue imports of
//! every `*_bg.wasm` and its JavaScript glue, and mends the pages' integrity
//! hashes. Every file is worked out before any is written: a module whose glue
//! does not match is left whole, and the build fails saying which import.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::{env, fs};

use minify_imports::{minify, replace_integrity, sri};

fn main() -> ExitCode {
    let dir = env::args_os()
        .nth(1)
        .or_else(|| env::var_os("TRUNK_STAGING_DIR"))
        .map(PathBuf::from);
    let Some(dir) = dir else {
        eprintln!("minify-imports: no folder (give one, or run as trunk's post_build hook)");
        return ExitCode::FAILURE;
    };
    match run(&dir) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("minify-imports: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(dir: &Path) -> Result<(), String> {
    let files = list(dir)?;
    let pages: Vec<&PathBuf> = files.iter().filter(|p| has_suffix(p, ".html")).collect();
    for wasm_path in files.iter().filter(|p| has_suffix(p, "_bg.wasm")) {
        let name = wasm_path.file_name().unwrap_or_default().to_string_lossy();
        let js_path = dir.join(format!("{}.js", name.trim_end_matches("_bg.wasm")));
        let wasm = read(wasm_path)?;
        let js = fs::read_to_string(&js_path)
            .map_err(|e| format!("{}: {e} (the glue of {name})", js_path.display()))?;
        let minified = minify(&wasm, &js).map_err(|e| format!("{name}: {e}"))?;
        let mut rewritten: Vec<(PathBuf, Vec<u8>)> = Vec::new();
        for page in &pages {
            let html = fs::read_to_string(page).map_err(|e| format!("{}: {e}", page.display()))?;
            let (html, wasm_hashes) = replace_integrity(&html, &sri(&wasm), &sri(&minified.wasm));
            let (html, js_hashes) =
                replace_integrity(&html, &sri(js.as_bytes()), &sri(minified.js.as_bytes()));
            if wasm_hashes + js_hashes > 0 {
                rewritten.push(((*page).clone(), html.into_bytes()));
            }
        }
        println!(
            "minify-imports: {name}: {} imports and {} exports renamed, {} bytes fewer ({} pages' hashes mended)",
            minified.imports,
            minified.exports,
            wasm.len() - minified.wasm.len(),
            rewritten.len()
        );
        rewritten.push((wasm_path.clone(), minified.wasm));
        rewritten.push((js_path, minified.js.into_bytes()));
        for (path, bytes) in rewritten {
            fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    Ok(())
}

fn list(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        files.push(entry.path());
    }
    files.sort();
    Ok(files)
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn has_suffix(path: &Path, suffix: &str) -> bool {
    path.is_file()
        && path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().ends_with(suffix))
}
