//! An application whose state lives on the GPU: a compute pass steps 4096
//! particles every frame in a storage buffer, and a render pass draws them.
//! Nothing on the CPU can recompute where they are after a loss, so a
//! `GpuSnapshot` reads the buffer back every 30 frames and `build` starts the
//! new device from the last one: after `matarGPU()` or a GPU-process crash the
//! flock goes on from where it was (at most 30 frames back; paused, exactly).
//! `flockPause(true)` pauses it (and snapshots it once); `flockStatus()` says
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
