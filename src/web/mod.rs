//! The browser layer: thin wrappers over `web-sys` WebGPU that use the pure core.
//!
//! Only built for `wasm32`. `web-sys` gates WebGPU behind
//! `--cfg=web_sys_unstable_apis` (set in `.cargo/config.toml`).
//!
//! Layers, each importing only those above it: `engine`, `listener`, `guard` and `faults` (the fault
//! sink), `handle` (a device with its lost flag), `scope` (the one scope-set
//! guard), `device`, then everything built on a device (`phase`, `frame`,
//! `alloc`, `descriptors`, `encoder`, `ladder`, `shader`, `pipeline`), then `init` and `runtime`.
//!
//! With the `web-sys-enums` feature (default), the parts of the API whose
//! arguments are web-sys's `Gpu*` string enums: [`TextureSpec`] and the
//! out-of-memory `ladder`, [`SamplerSpec`], `set_index_buffer`, the canvas's
//! `alpha_mode` and `format`. Without it the crate enables no web-sys string
//! enum, and links beside wgpu's own WebGPU bindings (see the README).

#[doc(hidden)]
pub mod abandon;
pub mod alloc;
mod bindings;
#[doc(hidden)]
pub mod classify;
pub mod commands;
#[doc(hidden)]
pub mod console_functions;
#[doc(hidden)]
pub mod crash;
pub mod descriptors;
pub mod device;
pub mod encoder;
#[doc(hidden)]
pub mod engine;
pub mod faults;
pub mod frame;
#[doc(hidden)]
pub mod handle;
pub mod http_sink;
pub mod init;
#[cfg(feature = "fault-injection")]
pub mod inject;
#[doc(hidden)]
pub mod js;
#[cfg(feature = "web-sys-enums")]
pub mod ladder;
pub mod listener;
#[doc(hidden)]
pub mod log;
#[doc(hidden)]
pub mod lost;
mod phase;
pub mod pipeline;
pub mod readback;
pub mod runtime;
#[cfg(feature = "web-sys-enums")]
pub mod sampler_spec;
pub mod scope;
pub mod session;
pub mod shader;
#[doc(hidden)]
pub mod sizer;
pub mod snapshot;
mod telemetry_sinks;
#[doc(hidden)]
pub mod text;
#[cfg(feature = "web-sys-enums")]
pub mod texture_spec;
#[doc(hidden)]
pub mod wait;

pub use crate::fault_log::FaultStats;
pub use faults::UncapturedListener;

/// The fault sink's name before 0.2.0.
#[deprecated(since = "0.2.0", note = "renamed `FaultSink`")]
pub type ErrorNet = FaultSink;
/// The fault sink's counters' name before 0.2.0.
#[deprecated(since = "0.2.0", note = "renamed `FaultStats`")]
pub type NetStats = FaultStats;
/// The uncaptured-error listener's name before 0.2.0.
#[deprecated(since = "0.2.0", note = "renamed `UncapturedListener`")]
pub type NetListener = UncapturedListener;
/// The shared diagnostics context's name before 0.2.0.
#[deprecated(since = "0.2.0", note = "renamed `Session`")]
pub type GuardContext = Session;
/// The shared diagnostics context's name in 0.2.0's first changes.
#[deprecated(
    since = "0.2.0",
    note = "renamed `Session`: it is what every device of a session shares, not a guard"
)]
pub type Guard = Session;
pub use alloc::{GpuResource, Tracked};
pub use commands::RenderBundleEncoder;
pub use descriptors::Binding;
pub use device::GuardedDevice;
pub use encoder::{CommandEncoder, ComputePass, RenderPass};
pub use faults::FaultSink;
pub use frame::FrameScope;
pub use http_sink::HttpSink;
pub use init::{GpuContext, InitOptions};
pub use js::nullable;
pub use listener::EventListener;
pub use runtime::{App, CanvasSize, FrameInfo, Runtime, RuntimeOptions, Status, WeakRuntime};
#[cfg(feature = "web-sys-enums")]
pub use sampler_spec::SamplerSpec;
pub use scope::{Filter, PendingPops, ScopeOutcome, ScopeSet};
pub use session::{DiagnosticsLevel, Session};
pub use text::set_label;
#[cfg(feature = "web-sys-enums")]
pub use texture_spec::TextureSpec;
