//! What `gpuStatus()` and the HUD read: a snapshot of the runtime.

use crate::fault_log::NetStats;
use crate::ledger::Tally;
use crate::supervisor::{DeviceState, Fallback, LossRecord};
use crate::web::context::DiagnosticsLevel;

/// How long one init took, step by step (milliseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InitTimings {
    /// From the trigger (start, loss, request) to the attempt's start: the wait.
    pub wait_ms: f64,
    /// `requestAdapter()`.
    pub adapter_ms: f64,
    /// `requestDevice()`.
    pub device_ms: f64,
    /// Canvas configuration.
    pub configure_ms: f64,
    /// The application's `build` (resources and pipelines).
    pub resources_ms: f64,
    /// From the attempt's start to the first frame submitted.
    pub to_first_frame_ms: f64,
    /// From the trigger to the first frame submitted (the wait included).
    pub to_picture_ms: f64,
    /// When the first frame was submitted (`performance.now()`, milliseconds).
    pub first_frame_at_ms: f64,
    /// Whether this was a recovery (not the first start).
    pub recovery: bool,
}

/// A snapshot for `gpuStatus()` and the HUD.
#[derive(Clone, Debug)]
pub struct Status {
    /// The device state.
    pub state: DeviceState,
    /// Devices created so far.
    pub generation: u64,
    /// Recoveries completed.
    pub recoveries: u64,
    /// Frames drawn.
    pub frames: u64,
    /// The last loss.
    pub last_loss: Option<LossRecord>,
    /// The net's counters.
    pub net: NetStats,
    /// Live GPU objects and bytes.
    pub live: Tally,
    /// Peak live objects and bytes.
    pub peak: Tally,
    /// The adapter, in words (never empty once an adapter was obtained).
    pub adapter: String,
    /// The fallback shown, if any.
    pub fallback: Option<Fallback>,
    /// The diagnostics level.
    pub level: DiagnosticsLevel,
    /// Smoothed CPU time of a frame (ms).
    pub frame_ms: f64,
    /// CPU time of every frame so far, summed (ms): differences over an interval
    /// give the mean frame cost.
    pub frame_ms_total: f64,
    /// The first start's timings.
    pub cold_start: Option<InitTimings>,
    /// The last init's timings.
    pub last_init: Option<InitTimings>,
    /// Whether an animation-frame callback is scheduled.
    pub loop_alive: bool,
    /// Whether the page is hidden, as last seen.
    pub hidden: bool,
    /// Frames that threw a JavaScript exception through WebAssembly.
    pub frames_thrown: u64,
    /// Whether the page runs, visible, without animation frames (reported once).
    pub stalled: bool,
    /// Times the drawing buffer followed a change of the canvas's displayed size.
    pub resizes: u64,
    /// Whether frames come from a timer as well, animation frames having
    /// stopped on a visible page (until one comes again).
    pub frames_from_timer: bool,
    /// The WebAssembly module's linear memory, in bytes (it only grows).
    pub wasm_memory_bytes: u64,
    /// The page's JavaScript heap in use, in bytes, where the engine tells
    /// (`performance.memory`, Chromium; coarse unless the page is isolated).
    pub js_heap_bytes: Option<u64>,
}

/// The size of this module's linear memory, in bytes.
pub(crate) fn wasm_memory_bytes() -> u64 {
    let memory = wasm_bindgen::memory();
    js_sys::Reflect::get(&memory, &"buffer".into())
        .ok()
        .and_then(|buffer| js_sys::Reflect::get(&buffer, &"byteLength".into()).ok())
        .and_then(|length| length.as_f64())
        .map_or(0, |length| length as u64)
}

/// `performance.memory.usedJSHeapSize`, where the engine has it.
pub(crate) fn js_heap_bytes() -> Option<u64> {
    let performance = web_sys::window()?.performance()?;
    let memory = js_sys::Reflect::get(&performance, &"memory".into()).ok()?;
    if memory.is_undefined() || memory.is_null() {
        return None;
    }
    let used = js_sys::Reflect::get(&memory, &"usedJSHeapSize".into()).ok()?;
    used.as_f64().map(|bytes| bytes as u64)
}
