//! What `gpuStatus()` and the HUD read: a snapshot of the runtime.

use wasm_bindgen::JsValue;

use super::{App, Inner};
use crate::fault_log::FaultStats;
use crate::init_timings::{AttemptSteps, InitClock};
use crate::ledger::Tally;
use crate::supervisor::{DeviceState, Fallback, LossRecord};
use crate::web::js::now_ms;
use crate::web::session::DiagnosticsLevel;

/// How long one init took, step by step (milliseconds).
pub use crate::init_timings::InitTimings;

/// A snapshot for `gpuStatus()` and the HUD (made by the runtime only: new
/// fields may come).
#[derive(Clone, Debug)]
#[non_exhaustive]
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
    /// The fault sink's counters.
    pub faults: FaultStats,
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
    /// Bugs of this library the runtime caught in itself so far (its state
    /// reached while lent, foreign code called while it was): 0 unless the
    /// library is wrong; each is reported once with its place.
    pub runtime_bugs: u32,
}

impl Default for Status {
    /// An idle runtime's status, nothing counted. Another front
    /// (`webgpu-guard-wgpu`) fills one in and writes `gpuStatus()` through
    /// [`Status::to_js`], so that both write the same keys.
    fn default() -> Self {
        Status {
            state: DeviceState::Idle,
            generation: 0,
            recoveries: 0,
            frames: 0,
            last_loss: None,
            faults: FaultStats::default(),
            live: Tally::default(),
            peak: Tally::default(),
            adapter: String::new(),
            fallback: None,
            level: DiagnosticsLevel::Phases,
            frame_ms: 0.0,
            frame_ms_total: 0.0,
            cold_start: None,
            last_init: None,
            loop_alive: false,
            hidden: false,
            frames_thrown: 0,
            stalled: false,
            resizes: 0,
            frames_from_timer: false,
            wasm_memory_bytes: 0,
            js_heap_bytes: None,
            runtime_bugs: 0,
        }
    }
}

fn set(object: &js_sys::Object, key: &str, value: JsValue) {
    let _ = js_sys::Reflect::set(object, &key.into(), &value);
}

impl Status {
    /// Which clock drives the frames: `"timer"` while frames come from a
    /// timer too (after a rebuild that followed a loss, until the first
    /// animation frame; on a visible page whose animation frames stopped),
    /// else `"animation-frame"`.
    pub fn frame_clock(&self) -> &'static str {
        if self.frames_from_timer {
            "timer"
        } else {
            "animation-frame"
        }
    }

    /// The snapshot as `gpuStatus()` returns it, a plain object: the fields in
    /// camel case (`frameMs`, `runtimeBugs`...), the fault sink's counters
    /// spelled out (`errors` by kind, `logged`, `suppressed`, `cutOffs`,
    /// `sinkFailures`, `telemetrySent`...), the ledger's as `liveObjects`,
    /// `liveBytes` and `peakBytes`, `lastLoss`, `coldStart` and `lastInit` as
    /// objects or null, `fallback` as the fallback's code and
    /// `fallbackMessage` as its text. A page adds its own keys to it through
    /// [`Runtime::expose_console_with`](super::Runtime::expose_console_with).
    pub fn to_js(&self) -> js_sys::Object {
        let o = js_sys::Object::new();

        set(&o, "state", self.state.as_str().into());
        set(&o, "generation", (self.generation as f64).into());
        set(&o, "recoveries", (self.recoveries as f64).into());
        set(&o, "frames", (self.frames as f64).into());
        let loss = match &self.last_loss {
            Some(loss) => {
                let l = js_sys::Object::new();
                set(&l, "reason", loss.reason.as_str().into());
                set(&l, "message", loss.message.as_str().into());
                set(&l, "requested", loss.requested.into());
                l.into()
            }
            None => JsValue::NULL,
        };
        set(&o, "lastLoss", loss);
        let errors = js_sys::Object::new();
        set(
            &errors,
            "validation",
            (self.faults.validation as f64).into(),
        );
        set(
            &errors,
            "outOfMemory",
            (self.faults.out_of_memory as f64).into(),
        );
        set(&errors, "internal", (self.faults.internal as f64).into());
        set(&errors, "other", (self.faults.other as f64).into());
        set(&o, "errors", errors.into());
        set(&o, "logged", (self.faults.logged as f64).into());
        set(&o, "suppressed", (self.faults.suppressed as f64).into());
        set(&o, "cutOffs", (self.faults.cut_offs as f64).into());
        set(
            &o,
            "heldByListener",
            (self.faults.held_by_listener as f64).into(),
        );
        set(
            &o,
            "sinkFailures",
            (self.faults.sink_failures as f64).into(),
        );
        set(
            &o,
            "telemetrySent",
            (self.faults.telemetry_sent as f64).into(),
        );
        set(
            &o,
            "telemetryHeldBack",
            (self.faults.telemetry_held_back as f64).into(),
        );
        set(
            &o,
            "maxLinesInASecond",
            (self.faults.max_lines_in_a_second as f64).into(),
        );
        set(&o, "liveObjects", (self.live.objects as f64).into());
        set(&o, "liveBytes", (self.live.bytes as f64).into());
        set(&o, "peakBytes", (self.peak.bytes as f64).into());
        set(&o, "adapter", self.adapter.as_str().into());
        set(&o, "level", self.level.as_str().into());
        set(&o, "frameMs", self.frame_ms.into());
        set(&o, "loopAlive", self.loop_alive.into());
        set(&o, "stalled", self.stalled.into());
        set(&o, "framesFromTimer", self.frames_from_timer.into());
        set(&o, "frameClock", self.frame_clock().into());
        set(
            &o,
            "wasmMemoryBytes",
            (self.wasm_memory_bytes as f64).into(),
        );
        set(
            &o,
            "jsHeapBytes",
            self.js_heap_bytes.map(|b| b as f64).into(),
        );
        set(&o, "resizes", (self.resizes as f64).into());
        set(
            &o,
            "fallback",
            self.fallback
                .as_ref()
                .map(|f| JsValue::from_str(f.code()))
                .unwrap_or(JsValue::NULL),
        );
        set(
            &o,
            "fallbackMessage",
            self.fallback
                .as_ref()
                .map(|f| JsValue::from_str(&f.message()))
                .unwrap_or(JsValue::NULL),
        );
        set(&o, "hidden", self.hidden.into());
        set(&o, "framesThrown", (self.frames_thrown as f64).into());
        set(&o, "runtimeBugs", self.runtime_bugs.into());
        let timing = |t: &InitTimings| {
            let j = js_sys::Object::new();
            set(&j, "adapterMs", t.adapter_ms.into());
            set(&j, "deviceMs", t.device_ms.into());
            set(&j, "configureMs", t.configure_ms.into());
            set(&j, "resourcesMs", t.resources_ms.into());
            set(&j, "toFirstFrameMs", t.to_first_frame_ms.into());
            set(&j, "waitMs", t.wait_ms.into());
            set(&j, "toPictureMs", t.to_picture_ms.into());
            set(&j, "firstFrameAtMs", t.first_frame_at_ms.into());
            set(&j, "recovery", t.recovery.into());
            JsValue::from(j)
        };
        set(
            &o,
            "coldStart",
            self.cold_start
                .as_ref()
                .map(timing)
                .unwrap_or(JsValue::NULL),
        );
        set(
            &o,
            "lastInit",
            self.last_init.as_ref().map(timing).unwrap_or(JsValue::NULL),
        );

        o
    }
}

/// The size of this module's linear memory, in bytes.
pub fn wasm_memory_bytes() -> u64 {
    let memory = wasm_bindgen::memory();
    js_sys::Reflect::get(&memory, &"buffer".into())
        .ok()
        .and_then(|buffer| js_sys::Reflect::get(&buffer, &"byteLength".into()).ok())
        .and_then(|length| length.as_f64())
        .map_or(0, |length| length as u64)
}

/// `performance.memory.usedJSHeapSize`, where the engine has it.
pub fn js_heap_bytes() -> Option<u64> {
    let performance = web_sys::window()?.performance()?;
    let memory = js_sys::Reflect::get(&performance, &"memory".into()).ok()?;
    if memory.is_undefined() || memory.is_null() {
        return None;
    }
    let used = js_sys::Reflect::get(&memory, &"usedJSHeapSize".into()).ok()?;
    used.as_f64().map(|bytes| bytes as u64)
}

/// When recoveries were triggered and how long inits took, on
/// `performance.now()`'s clock (the core's [`InitClock`]).
#[derive(Default)]
pub(super) struct Timings(InitClock);

impl Timings {
    /// A start, a loss or a request came now.
    pub(super) fn triggered_now(&self) {
        self.0.triggered(now_ms());
    }

    /// An init finished its steps.
    pub(super) fn init_done(&self, steps: AttemptSteps, recovery: bool) {
        self.0.init_done(steps, recovery);
    }

    /// The first frame of the init that finished came now.
    pub(super) fn first_frame(&self) {
        self.0.first_frame(now_ms());
    }
}

impl<A: App> Inner<A> {
    /// The snapshot `Runtime::status` returns. Reading the fault sink's
    /// counters first hands over the errors the listener held during a storm
    /// (so that the counts are whole): that runs the application's sanitiser
    /// and telemetry sink for them. Nothing else changes.
    pub(super) fn status(&self) -> Status {
        let ledger = self
            .session
            .ledger()
            .with(|l| (l.live(), l.peak()))
            .unwrap_or_default();
        // What the supervisor says, read in place (no copy of it).
        let said = self.driver.read(|s| {
            (
                s.state(),
                s.generation(),
                s.recoveries(),
                s.last_loss().cloned(),
                s.fallback().cloned(),
                s.hidden(),
            )
        });
        let (state, generation, recoveries, last_loss, fallback, hidden) = match said {
            Some(said) => said,
            None => (DeviceState::Idle, 0, 0, None, None, false),
        };
        Status {
            // After a trap the supervisor may be out of reach (lent when it
            // struck): the state is what the module is.
            state: match state {
                _ if crate::web::crash::crashed() => DeviceState::Crashed,
                state => state,
            },
            generation,
            recoveries,
            last_loss,
            fallback,
            hidden,
            frames: self.frames.count(),
            faults: self.session.faults().stats(),
            live: ledger.0,
            peak: ledger.1,
            adapter: self.slot.adapter(),
            level: self.session.level(),
            frame_ms: self.frames.smoothed_ms(),
            frame_ms_total: self.frames.total_ms(),
            cold_start: self.timings.0.cold_start(),
            last_init: self.timings.0.last_init(),
            loop_alive: self.frame_loop.pending(),
            frames_thrown: self.frames.thrown(),
            stalled: self.watchers.stalled(),
            resizes: self.frames.resizes(),
            frames_from_timer: self.frame_loop.driven_by_timer(),
            wasm_memory_bytes: wasm_memory_bytes(),
            js_heap_bytes: js_heap_bytes(),
            runtime_bugs: crate::held::bug_count(),
        }
    }
}
