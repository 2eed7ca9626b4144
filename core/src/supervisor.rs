//! The device-loss supervisor: a pure state machine that takes every decision
//! about start, stop, loss and retry. The browser layer (`webgpu_guard::web::runtime`)
//! reports [`Event`]s and carries out the [`Command`]s it gets back, nothing else.
//!
//! * `start` is idempotent; `stop` wins over everything pending (the timer is
//!   cancelled, an init that finishes afterwards has its device destroyed, and
//!   nothing is reported);
//! * a loss the application did not ask for with reason `destroyed` is reported
//!   and the fallback shown; any other loss re-runs init **at once**, then after
//!   `300 ms x 2^n` for each failed attempt, up to a cap, then gives up;
//! * a requested recovery (`matarGPU`) tears down and starts at once; during a
//!   backoff or a rebuild it coalesces into the recovery under way;
//! * events about an older device, attempt or timer change nothing;
//! * while the page is hidden no rebuild starts: it waits for the page to show;
//! * rebuilt devices that keep dying soon after their first frame end in a
//!   fallback instead of a cycle.
//!
//! Why the first attempt does not wait: after a GPU-process crash Chromium
//! restarts the process on demand and `requestAdapter()` simply resolves once it
//! is up (measured here: the immediate attempt succeeded after every one of the
//! crashes in the end-to-end suite), so a fixed wait only delays the picture. A
//! browser that refuses (null adapter, rejected device) makes the attempt fail
//! fast, and the backoff applies from there.

use crate::backoff::{Backoff, MAX_DELAY_MS};

/// Where the device stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceState {
    /// Nothing started yet.
    Idle,
    /// First start in progress (including its retries).
    Starting,
    /// A device is alive and frames are drawn.
    Running,
    /// The device was lost; waiting (backoff, or a hidden page) before the next attempt.
    Lost,
    /// A re-init attempt is under way.
    Recovering,
    /// Gave up; the fallback is shown.
    Failed,
    /// The application stopped on purpose; nothing more happens until `start`.
    Stopped,
    /// The application panicked (or trapped): nothing in the module can be
    /// trusted any more; every later event is refused, `start` included.
    Crashed,
}

impl DeviceState {
    /// The name `gpuStatus().state` reports.
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceState::Idle => "idle",
            DeviceState::Starting => "starting",
            DeviceState::Running => "running",
            DeviceState::Lost => "lost",
            DeviceState::Recovering => "recovering",
            DeviceState::Failed => "failed",
            DeviceState::Stopped => "stopped",
            DeviceState::Crashed => "crashed",
        }
    }
}

/// `GPUDeviceLostInfo.reason`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LossReason {
    /// `"destroyed"`: `destroy()` was called, by the application or (in Chromium,
    /// when a swap chain cannot be created) by the implementation.
    Destroyed,
    /// `"unknown"`: driver reset, GPU process crash, GPU switch, TDR...
    Unknown,
}

impl LossReason {
    /// The spec's string for this reason.
    pub fn as_str(self) -> &'static str {
        match self {
            LossReason::Destroyed => "destroyed",
            LossReason::Unknown => "unknown",
        }
    }

    /// Parses the spec's string; anything but `"destroyed"` is `Unknown`.
    pub fn parse(text: &str) -> Self {
        if text == "destroyed" {
            LossReason::Destroyed
        } else {
            LossReason::Unknown
        }
    }
}

/// The init step that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InitStep {
    /// `navigator.gpu`.
    Api,
    /// `requestAdapter()`.
    Adapter,
    /// `requestDevice()`.
    Device,
    /// Canvas `getContext` / `configure`.
    Canvas,
    /// The application's `build`.
    Resources,
}

impl InitStep {
    /// A short name.
    pub fn as_str(self) -> &'static str {
        match self {
            InitStep::Api => "navigator.gpu",
            InitStep::Adapter => "requestAdapter",
            InitStep::Device => "requestDevice",
            InitStep::Canvas => "canvas",
            InitStep::Resources => "resources",
        }
    }
}

/// Why an init attempt failed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum InitFailure {
    /// `navigator.gpu` is missing: this browser has no WebGPU.
    NoWebGpu,
    /// `requestAdapter()` returned null.
    NoAdapter,
    /// A step threw or rejected (`requestAdapter()`, `requestDevice()`...).
    Step(InitStep, String),
    /// The new device was lost before init finished.
    LostDuringInit(String),
    /// The canvas could not give or configure a `webgpu` context.
    Canvas(String),
    /// Building the resources failed (a fault in the application's own code: a
    /// validation error, an exception), which would fail the same way on every
    /// device: final.
    Resources(String),
    /// Building the resources failed in a way that can pass on a fresh device
    /// (out of memory, an internal error): retried with backoff, up to the cap.
    ResourcesMayPass(String),
    /// The attempt did not finish before its deadline. Stuck before a device was
    /// adopted (`requestAdapter()` or `requestDevice()` never answered) it is
    /// retried with backoff; stuck in the application's `build` it is final.
    Overdue {
        /// Whether the attempt had a device (so it was stuck in `build`).
        in_build: bool,
        /// The deadline, in milliseconds.
        after_ms: u32,
    },
}

impl InitFailure {
    /// A one-line description naming the step.
    pub fn describe(&self) -> String {
        match self {
            InitFailure::NoWebGpu => "navigator.gpu is missing".into(),
            InitFailure::NoAdapter => "requestAdapter() returned null".into(),
            InitFailure::Step(step, m) => format!("{} failed: {m}", step.as_str()),
            InitFailure::LostDuringInit(m) => format!("device lost during init: {m}"),
            InitFailure::Canvas(m) => format!("canvas cannot present WebGPU: {m}"),
            InitFailure::Resources(m) => format!("resources failed: {m}"),
            InitFailure::ResourcesMayPass(m) => format!("resources failed (may pass): {m}"),
            InitFailure::Overdue { in_build, after_ms } => format!(
                "init attempt did not finish in {after_ms} ms (stuck in {})",
                if *in_build {
                    "the application's build"
                } else {
                    "requestAdapter() or requestDevice()"
                }
            ),
        }
    }
}

/// What the page shows instead of the canvas.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Fallback {
    /// No `navigator.gpu`.
    NoWebGpu,
    /// No adapter on the first start.
    NoAdapter,
    /// The canvas cannot be configured.
    Canvas(String),
    /// Init failed in the application's own resources (the fault was
    /// reported as what it was).
    InitFailed(String),
    /// The application's `build` did not finish before the init deadline
    /// (code `init-failed` too; nothing else reported it).
    BuildOverdue(String),
    /// A `destroyed` loss that the application did not ask for.
    UnexpectedDestroy(String),
    /// Every recovery attempt failed.
    GaveUp {
        /// Attempts made.
        attempts: u32,
        /// The last failure.
        last: String,
    },
    /// The browser stopped giving adapters after repeated losses: only a reload helps.
    Blocked {
        /// Attempts made.
        attempts: u32,
    },
    /// No frame came while the page was visible, neither from animation
    /// frames nor from a timer: the browser stopped running or drawing the page.
    Stalled {
        /// How long no frame came, in milliseconds.
        waited_ms: u64,
    },
    /// Rebuilt devices kept dying soon after their first frame.
    CrashLoop {
        /// Devices lost in a row.
        deaths: u32,
        /// The window, in seconds.
        within_s: u32,
    },
    /// The application panicked or trapped: the module cannot be trusted.
    Crashed(String),
}

impl Fallback {
    /// A short machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Fallback::NoWebGpu => "no-webgpu",
            Fallback::NoAdapter => "no-adapter",
            Fallback::Canvas(_) => "canvas",
            Fallback::InitFailed(_) | Fallback::BuildOverdue(_) => "init-failed",
            Fallback::UnexpectedDestroy(_) => "unexpected-destroy",
            Fallback::GaveUp { .. } => "gave-up",
            Fallback::Blocked { .. } => "blocked",
            Fallback::CrashLoop { .. } => "crash-loop",
            Fallback::Stalled { .. } => "stalled",
            Fallback::Crashed(_) => "crashed",
        }
    }

    /// What the fallback is, as a fault for the fault sink and telemetry, or `None`
    /// when it carries no news: a failed build was reported as the fault it
    /// was (a validation error stays a validation error, not a device loss),
    /// and a browser without WebGPU or an adapter is the page's environment,
    /// written as a note. A fallback after losses or failed attempts is a
    /// device loss; a crash is an exception.
    pub fn fault_kind(&self) -> Option<crate::fault::FaultKind> {
        use crate::fault::FaultKind;
        match self {
            Fallback::InitFailed(_)
            | Fallback::NoWebGpu
            | Fallback::NoAdapter
            | Fallback::Stalled { .. } => None,
            Fallback::Canvas(_) | Fallback::Crashed(_) | Fallback::BuildOverdue(_) => {
                Some(FaultKind::Exception)
            }
            Fallback::UnexpectedDestroy(_)
            | Fallback::GaveUp { .. }
            | Fallback::Blocked { .. }
            | Fallback::CrashLoop { .. } => Some(FaultKind::DeviceLost),
        }
    }

    /// The text shown to a person.
    pub fn message(&self) -> String {
        match self {
            Fallback::NoWebGpu => "This browser does not support WebGPU. Try a recent Chrome, Edge or Firefox, or enable WebGPU in its settings.".into(),
            Fallback::NoAdapter => "WebGPU is available but no GPU adapter was found. Your GPU or driver may be blocked; check chrome://gpu or about:support.".into(),
            Fallback::Canvas(m) => format!("The canvas could not be set up for WebGPU: {m}"),
            Fallback::InitFailed(m) | Fallback::BuildOverdue(m) => format!("The page's graphics could not be set up on the GPU: {m}"),
            Fallback::UnexpectedDestroy(m) => format!("The GPU device was destroyed although the page did not ask for it ({m}). The picture is frozen; reload the page."),
            Fallback::GaveUp { attempts, last } => format!("Could not restore access to the GPU after {attempts} attempts ({last})."),
            Fallback::Blocked { attempts } => format!("The browser has blocked WebGPU for this page after repeated GPU losses ({attempts} attempts failed). Reload the page to try again."),
            Fallback::CrashLoop { deaths, within_s } => format!("The GPU keeps failing: {deaths} devices rebuilt after losses were lost in a row, each within {within_s} s of its first frame. Drawing stopped to spare the system; starting again (gpuStart()) tries once more, and closing other GPU-heavy pages or updating the GPU driver may help."),
            Fallback::Crashed(m) => format!("The application crashed ({m}). Reload the page to try again."),
            Fallback::Stalled { waited_ms } => format!("The browser stopped drawing this page: no frame came for {} s while it was visible, from animation frames or timers. Reloading the page may help.", waited_ms / 1000),
        }
    }
}

impl Fallback {
    /// The text shown to a person by a desktop application (a window, not a
    /// page: restarting, not reloading; the GPU's driver, not the browser).
    pub fn desktop_message(&self) -> String {
        match self {
            Fallback::NoWebGpu | Fallback::NoAdapter => "No GPU adapter was found (Vulkan, Metal or DirectX 12). Updating the GPU driver may help.".into(),
            Fallback::Canvas(m) => format!("The window could not be set up for drawing: {m}"),
            Fallback::InitFailed(m) | Fallback::BuildOverdue(m) => format!("The application's graphics could not be set up on the GPU: {m}"),
            Fallback::UnexpectedDestroy(m) => format!("The GPU device was destroyed although the application did not ask for it ({m}). Restart the application."),
            Fallback::GaveUp { attempts, last } => format!("Could not restore access to the GPU after {attempts} attempts ({last})."),
            Fallback::Blocked { attempts } => format!("The GPU refused new devices after repeated losses ({attempts} attempts failed). Restart the application to try again."),
            Fallback::CrashLoop { deaths, within_s } => format!("The GPU keeps failing: {deaths} devices rebuilt after losses were lost in a row, each within {within_s} s of its first frame. Drawing stopped to spare the system; starting again tries once more, and updating the GPU driver may help."),
            Fallback::Crashed(m) => format!("The application crashed ({m}). Restart it to try again."),
            Fallback::Stalled { waited_ms } => format!("The window stopped drawing: no frame came for {} s while it was visible. Restarting the application may help.", waited_ms / 1000),
        }
    }
}

/// What a requested recovery (`matarGPU()`) does in the state it finds, said
/// on the console and returned to the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecoveryAnswer {
    /// The running device is torn down and init runs again, as after a loss.
    Rebuilding,
    /// A backoff wait was cut short: the next attempt starts now.
    AttemptNow,
    /// A device is being brought up already: one recovery.
    AlreadyUnderWay,
    /// After a fallback: init starts over (a person asked for it).
    StartingOver,
    /// Stopped (or never started): `gpuStart()` comes first.
    StartFirst,
    /// The page is hidden: the rebuild runs when it is shown.
    WhenShown,
    /// The module crashed: nothing can run any more.
    Crashed,
}

impl RecoveryAnswer {
    /// Whether the request starts an init now (what the next init's timings
    /// count from): not one already under way, nor one the page's being
    /// shown will start, nor none at all.
    pub fn starts_now(self) -> bool {
        matches!(
            self,
            RecoveryAnswer::Rebuilding | RecoveryAnswer::AttemptNow | RecoveryAnswer::StartingOver
        )
    }

    /// The console line.
    pub fn message(self) -> &'static str {
        match self {
            RecoveryAnswer::Rebuilding => {
                "matarGPU: the device is destroyed and init runs again, as after a real loss"
            }
            RecoveryAnswer::AttemptNow => {
                "matarGPU: the wait is cut short; the next attempt starts now"
            }
            RecoveryAnswer::AlreadyUnderWay => {
                "matarGPU: a device is being brought up already; nothing more is done"
            }
            RecoveryAnswer::StartingOver => "matarGPU: starting over after the fallback",
            RecoveryAnswer::StartFirst => "matarGPU: the runtime is stopped; call gpuStart() first",
            RecoveryAnswer::WhenShown => {
                "matarGPU: the page is hidden; the rebuild runs when it is shown"
            }
            RecoveryAnswer::Crashed => {
                "matarGPU: nothing can run after the module's crash; reload the page"
            }
        }
    }
}

/// What happened, as the browser layer reports it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// The application starts (or starts again after a stop or a fallback).
    Start,
    /// The application stops: destroy on purpose, no restart, whatever is pending.
    Stop,
    /// The application asks for the full recovery path (`matarGPU()`).
    RequestRecovery,
    /// A device resolved `lost`.
    Lost {
        /// Which device.
        generation: u64,
        /// Its reason.
        reason: LossReason,
        /// What the browser said (its `lost` message), or how the loss was
        /// found; empty when nothing was said.
        message: String,
        /// When, in milliseconds.
        at_ms: u64,
    },
    /// A timer the supervisor scheduled fired.
    TimerFired {
        /// The timer's token.
        token: u64,
    },
    /// Attempt `attempt` obtained a device.
    DeviceCreated {
        /// The attempt.
        attempt: u64,
    },
    /// Attempt `attempt` finished on device `generation`: canvas configured,
    /// resources built.
    InitSucceeded {
        /// The attempt.
        attempt: u64,
        /// Its device.
        generation: u64,
    },
    /// Attempt `attempt` failed.
    InitFailed {
        /// The attempt.
        attempt: u64,
        /// Why.
        failure: InitFailure,
    },
    /// A device presented its first frame.
    FirstFrame {
        /// Which device.
        generation: u64,
        /// When, in milliseconds.
        at_ms: u64,
    },
    /// The page was hidden (`true`) or shown (`false`).
    Visibility {
        /// Whether the page is hidden now.
        hidden: bool,
    },
    /// The clock, as the runtime's watchdog reads it (about once a second).
    Tick {
        /// Now, in milliseconds.
        now_ms: u64,
        /// When the last animation frame ran, in milliseconds.
        last_frame_ms: u64,
        /// Whether an animation frame is requested and not yet delivered.
        frame_pending: bool,
    },
    /// The application panicked or trapped: stop everything for good.
    Crashed {
        /// What it said.
        message: String,
    },
}

/// What a scheduled timer is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimerPurpose {
    /// The backoff wait before the next init attempt.
    Retry,
    /// The deadline of init attempt `attempt`.
    InitDeadline {
        /// The attempt.
        attempt: u64,
    },
}

/// What the runtime does about a running page whose frames stopped coming.
/// A new device is no remedy: when a browser stops delivering animation frames
/// to a visible page (Firefox after its GPU process died), the device is
/// healthy and a rebuilt one stalls the same way. A device that is in fact
/// lost is found so by the probe the second step makes, and recovered as a
/// loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StallAction {
    /// First: ask for the animation frame again.
    RequestFrame,
    /// Still frozen after that: probe the device, and draw frames from a timer
    /// until animation frames come back.
    DriveFromTimer,
}

/// How far the handling of the current stall has gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Stall {
    /// Frames come.
    None,
    /// Reported; an animation frame asked for again.
    Asked,
    /// Frames asked for from a timer too.
    Driven,
}

/// What the browser layer must do.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    /// Run the init sequence now, as attempt `attempt`.
    BeginInit {
        /// The attempt's id, to quote in its events.
        attempt: u64,
    },
    /// The device attempt `attempt` just obtained is generation `generation`:
    /// go on with init.
    Adopt {
        /// The attempt.
        attempt: u64,
        /// Its generation.
        generation: u64,
    },
    /// The device attempt `attempt` just obtained is not wanted (stopped or
    /// superseded meanwhile): destroy it, quietly.
    Discard {
        /// The attempt.
        attempt: u64,
    },
    /// Call `Event::TimerFired { token }` after `delay_ms`.
    Schedule {
        /// The token.
        token: u64,
        /// The delay.
        delay_ms: u32,
        /// What the timer is for.
        purpose: TimerPurpose,
    },
    /// Cancel the timer `token`.
    CancelTimer {
        /// The token.
        token: u64,
    },
    /// Tell the fault sink, once per stall, that the picture is frozen, and act.
    ReportStall {
        /// The device.
        generation: u64,
        /// How long no animation frame came, in milliseconds.
        waited_ms: u64,
        /// What is done about it.
        action: StallAction,
    },
    /// Probe the device (a lost one is reported as [`Event::Lost`]) and draw
    /// frames from a timer as well as from animation frames, until an
    /// animation frame comes.
    DriveFromTimer {
        /// The device.
        generation: u64,
    },
    /// Request an animation frame again (the pending request may have been lost).
    RequestFrame {
        /// The device.
        generation: u64,
    },
    /// Drop whatever this device's init produced and destroy it, quietly.
    Destroy {
        /// Which device.
        generation: u64,
    },
    /// Stop the frame loop, release every GPU object of this device and destroy it.
    Teardown {
        /// Which device.
        generation: u64,
    },
    /// Init finished: keep the resources and run frames on this device.
    Run {
        /// Which device.
        generation: u64,
    },
    /// Show the fallback; nothing more happens.
    ShowFallback(Fallback),
}

/// The last loss, as `gpuStatus().lastLoss` reports it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LossRecord {
    /// The reason.
    pub reason: LossReason,
    /// The implementation's message (or what the application asked for).
    pub message: String,
    /// Whether the application asked for it.
    pub requested: bool,
}

/// Supervisor settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SupervisorOptions {
    /// Delays after failed attempts, and their cap.
    pub backoff: Backoff,
    /// Rebuilt devices lost in a row, each soon after its first frame, before giving up.
    pub crash_loop_deaths: u32,
    /// What "soon" means, in milliseconds.
    pub crash_loop_window_ms: u64,
    /// How long one init attempt may take before it counts as failed. At least
    /// [`MAX_DELAY_MS`] (`u32::MAX`, say) turns the deadline off: a browser timer
    /// cannot wait that long (its delay would wrap to "now").
    pub init_deadline_ms: u32,
    /// How long a running, visible page may go without an animation frame
    /// before the stall is reported (and, as long again later, recovered).
    pub stall_ms: u64,
}

impl Default for SupervisorOptions {
    /// Backoff 300 ms x 2^n (4 delayed attempts); crash loop: 3 deaths within
    /// 10 s; an attempt may take 30 s; a stall is 2 s without a frame.
    fn default() -> Self {
        SupervisorOptions {
            backoff: Backoff::default(),
            crash_loop_deaths: 3,
            crash_loop_window_ms: 10_000,
            init_deadline_ms: 30_000,
            stall_ms: 2_000,
        }
    }
}

/// The supervisor's state machine. What each state needs is carried by the
/// state itself (its `Phase`): an attempt's id, deadline and device exist only
/// while an attempt is under way, a backoff timer only while one is waited
/// for, the running device and its stall only while it runs. No field can
/// say "an attempt is in flight" while the state says "running".
///
/// ```
/// use webgpu_guard_core::supervisor::{Command, Event, LossReason, Supervisor};
/// let mut s = Supervisor::default();
/// assert_eq!(s.handle(Event::Start)[0], Command::BeginInit { attempt: 1 });
/// assert_eq!(s.handle(Event::DeviceCreated { attempt: 1 }), vec![Command::Adopt { attempt: 1, generation: 1 }]);
/// s.handle(Event::InitSucceeded { attempt: 1, generation: 1 });
/// // A browser-caused loss: tear down, and the first attempt starts at once
/// // (with its deadline).
/// let commands = s.handle(Event::Lost { generation: 1, reason: LossReason::Unknown, message: String::new(), at_ms: 0 });
/// assert_eq!(commands[..2], [Command::Teardown { generation: 1 }, Command::BeginInit { attempt: 2 }]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Supervisor {
    options: SupervisorOptions,
    phase: Phase,
    /// Whether the page is hidden, as last reported (a fact of the page, not
    /// of a state).
    hidden: bool,
    ids: Ids,
    recoveries: u64,
    losses: u64,
    /// Rebuilt devices lost in a row, each soon after its first frame
    /// (across running and rebuilding; cleared by a start). Only devices
    /// rebuilt after a loss count, never one the application asked for
    /// (`matarGPU()`, a start).
    quick_deaths: u32,
    /// Whether the device being brought up was asked for by the application
    /// (a requested recovery), not made necessary by a loss.
    requested: bool,
    last_loss: Option<LossRecord>,
    /// Fallbacks shown since a device last ran: a start after one waits its
    /// backoff.
    fallbacks_in_a_row: u32,
}

/// The ids the supervisor hands out, each counting up.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Ids {
    next_attempt: u64,
    next_token: u64,
    /// Devices created so far (the last generation handed out).
    generation: u64,
}

/// Where the supervisor stands, with what that state owns.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Nothing started yet.
    Idle,
    /// Bringing a device up: the first start (`recovery: false`) or a
    /// rebuild after a loss.
    BringingUp {
        /// Whether a device ran before (a rebuild after a loss).
        recovery: bool,
        /// Failed attempts in a row.
        failures: u32,
        /// What it does now.
        step: Step,
    },
    /// A device runs.
    Running(Running),
    /// Gave up; the fallback is shown.
    Failed(Fallback),
    /// Stopped on purpose; the fallback shown before, if it failed first
    /// (the page shows it until the next start).
    Stopped(Option<Fallback>),
    /// Panicked or trapped; its fallback is shown.
    Crashed(Fallback),
}

/// What bringing a device up does now.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Step {
    /// An attempt is under way.
    Attempt(Attempt),
    /// The backoff timer `token` runs before the next attempt.
    Backoff {
        /// The timer.
        token: u64,
    },
    /// The next attempt waits for the page to be shown.
    Hidden,
}

/// The attempt under way.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Attempt {
    id: u64,
    /// Its deadline timer, if one is set.
    deadline: Option<u64>,
    /// The device it adopted, once it has one.
    device: Option<u64>,
}

/// The running device.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Running {
    generation: u64,
    /// Whether it was built after a loss (not at the application's request):
    /// only such devices count towards the crash-loop rule.
    rebuild: bool,
    first_frame_at: Option<u64>,
    stall: Stall,
}

impl Default for Supervisor {
    fn default() -> Self {
        Supervisor::new(SupervisorOptions::default())
    }
}

impl Supervisor {
    /// A supervisor with these options, idle.
    pub fn new(options: SupervisorOptions) -> Self {
        Supervisor {
            options,
            phase: Phase::Idle,
            hidden: false,
            ids: Ids {
                next_attempt: 1,
                next_token: 1,
                generation: 0,
            },
            recoveries: 0,
            losses: 0,
            quick_deaths: 0,
            requested: false,
            last_loss: None,
            fallbacks_in_a_row: 0,
        }
    }

    /// The current state.
    pub fn state(&self) -> DeviceState {
        match &self.phase {
            Phase::Idle => DeviceState::Idle,
            Phase::BringingUp {
                recovery: false, ..
            } => DeviceState::Starting,
            Phase::BringingUp {
                step: Step::Attempt(_),
                ..
            } => DeviceState::Recovering,
            Phase::BringingUp { .. } => DeviceState::Lost,
            Phase::Running(_) => DeviceState::Running,
            Phase::Failed(_) => DeviceState::Failed,
            Phase::Stopped(_) => DeviceState::Stopped,
            Phase::Crashed(_) => DeviceState::Crashed,
        }
    }

    /// Devices created so far.
    pub fn generation(&self) -> u64 {
        self.ids.generation
    }

    /// The device frames run on, if any.
    pub fn live_generation(&self) -> Option<u64> {
        match &self.phase {
            Phase::Running(running) => Some(running.generation),
            _ => None,
        }
    }

    /// Whether the running device was rebuilt after a loss (not started, not
    /// asked for by the application).
    pub fn running_after_a_loss(&self) -> bool {
        matches!(&self.phase, Phase::Running(running) if running.rebuild)
    }

    fn attempt(&self) -> Option<&Attempt> {
        match &self.phase {
            Phase::BringingUp {
                step: Step::Attempt(attempt),
                ..
            } => Some(attempt),
            _ => None,
        }
    }

    /// The attempt under way, if any.
    pub fn attempt_in_flight(&self) -> Option<u64> {
        self.attempt().map(|a| a.id)
    }

    /// Whether a backoff timer is scheduled.
    pub fn timer_pending(&self) -> bool {
        matches!(
            self.phase,
            Phase::BringingUp {
                step: Step::Backoff { .. },
                ..
            }
        )
    }

    /// The token of the deadline timer of the attempt under way, if any.
    pub fn deadline_pending(&self) -> Option<u64> {
        self.attempt().and_then(|a| a.deadline)
    }

    /// Whether the current stall was reported.
    pub fn stall_reported(&self) -> bool {
        matches!(&self.phase, Phase::Running(r) if r.stall != Stall::None)
    }

    /// What [`Event::RequestRecovery`] would do now.
    pub fn recovery_answer(&self) -> RecoveryAnswer {
        match &self.phase {
            Phase::Idle | Phase::Stopped(_) => RecoveryAnswer::StartFirst,
            Phase::Crashed(_) => RecoveryAnswer::Crashed,
            Phase::Failed(_) if self.hidden => RecoveryAnswer::WhenShown,
            Phase::Failed(_) => RecoveryAnswer::StartingOver,
            Phase::Running(_) if self.hidden => RecoveryAnswer::WhenShown,
            Phase::Running(_) => RecoveryAnswer::Rebuilding,
            Phase::BringingUp {
                step: Step::Hidden, ..
            } => RecoveryAnswer::WhenShown,
            Phase::BringingUp {
                step: Step::Backoff { .. },
                ..
            } if self.hidden => RecoveryAnswer::WhenShown,
            Phase::BringingUp {
                step: Step::Backoff { .. },
                ..
            } => RecoveryAnswer::AttemptNow,
            Phase::BringingUp { .. } => RecoveryAnswer::AlreadyUnderWay,
        }
    }

    /// Whether the supervisor waits for the page to be visible.
    pub fn waiting_for_visible(&self) -> bool {
        matches!(
            self.phase,
            Phase::BringingUp {
                step: Step::Hidden,
                ..
            }
        )
    }

    /// Whether the page is hidden, as last reported.
    pub fn hidden(&self) -> bool {
        self.hidden
    }

    /// Whether the device being brought up is a recovery (after a loss or a
    /// requested recovery), not a start: a start's retries, a start after
    /// `Stop` and a start over after a fallback are starts.
    pub fn bringing_up_a_recovery(&self) -> bool {
        matches!(self.phase, Phase::BringingUp { recovery: true, .. })
    }

    /// Recoveries completed (a device running again after a loss or a requested
    /// recovery; retries of the first start do not count).
    pub fn recoveries(&self) -> u64 {
        self.recoveries
    }

    /// Losses seen (requested ones included).
    pub fn losses(&self) -> u64 {
        self.losses
    }

    /// Failed attempts in a row while a device is brought up (0 otherwise).
    pub fn failures(&self) -> u32 {
        match self.phase {
            Phase::BringingUp { failures, .. } => failures,
            _ => 0,
        }
    }

    /// The last loss, if any.
    pub fn last_loss(&self) -> Option<&LossRecord> {
        self.last_loss.as_ref()
    }

    /// The fallback shown, if any (failed or crashed, or stopped after either).
    pub fn fallback(&self) -> Option<&Fallback> {
        match &self.phase {
            Phase::Failed(fallback) | Phase::Crashed(fallback) => Some(fallback),
            Phase::Stopped(fallback) => fallback.as_ref(),
            _ => None,
        }
    }

    /// The options.
    pub fn options(&self) -> &SupervisorOptions {
        &self.options
    }

    /// Whether `generation` is the device that runs or is being initialised.
    pub fn owns_generation(&self, generation: u64) -> bool {
        self.live_generation() == Some(generation)
            || self.attempt().and_then(|a| a.device) == Some(generation)
    }

    /// Whether frames may be drawn on `generation`.
    pub fn may_draw(&self, generation: u64) -> bool {
        self.live_generation() == Some(generation)
    }

    /// Handles one event; returns what to do, in order. After a crash every
    /// event is refused (nothing to do), but for a device that an abandoned
    /// attempt still obtains: it is discarded.
    pub fn handle(&mut self, event: Event) -> Vec<Command> {
        if matches!(self.phase, Phase::Crashed(_)) && !matches!(event, Event::DeviceCreated { .. })
        {
            return Vec::new();
        }
        match event {
            Event::Start => self.start(),
            Event::Stop => self.stop(),
            Event::RequestRecovery => self.request_recovery(),
            Event::Lost {
                generation,
                reason,
                message,
                at_ms,
            } => self.lost(generation, reason, &message, at_ms),
            Event::TimerFired { token } => self.timer_fired(token),
            Event::DeviceCreated { attempt } => self.device_created(attempt),
            Event::InitSucceeded {
                attempt,
                generation,
            } => self.init_succeeded(attempt, generation),
            Event::InitFailed { attempt, failure } => self.init_failed(attempt, failure),
            Event::FirstFrame { generation, at_ms } => {
                if let Phase::Running(running) = &mut self.phase {
                    if running.generation == generation && running.first_frame_at.is_none() {
                        running.first_frame_at = Some(at_ms);
                    }
                }
                Vec::new()
            }
            Event::Visibility { hidden } => self.visibility(hidden),
            Event::Tick {
                now_ms,
                last_frame_ms,
                frame_pending,
            } => self.tick(now_ms, last_frame_ms, frame_pending),
            Event::Crashed { message } => self.crashed(message),
        }
    }

    fn new_token(&mut self) -> u64 {
        let token = self.ids.next_token;
        self.ids.next_token += 1;
        token
    }

    /// Starts the next attempt, with its deadline, as the phase of bringing a
    /// device up (`recovery`, after `failures` failed attempts).
    fn begin_attempt(&mut self, recovery: bool, failures: u32) -> Vec<Command> {
        let id = self.ids.next_attempt;
        self.ids.next_attempt += 1;
        let mut commands = vec![Command::BeginInit { attempt: id }];
        // A deadline no browser timer can wait for is no deadline.
        let deadline = (self.options.init_deadline_ms < MAX_DELAY_MS).then(|| {
            let token = self.new_token();
            commands.push(Command::Schedule {
                token,
                delay_ms: self.options.init_deadline_ms,
                purpose: TimerPurpose::InitDeadline { attempt: id },
            });
            token
        });
        self.phase = Phase::BringingUp {
            recovery,
            failures,
            step: Step::Attempt(Attempt {
                id,
                deadline,
                device: None,
            }),
        };
        commands
    }

    /// Waits `delay_ms` before the next attempt.
    fn back_off(&mut self, recovery: bool, failures: u32, delay_ms: u32) -> Vec<Command> {
        let token = self.new_token();
        self.phase = Phase::BringingUp {
            recovery,
            failures,
            step: Step::Backoff { token },
        };
        vec![Command::Schedule {
            token,
            delay_ms,
            purpose: TimerPurpose::Retry,
        }]
    }

    /// Leaves the current phase for `next`, returning what undoes what the
    /// old one owned: its timer cancelled, its attempt's deadline cancelled
    /// and its device destroyed, its running device torn down.
    fn leave(&mut self, next: Phase) -> Vec<Command> {
        match std::mem::replace(&mut self.phase, next) {
            Phase::BringingUp {
                step: Step::Backoff { token, .. },
                ..
            } => vec![Command::CancelTimer { token }],
            Phase::BringingUp {
                step: Step::Attempt(attempt),
                ..
            } => Supervisor::abandon(attempt),
            Phase::Running(running) => vec![Command::Teardown {
                generation: running.generation,
            }],
            _ => Vec::new(),
        }
    }

    /// What ends `attempt`: its deadline cancelled, its device destroyed.
    fn abandon(attempt: Attempt) -> Vec<Command> {
        let mut commands = Vec::new();
        if let Some(token) = attempt.deadline {
            commands.push(Command::CancelTimer { token });
        }
        if let Some(generation) = attempt.device {
            commands.push(Command::Destroy { generation });
        }
        commands
    }

    fn tick(&mut self, now_ms: u64, last_frame_ms: u64, frame_pending: bool) -> Vec<Command> {
        let stall_ms = self.options.stall_ms;
        let hidden = self.hidden;
        let Phase::Running(running) = &mut self.phase else {
            return Vec::new();
        };
        let generation = running.generation;
        let waited_ms = now_ms.saturating_sub(last_frame_ms);
        let stalled = !hidden && frame_pending && waited_ms > stall_ms;
        if !stalled {
            running.stall = Stall::None;
            return Vec::new();
        }
        match running.stall {
            Stall::None => {
                running.stall = Stall::Asked;
                vec![
                    Command::ReportStall {
                        generation,
                        waited_ms,
                        action: StallAction::RequestFrame,
                    },
                    Command::RequestFrame { generation },
                ]
            }
            Stall::Asked if waited_ms > stall_ms.saturating_mul(2) => {
                // Asked again and still frozen. A new device would stall the
                // same way: the device is probed, and frames come from a timer.
                running.stall = Stall::Driven;
                vec![
                    Command::ReportStall {
                        generation,
                        waited_ms,
                        action: StallAction::DriveFromTimer,
                    },
                    Command::DriveFromTimer { generation },
                ]
            }
            Stall::Driven if waited_ms > stall_ms.saturating_mul(3) => {
                // Not even a timer runs the frame: nothing the runtime can do.
                self.fail(Fallback::Stalled { waited_ms })
            }
            _ => Vec::new(),
        }
    }

    fn crashed(&mut self, message: String) -> Vec<Command> {
        let fallback = Fallback::Crashed(message);
        let mut commands = self.leave(Phase::Crashed(fallback.clone()));
        commands.push(Command::ShowFallback(fallback));
        commands
    }

    fn start(&mut self) -> Vec<Command> {
        if !matches!(
            self.phase,
            Phase::Idle | Phase::Stopped(_) | Phase::Failed(_)
        ) {
            return Vec::new();
        }
        self.quick_deaths = 0;
        self.requested = false;
        let after_fallbacks = self.fallbacks_in_a_row;
        if after_fallbacks == 0 {
            return self.begin_attempt(false, 0);
        }
        // A start right after starts that each ended in a fallback (a
        // fallback hook that calls `start()` on a page without WebGPU)
        // waits its backoff: attempt, fallback and start again never run
        // as one chain that leaves the page no time.
        let backoff = self.options.backoff;
        let delay_ms = backoff
            .delay_ms(after_fallbacks - 1)
            .or_else(|| backoff.schedule().last().copied())
            .unwrap_or(backoff.base_ms.min(MAX_DELAY_MS))
            .max(1);
        self.back_off(false, 0, delay_ms)
    }

    fn stop(&mut self) -> Vec<Command> {
        if matches!(self.phase, Phase::Idle | Phase::Stopped(_)) {
            return Vec::new();
        }
        if matches!(self.phase, Phase::Running(_)) {
            self.record_loss(LossReason::Destroyed, "stopped by the application", true);
        }
        let shown = self.fallback().cloned();
        self.leave(Phase::Stopped(shown))
    }

    fn record_loss(&mut self, reason: LossReason, message: &str, requested: bool) {
        self.losses += 1;
        self.last_loss = Some(LossRecord {
            reason,
            message: message.into(),
            requested,
        });
    }

    fn request_recovery(&mut self) -> Vec<Command> {
        match &self.phase {
            Phase::Running(_) => {
                self.record_loss(
                    LossReason::Destroyed,
                    "recovery requested by the application",
                    true,
                );
                let mut commands = self.leave(Phase::Idle);
                commands.extend(self.attempt_or_wait());
                self.requested = true;
                commands
            }
            // A requested recovery starts at once: a backoff wait is cut short,
            // after a loss or during the first start's retries.
            &Phase::BringingUp {
                recovery,
                failures,
                step: Step::Backoff { .. },
            } if !self.hidden => {
                let mut commands = self.leave(Phase::Idle);
                commands.extend(self.begin_attempt(recovery, failures));
                commands
            }
            // After a fallback a person asked for it: init starts over at
            // once (a crash excepted: nothing can run).
            Phase::Failed(_) => {
                self.quick_deaths = 0;
                self.requested = false;
                self.fallbacks_in_a_row = 0;
                let mut commands = self.leave(Phase::Idle);
                if self.hidden {
                    self.phase = Phase::BringingUp {
                        recovery: false,
                        failures: 0,
                        step: Step::Hidden,
                    };
                } else {
                    commands.extend(self.begin_attempt(false, 0));
                }
                commands
            }
            // Already waiting or rebuilding: one recovery. Stopped: the
            // application's start comes first.
            _ => Vec::new(),
        }
    }

    /// After a loss: starts an attempt now, or waits for the page to be visible.
    fn attempt_or_wait(&mut self) -> Vec<Command> {
        if self.hidden {
            self.phase = Phase::BringingUp {
                recovery: true,
                failures: 0,
                step: Step::Hidden,
            };
            Vec::new()
        } else {
            self.begin_attempt(true, 0)
        }
    }

    fn lost(
        &mut self,
        generation: u64,
        reason: LossReason,
        message: &str,
        at_ms: u64,
    ) -> Vec<Command> {
        let attempt_s = self.attempt().is_some_and(|a| a.device == Some(generation));
        if reason == LossReason::Destroyed && attempt_s {
            // Nothing of the runtime's destroys a device while an attempt
            // holds it (one it let go is stale here; an injected loss says
            // `unknown`): the application's own `destroy()` in its `build`.
            // No restart, as for a running device. (Once the attempt failed
            // and the runtime let its device go, a `destroyed` may be the
            // runtime's own, told late: that one is stale.)
            self.record_loss(reason, message, false);
            return self.fail(Fallback::UnexpectedDestroy(format!(
                "device {generation}, reason destroyed, while it was brought up"
            )));
        }
        if let Some(attempt) = self.attempt().filter(|a| a.device == Some(generation)) {
            let attempt = attempt.id;
            return self.init_failed(
                attempt,
                InitFailure::LostDuringInit(format!("reason {}", reason.as_str())),
            );
        }
        let Phase::Running(running) = &self.phase else {
            return Vec::new();
        };
        if running.generation != generation {
            return Vec::new();
        }
        let quick = match running.first_frame_at {
            Some(first) => at_ms.saturating_sub(first) <= self.options.crash_loop_window_ms,
            None => true,
        };
        let rebuild = running.rebuild;
        // From this loss on, the devices brought up are rebuilds it caused.
        self.requested = false;
        let said = if message.trim().is_empty() {
            format!("device {generation} lost")
        } else {
            message.to_string()
        };
        self.record_loss(reason, &said, false);
        let mut commands = self.leave(Phase::Idle);
        if reason == LossReason::Destroyed {
            commands.extend(self.fail(Fallback::UnexpectedDestroy(format!(
                "device {generation}, reason destroyed"
            ))));
            return commands;
        }
        if rebuild && quick {
            self.quick_deaths += 1;
        } else {
            self.quick_deaths = 0;
        }
        if self.quick_deaths >= self.options.crash_loop_deaths {
            commands.extend(self.fail(Fallback::CrashLoop {
                deaths: self.quick_deaths,
                within_s: (self.options.crash_loop_window_ms / 1000) as u32,
            }));
            return commands;
        }
        commands.extend(self.attempt_or_wait());
        commands
    }

    fn timer_fired(&mut self, token: u64) -> Vec<Command> {
        let after_ms = self.options.init_deadline_ms;
        match &mut self.phase {
            Phase::BringingUp {
                step: Step::Attempt(attempt),
                ..
            } if attempt.deadline == Some(token) => {
                attempt.deadline = None;
                let (id, in_build) = (attempt.id, attempt.device.is_some());
                self.init_failed(id, InitFailure::Overdue { in_build, after_ms })
            }
            &mut Phase::BringingUp {
                recovery,
                failures,
                step: Step::Backoff { token: waited },
            } if waited == token => {
                if self.hidden && recovery {
                    self.phase = Phase::BringingUp {
                        recovery,
                        failures,
                        step: Step::Hidden,
                    };
                    return Vec::new();
                }
                self.begin_attempt(recovery, failures)
            }
            _ => Vec::new(),
        }
    }

    fn device_created(&mut self, attempt: u64) -> Vec<Command> {
        self.ids.generation += 1;
        let generation = self.ids.generation;
        match &mut self.phase {
            Phase::BringingUp {
                step: Step::Attempt(under_way),
                ..
            } if under_way.id == attempt && under_way.device.is_none() => {
                under_way.device = Some(generation);
                vec![Command::Adopt {
                    attempt,
                    generation,
                }]
            }
            _ => vec![Command::Discard { attempt }],
        }
    }

    fn init_succeeded(&mut self, attempt: u64, generation: u64) -> Vec<Command> {
        if self.live_generation() == Some(generation) {
            return Vec::new();
        }
        let Phase::BringingUp {
            recovery,
            step: Step::Attempt(under_way),
            ..
        } = &self.phase
        else {
            // Stopped, superseded or lost meanwhile: its device goes, quietly.
            return vec![Command::Destroy { generation }];
        };
        if under_way.id != attempt || under_way.device != Some(generation) {
            return vec![Command::Destroy { generation }];
        }
        let rebuild = *recovery;
        let after_a_loss = rebuild && !std::mem::take(&mut self.requested);
        let deadline = under_way.deadline;
        self.fallbacks_in_a_row = 0;
        if rebuild {
            self.recoveries += 1;
        }
        self.phase = Phase::Running(Running {
            generation,
            rebuild: after_a_loss,
            first_frame_at: None,
            stall: Stall::None,
        });
        let mut commands: Vec<Command> = deadline
            .map(|token| Command::CancelTimer { token })
            .into_iter()
            .collect();
        commands.push(Command::Run { generation });
        commands
    }

    fn init_failed(&mut self, attempt: u64, failure: InitFailure) -> Vec<Command> {
        let Phase::BringingUp {
            recovery,
            failures,
            step: Step::Attempt(under_way),
        } = &self.phase
        else {
            return Vec::new();
        };
        if under_way.id != attempt {
            return Vec::new();
        }
        let (recovery, failures) = (*recovery, *failures);
        let mut commands = self.leave(Phase::Idle);
        let terminal = match &failure {
            InitFailure::NoWebGpu => Some(Fallback::NoWebGpu),
            InitFailure::Canvas(m) => Some(Fallback::Canvas(m.clone())),
            InitFailure::Resources(m) => Some(Fallback::InitFailed(m.clone())),
            InitFailure::Overdue { in_build: true, .. } => {
                Some(Fallback::BuildOverdue(failure.describe()))
            }
            InitFailure::NoAdapter if !recovery => Some(Fallback::NoAdapter),
            _ => None,
        };
        if let Some(fallback) = terminal {
            commands.extend(self.fail(fallback));
            return commands;
        }
        let failures = failures + 1;
        match self.options.backoff.delay_ms(failures - 1) {
            Some(delay_ms) => commands.extend(self.back_off(recovery, failures, delay_ms)),
            None => {
                let fallback = if failure == InitFailure::NoAdapter {
                    Fallback::Blocked { attempts: failures }
                } else {
                    Fallback::GaveUp {
                        attempts: failures,
                        last: failure.describe(),
                    }
                };
                commands.extend(self.fail(fallback));
            }
        }
        commands
    }

    fn visibility(&mut self, hidden: bool) -> Vec<Command> {
        self.hidden = hidden;
        match self.phase {
            Phase::BringingUp {
                recovery,
                failures,
                step: Step::Hidden,
            } if !hidden => self.begin_attempt(recovery, failures),
            _ => Vec::new(),
        }
    }

    fn fail(&mut self, fallback: Fallback) -> Vec<Command> {
        // Counted up to the backoff's cap: past it the wait stays the longest.
        self.fallbacks_in_a_row =
            (self.fallbacks_in_a_row + 1).min(self.options.backoff.max_attempts.max(1));
        let mut commands = self.leave(Phase::Failed(fallback.clone()));
        commands.push(Command::ShowFallback(fallback));
        commands
    }
}

#[cfg(test)]
mod tests;
