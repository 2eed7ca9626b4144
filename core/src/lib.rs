//! The part of [webgpu-guard](https://github.com/) that needs no browser, for
//! every front (the web-sys front `webgpu-guard`, and a wgpu one): plain Rust,
//! tested on the host.
//!
//! * [`supervisor`]: the recovery state machine (start, stop, loss, backoff
//!   and its cap, the crash-loop rule, hidden pages, stalls), checked over every
//!   event sequence by a model check in its tests;
//! * [`fault`]: a fault, its kind, its origin (phase, object, frame, call site),
//!   and the label a WebGPU message blames;
//! * [`fault_log`], [`rate_limit`]: the console's lines, five a second and one
//!   cut-off line, grouped by kind and label;
//! * [`telemetry`]: events for an application's sink, the outbox that batches
//!   and retries them, OTLP/HTTP JSON, and [`sanitize`], the redaction every
//!   message, label and phase goes through before it leaves the page;
//! * [`shader_diag`]: `label:line:col`, the source line and a caret, in
//!   columns that wide characters count right;
//! * [`ledger`]: live objects and bytes by kind and label, with peaks;
//! * [`backoff`], [`frame_sampling`], [`canvas_size`], [`snapshot_state`],
//!   [`texel_rows`], [`usage`], and `chaos` (fault injection, a seeded
//!   sequence of faults; feature `fault-injection`, on by default).
//!
//! Nothing here names web-sys or js-sys, and wasm-bindgen only behind the
//! feature `js` (off by default), for the one conversion the orphan rule
//! leaves to this crate: a thrown `JsValue` into a [`Fault`] (`?` on a web-sys
//! call). A front owns its platform.

#![deny(missing_docs)]
#![deny(missing_debug_implementations)]

pub mod backoff;
pub mod canvas_size;
#[cfg(feature = "fault-injection")]
pub mod chaos;
pub mod fault;
#[doc(hidden)]
pub mod fault_log;
#[doc(hidden)]
pub mod formats;
pub mod frame_sampling;
#[doc(hidden)]
pub mod held;
pub mod init_timings;
#[cfg(feature = "js")]
pub mod js_value;
pub mod ladder;
pub mod ledger;
#[doc(hidden)]
pub mod oneshot;
pub mod payload;
#[doc(hidden)]
pub mod rate_limit;
pub mod sanitize;
pub mod shader_diag;
pub mod snapshot_state;
#[doc(hidden)]
pub mod str_search;
pub mod supervisor;
pub mod telemetry;
pub mod texel_rows;
#[doc(hidden)]
pub mod text_width;
pub mod usage;

/// A seeded uniform generator in [0, 1) for the host tests' random sequences.
#[cfg(test)]
pub(crate) fn test_uniform(seed: u64) -> impl FnMut() -> f64 {
    let mut state = seed;
    move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as f64 / (1u64 << 31) as f64
    }
}

pub use fault::{CallSite, Fault, FaultKind, FaultRecord, Origin};
