//! The driver: the platform-neutral runtime. Events go in (from the platform,
//! an attempt, the application's calls), `webgpu-guard-core`'s pure
//! [`Supervisor`] decides, and the driver carries out its [`Command`]s: init
//! attempts (a new instance, surface, adapter and device each time), the
//! frame loop, teardown, timers and the fallback. A frame runs as a job of
//! the same loop, so nothing the application calls from a frame (a stop, a
//! recovery) runs inside it: it waits in the queue for the frame to end.
//!
//! It knows the platform only through [`Host`]; the browser's is `web`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::{Rc, Weak};

use webgpu_guard_core::fault::{Fault, FaultKind};
use webgpu_guard_core::init_timings::{smoothed, AttemptSteps, InitClock, InitTimings};
use webgpu_guard_core::ledger::SharedLedger;
use webgpu_guard_core::oneshot;
use webgpu_guard_core::supervisor::{
    Command, DeviceState, Event, Fallback, InitFailure, InitStep, LossReason, RecoveryAnswer,
    StallAction, Supervisor, SupervisorOptions, TimerPurpose,
};

use crate::app::{App, Frame};
use crate::gpu::{Gpu, GpuParts};
use crate::host::{Handle, Host};
use crate::scopes::ClosedSet;
use crate::surface_config::{self, fit_size};

/// The driver's settings.
#[derive(Clone, Debug)]
pub(crate) struct DriverOptions {
    pub(crate) supervisor: SupervisorOptions,
    pub(crate) device_label: String,
    /// One frame in how many runs inside error scopes (0 and 1: every frame).
    pub(crate) frame_scope_every: u32,
}

/// A device an attempt just made, handed to the supervisor's decision.
struct Arrival {
    instance: wgpu::Instance,
    surface: Option<wgpu::Surface<'static>>,
    adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// Set when the driver lets the device go: what its scopes say after
    /// that is not news (its `Gpu` reports nothing more).
    let_go: Rc<Cell<bool>>,
}

/// A device adopted by the supervisor, its build under way: its generation,
/// the device, and the flag set when the driver lets it go.
type Initialising = (u64, wgpu::Device, Rc<Cell<bool>>);

/// One device generation, built and running.
pub(crate) struct Live<R> {
    pub(crate) gpu: Rc<Gpu>,
    instance: wgpu::Instance,
    target: RefCell<Target>,
    pub(crate) resources: RefCell<Option<R>>,
    /// The device's largest texture side: what the drawing size is cut to.
    max_side: u32,
    frames: Cell<u64>,
    /// The loss watch and the uncaptured-error listener: taken (disarmed)
    /// before the device is let go.
    watches: RefCell<Vec<Handle>>,
}

/// Where frames are drawn.
enum Target {
    /// The window's (or canvas's) surface, as configured.
    Surface {
        surface: wgpu::Surface<'static>,
        config: wgpu::SurfaceConfiguration,
    },
    /// No window (headless): a texture each frame is drawn into, read back
    /// by the runtime's `capture`.
    Offscreen(wgpu::Texture),
}

/// The format of an offscreen target.
const OFFSCREEN_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;

/// An offscreen target of `size` on `device`.
fn offscreen_texture(device: &wgpu::Device, size: (u32, u32)) -> wgpu::Texture {
    device.create_texture(&wgpu::TextureDescriptor {
        label: Some("offscreen target"),
        size: wgpu::Extent3d {
            width: size.0,
            height: size.1,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: OFFSCREEN_FORMAT,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT
            | wgpu::TextureUsages::COPY_SRC
            | wgpu::TextureUsages::TEXTURE_BINDING,
        view_formats: &[],
    })
}

/// What came of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Drawn {
    /// Drawn and presented.
    Presented,
    /// The surface gave no texture now (occluded, timed out): try again later.
    NotNow,
    /// Not drawn (the surface reconfigured or made again, a crash).
    Not,
}

/// How long after an occluded or timed-out surface the next frame is tried.
const SURFACE_RETRY_MS: u32 = 100;

/// A frame's texture, acquired.
enum Acquired {
    Surface(wgpu::SurfaceTexture),
    Offscreen(wgpu::Texture),
}

impl Acquired {
    fn texture(&self) -> &wgpu::Texture {
        match self {
            Acquired::Surface(surface) => &surface.texture,
            Acquired::Offscreen(texture) => texture,
        }
    }
}

/// What an event hands over with it.
enum Handover<R> {
    None,
    Device {
        arrival: Box<Arrival>,
        reply: oneshot::Sender<(Box<Arrival>, u64)>,
    },
    Built(Box<Live<R>>),
}

/// One job of the loop.
enum Job<R> {
    Event(Event, Handover<R>),
    /// A frame at this time; `true` when it came from a timer.
    Frame(f64, bool),
}

/// The runtime's state, on any platform.
pub(crate) struct Driver<A: App, H: Host> {
    pub(crate) app: Rc<A>,
    pub(crate) host: H,
    options: DriverOptions,
    me: Weak<Self>,
    supervisor: RefCell<Supervisor>,
    jobs: RefCell<VecDeque<Job<A::Resources>>>,
    busy: Cell<bool>,
    pub(crate) ledger: SharedLedger,
    initialising: RefCell<Option<Initialising>>,
    live: RefCell<Option<Rc<Live<A::Resources>>>>,
    timers: RefCell<Vec<(u64, Handle)>>,
    frame_request: RefCell<Option<Handle>>,
    /// Frames from a timer, while animation frames do not come (a stall, or
    /// the first frames after a loss).
    driven: RefCell<Option<Handle>>,
    clock: RefCell<Option<Handle>>,
    visibility: RefCell<Option<Handle>>,
    frames: Cell<u64>,
    frames_from_timer: Cell<u64>,
    last_frame_ms: Cell<f64>,
    crash_handled: Cell<bool>,
    record: Record,
}

/// What inits and frames did, for the status (milliseconds on the
/// platform's clock).
#[derive(Default)]
struct Record {
    /// The inits' timings, from their triggers to their first frames.
    init: InitClock,
    adapter: RefCell<String>,
    frame_ms: Cell<f64>,
    frames_thrown: Cell<u64>,
    stalled: Cell<bool>,
    resizes: Cell<u64>,
}

impl Record {
    /// The application's `frame` took `elapsed` ms: smoothed in.
    fn frame_took(&self, elapsed: f64) {
        self.frame_ms.set(smoothed(self.frame_ms.get(), elapsed));
    }
}

/// What [`Driver::status_report`] reads for the status.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Report {
    pub(crate) frames: u64,
    pub(crate) frames_from_timer: u64,
    pub(crate) driven_by_timer: bool,
    pub(crate) loop_alive: bool,
    pub(crate) adapter: String,
    pub(crate) frame_ms: f64,
    pub(crate) frames_thrown: u64,
    pub(crate) stalled: bool,
    pub(crate) resizes: u64,
    pub(crate) cold_start: Option<InitTimings>,
    pub(crate) last_init: Option<InitTimings>,
}

impl<A: App, H: Host> Driver<A, H> {
    pub(crate) fn new(app: Rc<A>, host: H, options: DriverOptions) -> Rc<Self> {
        let driver = Rc::new_cyclic(|me| Driver {
            app,
            host,
            supervisor: RefCell::new(Supervisor::new(options.supervisor)),
            options,
            me: me.clone(),
            jobs: RefCell::default(),
            busy: Cell::new(false),
            ledger: SharedLedger::new(),
            initialising: RefCell::default(),
            live: RefCell::default(),
            timers: RefCell::default(),
            frame_request: RefCell::default(),
            driven: RefCell::default(),
            clock: RefCell::default(),
            visibility: RefCell::default(),
            frames: Cell::new(0),
            frames_from_timer: Cell::new(0),
            last_frame_ms: Cell::new(0.0),
            crash_handled: Cell::new(false),
            record: Record::default(),
        });
        let me = driver.me.clone();
        driver.host.on_crash_elsewhere(Box::new(move || {
            if let Some(driver) = me.upgrade() {
                driver.after_app_code();
            }
        }));
        driver
    }

    // ---- what the platform's runtime reads ----

    /// What `f` reads of the supervisor.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Supervisor) -> T) -> T {
        f(&self.supervisor.borrow())
    }

    /// The state, as the supervisor says.
    pub(crate) fn state(&self) -> DeviceState {
        self.read(Supervisor::state)
    }

    /// What inits and frames did so far, for the status.
    pub(crate) fn status_report(&self) -> Report {
        let record = &self.record;
        Report {
            frames: self.frames.get(),
            frames_from_timer: self.frames_from_timer.get(),
            driven_by_timer: self.driven.borrow().is_some(),
            loop_alive: self.frame_request.borrow().is_some(),
            adapter: record.adapter.borrow().clone(),
            frame_ms: record.frame_ms.get(),
            frames_thrown: record.frames_thrown.get(),
            stalled: record.stalled.get(),
            resizes: record.resizes.get(),
            cold_start: record.init.cold_start(),
            last_init: record.init.last_init(),
        }
    }

    /// What the next init is timed from came now, as in webgpu-guard: a
    /// start, a recovery asked for, a loss of the running device (its first
    /// word; a later word of it is no news), the page shown again.
    fn init_triggered(&self) {
        self.record.init.triggered(self.host.now_ms());
    }

    /// The running generation's GPU and resources, lent to `f`; `None` when
    /// nothing runs or they are in use (from inside a frame).
    ///
    /// `f` runs as a job of the loop would (a stop or a recovery it asks for
    /// waits until it returns) and through the platform's guard (a throw is
    /// reported, and leaves no borrow behind).
    pub(crate) fn with_live<T>(&self, f: impl FnOnce(&Gpu, &mut A::Resources) -> T) -> Option<T> {
        let live = self.live.try_borrow().ok()?.clone()?;
        let was_busy = self.busy.replace(true);
        let mut out = None;
        let called = match live.resources.try_borrow_mut() {
            Ok(mut resources) => match resources.as_mut() {
                Some(resources) => {
                    let depth = live.gpu.scopes().depth();
                    let mut f = Some(f);
                    let called = self.call_app("with_live", &mut || {
                        if let Some(f) = f.take() {
                            out = Some(f(&live.gpu, &mut *resources));
                        }
                    });
                    self.close_leaked_scopes(&live.gpu, depth);
                    called
                }
                None => Ok(()),
            },
            Err(_) => Ok(()),
        };
        if let Err(fault) = called {
            self.report(fault);
        }
        if !was_busy {
            self.run_queued();
        }
        out
    }

    /// Runs application code `f` through the platform's guard; after a
    /// crash, never: `Err` with the crash (told once, by its fallback). A
    /// crash `f` causes is handled as soon as the loop is not busy.
    fn call_app(&self, what: &str, f: &mut dyn FnMut()) -> Result<(), Fault> {
        if let Some(crash) = self.host.crashed() {
            return Err(Fault::new(FaultKind::Exception, crash));
        }
        let called = self.host.call_app(what, f);
        self.after_app_code();
        called
    }

    /// Application code ran: if it crashed, everything stops now, unless the
    /// loop is busy (it handles the crash when its jobs end).
    fn after_app_code(&self) {
        if self.busy.get() {
            return;
        }
        if let Some(message) = self.host.crashed() {
            self.on_crash(message);
        }
    }

    /// Closes scope sets with `close`, through the platform's guard: a set
    /// wgpu refuses to pop (a raw scope of the application's pushed after
    /// it and still held) is the application's crash, not the runtime's.
    fn close_scopes(&self, close: impl FnOnce() -> Vec<ClosedSet>) -> Vec<ClosedSet> {
        let mut close = Some(close);
        let mut closed = Vec::new();
        let _ = self.call_app("closing error scopes", &mut || {
            if let Some(close) = close.take() {
                closed = close();
            }
        });
        closed
    }

    /// Closes (newest first, popped in reverse) every scope set opened above
    /// `depth` that application code left open: a phase abandoned by a throw
    /// never outlives the call that opened it. What they catch is reported.
    fn close_leaked_scopes(&self, gpu: &Gpu, depth: usize) {
        for set in self.close_scopes(|| gpu.scopes().close_above(depth)) {
            gpu.report_later(set);
        }
    }

    // ---- events ----

    /// Hands `event` to the supervisor and carries out its commands.
    pub(crate) fn dispatch(&self, event: Event) {
        self.drive(Job::Event(event, Handover::None));
    }

    /// `matarGPU()`: what the supervisor will do about it.
    pub(crate) fn force_recovery(&self) -> RecoveryAnswer {
        let answer = self.read(Supervisor::recovery_answer);
        // A request that starts nothing (one under way, or the page hidden)
        // moves no init's clock.
        if answer.starts_now() {
            self.init_triggered();
        }
        self.dispatch(Event::RequestRecovery);
        answer
    }

    /// Starts: watches the page and the clock, and brings a device up. After
    /// a crash nothing starts again: the `crashed` fallback stays.
    pub(crate) fn start(&self) {
        if self.host.crashed().is_some() {
            return;
        }
        self.host.hide_fallback();
        self.init_triggered();
        let me = self.me.clone();
        *self.visibility.borrow_mut() = Some(self.host.watch_visibility(Box::new(move |hidden| {
            if let Some(driver) = me.upgrade() {
                // Shown: the init that waited for it starts now (an init
                // already under way keeps its clock).
                if !hidden && driver.read(Supervisor::waiting_for_visible) {
                    driver.init_triggered();
                }
                driver.dispatch(Event::Visibility { hidden });
            }
        })));
        // Always: a stop removed the listener, and the page may have been
        // shown (or hidden) since.
        self.dispatch(Event::Visibility {
            hidden: self.host.hidden(),
        });
        self.tick_later();
        self.dispatch(Event::Start);
    }

    /// Stops on purpose: no restart.
    pub(crate) fn stop(&self) {
        self.dispatch(Event::Stop);
        self.clock.borrow_mut().take();
        self.visibility.borrow_mut().take();
    }

    fn tick_later(&self) {
        let me = self.me.clone();
        let handle = self.host.timer(
            1000,
            Box::new(move || {
                let Some(driver) = me.upgrade() else {
                    return;
                };
                // Read in a statement of its own: a borrow taken in the
                // event's expression would live through `dispatch`, whose
                // commands (asking for a frame again) borrow the request.
                let frame_pending = driver.frame_request.borrow().is_some();
                driver.dispatch(Event::Tick {
                    now_ms: driver.host.now_ms() as u64,
                    last_frame_ms: driver.last_frame_ms.get() as u64,
                    frame_pending,
                });
                // Not after a stop or a crash that the tick itself led to:
                // either took the clock.
                if driver.clock.borrow().is_some() {
                    driver.tick_later();
                }
            }),
        );
        *self.clock.borrow_mut() = Some(handle);
    }

    /// Runs `job`, then every job queued meanwhile; while the loop runs
    /// already, queues it.
    fn drive(&self, job: Job<A::Resources>) {
        self.jobs.borrow_mut().push_back(job);
        if !self.busy.get() {
            self.run_queued();
        }
    }

    /// Runs the queued jobs, in order, marking the loop busy meanwhile.
    fn run_queued(&self) {
        self.busy.set(true);
        loop {
            let job = self.jobs.borrow_mut().pop_front();
            let Some(job) = job else {
                break;
            };
            if self.host.crashed().is_some() {
                self.drop_after_crash(job);
                continue;
            }
            self.run_job(job);
        }
        self.busy.set(false);
        if let Some(message) = self.host.crashed() {
            self.on_crash(message);
        }
    }

    /// A job that will never run (the program crashed): a device it carries
    /// is let go; what an attempt built is leaked (its state cannot be
    /// trusted, and no application code runs after a crash).
    fn drop_after_crash(&self, job: Job<A::Resources>) {
        match job {
            Job::Event(_, Handover::Device { arrival, .. }) => {
                self.let_go_of(&arrival.device, &arrival.let_go);
            }
            Job::Event(_, Handover::Built(live)) => {
                std::mem::forget(live.resources.borrow_mut().take());
                self.let_go_of(&live.gpu.device, live.gpu.let_go_flag());
            }
            _ => {}
        }
    }

    fn run_job(&self, job: Job<A::Resources>) {
        match job {
            Job::Frame(time, from_timer) => self.frame(time, from_timer),
            Job::Event(event, mut handover) => {
                let commands = self.supervisor.borrow_mut().handle(event);
                for command in commands {
                    self.carry_out(command, &mut handover);
                }
                self.dispose(handover);
            }
        }
    }

    /// The program panicked or trapped: everything stops for good, once.
    fn on_crash(&self, message: String) {
        if self.crash_handled.replace(true) {
            return;
        }
        let jobs: Vec<_> = self.jobs.borrow_mut().drain(..).collect();
        for job in jobs {
            self.drop_after_crash(job);
        }
        self.frame_request.borrow_mut().take();
        self.driven.borrow_mut().take();
        self.clock.borrow_mut().take();
        self.timers.borrow_mut().clear();
        let commands = self
            .supervisor
            .try_borrow_mut()
            .map(|mut s| {
                s.handle(Event::Crashed {
                    message: message.clone(),
                })
            })
            .unwrap_or_else(|_| vec![Command::ShowFallback(Fallback::Crashed(message))]);
        let trusted = self.host.state_survives_a_crash();
        for command in commands {
            match command {
                Command::ShowFallback(fallback) => self.show_fallback(&fallback),
                // Where a panic unwinds, the runtime's own state is whole:
                // the device is let go and the resources forgotten (no code
                // of the application's runs again, its `Drop` included).
                other if trusted => self.carry_out(other, &mut Handover::None),
                _ => {}
            }
        }
    }

    fn carry_out(&self, command: Command, handover: &mut Handover<A::Resources>) {
        match command {
            Command::BeginInit { attempt } => {
                let me = self.me.clone();
                self.host
                    .spawn(async move { attempt_init(me, attempt).await });
            }
            Command::Adopt { generation, .. } => {
                if let Handover::Device { arrival, reply } =
                    std::mem::replace(handover, Handover::None)
                {
                    *self.initialising.borrow_mut() =
                        Some((generation, arrival.device.clone(), arrival.let_go.clone()));
                    reply.send((arrival, generation));
                }
            }
            Command::Discard { .. } => self.dispose(std::mem::replace(handover, Handover::None)),
            Command::Run { generation } => self.run(generation, handover),
            Command::Schedule {
                token,
                delay_ms,
                purpose,
            } => {
                if purpose == TimerPurpose::Retry {
                    self.note(&format!("re-initialising the GPU in {delay_ms} ms"));
                }
                let me = self.me.clone();
                let handle = self.host.timer(
                    delay_ms,
                    Box::new(move || {
                        if let Some(driver) = me.upgrade() {
                            driver.timers.borrow_mut().retain(|(t, _)| *t != token);
                            driver.dispatch(Event::TimerFired { token });
                        }
                    }),
                );
                self.timers.borrow_mut().push((token, handle));
            }
            Command::CancelTimer { token } => self.timers.borrow_mut().retain(|(t, _)| *t != token),
            Command::Destroy { generation } => {
                let initialising = self.initialising.borrow_mut().take();
                match initialising {
                    Some((g, device, let_go)) if g == generation => {
                        self.let_go_of(&device, &let_go);
                    }
                    other => *self.initialising.borrow_mut() = other,
                }
                if matches!(handover, Handover::Built(live) if live.gpu.generation == generation) {
                    self.dispose(std::mem::replace(handover, Handover::None));
                }
            }
            Command::Teardown { generation } => self.teardown(generation),
            Command::ReportStall {
                generation,
                waited_ms,
                action,
            } => {
                let what = match action {
                    StallAction::RequestFrame => "asking for a frame again",
                    StallAction::DriveFromTimer => {
                        "still frozen: probing the device and drawing from a timer until frames come back"
                    }
                };
                self.record.stalled.set(true);
                self.report(Fault::new(
                    FaultKind::DeviceLost,
                    format!(
                        "presentation stalled: no frame for {waited_ms} ms on device {generation} while it runs (the picture is frozen); {what}"
                    ),
                ));
            }
            Command::RequestFrame { .. } => {
                self.frame_request.borrow_mut().take();
                self.request_frame();
            }
            Command::DriveFromTimer { generation } => {
                self.drive_from_timer();
                self.probe_live(generation);
            }
            Command::ShowFallback(fallback) => self.show_fallback(&fallback),
        }
    }

    /// A frozen picture may be a loss the platform has not told of (a `lost`
    /// promise late, or never resolved): the device is asked, and one that
    /// answers nothing is lost (a later word of the same loss is no news).
    fn probe_live(&self, generation: u64) {
        let Some(gpu) = self
            .live
            .borrow()
            .as_ref()
            .map(|live| live.gpu.clone())
            .filter(|gpu| gpu.generation == generation)
        else {
            return;
        };
        let me = self.me.clone();
        self.host.spawn(async move {
            if gpu.confirm_alive().await {
                return;
            }
            let Some(driver) = me.upgrade() else {
                return;
            };
            if driver.read(|s| s.owns_generation(generation)) {
                driver.init_triggered();
            }
            let at_ms = driver.host.now_ms() as u64;
            driver.dispatch(Event::Lost {
                generation,
                reason: LossReason::Unknown,
                message: "the device answered no probe while its picture was frozen".into(),
                at_ms,
            });
        });
    }

    /// Lets go of what an event carried and no command took.
    fn dispose(&self, handover: Handover<A::Resources>) {
        match handover {
            Handover::None => {}
            Handover::Device { arrival, .. } => {
                self.let_go_of(&arrival.device, &arrival.let_go);
            }
            Handover::Built(live) => self.release(Rc::new(*live)),
        }
    }

    fn show_fallback(&self, fallback: &Fallback) {
        let text = match fallback {
            Fallback::InitFailed(_) => {
                "giving up: the application's build failed (the fault above)".to_string()
            }
            _ => format!("giving up: {}", self.host.fallback_message(fallback)),
        };
        match fallback.fault_kind() {
            // Never held back by the rate limit: the errors before it must
            // not hide why the runtime stopped.
            Some(kind) => self.host.outlet().report_final(Fault::new(kind, text)),
            None => self.host.outlet().note_final(&text),
        }
        self.host.show_fallback(fallback);
    }

    /// What attempt `generation` built goes live and frames start.
    fn run(&self, generation: u64, handover: &mut Handover<A::Resources>) {
        let Handover::Built(live) = std::mem::replace(handover, Handover::None) else {
            return;
        };
        if live.gpu.generation != generation {
            return self.release(Rc::new(*live));
        }
        self.initialising.borrow_mut().take();
        // A stall is judged from now: the last frame was another device's,
        // or none came yet (and a stall of an earlier device is over).
        self.last_frame_ms.set(self.host.now_ms());
        self.record.stalled.set(false);
        let adapter = self.host.adapter_name(&live.gpu.adapter, &live.gpu.device);
        *self.live.borrow_mut() = Some(Rc::new(*live));
        // A running device never sits behind a fallback, however it came up
        // (a start, `matarGPU()` after the fallback).
        self.host.hide_fallback();
        self.host.outlet().set_adapter(&adapter);
        self.note(&format!(
            "device generation {generation} running ({adapter})"
        ));
        *self.record.adapter.borrow_mut() = adapter;
        self.request_frame();
        // After a loss, frames come from a timer too until the first frame
        // arrives: some browsers send none for a while after a GPU process died.
        if self.read(Supervisor::running_after_a_loss) && !self.host.hidden() {
            self.drive_from_timer();
        }
    }

    /// Stops the loop, releases every GPU object of `generation` and lets its
    /// device go.
    fn teardown(&self, generation: u64) {
        self.frame_request.borrow_mut().take();
        self.driven.borrow_mut().take();
        let live = self.live.borrow_mut().take();
        match live {
            Some(live) if live.gpu.generation == generation => self.release(live),
            other => *self.live.borrow_mut() = other,
        }
    }

    /// Drops the application's resources (through the platform's guard: a
    /// `Drop` may throw or panic), disarms the watches, lets the device go.
    fn release(&self, live: Rc<Live<A::Resources>>) {
        let resources = live.resources.borrow_mut().take();
        let mut resources = Some(resources);
        if let Err(fault) = self.call_app("dropping the application's resources", &mut || {
            drop(resources.take())
        }) {
            self.report(fault);
        }
        // Not run after a crash: what it holds cannot be trusted to drop.
        std::mem::forget(resources);
        live.watches.borrow_mut().clear();
        self.let_go_of(&live.gpu.device, live.gpu.let_go_flag());
    }

    /// The one way the driver lets a device go: its flag first (what its
    /// scopes and phases say from now on is not reported), then the
    /// platform's `let_go`.
    fn let_go_of(&self, device: &wgpu::Device, let_go: &Cell<bool>) {
        let_go.set(true);
        self.host.let_go(device);
    }

    // ---- frames ----

    fn request_frame(&self) {
        if self.frame_request.borrow().is_some() {
            return;
        }
        let me = self.me.clone();
        let handle = self.host.request_frame(Box::new(move |time| {
            if let Some(driver) = me.upgrade() {
                driver.frame_request.borrow_mut().take();
                driver.drive(Job::Frame(time, false));
            }
        }));
        *self.frame_request.borrow_mut() = Some(handle);
    }

    /// Frames from a timer as well, until a frame comes the usual way.
    fn drive_from_timer(&self) {
        if self.driven.borrow().is_some() {
            return;
        }
        let me = self.me.clone();
        let handle = self.host.timer(
            16,
            Box::new(move || {
                if let Some(driver) = me.upgrade() {
                    driver.driven.borrow_mut().take();
                    driver.drive(Job::Frame(driver.host.now_ms(), true));
                }
            }),
        );
        *self.driven.borrow_mut() = Some(handle);
    }

    fn frame(&self, time: f64, from_timer: bool) {
        if !from_timer {
            // Frames come again: no more from the timer.
            self.driven.borrow_mut().take();
        }
        let Some(live) = self.live.borrow().clone() else {
            return;
        };
        let generation = live.gpu.generation;
        if !self.read(|s| s.may_draw(generation)) {
            return;
        }
        self.last_frame_ms.set(self.host.now_ms());
        // A frame is drawn (from a timer too): no stall, as in webgpu-guard.
        self.record.stalled.set(false);
        if from_timer {
            self.frames_from_timer.set(self.frames_from_timer.get() + 1);
        }
        let drawn = self.render(&live, time);
        if drawn == Drawn::Presented && live.frames.get() == 1 {
            self.record.init.first_frame(self.host.now_ms());
            self.drive(Job::Event(
                Event::FirstFrame {
                    generation,
                    at_ms: self.host.now_ms() as u64,
                },
                Handover::None,
            ));
        }
        if drawn == Drawn::NotNow {
            // A surface occluded or timing out: asked again a little later,
            // not at once (the next frame would only spin on it).
            self.frame_later();
        } else {
            self.request_frame();
        }
        if from_timer && self.read(|s| s.may_draw(generation)) {
            self.drive_from_timer();
        }
    }

    /// A frame from a timer, [`SURFACE_RETRY_MS`] from now.
    fn frame_later(&self) {
        if self.frame_request.borrow().is_some() {
            return;
        }
        let me = self.me.clone();
        let handle = self.host.timer(
            SURFACE_RETRY_MS,
            Box::new(move || {
                if let Some(driver) = me.upgrade() {
                    driver.frame_request.borrow_mut().take();
                    driver.drive(Job::Frame(driver.host.now_ms(), false));
                }
            }),
        );
        *self.frame_request.borrow_mut() = Some(handle);
    }

    /// Draws one frame on `live`: what came of it.
    fn render(&self, live: &Live<A::Resources>, time: f64) -> Drawn {
        let gpu = &live.gpu;
        let size = fit_size(self.host.drawing_size(live.max_side), live.max_side);
        if size != gpu.size() {
            self.record.resizes.set(self.record.resizes.get() + 1);
            self.reconfigure(live, size);
            let mut resources = live.resources.borrow_mut();
            if let Some(resources) = resources.as_mut() {
                let depth = gpu.scopes().depth();
                let mut outcome = Ok(());
                let thrown = self.call_app("the resize", &mut || {
                    outcome = self.app.resize(gpu, resources, size.0, size.1);
                });
                self.close_leaked_scopes(gpu, depth);
                if let Err(fault) = thrown.and(outcome) {
                    self.report(fault);
                }
            }
        }
        let acquired = match self.acquire(live, size) {
            Ok(acquired) => acquired,
            Err(drawn) => return drawn,
        };
        let number = self.frames.get();
        let every = u64::from(self.options.frame_scope_every.max(1));
        let scoped = live.frames.get() % every == 0;
        let depth = gpu.scopes().depth();
        // Named "frame" (its number goes in the fault's origin): telemetry
        // groups a frame's errors by their object, not by frame.
        let scope = scoped.then(|| gpu.scopes().open(&gpu.device, "frame"));
        let frame = Frame {
            view: acquired
                .texture()
                .create_view(&wgpu::TextureViewDescriptor::default()),
            format: gpu.format,
            number,
            time_ms: time,
            width: size.0,
            height: size.1,
        };
        {
            let mut resources = live.resources.borrow_mut();
            if let Some(resources) = resources.as_mut() {
                let mut outcome = Ok(());
                let began = self.host.now_ms();
                let thrown = self.call_app("the frame", &mut || {
                    outcome = self.app.frame(gpu, resources, &frame);
                });
                // A panic is a crash, not a frame that threw.
                if self.host.crashed().is_none() {
                    self.record.frame_took(self.host.now_ms() - began);
                    if thrown.is_err() {
                        let record = &self.record;
                        record.frames_thrown.set(record.frames_thrown.get() + 1);
                    }
                }
                if let Err(fault) = thrown.and(outcome) {
                    self.report(fault.in_frame(number));
                }
            }
        }
        if let Some(id) = scope {
            for set in self.close_scopes(|| gpu.scopes().close(id)) {
                gpu.report_later_tagged(set, move |fault| fault.in_frame(number));
            }
        }
        // A phase the frame left open (a throw abandoned it) ends with it.
        self.close_leaked_scopes(gpu, depth);
        drop(frame);
        if self.host.crashed().is_some() {
            // What a frame that panicked left is never presented.
            return Drawn::Not;
        }
        if let Acquired::Surface(texture) = acquired {
            gpu.queue.present(texture);
        }
        self.frames.set(number + 1);
        live.frames.set(live.frames.get() + 1);
        self.host.outlet().set_frame(number + 1);
        Drawn::Presented
    }

    /// The frame's texture: the surface's (`Err` with what the frame is when
    /// it has none to give now, what it said handled), or the offscreen target.
    fn acquire(&self, live: &Live<A::Resources>, size: (u32, u32)) -> Result<Acquired, Drawn> {
        // The surface is not borrowed while a lost one is made again.
        let current = match &*live.target.borrow() {
            Target::Offscreen(texture) => return Ok(Acquired::Offscreen(texture.clone())),
            Target::Surface { surface, .. } => current_texture(surface),
        };
        let current = match current {
            Ok(current) => current,
            Err(panicked) => {
                self.report(Fault::new(
                    FaultKind::Exception,
                    format!("the surface could not hand out a texture (its configuration was refused?): {panicked}"),
                ));
                self.recreate_surface(live, size);
                return Err(Drawn::NotNow);
            }
        };
        match current {
            wgpu::CurrentSurfaceTexture::Success(texture)
            | wgpu::CurrentSurfaceTexture::Suboptimal(texture) => Ok(Acquired::Surface(texture)),
            wgpu::CurrentSurfaceTexture::Timeout | wgpu::CurrentSurfaceTexture::Occluded => {
                Err(Drawn::NotNow)
            }
            wgpu::CurrentSurfaceTexture::Outdated => {
                self.reconfigure(live, size);
                Err(Drawn::Not)
            }
            wgpu::CurrentSurfaceTexture::Lost => {
                self.recreate_surface(live, size);
                Err(Drawn::Not)
            }
            wgpu::CurrentSurfaceTexture::Validation => {
                self.report(Fault::new(
                    FaultKind::Validation,
                    "the surface refused to hand out its texture (a validation error)",
                ));
                Err(Drawn::Not)
            }
        }
    }

    /// Configures the surface again at `size` (an offscreen target: a new
    /// texture of that size).
    fn reconfigure(&self, live: &Live<A::Resources>, size: (u32, u32)) {
        match &mut *live.target.borrow_mut() {
            Target::Surface { surface, config } => {
                config.width = size.0;
                config.height = size.1;
                surface.configure(&live.gpu.device, config);
            }
            Target::Offscreen(texture) => *texture = offscreen_texture(&live.gpu.device, size),
        }
        live.gpu.set_size(size);
    }

    /// A lost surface: a new one from the same instance, configured as before.
    fn recreate_surface(&self, live: &Live<A::Resources>, size: (u32, u32)) {
        let Some(target) = self.host.surface_target() else {
            return;
        };
        match live.instance.create_surface(target) {
            Ok(new) => {
                if let Target::Surface { surface, .. } = &mut *live.target.borrow_mut() {
                    *surface = new;
                }
                self.reconfigure(live, size);
            }
            Err(e) => self.report(Fault::new(
                FaultKind::Exception,
                format!("the surface was lost and could not be made again: {e}"),
            )),
        }
    }

    /// Whether a device runs (or is being put in place).
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn has_live(&self) -> bool {
        self.live.try_borrow().map_or(true, |live| live.is_some())
    }

    /// The running device's GPU and its offscreen target (headless only).
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn offscreen(&self) -> Option<(Rc<Gpu>, wgpu::Texture)> {
        let live = self.live.try_borrow().ok()?.clone()?;
        let texture = match &*live.target.try_borrow().ok()? {
            Target::Offscreen(texture) => texture.clone(),
            Target::Surface { .. } => return None,
        };
        Some((live.gpu.clone(), texture))
    }

    // ---- faults ----

    pub(crate) fn report(&self, fault: Fault) {
        // A crash is told once, by the `crashed` fallback that carries it.
        if self
            .host
            .crashed()
            .is_some_and(|crash| crash == fault.message)
        {
            return;
        }
        self.host.outlet().report(&fault);
    }

    pub(crate) fn note(&self, text: &str) {
        self.host.outlet().note(text);
    }

    fn attempt_owns(&self, attempt: u64) -> bool {
        self.read(|s| s.attempt_in_flight() == Some(attempt))
    }

    fn fail(&self, attempt: u64, failure: InitFailure) {
        self.dispatch(Event::InitFailed { attempt, failure });
    }
}

/// The surface's texture for a frame. Native wgpu panics here when the
/// surface has no configuration (one it refused): the panic's message then,
/// caught. (In the browser a panic cannot be caught, and the WebGPU backend
/// has no such panic.)
fn current_texture(surface: &wgpu::Surface<'_>) -> Result<wgpu::CurrentSurfaceTexture, String> {
    #[cfg(not(target_arch = "wasm32"))]
    return crate::native::panics::catching(|| surface.get_current_texture());
    #[cfg(target_arch = "wasm32")]
    return Ok(surface.get_current_texture());
}

/// One init attempt: instance, surface, adapter, device (handed to the
/// supervisor, which adopts or discards it), the loss watch and the listener
/// armed before the surface is configured, then the application's `build`.
async fn attempt_init<A: App, H: Host>(me: Weak<Driver<A, H>>, attempt: u64) {
    let Some(driver) = me.upgrade() else {
        return;
    };
    let recovery = driver.read(Supervisor::bringing_up_a_recovery);
    // This attempt's own: a superseded attempt's steps never mix with it.
    let mut steps = AttemptSteps {
        started: driver.host.now_ms(),
        ..AttemptSteps::default()
    };
    let instance = wgpu::Instance::new(driver.host.instance_descriptor());
    let surface = match driver
        .host
        .surface_target()
        .map(|t| instance.create_surface(t))
    {
        None => None,
        Some(Ok(surface)) => Some(surface),
        Some(Err(e)) => return driver.fail(attempt, InitFailure::Canvas(e.to_string())),
    };
    drop(driver);
    let adapter = instance
        .request_adapter(&wgpu::RequestAdapterOptions {
            compatible_surface: surface.as_ref(),
            ..Default::default()
        })
        .await;
    let Some(driver) = me.upgrade() else {
        return;
    };
    steps.adapter = driver.host.now_ms();
    let adapter = match adapter {
        Ok(adapter) => adapter,
        Err(_) if driver.host.has_gpu_api() => return driver.fail(attempt, InitFailure::NoAdapter),
        Err(_) => return driver.fail(attempt, InitFailure::NoWebGpu),
    };
    let label = driver.options.device_label.clone();
    drop(driver);
    let device = adapter
        .request_device(&wgpu::DeviceDescriptor {
            label: Some(&label),
            ..Default::default()
        })
        .await;
    let Some(driver) = me.upgrade() else {
        return;
    };
    steps.device = driver.host.now_ms();
    let (device, queue) = match device {
        Ok(pair) => pair,
        Err(e) => return driver.fail(attempt, InitFailure::Step(InitStep::Device, e.to_string())),
    };
    let (reply, adopted) = oneshot::channel();
    let arrival = Arrival {
        instance,
        surface,
        adapter,
        device,
        queue,
        let_go: Rc::default(),
    };
    driver.drive(Job::Event(
        Event::DeviceCreated { attempt },
        Handover::Device {
            arrival: Box::new(arrival),
            reply,
        },
    ));
    drop(driver);
    // Discarded (stopped or superseded meanwhile): the driver let it go.
    let Some((arrival, generation)) = adopted.await else {
        return;
    };
    let Some(driver) = me.upgrade() else {
        return;
    };
    if !driver.attempt_owns(attempt) {
        return;
    }
    let Arrival {
        instance,
        surface,
        adapter,
        device,
        queue,
        let_go,
    } = *arrival;
    let watcher = me.clone();
    let watch = driver.host.watch_loss(
        &device,
        Box::new(move |reason, message| {
            if let Some(driver) = watcher.upgrade() {
                if driver.read(|s| s.owns_generation(generation)) {
                    driver.init_triggered();
                }
                let at_ms = driver.host.now_ms() as u64;
                driver.dispatch(Event::Lost {
                    generation,
                    reason,
                    message,
                    at_ms,
                });
            }
        }),
    );
    let listener = driver.host.listen(&device);
    let max_side = device.limits().max_texture_dimension_2d;
    let size = fit_size(driver.host.drawing_size(max_side), max_side);
    let target = match surface {
        Some(surface) => {
            let capabilities = surface.get_capabilities(&adapter);
            let config = match surface_config::configuration(&capabilities, size) {
                Ok(config) => config,
                Err(why) => return driver.fail(attempt, InitFailure::Canvas(why)),
            };
            surface.configure(&device, &config);
            Target::Surface { surface, config }
        }
        None => Target::Offscreen(offscreen_texture(&device, size)),
    };
    steps.configured = driver.host.now_ms();
    let format = match &target {
        Target::Surface { config, .. } => config.format,
        Target::Offscreen(_) => OFFSCREEN_FORMAT,
    };
    let gpu = Rc::new(Gpu::new(GpuParts {
        adapter,
        device,
        queue,
        format,
        generation,
        size,
        ledger: driver.ledger.clone(),
        outlet: driver.host.outlet(),
        let_go,
    }));
    let app = driver.app.clone();
    // The whole of `build` runs inside the guard, the part before its first
    // await included.
    let built = driver
        .host
        .guard_future("build", async { app.build(&gpu).await })
        .await;
    driver.after_app_code();
    // A phase `build` left open (a throw abandoned its future) ends with it.
    driver.close_leaked_scopes(&gpu, 0);
    if !driver.attempt_owns(attempt) {
        // Stopped or superseded meanwhile: the driver let the device go.
        if let Ok(Ok(resources)) = built {
            let mut resources = Some(resources);
            let _ = driver.call_app("dropping the application's resources", &mut || {
                drop(resources.take())
            });
            std::mem::forget(resources);
        }
        return;
    }
    match built.and_then(|result| result) {
        Ok(resources) => {
            steps.built = driver.host.now_ms();
            driver.record.init.init_done(steps, recovery);
            let live = Live {
                gpu,
                instance,
                target: RefCell::new(target),
                resources: RefCell::new(Some(resources)),
                max_side,
                frames: Cell::new(0),
                watches: RefCell::new(vec![watch, listener]),
            };
            driver.drive(Job::Event(
                Event::InitSucceeded {
                    attempt,
                    generation,
                },
                Handover::Built(Box::new(live)),
            ));
        }
        Err(fault) => {
            let may_pass = matches!(
                fault.kind,
                FaultKind::OutOfMemory | FaultKind::Internal | FaultKind::DeviceLost
            );
            let message = fault.to_string();
            // The phase that caught it is kept; "build" names the rest.
            let fault = match fault.origin.phase {
                Some(_) => fault,
                None => fault.in_phase("build"),
            };
            driver.report(fault);
            drop((watch, listener));
            let failure = if may_pass {
                InitFailure::ResourcesMayPass(message)
            } else {
                InitFailure::Resources(message)
            };
            driver.fail(attempt, failure);
        }
    }
}
