//! # webgpu-guard
//!
//! WebGPU for Rust in the browser that cannot break silently.
//!
//! WebGPU never throws for bad input: it returns invalid objects, reports errors
//! asynchronously and a lost device looks like a healthy one with a black canvas.
//! This crate turns that silence into labelled, rate-limited diagnostics and into
//! exact recovery:
//!
//! * error scopes that always pop ([`web::scope`]), per phase, per frame and per call,
//!   with every WebGPU call made through a binding that catches;
//! * a labelling, counting allocator ([`ledger`], [`web::alloc`]);
//! * shader diagnostics with carets ([`shader_diag`]);
//! * the uncaptured-error net with rate limiting and telemetry ([`rate_limit`],
//!   [`telemetry`], [`web::net`]);
//! * a device-loss supervisor with backoff and idempotent re-init ([`supervisor`],
//!   [`backoff`], [`web::runtime`]);
//! * an out-of-memory ladder ([`web::ladder`]) and checked binary payloads ([`payload`]).
//!
//! Everything that needs no browser is plain Rust and is tested on the host; the
//! browser layer lives in [`web`] and only builds for `wasm32`.

#![deny(missing_docs)]
#![deny(missing_debug_implementations)]

pub mod backoff;
#[cfg(feature = "fault-injection")]
pub mod chaos;
pub mod fault;
pub mod fault_log;
pub mod formats;
pub mod frame_sampling;
pub mod ledger;
pub mod payload;
pub mod rate_limit;
pub mod sanitize;
pub mod shader_diag;
pub mod supervisor;
pub mod telemetry;
pub mod usage;

#[cfg(target_arch = "wasm32")]
pub mod web;

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

pub use fault::{CallSite, Fault, FaultKind, Origin};
