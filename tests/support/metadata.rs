//! `cargo metadata` of the workspace for the browser target, as the host
//! tests that check dependencies and bindings read it.

use std::path::Path;

/// The metadata of the workspace at `root`, for `wasm32-unknown-unknown`.
pub fn cargo_metadata(root: &Path) -> serde_json::Value {
    let output = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--filter-platform"])
        .arg("wasm32-unknown-unknown")
        .current_dir(root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}
