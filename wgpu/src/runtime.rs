//! What both platforms' runtimes share: their options and their status.

use webgpu_guard_core::fault_log::FaultStats;
use webgpu_guard_core::init_timings::InitTimings;
use webgpu_guard_core::supervisor::{
    DeviceState, Fallback, LossRecord, Supervisor, SupervisorOptions,
};

use crate::app::App;
use crate::driver::{Driver, DriverOptions};
use crate::host::Host;

/// How a runtime runs.
#[derive(Clone, Debug)]
pub struct RuntimeOptions {
    /// Backoff, its cap, the crash-loop rule, the init deadline and the stall
    /// time (webgpu-guard's defaults).
    pub supervisor: SupervisorOptions,
    /// The label of every device the runtime makes.
    pub device_label: String,
    /// One frame in how many runs inside error scopes (validation, out of
    /// memory, internal) spanning its `submit`; 1: every frame.
    pub frame_scope_every: u32,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions {
            supervisor: SupervisorOptions::default(),
            device_label: "main-device".into(),
            frame_scope_every: 32,
        }
    }
}

impl RuntimeOptions {
    pub(crate) fn driver_options(self) -> DriverOptions {
        DriverOptions {
            supervisor: self.supervisor,
            device_label: self.device_label,
            frame_scope_every: self.frame_scope_every,
        }
    }
}

/// Where a runtime stands: what `gpuStatus()` reports in the browser, under
/// webgpu-guard's keys (the names in brackets). Made by the runtime only:
/// new fields may come.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Status {
    /// The supervisor's state (`state`).
    pub state: DeviceState,
    /// The last device generation, 0 before the first (`generation`).
    pub generation: u64,
    /// Devices rebuilt after a loss (`recoveries`).
    pub recoveries: u64,
    /// Frames drawn (`frames`).
    pub frames: u64,
    /// Of those, frames drawn from a timer: the platform's frames did not
    /// come (a count; `framesFromTimer` says whether they come so now).
    pub frames_from_timer: u64,
    /// Whether frames come from a timer now (`framesFromTimer`; `frameClock`
    /// is `"timer"` then, else `"animation-frame"`).
    pub driven_by_timer: bool,
    /// Objects made through `Gpu::create_*` and alive (`liveObjects`).
    pub live_objects: u64,
    /// Their bytes (`liveBytes`).
    pub live_bytes: u64,
    /// The most bytes alive at once (`peakBytes`).
    pub peak_bytes: u64,
    /// The fault sink's counters: errors by kind (`errors`), lines written
    /// and held back (`logged`, `suppressed`, `cutOffs`), telemetry.
    pub faults: FaultStats,
    /// The last loss (`lastLoss`).
    pub last_loss: Option<LossRecord>,
    /// The fallback shown, if any (`fallback`, `fallbackMessage`).
    pub fallback: Option<Fallback>,
    /// The adapter of the last device, in words (`adapter`).
    pub adapter: String,
    /// Smoothed time of the application's `frame`, in milliseconds (`frameMs`).
    pub frame_ms: f64,
    /// Whether a frame is asked for (`loopAlive`).
    pub loop_alive: bool,
    /// Whether the page (or window) is hidden, as last seen (`hidden`).
    pub hidden: bool,
    /// Frames whose code threw through WebAssembly (`framesThrown`; a panic
    /// is a crash instead).
    pub frames_thrown: u64,
    /// Whether the picture is frozen: no frame for the stall time on a
    /// visible page, until a frame comes again (`stalled`).
    pub stalled: bool,
    /// Times the drawing size followed the canvas's (or window's) size (`resizes`).
    pub resizes: u64,
    /// Bugs of the runtime's it caught in itself (`runtimeBugs`): 0 unless the
    /// library is wrong.
    pub runtime_bugs: u32,
    /// The first start's timings, step by step (`coldStart`).
    pub cold_start: Option<InitTimings>,
    /// The last init's timings (`lastInit`).
    pub last_init: Option<InitTimings>,
    /// When the first device presented its first frame (the platform's
    /// clock: `performance.now()` in the browser, since the runtime was made
    /// on the desktop), in milliseconds (`firstFrameAtMs`).
    pub first_frame_at_ms: Option<f64>,
    /// The last recovery, from the loss seen (or `force_recovery()`) to the
    /// new device's first frame, in milliseconds (`lastRecoveryMs`).
    pub last_recovery_ms: Option<f64>,
    /// Of that, the rebuild: from its init attempt's start to the first
    /// frame (`lastRebuildMs`).
    pub last_rebuild_ms: Option<f64>,
}

impl<A: App, H: Host> Driver<A, H> {
    /// The status, with the fault sink's counters `stats`.
    pub(crate) fn status(&self, stats: &FaultStats) -> Status {
        let live = self.ledger.live();
        let report = self.status_report();
        let recovered = report.last_init.filter(|t| t.recovery);
        self.read(|s: &Supervisor| Status {
            state: s.state(),
            generation: s.generation(),
            recoveries: s.recoveries(),
            frames: report.frames,
            frames_from_timer: report.frames_from_timer,
            driven_by_timer: report.driven_by_timer,
            live_objects: live.objects,
            live_bytes: live.bytes,
            peak_bytes: self.ledger.peak().bytes,
            faults: *stats,
            last_loss: s.last_loss().cloned(),
            fallback: s.fallback().cloned(),
            adapter: report.adapter,
            frame_ms: report.frame_ms,
            loop_alive: report.loop_alive,
            hidden: s.hidden(),
            frames_thrown: report.frames_thrown,
            stalled: report.stalled,
            resizes: report.resizes,
            runtime_bugs: webgpu_guard_core::held::bug_count(),
            cold_start: report.cold_start,
            last_init: report.last_init,
            first_frame_at_ms: report.cold_start.map(|t| t.first_frame_at_ms),
            last_recovery_ms: recovered.map(|t| t.to_picture_ms),
            last_rebuild_ms: recovered.map(|t| t.to_first_frame_ms),
        })
    }
}
