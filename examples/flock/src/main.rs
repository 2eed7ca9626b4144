//! An application whose state lives on the GPU: a compute pass steps 4096
//! particles every frame in a storage buffer, a render pass leaves them in a
//! trails texture it never clears, and a last pass draws the trails and the
//! flock. Nothing on the CPU can recompute either after a loss, so two
//! `GpuSnapshot`s read the buffer and the texture back every 30 frames and
//! `build` starts the new device from the last ones: after `matarGPU()` or a GPU-process crash the
//! flock goes on from where it was (at most 30 frames back; paused, exactly).
//! `flockPause(true)` pauses it (and snapshots it once; paused, it is drawn once
//! per device and per size, and the canvas keeps that picture); `flockStatus()` says
//! what was snapshotted. Built by trunk from `www/flock.html`.

#[cfg(target_arch = "wasm32")]
mod app;

#[cfg(target_arch = "wasm32")]
fn main() {
    console_error_panic_hook::set_once();
    app::run();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("The flock example runs in the browser: trunk serve www/flock.html");
}
