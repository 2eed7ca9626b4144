//! A small application on webgpu-guard, written the way a newcomer would: a
//! compute pass fills a storage buffer with 20 000 points of a sunflower spiral,
//! and a render pass draws them. The picture never changes, so it is drawn
//! once per device and per size; the frames between leave the canvas as it is
//! (a WebGPU canvas keeps its last picture), which spares a slow GPU.
//!
//! The contract for data that lives only on the GPU: nothing restores it. The
//! storage buffer is filled by a compute pass inside `build`, so after every loss
//! (`matarGPU()`, a GPU-process crash) the new device recomputes it and the
//! picture is the same, pixel for pixel. Built by trunk from `www/particles.html`.

#[cfg(target_arch = "wasm32")]
mod app;

#[cfg(target_arch = "wasm32")]
fn main() {
    console_error_panic_hook::set_once();
    app::run();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("The particles example runs in the browser: trunk serve www/particles.html");
}
