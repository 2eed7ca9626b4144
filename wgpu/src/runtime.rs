//! What both platforms' runtimes share: their options and their status.

use webgpu_guard_core::fault_log::FaultStats;
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

/// Where a runtime stands (what `gpuStatus()` reports in the browser).
#[derive(Clone, Debug)]
pub struct Status {
    /// The supervisor's state.
    pub state: DeviceState,
    /// The last device generation (0 before the first).
    pub generation: u64,
    /// Devices rebuilt after a loss.
    pub recoveries: u64,
    /// Frames drawn.
    pub frames: u64,
    /// Of those, frames drawn from a timer (the platform's frames did not come).
    pub frames_from_timer: u64,
    /// Objects made through `Gpu::create_*` and alive.
    pub live_objects: u64,
    /// Their bytes.
    pub live_bytes: u64,
    /// Validation errors counted.
    pub validation: u64,
    /// Out-of-memory errors counted.
    pub out_of_memory: u64,
    /// Internal errors counted.
    pub internal: u64,
    /// Lines written.
    pub logged: u64,
    /// Lines the rate limit held back.
    pub suppressed: u64,
    /// The last loss.
    pub last_loss: Option<LossRecord>,
    /// The fallback shown, if any.
    pub fallback: Option<Fallback>,
    /// When the first device presented its first frame (the platform's
    /// clock: `performance.now()` in the browser, since the runtime was made
    /// on the desktop), in milliseconds.
    pub first_frame_at_ms: Option<f64>,
    /// The last recovery, from the loss seen (or `force_recovery()`) to the
    /// new device's first frame, in milliseconds.
    pub last_recovery_ms: Option<f64>,
    /// Of that, the rebuild: from its init attempt's start to the first frame.
    pub last_rebuild_ms: Option<f64>,
}

impl<A: App, H: Host> Driver<A, H> {
    /// The status, with the fault sink's counters `stats`.
    pub(crate) fn status(&self, stats: &FaultStats) -> Status {
        let live = self.ledger.live();
        let (frames, frames_from_timer) = self.frame_counts();
        let timings = self.timings();
        self.read(|s: &Supervisor| Status {
            state: s.state(),
            generation: s.generation(),
            recoveries: s.recoveries(),
            frames,
            frames_from_timer,
            live_objects: live.objects,
            live_bytes: live.bytes,
            validation: stats.validation,
            out_of_memory: stats.out_of_memory,
            internal: stats.internal,
            logged: stats.logged,
            suppressed: stats.suppressed,
            last_loss: s.last_loss().cloned(),
            fallback: s.fallback().cloned(),
            first_frame_at_ms: timings.first_frame_at_ms,
            last_recovery_ms: timings.last_recovery_ms,
            last_rebuild_ms: timings.last_rebuild_ms,
        })
    }
}
