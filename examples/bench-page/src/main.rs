//! The benchmark page: measures what the guards cost, side by side in one run, on
//! real WebGPU. `scripts/bench` builds it, drives it in headless Chromium and prints
//! the table (`tests/harness/src/bin/bench.rs`). Results land in `window.benchResults` (JSON).

#[cfg(target_arch = "wasm32")]
mod startup;

#[cfg(target_arch = "wasm32")]
fn main() {
    console_error_panic_hook::set_once();
    wasm_bindgen_futures::spawn_local(async {
        let results = match run::all().await {
            Ok(json) => json,
            Err(e) => format!("{{\"error\": {:?}}}", e),
        };
        if let Some(window) = web_sys::window() {
            let _ = js_sys::Reflect::set(&window, &"benchResults".into(), &results.into());
        }
    });
}

#[cfg(target_arch = "wasm32")]
mod run;

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("The benchmark page runs in the browser: scripts/bench.");
}
