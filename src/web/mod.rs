//! The browser layer: thin wrappers over `web-sys` WebGPU that use the pure core.
//!
//! Only built for `wasm32`. `web-sys` gates WebGPU behind
//! `--cfg=web_sys_unstable_apis` (set in `.cargo/config.toml`).

pub mod alloc;
pub mod classify;
pub mod device;
pub mod init;
pub mod js;
pub mod ladder;
pub mod log;
pub mod lost;
pub mod net;
pub mod pipeline;
pub mod runtime;
pub mod scope;
pub mod shader;

pub use alloc::{GpuResource, TextureSpec, Tracked};
pub use device::{DiagnosticsLevel, GuardedDevice};
pub use init::{Gpu, InitOptions};
pub use net::{ErrorNet, NetStats};
pub use runtime::{App, FrameInfo, Runtime, Status};
pub use scope::{ErrorScope, Filter, FrameScope, Popped};
