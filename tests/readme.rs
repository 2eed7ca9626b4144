//! The front door: the README shows `examples/hello` whole, character for
//! character, and the declared `rust-version` covers every dependency.
#![cfg(not(target_arch = "wasm32"))]

use std::path::Path;

/// The files of `examples/hello`, as the README shows them.
const HELLO_FILES: [&str; 4] = [
    "Cargo.toml",
    ".cargo/config.toml",
    "index.html",
    "src/main.rs",
];

#[path = "support/metadata.rs"]
mod metadata;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The fenced block right after the line naming `file` in the README.
fn readme_block(readme: &str, file: &str) -> String {
    let marker = format!("`examples/hello/{file}`:\n");
    let after = readme
        .split_once(&marker)
        .unwrap_or_else(|| panic!("the README does not name examples/hello/{file}"))
        .1;
    let body = after
        .trim_start_matches('\n')
        .split_once('\n')
        .filter(|(fence, _)| fence.starts_with("```"))
        .unwrap_or_else(|| panic!("no fenced block after examples/hello/{file}"))
        .1;
    let end = body
        .find("\n```\n")
        .unwrap_or_else(|| panic!("the block of examples/hello/{file} is not closed"));
    body[..end + 1].to_string()
}

#[test]
fn the_readme_shows_the_hello_example_whole_and_exactly() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for file in HELLO_FILES {
        let example = std::fs::read_to_string(root().join("examples/hello").join(file)).unwrap();
        let shown = readme_block(&readme, file);
        if shown != example {
            let line = shown
                .lines()
                .zip(example.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(shown.lines().count().min(example.lines().count()));
            panic!(
                "the README's examples/hello/{file} differs from the file at line {}",
                line + 1
            );
        }
    }
    // The example's source is all there is: no other file to copy.
    let mut sources: Vec<_> = std::fs::read_dir(root().join("examples/hello/src"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    sources.sort();
    assert_eq!(sources, ["main.rs"]);
}

/// Writes the README's app into the folder `STRANGER_APP` names, as a person
/// who has never seen the project would copy it (with the dependency's `path`
/// pointed at this checkout); `scripts/test` builds it there with trunk and the
/// end-to-end tests drive it.
#[test]
#[ignore = "run by scripts/test with STRANGER_APP set"]
fn copy_the_readme_app_into_an_empty_folder() {
    let target = std::path::PathBuf::from(std::env::var("STRANGER_APP").expect("STRANGER_APP"));
    assert!(
        !target.exists() || std::fs::read_dir(&target).unwrap().next().is_none(),
        "{} is not empty",
        target.display()
    );
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for file in HELLO_FILES {
        let mut text = readme_block(&readme, file);
        if file == "Cargo.toml" {
            let path = format!("path = {:?}", root().display().to_string());
            assert!(text.contains(r#"path = "../..""#), "{text}");
            text = text.replace(r#"path = "../..""#, &path);
        }
        let dest = target.join(file);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(dest, text).unwrap();
    }
}

#[test]
fn the_readme_stays_short_and_speaks_of_the_present() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.lines().count() <= 210,
        "{} lines",
        readme.lines().count()
    );
    for word in ["today", "this machine", "2026", "since the last"] {
        assert!(!readme.contains(word), "the README says {word:?}");
    }
}

fn version(text: &str) -> (u32, u32) {
    let mut parts = text.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

#[test]
fn the_declared_rust_version_covers_every_dependency() {
    let metadata = metadata::cargo_metadata(root());
    let packages = metadata["packages"].as_array().unwrap();
    let library = packages
        .iter()
        .find(|p| p["name"] == "webgpu-guard")
        .expect("webgpu-guard in the metadata");
    let ours = library["rust_version"]
        .as_str()
        .expect("webgpu-guard declares rust-version");
    // What the library needs to build, for the browser: its normal
    // dependencies and theirs.
    let nodes = metadata["resolve"]["nodes"].as_array().unwrap();
    let node = |id: &str| nodes.iter().find(|n| n["id"] == id).unwrap();
    let root_id = library["id"].as_str().unwrap().to_string();
    let mut stack = vec![root_id];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(id) = stack.pop() {
        if !seen.insert(id.clone()) {
            continue;
        }
        for dep in node(&id)["deps"].as_array().unwrap() {
            let normal = dep["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["kind"].is_null() || k["kind"] == "build");
            if normal {
                stack.push(dep["pkg"].as_str().unwrap().to_string());
            }
        }
    }
    for id in &seen {
        let package = packages.iter().find(|p| p["id"] == *id.as_str()).unwrap();
        if let Some(needed) = package["rust_version"].as_str() {
            assert!(
                version(needed) <= version(ours),
                "{} needs Rust {needed}, webgpu-guard declares {ours}",
                package["name"]
            );
        }
    }
    assert!(seen.len() > 5, "{seen:?}");
}
