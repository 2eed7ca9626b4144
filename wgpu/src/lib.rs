//! webgpu-guard for wgpu: a wgpu application that comes back, identical, after
//! its device is lost, and whose GPU errors arrive labelled, rate-limited and
//! named after the phase and the object that caused them.
//!
//! You write an [`App`]: `build` makes every GPU object on a fresh device,
//! `frame` draws one frame, state that must survive a loss lives in the `App`
//! itself. A [`Runtime`] owns the instance, adapter, device and surface and
//! the loop; when the device is lost (a driver reset, a GPU-process crash, a
//! `matarGPU()` from the console) it makes a new adapter and device and calls
//! `build` again, with backoff, a cap and a fallback in place of the canvas
//! when it gives up.
//!
//! ```no_run
//! # #[cfg(target_arch = "wasm32")]
//! # mod demo {
//! use webgpu_guard_wgpu::{App, Fault, Frame, Gpu, Runtime, RuntimeOptions};
//!
//! struct Clear;
//!
//! impl App for Clear {
//!     type Resources = ();
//!
//!     async fn build(&self, _gpu: &Gpu) -> Result<(), Fault> {
//!         Ok(())
//!     }
//!
//!     fn frame(&self, gpu: &Gpu, _: &mut (), frame: &Frame) -> Result<(), Fault> {
//!         let mut encoder = gpu.device.create_command_encoder(&Default::default());
//!         encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
//!             label: Some("clear"),
//!             color_attachments: &[Some(wgpu::RenderPassColorAttachment {
//!                 view: &frame.view,
//!                 depth_slice: None,
//!                 resolve_target: None,
//!                 ops: wgpu::Operations {
//!                     load: wgpu::LoadOp::Clear(wgpu::Color::BLUE),
//!                     store: wgpu::StoreOp::Store,
//!                 },
//!             })],
//!             ..Default::default()
//!         });
//!         gpu.queue.submit([encoder.finish()]);
//!         Ok(())
//!     }
//! }
//!
//! fn main() {
//!     let runtime = Runtime::on_canvas_id(Clear, "canvas", RuntimeOptions::default())
//!         .expect("a <canvas id=\"canvas\">");
//!     runtime.expose_console();
//!     runtime.start();
//! }
//! # }
//! ```
//!
//! On the desktop the same `App` runs in a winit window, or headless (drawing
//! offscreen: `run_until` turns the loop, `capture` reads the picture back):
//!
//! ```no_run
//! # #[cfg(not(target_arch = "wasm32"))]
//! # mod desktop {
//! # use webgpu_guard_wgpu::{App, Fault, Frame, Gpu};
//! # struct Clear;
//! # impl App for Clear {
//! #     type Resources = ();
//! #     async fn build(&self, _gpu: &Gpu) -> Result<(), Fault> { Ok(()) }
//! #     fn frame(&self, _: &Gpu, _: &mut (), _: &Frame) -> Result<(), Fault> { Ok(()) }
//! # }
//! use webgpu_guard_wgpu::{Runtime, RuntimeOptions, WindowOptions};
//!
//! fn main() {
//!     let runtime = Runtime::windowed(Clear, RuntimeOptions::default());
//!     // F8 injects a loss, F9 forces a recovery, F10 writes the status.
//!     if let Err(fault) = runtime.run(WindowOptions::new("clear", 480, 360)) {
//!         eprintln!("{fault}");
//!     }
//! }
//!
//! fn headless() {
//!     let runtime = Runtime::headless(Clear, 64, 64, RuntimeOptions::default());
//!     runtime.start();
//!     runtime.run_until(|r| r.status().frames > 2, std::time::Duration::from_secs(10));
//!     let picture = runtime.capture(); // RGBA, read back
//! #   let _ = picture;
//! }
//! # }
//! ```
//!
//! The parts: [`App`] and [`Frame`] (what you write), [`Gpu`] (what `build`
//! and `frame` draw with: wgpu's device and queue, phases, labelled and counted
//! creations, shader diagnostics), the runtime (`web::Runtime` in the browser,
//! `native::Runtime` on the desktop, both on one platform-neutral driver). The
//! decisions (when to rebuild, when to give up) are `webgpu-guard-core`'s
//! supervisor's, the same as webgpu-guard's.

pub use webgpu_guard_core::backoff::Backoff;
pub use webgpu_guard_core::fault::{CallSite, Fault, FaultKind, FaultRecord, Origin};
pub use webgpu_guard_core::fault_log::{FaultStats, Severity};
pub use webgpu_guard_core::init_timings::InitTimings;
pub use webgpu_guard_core::ledger::{LedgerReport, Tally};
pub use webgpu_guard_core::sanitize::Sanitizer;
pub use webgpu_guard_core::supervisor::{
    DeviceState, Fallback, LossReason, LossRecord, RecoveryAnswer, SupervisorOptions,
};
/// Telemetry: the sink interface, its events and the OTLP/HTTP JSON record.
pub use webgpu_guard_core::telemetry;

pub mod compilation;

mod app;
mod driver;
mod gpu;
mod host;
mod runtime;
mod scopes;
pub mod snapshot;
mod surface_config;

#[cfg(not(target_arch = "wasm32"))]
pub mod native;
#[cfg(target_arch = "wasm32")]
pub mod web;

pub use app::{App, Frame};
pub use gpu::{Fitted, Gpu, Tracked};
#[cfg(not(target_arch = "wasm32"))]
pub use native::{Runtime, WindowOptions};
pub use runtime::{RuntimeOptions, Status};
pub use scopes::Phase;
#[cfg(target_arch = "wasm32")]
pub use web::Runtime;
