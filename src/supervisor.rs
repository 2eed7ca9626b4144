//! The device-loss supervisor as a pure state machine: it decides, the browser
//! layer ([`crate::web::runtime`]) carries out.
//!
//! * a loss the application asked for with [`DestroyIntent::Stop`] stops for good;
//! * a `destroyed` loss nobody asked for is unexpected: reported, and the fallback shown;
//! * any other loss (and [`DestroyIntent::Recreate`]) re-runs init after
//!   `300 ms x 2^n`, at most 4 attempts, then gives up with a fallback message.

use crate::backoff::Backoff;

/// Where the device stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceState {
    /// First init in progress.
    Starting,
    /// A device is alive and frames are drawn.
    Running,
    /// The device was lost; nothing is drawn.
    Lost,
    /// Waiting for, or running, a re-init.
    Recovering,
    /// Gave up; the fallback is shown.
    Failed,
    /// The application destroyed the device on purpose; nothing more happens.
    Stopped,
}

impl DeviceState {
    /// The name `gpuStatus().state` reports.
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceState::Starting => "starting",
            DeviceState::Running => "running",
            DeviceState::Lost => "lost",
            DeviceState::Recovering => "recovering",
            DeviceState::Failed => "failed",
            DeviceState::Stopped => "stopped",
        }
    }
}

/// `GPUDeviceLostInfo.reason`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// Why the application itself is about to destroy the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DestroyIntent {
    /// Unmount: stop, do not restart.
    Stop,
    /// Force the full recovery path (`matarGPU`): treat like a real loss.
    Recreate,
}

/// Why an init attempt failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InitFailure {
    /// `navigator.gpu` is missing: this browser has no WebGPU.
    NoWebGpu,
    /// `requestAdapter()` returned null.
    NoAdapter,
    /// `requestDevice()` rejected.
    DeviceRequest(String),
    /// The new device was lost before init finished.
    LostDuringInit(String),
    /// The canvas could not give or configure a `webgpu` context.
    Canvas(String),
    /// Building the resources failed (a fault in the application's own code).
    Resources(String),
}

impl InitFailure {
    /// A one-line description.
    pub fn describe(&self) -> String {
        match self {
            InitFailure::NoWebGpu => "navigator.gpu is missing".into(),
            InitFailure::NoAdapter => "requestAdapter() returned null".into(),
            InitFailure::DeviceRequest(m) => format!("requestDevice() rejected: {m}"),
            InitFailure::LostDuringInit(m) => format!("device lost during init: {m}"),
            InitFailure::Canvas(m) => format!("canvas cannot present WebGPU: {m}"),
            InitFailure::Resources(m) => format!("resources failed: {m}"),
        }
    }
}

/// What the page shows instead of the canvas.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// No `navigator.gpu`.
    NoWebGpu,
    /// No adapter on the first start.
    NoAdapter,
    /// The canvas cannot be configured.
    Canvas(String),
    /// Init failed in the application's own resources.
    InitFailed(String),
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
}

impl Fallback {
    /// A short machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Fallback::NoWebGpu => "no-webgpu",
            Fallback::NoAdapter => "no-adapter",
            Fallback::Canvas(_) => "canvas",
            Fallback::InitFailed(_) => "init-failed",
            Fallback::UnexpectedDestroy(_) => "unexpected-destroy",
            Fallback::GaveUp { .. } => "gave-up",
            Fallback::Blocked { .. } => "blocked",
        }
    }

    /// The text shown to a person.
    pub fn message(&self) -> String {
        match self {
            Fallback::NoWebGpu => "This browser does not support WebGPU. Try a recent Chrome, Edge or Firefox, or enable WebGPU in its settings.".into(),
            Fallback::NoAdapter => "WebGPU is available but no GPU adapter was found. Your GPU or driver may be blocked; check chrome://gpu.".into(),
            Fallback::Canvas(m) => format!("The canvas could not be set up for WebGPU: {m}"),
            Fallback::InitFailed(m) => format!("The scene could not be built on the GPU: {m}"),
            Fallback::UnexpectedDestroy(m) => format!("The GPU device was destroyed although the page did not ask for it ({m}). The picture is frozen; reload the page."),
            Fallback::GaveUp { attempts, last } => format!("Could not restore access to the GPU after {attempts} attempts ({last})."),
            Fallback::Blocked { attempts } => format!("The browser has blocked WebGPU for this page after repeated GPU losses ({attempts} attempts failed). Reload the page to try again."),
        }
    }
}

/// What the browser layer must do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Run init now.
    Init,
    /// Run init after this many milliseconds.
    RetryAfter(u32),
    /// Show the fallback; nothing more happens.
    ShowFallback(Fallback),
    /// The device was destroyed on purpose: stay stopped.
    Stop,
    /// Nothing to do (a stale or repeated event).
    Nothing,
}

/// The last loss, as `gpuStatus().lastLoss` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LossRecord {
    /// The reason.
    pub reason: LossReason,
    /// The implementation's message.
    pub message: String,
    /// Whether the application asked for it.
    pub requested: bool,
}

/// The supervisor's state machine.
#[derive(Clone, Debug)]
pub struct Supervisor {
    state: DeviceState,
    backoff: Backoff,
    attempt: u32,
    generation: u64,
    recoveries: u64,
    losses: u64,
    pending_intent: Option<DestroyIntent>,
    last_loss: Option<LossRecord>,
    fallback: Option<Fallback>,
}

impl Default for Supervisor {
    fn default() -> Self {
        Supervisor::new(Backoff::default())
    }
}

impl Supervisor {
    /// A supervisor with the given backoff schedule.
    pub fn new(backoff: Backoff) -> Self {
        Supervisor {
            state: DeviceState::Starting,
            backoff,
            attempt: 0,
            generation: 0,
            recoveries: 0,
            losses: 0,
            pending_intent: None,
            last_loss: None,
            fallback: None,
        }
    }

    /// The current state.
    pub fn state(&self) -> DeviceState {
        self.state
    }

    /// Devices created so far.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Successful recoveries so far.
    pub fn recoveries(&self) -> u64 {
        self.recoveries
    }

    /// Losses seen so far.
    pub fn losses(&self) -> u64 {
        self.losses
    }

    /// The current recovery attempt (0 when none is under way).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The last loss, if any.
    pub fn last_loss(&self) -> Option<&LossRecord> {
        self.last_loss.as_ref()
    }

    /// The fallback shown, if any.
    pub fn fallback(&self) -> Option<&Fallback> {
        self.fallback.as_ref()
    }

    /// Whether frames may be drawn.
    pub fn may_draw(&self) -> bool {
        self.state == DeviceState::Running
    }

    /// Begins: the first init runs now.
    pub fn start(&mut self) -> Action {
        self.state = DeviceState::Starting;
        Action::Init
    }

    /// A device was created (counted whether or not init then succeeds).
    pub fn device_created(&mut self) {
        self.generation += 1;
    }

    /// Init finished: the device is running.
    pub fn init_succeeded(&mut self) {
        if self.state == DeviceState::Recovering {
            self.recoveries += 1;
        }
        self.state = DeviceState::Running;
        self.attempt = 0;
    }

    /// Init failed.
    pub fn init_failed(&mut self, failure: InitFailure) -> Action {
        match self.state {
            DeviceState::Starting | DeviceState::Recovering => {}
            _ => return Action::Nothing,
        }
        let first_start = self.state == DeviceState::Starting && self.losses == 0;
        let terminal = match &failure {
            InitFailure::NoWebGpu => Some(Fallback::NoWebGpu),
            InitFailure::Canvas(m) => Some(Fallback::Canvas(m.clone())),
            InitFailure::Resources(m) => Some(Fallback::InitFailed(m.clone())),
            InitFailure::NoAdapter if first_start => Some(Fallback::NoAdapter),
            _ => None,
        };
        if let Some(fallback) = terminal {
            return self.fail(fallback);
        }
        if self.state == DeviceState::Starting {
            self.state = DeviceState::Recovering;
        } else {
            self.attempt += 1;
        }
        match self.backoff.delay_ms(self.attempt) {
            Some(delay) => Action::RetryAfter(delay),
            None => {
                let attempts = self.attempt;
                let fallback = if failure == InitFailure::NoAdapter {
                    Fallback::Blocked { attempts }
                } else {
                    Fallback::GaveUp {
                        attempts,
                        last: failure.describe(),
                    }
                };
                self.fail(fallback)
            }
        }
    }

    /// The application is about to call `destroy()` itself.
    pub fn request_destroy(&mut self, intent: DestroyIntent) {
        self.pending_intent = Some(intent);
    }

    /// The current device resolved `lost`.
    pub fn lost(&mut self, reason: LossReason, message: impl Into<String>) -> Action {
        let message = message.into();
        match self.state {
            DeviceState::Failed | DeviceState::Stopped => return Action::Nothing,
            DeviceState::Starting | DeviceState::Recovering => {
                self.losses += 1;
                self.last_loss = Some(LossRecord {
                    reason,
                    message: message.clone(),
                    requested: false,
                });
                return self.init_failed(InitFailure::LostDuringInit(message));
            }
            DeviceState::Running | DeviceState::Lost => {}
        }
        self.losses += 1;
        let intent = self.pending_intent.take();
        self.last_loss = Some(LossRecord {
            reason,
            message: message.clone(),
            requested: intent.is_some(),
        });
        match (reason, intent) {
            (_, Some(DestroyIntent::Stop)) => {
                self.state = DeviceState::Stopped;
                Action::Stop
            }
            (LossReason::Destroyed, None) => self.fail(Fallback::UnexpectedDestroy(message)),
            (_, Some(DestroyIntent::Recreate)) | (LossReason::Unknown, None) => {
                self.state = DeviceState::Recovering;
                self.attempt = 0;
                match self.backoff.delay_ms(0) {
                    Some(delay) => Action::RetryAfter(delay),
                    None => self.fail(Fallback::GaveUp {
                        attempts: 0,
                        last: "recovery disabled".into(),
                    }),
                }
            }
        }
    }

    /// A retry timer fired.
    pub fn retry_due(&mut self) -> Action {
        if self.state == DeviceState::Recovering {
            Action::Init
        } else {
            Action::Nothing
        }
    }

    fn fail(&mut self, fallback: Fallback) -> Action {
        self.state = DeviceState::Failed;
        self.fallback = Some(fallback.clone());
        Action::ShowFallback(fallback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running() -> Supervisor {
        let mut s = Supervisor::default();
        assert_eq!(s.start(), Action::Init);
        s.device_created();
        s.init_succeeded();
        s
    }

    #[test]
    fn first_start_runs_and_counts_a_generation() {
        let s = running();
        assert_eq!(s.state(), DeviceState::Running);
        assert_eq!(s.generation(), 1);
        assert_eq!(s.recoveries(), 0);
        assert!(s.may_draw());
    }

    #[test]
    fn unknown_loss_recovers_after_backoff() {
        let mut s = running();
        assert_eq!(
            s.lost(LossReason::Unknown, "gpu crash"),
            Action::RetryAfter(300)
        );
        assert_eq!(s.state(), DeviceState::Recovering);
        assert!(!s.may_draw());
        assert_eq!(s.retry_due(), Action::Init);
        s.device_created();
        s.init_succeeded();
        assert_eq!(s.state(), DeviceState::Running);
        assert_eq!(s.generation(), 2);
        assert_eq!(s.recoveries(), 1);
        assert_eq!(s.last_loss().unwrap().reason, LossReason::Unknown);
    }

    #[test]
    fn requested_stop_does_not_restart() {
        let mut s = running();
        s.request_destroy(DestroyIntent::Stop);
        assert_eq!(s.lost(LossReason::Destroyed, ""), Action::Stop);
        assert_eq!(s.state(), DeviceState::Stopped);
        assert_eq!(s.retry_due(), Action::Nothing);
        assert!(s.last_loss().unwrap().requested);
    }

    #[test]
    fn unrequested_destroyed_is_reported_and_falls_back() {
        let mut s = running();
        let action = s.lost(LossReason::Destroyed, "swap chain");
        assert!(matches!(
            action,
            Action::ShowFallback(Fallback::UnexpectedDestroy(ref m)) if m == "swap chain"
        ));
        assert_eq!(s.state(), DeviceState::Failed);
        assert!(!s.last_loss().unwrap().requested);
        assert_eq!(s.lost(LossReason::Unknown, "again"), Action::Nothing);
    }

    #[test]
    fn recreate_intent_follows_the_real_loss_path() {
        let mut s = running();
        s.request_destroy(DestroyIntent::Recreate);
        assert_eq!(s.lost(LossReason::Destroyed, ""), Action::RetryAfter(300));
        assert_eq!(s.state(), DeviceState::Recovering);
        assert!(s.last_loss().unwrap().requested);
    }

    #[test]
    fn failed_attempts_back_off_then_give_up() {
        let mut s = running();
        assert_eq!(s.lost(LossReason::Unknown, "x"), Action::RetryAfter(300));
        let fail = || InitFailure::DeviceRequest("no".into());
        assert_eq!(s.init_failed(fail()), Action::RetryAfter(600));
        assert_eq!(s.init_failed(fail()), Action::RetryAfter(1200));
        assert_eq!(s.init_failed(fail()), Action::RetryAfter(2400));
        let last = s.init_failed(fail());
        assert!(matches!(
            last,
            Action::ShowFallback(Fallback::GaveUp { attempts: 4, .. })
        ));
        assert_eq!(s.state(), DeviceState::Failed);
    }

    #[test]
    fn null_adapter_after_losses_asks_for_a_reload() {
        let mut s = running();
        s.lost(LossReason::Unknown, "x");
        for _ in 0..3 {
            assert!(matches!(
                s.init_failed(InitFailure::NoAdapter),
                Action::RetryAfter(_)
            ));
        }
        let last = s.init_failed(InitFailure::NoAdapter);
        match last {
            Action::ShowFallback(f @ Fallback::Blocked { .. }) => {
                assert!(f.message().contains("Reload"));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn loss_during_recovery_counts_as_a_failed_attempt() {
        let mut s = running();
        s.lost(LossReason::Unknown, "first");
        assert_eq!(s.retry_due(), Action::Init);
        s.device_created();
        assert_eq!(
            s.lost(LossReason::Unknown, "second"),
            Action::RetryAfter(600)
        );
        assert_eq!(s.losses(), 2);
        assert_eq!(s.attempt(), 1);
        s.device_created();
        s.init_succeeded();
        assert_eq!(s.recoveries(), 1);
        assert_eq!(s.attempt(), 0);
        assert_eq!(
            s.lost(LossReason::Unknown, "third"),
            Action::RetryAfter(300)
        );
    }

    #[test]
    fn first_start_failures() {
        let mut s = Supervisor::default();
        s.start();
        assert_eq!(
            s.init_failed(InitFailure::NoWebGpu),
            Action::ShowFallback(Fallback::NoWebGpu)
        );
        let mut s = Supervisor::default();
        s.start();
        assert_eq!(
            s.init_failed(InitFailure::NoAdapter),
            Action::ShowFallback(Fallback::NoAdapter)
        );
        let mut s = Supervisor::default();
        s.start();
        assert_eq!(
            s.init_failed(InitFailure::DeviceRequest("busy".into())),
            Action::RetryAfter(300)
        );
        assert_eq!(s.state(), DeviceState::Recovering);
    }

    #[test]
    fn many_losses_in_a_row_all_recover() {
        let mut s = running();
        for n in 0..10 {
            assert_eq!(
                s.lost(LossReason::Unknown, "crash"),
                Action::RetryAfter(300)
            );
            assert_eq!(s.retry_due(), Action::Init);
            s.device_created();
            s.init_succeeded();
            assert_eq!(s.recoveries(), n + 1);
        }
        assert_eq!(s.generation(), 11);
    }
}
