//! The README's usage snippet is the particles example, abridged: every line of
//! it is in the example, in order, so it cannot drift.
#![cfg(not(target_arch = "wasm32"))]

#[test]
fn the_readme_snippet_is_in_the_particles_example() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let example = std::fs::read_to_string(root.join("examples/particles/src/app.rs")).unwrap();
    let section = readme
        .split("## Using the library")
        .nth(1)
        .expect("a usage section");
    let snippet = section
        .split("```rust\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a rust block");
    let lines: Vec<&str> = example.lines().map(str::trim).collect();
    let mut at = 0;
    for wanted in snippet.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match lines[at..].iter().position(|l| *l == wanted) {
            Some(found) => at += found + 1,
            None => panic!("README line not in the example (in order): {wanted}"),
        }
    }
}
