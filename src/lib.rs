//! # webgpu-guard
//!
//! WebGPU for Rust in the browser that cannot break silently: error scopes that
//! always pop, labelled and rate-limited diagnostics, and exact recovery after a
//! device loss.
//!
//! An application needs five types, all in `prelude`:
//!
//! * `App`: your application. Its value holds the state that survives a loss
//!   (camera, scene); its `Resources` hold every GPU object, built by `build` on
//!   each new device and used by `frame`;
//! * `Runtime`: runs an `App` on a canvas: init, frame loop, loss supervision,
//!   backoff, fallback; once started it keeps itself alive until `stop()`;
//! * `GpuContext`: what `build` and `frame` draw with (the device, the canvas
//!   context and its format);
//! * `GuardedDevice`: the device wrapper: labelled, counted creations,
//!   `phase` scopes, async pipelines, shader diagnostics;
//! * `Fault`: every error, naming its kind, phase and object.
//!
#![cfg_attr(
    target_arch = "wasm32",
    doc = r#"
```no_run
use webgpu_guard::prelude::*;

struct Hello;
struct Resources {
    uniforms: Tracked<web_sys::GpuBuffer>,
}

impl App for Hello {
    type Resources = Resources;

    async fn build(&self, gpu: &GpuContext) -> Result<Resources, Fault> {
        let device = &gpu.device;
        let uniforms = device
            .phase("buffers", || {
                device.create_buffer("uniforms", 256, BufferUsages::UNIFORM | BufferUsages::COPY_DST)
            })
            .await?;
        Ok(Resources { uniforms })
    }

    fn frame(&self, gpu: &GpuContext, r: &Resources, info: &FrameInfo) -> Result<(), Fault> {
        let time = [info.time_ms as f32; 4];
        let bytes: Vec<u8> = time.iter().flat_map(|t| t.to_le_bytes()).collect();
        gpu.device.write_buffer(&r.uniforms, 0, &bytes)?;
        Ok(())
    }
}

fn main() {
    match Runtime::on_canvas_id(Hello, "canvas", RuntimeOptions::default()) {
        Ok(runtime) => {
            runtime.on_fallback(|f| web_sys::console::error_1(&f.message().into()));
            runtime.expose_console(); // matarGPU(), gpuStatus(), ...
            runtime.start();
        }
        Err(fault) => web_sys::console::error_1(&fault.to_string().into()),
    }
}
```
"#
)]
//! `examples/hello` draws a triangle the same way. Everything that needs no
//! browser (rate limiting, backoff, the supervisor, message formatting) is plain
//! Rust tested on the host; the browser layer, `web`, builds for `wasm32` only
//! and needs `--cfg=web_sys_unstable_apis` (web-sys keeps WebGPU behind it):
//! build these docs with `cargo doc --target wasm32-unknown-unknown`.
//!
//! ## The web-sys features your application lists
//!
//! This crate turns on the web-sys features it uses itself (about a hundred
//! `Gpu*` types and a few DOM ones), and Cargo unifies features: an application
//! that names a web-sys type the library happens to enable builds without
//! listing it, until the library stops needing it. List in your own
//! `Cargo.toml` every web-sys type your code names: the descriptors and states
//! you build (`GpuRenderPipelineDescriptor`, `GpuVertexState`,
//! `GpuColorTargetState`, `GpuRenderPassDescriptor`,
//! `GpuRenderPassColorAttachment`, `GpuLoadOp`, `GpuStoreOp`, …), the objects
//! you hold (`GpuTexture`, `GpuTextureView`, `GpuBuffer`), and the namespaces
//! whose constants you read: `gpu_map_mode` (`GPUMapMode`), `gpu_buffer_usage`,
//! `gpu_texture_usage`, `gpu_shader_stage` (or use this crate's
//! [`usage`] sets instead). `examples/hello/Cargo.toml` is a complete list for a
//! triangle (`scripts/test` builds it alone, copied out of this workspace, as
//! the README's app).

#![deny(missing_docs)]
#![deny(missing_debug_implementations)]

// The part that needs no browser: the `webgpu-guard-core` crate, its modules
// here under their old names (what users name keeps its path).
#[cfg(feature = "fault-injection")]
pub use webgpu_guard_core::chaos;
pub use webgpu_guard_core::{
    backoff, canvas_size, fault, frame_sampling, init_timings, ladder, ledger, payload, sanitize,
    shader_diag, snapshot_state, supervisor, telemetry, texel_rows, usage,
};
#[doc(hidden)]
pub use webgpu_guard_core::{
    fault_log, formats, held, oneshot, rate_limit, str_search, text_width,
};

#[cfg(target_arch = "wasm32")]
pub mod web;

pub use fault::{CallSite, Fault, FaultKind, FaultRecord, Origin};

/// What an application needs, in one import: `use webgpu_guard::prelude::*;`.
#[cfg(target_arch = "wasm32")]
pub mod prelude {
    pub use crate::fault::{Fault, FaultKind};
    pub use crate::frame_sampling::FrameSampling;
    pub use crate::supervisor::Fallback;
    pub use crate::telemetry::outbox::ExportConfig;
    pub use crate::texel_rows::TexelRows;
    pub use crate::usage::MapModes;
    pub use crate::usage::{BufferUsages, ShaderStages, TextureUsages};
    pub use crate::web::snapshot::GpuSnapshot;
    pub use crate::web::{
        nullable, App, Binding, DiagnosticsLevel, FrameInfo, GpuContext, GuardedDevice, HttpSink,
        Runtime, RuntimeOptions, Tracked, WeakRuntime,
    };
    #[cfg(feature = "web-sys-enums")]
    pub use crate::web::{SamplerSpec, TextureSpec};
}
