//! The webgpu-guard demo: a shadowed scene with an orbit camera, a live HUD, fault
//! buttons and `window.matarGPU()`. Built by trunk from `www/index.html`.

#[cfg(target_arch = "wasm32")]
fn main() {
    console_error_panic_hook::set_once();
    wasm_bindgen_futures::spawn_local(webgpu_guard_demo::page::run());
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("The demo runs in the browser: see README.md (scripts/serve).");
}
