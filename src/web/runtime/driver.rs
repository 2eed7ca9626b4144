//! The driver: the one loop that runs the runtime. Events go in (from the
//! page, the attempt, the watchers, the application's calls), the pure
//! [`Supervisor`] decides, and the loop carries out its [`Command`]s; an
//! animation frame runs as a job of the same loop.
//!
//! The loop is the only code that marks the runtime busy ([`Driver::busy`]),
//! and it runs every job through the trampoline, which returns on every
//! throw: a job that throws is reported and the next one runs; a trap crashes
//! the module and the crash path runs, whatever the mark says. An event that
//! arrives while the loop runs (a `stop()` from inside a frame, a loss
//! reported by a sink) waits in the queue for the job before it to end.

use std::cell::Cell;
use std::collections::VecDeque;
use std::rc::Rc;

use gloo_timers::callback::Timeout;

use super::slot::{Handover, Live};
use super::{App, Inner};
use crate::fault::{Fault, FaultKind};
use crate::held::Held;
use crate::supervisor::{
    Command, DeviceState, Event, Fallback, StallAction, Supervisor, SupervisorOptions, TimerPurpose,
};
use crate::web::crash;
use crate::web::device::GuardedDevice;

/// One job of the loop.
pub(super) enum Job<R> {
    /// An event for the supervisor, with what its sender hands over.
    Event(Event, Handover<R>),
    /// An animation frame, at this time.
    Frame(f64),
}

/// The supervisor, the jobs waiting for the loop, and the loop's mark.
pub(super) struct Driver<R> {
    supervisor: Held<Supervisor>,
    queue: Held<VecDeque<Job<R>>>,
    /// Set while the loop runs (by `Inner::drive` only).
    busy: Cell<bool>,
}

impl<R> Driver<R> {
    pub(super) fn new(options: SupervisorOptions) -> Self {
        Driver {
            supervisor: Held::new(Supervisor::new(options)),
            queue: Held::default(),
            busy: Cell::new(false),
        }
    }

    /// What `f` reads of the supervisor (`None` only if the library is
    /// wrong: it was reached while lent, which is recorded).
    pub(super) fn read<T>(&self, f: impl FnOnce(&Supervisor) -> T) -> Option<T> {
        self.supervisor.with(|s| f(s))
    }

    /// Whether frames may be drawn on `generation`.
    pub(super) fn may_draw(&self, generation: u64) -> bool {
        self.read(|s| s.may_draw(generation)).unwrap_or(false)
    }

    /// Whether `generation` runs or is being initialised (a loss of any
    /// other is not news).
    pub(super) fn owns_generation(&self, generation: u64) -> bool {
        self.read(|s| s.owns_generation(generation))
            .unwrap_or(false)
    }

    /// Whether `attempt` is the attempt under way.
    pub(super) fn attempt_owns(&self, attempt: u64) -> bool {
        self.read(|s| s.attempt_in_flight() == Some(attempt))
            .unwrap_or(false)
    }

    fn decide(&self, event: Event) -> Vec<Command> {
        self.supervisor
            .with(|s| s.handle(event))
            .unwrap_or_default()
    }

    fn push(&self, job: Job<R>) {
        self.queue.with(|q| q.push_back(job));
    }

    fn pop(&self) -> Option<Job<R>> {
        self.queue.with(|q| q.pop_front()).flatten()
    }
}

impl<A: App> Inner<A> {
    /// Hands `event` to the supervisor and carries out its commands.
    pub(super) fn dispatch(this: &Rc<Self>, event: Event) {
        Inner::drive(this, Job::Event(event, Handover::None));
    }

    /// As `dispatch`, with what the event's sender hands over.
    pub(super) fn dispatch_with(this: &Rc<Self>, event: Event, handover: Handover<A::Resources>) {
        Inner::drive(this, Job::Event(event, handover));
    }

    /// Runs `job`, then every job queued meanwhile; while the loop runs
    /// already, queues it. After a crash nothing runs but the crash path.
    pub(super) fn drive(this: &Rc<Self>, job: Job<A::Resources>) {
        if crash::crashed() {
            drop_job(job);
            return Inner::on_crash(this);
        }
        if this.driver.busy.replace(true) {
            return this.driver.push(job);
        }
        let mut next = Some(job);
        while let Some(job) = next.take().or_else(|| this.driver.pop()) {
            let mut job = Some(job);
            let done = crash::trampoline(&mut || {
                if let Some(job) = job.take() {
                    Inner::run_job(this, job);
                }
            });
            if crash::crashed() {
                break;
            }
            if let Err(thrown) = done {
                this.session.faults().report_ref(&crash::thrown_fault(
                    "the runtime caught an exception while handling its events",
                    &thrown,
                ));
            }
            Inner::report_bugs(this);
        }
        this.driver.busy.set(false);
        if crash::crashed() {
            Inner::on_crash(this);
        }
    }

    fn run_job(this: &Rc<Self>, job: Job<A::Resources>) {
        match job {
            Job::Frame(time) => Inner::draw_frame(this, time),
            Job::Event(event, handover) => {
                let mut handover = handover;
                for command in this.driver.decide(event) {
                    // A command whose application code trapped (a `Drop` that
                    // panicked in a teardown) ends the job: the crash path
                    // runs next, and nothing after it (no new attempt).
                    if crash::crashed() {
                        return drop_handover(handover);
                    }
                    Inner::carry_out(this, command, &mut handover);
                }
                // What no command took is let go, quietly.
                Inner::dispose(this, handover);
            }
        }
    }

    /// Bugs the library caught in itself reach the fault path, once each.
    fn report_bugs(this: &Rc<Self>) {
        for bug in crate::held::take_bugs() {
            this.session
                .faults()
                .report_ref(&Fault::new(FaultKind::Exception, bug));
        }
    }

    /// The module panicked or trapped: the supervisor stops everything for good
    /// (once), bypassing the queue, whose jobs are dropped (a device they
    /// carry is destroyed, its attempt hears "gone"; what they built is leaked).
    pub(super) fn on_crash(this: &Rc<Self>) {
        while let Some(job) = this.driver.pop() {
            drop_job(job);
        }
        let message = crash::crash_message().unwrap_or_default();
        let state = this.driver.read(|s| s.state());
        let commands = match state {
            Some(DeviceState::Crashed) => return,
            Some(_) => this.driver.decide(Event::Crashed { message }),
            // The crash left the supervisor lent (it panicked inside it): the
            // loop stops and the fallback is shown all the same, once.
            None if this.fallback.crash_shown() => return,
            None => vec![Command::ShowFallback(Fallback::Crashed(message))],
        };
        this.fallback.crash_shown();
        this.frame_loop.cancel();
        this.watchers.stop_the_clock();
        this.clear_injections();
        let mut nothing = Handover::None;
        for command in commands {
            Inner::carry_out(this, command, &mut nothing);
        }
    }

    fn carry_out(this: &Rc<Self>, command: Command, handover: &mut Handover<A::Resources>) {
        match command {
            Command::BeginInit { attempt } => {
                // The attempt holds the runtime weakly: one stuck in the
                // browser keeps nothing of a runtime that was let go.
                let weak = Rc::downgrade(this);
                wasm_bindgen_futures::spawn_local(Inner::run_attempt(weak, attempt));
            }
            Command::Adopt { generation, .. } => {
                if let Handover::Device(arrival) = std::mem::replace(handover, Handover::None) {
                    if let Some((raw, decision)) = arrival.open() {
                        let device = GuardedDevice::with_context(raw, this.session.clone());
                        this.slot.initialising(generation, device.clone());
                        // The attempt goes on from its await, after this job.
                        decision.send((device, generation));
                    }
                }
            }
            Command::Discard { .. } => {
                let taken = std::mem::replace(handover, Handover::None);
                Inner::dispose(this, taken);
            }
            Command::Run { generation } => Inner::run(this, generation, handover),
            Command::Schedule {
                token,
                delay_ms,
                purpose,
            } => Inner::schedule(this, token, delay_ms, purpose),
            Command::CancelTimer { token } => this.timers.cancel(token),
            Command::Destroy { generation } => {
                if let Some(device) = this.slot.take_initialising(generation) {
                    // Quietly: what its work fails with from now on is not news.
                    device.let_go();
                }
                if matches!(handover, Handover::Built(gpu, _) if gpu.generation == generation) {
                    let taken = std::mem::replace(handover, Handover::None);
                    Inner::dispose(this, taken);
                }
            }
            Command::Teardown { generation } => Inner::teardown(this, generation),
            Command::ReportStall {
                generation,
                waited_ms,
                action,
            } => {
                this.watchers.set_stalled();
                let what = match action {
                    StallAction::RequestFrame => "asking for a frame again",
                    StallAction::DriveFromTimer => {
                        "still frozen: probing the device and drawing from a timer until animation frames come back (a new device would stall the same way)"
                    }
                };
                this.session.faults().report_ref(&Fault::new(
                    FaultKind::DeviceLost,
                    format!(
                        "presentation stalled: no animation frame for {waited_ms} ms on device {generation} while it runs (the picture is frozen); {what}"
                    ),
                ));
            }
            Command::RequestFrame { .. } => {
                this.frame_loop.cancel();
                this.frame_loop.request();
            }
            Command::DriveFromTimer { generation } => {
                this.frame_loop.drive_from_timer();
                Inner::probe_live(this, generation);
            }
            Command::ShowFallback(fallback) => Inner::show_fallback(this, &fallback),
        }
    }

    /// Lets go of what an event carried and no command took: a device
    /// (destroyed quietly), or what an attempt built (its resources dropped,
    /// its device let go).
    fn dispose(this: &Rc<Self>, handover: Handover<A::Resources>) {
        match handover {
            Handover::None => {}
            Handover::Device(arrival) => {
                if let Some((raw, _)) = arrival.open() {
                    GuardedDevice::with_context(raw, this.session.clone()).let_go();
                }
            }
            Handover::Built(gpu, resources) => {
                gpu.device.let_go();
                Inner::drop_resources(this, resources);
                this.slot.release(&gpu);
            }
        }
    }

    /// Shows the fallback once, as what it is: a failed build was reported
    /// already as its own fault, and the fallback only refers to it.
    fn show_fallback(this: &Rc<Self>, fallback: &Fallback) {
        let text = match fallback {
            Fallback::InitFailed(_) => {
                "giving up: the application's build failed (the fault above)".to_string()
            }
            _ => format!("giving up: {}", fallback.message()),
        };
        // Never held back by the rate limit: the errors before it must not
        // hide why the runtime stopped.
        match fallback.fault_kind() {
            Some(kind) => this.session.faults().report_final(&Fault::new(kind, text)),
            None => this.session.faults().note_final(&text),
        }
        if let Err(thrown) = this.fallback.show(&this.canvas, fallback) {
            this.session
                .faults()
                .report_ref(&crash::thrown_fault("the fallback hook threw", &thrown));
        }
    }

    /// Init of `generation` finished and the supervisor says run: what its
    /// attempt built goes live and the loop starts.
    fn run(this: &Rc<Self>, generation: u64, handover: &mut Handover<A::Resources>) {
        let Handover::Built(gpu, resources) = std::mem::replace(handover, Handover::None) else {
            return;
        };
        if gpu.generation != generation {
            return Inner::dispose(this, Handover::Built(gpu, resources));
        }
        let max_dimension = gpu.device.raw().limits().max_texture_dimension_2d();
        let live = Live {
            gpu,
            resources: std::cell::RefCell::new(resources),
            frames: Cell::new(0),
            max_dimension,
        };
        if let Err(stale) = this.slot.go_live(live) {
            let Live { gpu, resources, .. } = *stale;
            return Inner::dispose(this, Handover::Built(gpu, resources.into_inner()));
        }
        // Its build saw the canvas's size: no resize is owed to it.
        this.frames.no_resize_owed();
        // A stall is judged from now: the last frame was another device's.
        this.watchers.frame_ran();
        this.session.faults().note(&format!(
            "device generation {generation} running ({})",
            this.slot.adapter()
        ));
        Inner::start_loop(this);
        // After a loss, frames come from a timer too until the first
        // animation frame: Firefox sends none after its GPU process crashed.
        let after_a_loss = this.driver.read(Supervisor::running_after_a_loss) == Some(true);
        if after_a_loss && !super::watchers::page_hidden() {
            this.frame_loop.bridge_after_a_rebuild();
        }
    }

    /// Drops the application's resources through the trampoline (its `Drop` may
    /// throw); leaked after a crash.
    pub(super) fn drop_resources<T>(this: &Rc<Self>, resources: T) {
        if let Err(thrown) = crash::drop_in_trampoline(resources) {
            if crash::crashed() {
                return;
            }
            this.session.faults().report_ref(&crash::thrown_fault(
                "dropping the application's resources threw",
                &thrown,
            ));
        }
    }

    fn schedule(this: &Rc<Self>, token: u64, delay_ms: u32, purpose: TimerPurpose) {
        if purpose == TimerPurpose::Retry {
            this.session
                .faults()
                .note(&format!("re-initialising the GPU in {delay_ms} ms"));
        }
        let weak = Rc::downgrade(this);
        let timeout = Timeout::new(delay_ms, move || {
            let Some(runtime) = weak.upgrade() else {
                return;
            };
            runtime.timers.fired(token);
            Inner::dispatch(&runtime, Event::TimerFired { token });
        });
        this.timers.keep(token, timeout);
    }

    /// Stops the loop, releases every GPU object of `generation` and destroys it.
    fn teardown(this: &Rc<Self>, generation: u64) {
        this.frame_loop.cancel();
        // A new device starts on animation frames.
        this.frame_loop.stop_driving();
        this.cancel_pending_loss();
        if let Some(live) = this.slot.take_live(generation) {
            this.slot.release(&live.gpu);
            Inner::drop_resources(this, live);
        }
    }
}

/// A job dropped unrun (after a crash): a device it carries is destroyed, what
/// it built is leaked (its state cannot be trusted).
fn drop_job<R>(job: Job<R>) {
    if let Job::Event(_, handover) = job {
        drop_handover(handover);
    }
}

/// What an event carried, let go after a crash: a device is destroyed, what
/// an attempt built is leaked.
fn drop_handover<R>(handover: Handover<R>) {
    if let Handover::Built(gpu, resources) = handover {
        std::mem::forget(gpu);
        std::mem::forget(resources);
    }
}
