//! The runtime: runs an [`App`] on a canvas. Every decision about start, stop,
//! loss and retry is the pure [`Supervisor`]'s; this module reports events to it
//! and carries out its [`Command`]s:
//! * `init_sequence`: one idempotent init attempt (adapter, device, loss watcher
//!   and net armed before the canvas is configured, resources);
//! * `frame_loop`: the animation-frame loop, each frame inside a frame scope;
//! * [`status`]: the snapshot `gpuStatus()` reads.
//!
//! Events are queued: a call made from inside a frame, a `build` or a fallback
//! hook (`stop`, `force_recovery`, `status`) is handled after the current one,
//! never on a borrowed state. No `RefCell` borrow is held while application code
//! runs.

mod console;
mod fallback_view;
mod frame_loop;
mod init_sequence;
mod injection;
pub mod status;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::rc::{Rc, Weak};

use gloo_timers::callback::Timeout;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::HtmlCanvasElement;

use crate::fault::{Fault, FaultKind};
use crate::supervisor::{
    Command, DeviceState, Event, Fallback, StallAction, Supervisor, SupervisorOptions, TimerPurpose,
};
use crate::web::context::{DiagnosticsLevel, GuardContext};
use crate::web::crash;
use crate::web::device::GuardedDevice;
use crate::web::init::{GpuContext, InitOptions};
use crate::web::js::now_ms;
use crate::web::listener::EventListener;
use crate::web::net::ErrorNet;
use crate::web::sizer::CanvasSizer;

use frame_loop::FrameLoop;
use injection::Injections;

pub use fallback_view::FALLBACK_CLASS;
pub use status::{InitTimings, Status};

/// The application the runtime drives. Keep application state (camera, scene,
/// time) in `Self`, GPU objects in `Resources`: resources are rebuilt after a loss,
/// `Self` is not. Data that lives only on the GPU (a storage buffer a compute pass
/// fills, a render target) is not restored: `build` recomputes it. State that
/// builds up on the GPU (a simulation stepped every frame) cannot be recomputed:
/// keep a [`crate::web::snapshot::GpuSnapshot`] in `Self` and start `build` from
/// its last copy (`examples/flock`). Keep in `Resources` every buffer and
/// texture a bind group or a view still uses: a [`Tracked`](crate::web::Tracked)
/// object destroys its GPU object when dropped.
pub trait App: 'static {
    /// Every GPU object the application needs; dropped (and so released) on loss.
    type Resources: 'static;

    /// Builds the resources on a fresh device. Called on start and after each loss.
    fn build(&self, gpu: &GpuContext) -> impl Future<Output = Result<Self::Resources, Fault>>;

    /// Records and submits one frame. Runs inside the frame's error scopes.
    ///
    /// It takes `&self`: the runtime, the page's input handlers and your own
    /// callbacks all hold the application at once (`Runtime::app`), so what a
    /// frame changes lives in a `Cell` (numbers, flags) or a `RefCell` (the
    /// rest), borrowed for the frame only (the frame's number and time are in
    /// [`FrameInfo`], no need to count them):
    ///
    /// ```ignore
    /// struct Spin { angle: Cell<f32> }
    /// fn frame(&self, gpu: &GpuContext, r: &Resources, info: &FrameInfo) -> Result<(), Fault> {
    ///     self.angle.set(self.angle.get() + 0.01); // the state a loss keeps
    ///     // ... write it to a uniform buffer of `r`, record, submit
    ///     # Ok(())
    /// }
    /// ```
    fn frame(
        &self,
        gpu: &GpuContext,
        resources: &Self::Resources,
        info: &FrameInfo,
    ) -> Result<(), Fault>;

    /// The drawing buffer changed size (the canvas was resized, or the device
    /// pixel ratio changed; [`GpuContext::size`] is the new size): rebuild the
    /// resources that depend on it (depth and shadow targets), through
    /// `gpu.device` as in `build`. Called before the next frame, once however
    /// many resize events came, inside a phase named "resize", on the running
    /// device only: a size that changes while a device is built is the one
    /// `build` sees. An `Err` is reported and the resize is owed: tried again
    /// before each of the next frames, and after three failures in a row the
    /// resources are rebuilt on a new device (whose `build` sees the new size).
    /// The default rebuilds nothing.
    fn resize(&self, gpu: &GpuContext, resources: &mut Self::Resources) -> Result<(), Fault> {
        let _ = (gpu, resources);
        Ok(())
    }
}

/// What a frame knows about itself.
#[derive(Clone, Copy, Debug)]
pub struct FrameInfo {
    /// Frame number, from 1.
    pub number: u64,
    /// The animation-frame timestamp, in milliseconds.
    pub time_ms: f64,
    /// The device generation.
    pub generation: u64,
}

/// Runtime options.
#[derive(Clone, Debug, Default)]
pub struct RuntimeOptions {
    /// Init options.
    pub init: InitOptions,
    /// Backoff, cap, crash-loop limits, the init deadline and the stall limit.
    pub supervisor: SupervisorOptions,
    /// Whether the drawing buffer follows the canvas's displayed size.
    pub canvas_size: CanvasSize,
}

/// How the canvas's drawing buffer is sized.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CanvasSize {
    /// Its displayed size times the device pixel ratio (a `ResizeObserver`,
    /// device pixels where the engine reports them), scaled down to the
    /// device's `maxTextureDimension2D`; [`App::resize`] rebuilds what depends
    /// on it. A canvas that CSS does not size (laid out at its `width` and
    /// `height`) gets its laid-out size pinned in its inline style at start,
    /// so that its buffer cannot grow its layout.
    #[default]
    FollowDisplay,
    /// The `width` and `height` the page gave the canvas, never changed.
    Fixed,
}

struct Live<R> {
    gpu: GpuContext,
    /// Borrowed by each frame; mutably by a resize, between frames.
    resources: RefCell<R>,
    frames: Cell<u64>,
    /// The device's `maxTextureDimension2D`, read once (each frame compares
    /// the canvas's size against it).
    max_dimension: u32,
}

/// The init attempt that owns a device not yet running.
struct Initializing {
    generation: u64,
    device: GuardedDevice,
}

/// A device an attempt obtained, waiting for the supervisor's word, which
/// `decision` carries to the attempt (dropped unsent: the device is gone).
struct Arrival {
    attempt: u64,
    raw: web_sys::GpuDevice,
    decision: crate::oneshot::Sender<(GuardedDevice, u64)>,
}

/// Resources an attempt built, waiting for the supervisor's word.
struct Built<R> {
    generation: u64,
    gpu: GpuContext,
    resources: R,
}

type FallbackHook = Rc<dyn Fn(&Fallback)>;

/// How many times in a row a failed `App::resize` is tried before the
/// resources are rebuilt on a new device.
const RESIZE_TRIES: u32 = 3;

struct Inner<A: App> {
    app: Rc<A>,
    canvas: HtmlCanvasElement,
    options: RuntimeOptions,
    supervisor: RefCell<Supervisor>,
    queue: RefCell<VecDeque<Event>>,
    dispatching: Cell<bool>,
    context: GuardContext,
    live: RefCell<Option<Rc<Live<A::Resources>>>>,
    initializing: RefCell<Option<Initializing>>,
    arrivals: RefCell<Vec<Arrival>>,
    built: RefCell<Option<Built<A::Resources>>>,
    /// The scheduled timers by token (a retry and a deadline at most).
    timers: RefCell<Vec<(u64, Timeout)>>,
    frame_loop: FrameLoop,
    canvas_owner: Cell<Option<u64>>,
    frames: Cell<u64>,
    frames_thrown: Cell<u64>,
    frame_ms: Cell<f64>,
    frame_ms_total: Cell<f64>,
    adapter: RefCell<String>,
    fallback_hook: RefCell<Option<FallbackHook>>,
    trigger_ms: Cell<f64>,
    cold_start: Cell<Option<InitTimings>>,
    last_init: Cell<Option<InitTimings>>,
    pending_timing: Cell<Option<(InitTimings, f64)>>,
    visibility: RefCell<Option<EventListener>>,
    last_tick_ms: Cell<f64>,
    injections: Injections,
    stalled: Cell<bool>,
    watchdog: RefCell<Option<gloo_timers::callback::Interval>>,
    /// Set by `start`, cleared by `stop`: a started runtime keeps itself alive,
    /// so that dropping every handle cannot stop it silently. (After a crash it
    /// is never cleared: nothing of the crashed state may be dropped.)
    keep_alive: RefCell<Option<Rc<Inner<A>>>>,
    /// Follows the canvas's displayed size (with `CanvasSize::FollowDisplay`).
    sizer: RefCell<Option<CanvasSizer>>,
    resizes: Cell<u64>,
    /// Resizes in a row whose `App::resize` returned `Err` (the drawing
    /// buffer has the new size, the resources may not): retried before the
    /// next frames, then rebuilt on a new device.
    failed_resizes: Cell<u32>,
    /// Whether the crash was handled (the fallback shown).
    crash_shown: Cell<bool>,
    /// The fallback shown in the page, without a hook.
    fallback_view: RefCell<Option<fallback_view::FallbackView>>,
}

/// Runs an [`App`]; cheap to clone. Once started it keeps itself alive until
/// [`Runtime::stop`]; a stopped (or never started) runtime is freed with its
/// last handle, which cancels its pending animation frame and timers.
///
/// ```no_run
/// # use webgpu_guard::web::{App, GpuContext, FrameInfo, Runtime};
/// # use webgpu_guard::web::runtime::RuntimeOptions;
/// # struct MyApp;
/// # impl App for MyApp {
/// #     type Resources = ();
/// #     async fn build(&self, _: &GpuContext) -> Result<(), webgpu_guard::Fault> { Ok(()) }
/// #     fn frame(&self, _: &GpuContext, _: &(), _: &FrameInfo) -> Result<(), webgpu_guard::Fault> { Ok(()) }
/// # }
/// # fn demo(canvas: web_sys::HtmlCanvasElement) {
/// let runtime = Runtime::new(MyApp, canvas, RuntimeOptions::default());
/// runtime.on_fallback(|fallback| web_sys::console::error_1(&fallback.message().into()));
/// runtime.start();
/// # }
/// ```
pub struct Runtime<A: App> {
    inner: Rc<Inner<A>>,
}

impl<A: App> Clone for Runtime<A> {
    fn clone(&self) -> Self {
        Runtime {
            inner: self.inner.clone(),
        }
    }
}

/// A [`Runtime`] handle that does not keep it alive; see [`Runtime::downgrade`].
pub struct WeakRuntime<A: App> {
    inner: Weak<Inner<A>>,
}

impl<A: App> Clone for WeakRuntime<A> {
    fn clone(&self) -> Self {
        WeakRuntime {
            inner: self.inner.clone(),
        }
    }
}

impl<A: App> std::fmt::Debug for WeakRuntime<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeakRuntime").finish_non_exhaustive()
    }
}

impl<A: App> WeakRuntime<A> {
    /// The runtime, if it still exists (it does while started, or while any
    /// [`Runtime`] handle is held).
    pub fn upgrade(&self) -> Option<Runtime<A>> {
        self.inner.upgrade().map(|inner| Runtime { inner })
    }
}

impl<A: App> std::fmt::Debug for Runtime<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("state", &self.status().state)
            .finish_non_exhaustive()
    }
}

impl<A: App> Runtime<A> {
    /// Creates the runtime on the page's `<canvas id="{id}">`; `Err` naming the
    /// id when there is no such element or it is not a canvas.
    pub fn on_canvas_id(app: A, id: &str, options: RuntimeOptions) -> Result<Self, Fault> {
        let element = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id(id));
        let Some(element) = element else {
            return Err(Fault::new(
                FaultKind::Exception,
                format!(
                    "the page has no element with id \"{id}\" (a <canvas id=\"{id}\"> is needed)"
                ),
            ));
        };
        match element.dyn_into::<HtmlCanvasElement>() {
            Ok(canvas) => Ok(Runtime::new(app, canvas, options)),
            Err(other) => Err(Fault::new(
                FaultKind::Exception,
                format!(
                    "the element with id \"{id}\" is a <{}>, not a <canvas>",
                    other.tag_name().to_ascii_lowercase()
                ),
            )),
        }
    }

    /// Creates the runtime; nothing happens until [`Runtime::start`]. The
    /// application is reached again with [`Runtime::app`] (input handlers,
    /// console functions); [`Runtime::with_shared_app`] takes one already
    /// shared.
    #[must_use = "a runtime does nothing until it is started"]
    pub fn new(app: A, canvas: HtmlCanvasElement, options: RuntimeOptions) -> Self {
        Runtime::with_shared_app(Rc::new(app), canvas, options)
    }

    /// As [`Runtime::new`], for an application the caller already shares.
    #[must_use = "a runtime does nothing until it is started"]
    pub fn with_shared_app(app: Rc<A>, canvas: HtmlCanvasElement, options: RuntimeOptions) -> Self {
        let supervisor = Supervisor::new(options.supervisor);
        Runtime {
            inner: Rc::new(Inner {
                app,
                canvas,
                options,
                supervisor: RefCell::new(supervisor),
                queue: RefCell::new(VecDeque::new()),
                dispatching: Cell::new(false),
                context: GuardContext::default(),
                live: RefCell::new(None),
                initializing: RefCell::new(None),
                arrivals: RefCell::new(Vec::new()),
                built: RefCell::new(None),
                timers: RefCell::new(Vec::new()),
                frame_loop: FrameLoop::new(),
                canvas_owner: Cell::new(None),
                frames: Cell::new(0),
                frames_thrown: Cell::new(0),
                frame_ms: Cell::new(0.0),
                frame_ms_total: Cell::new(0.0),
                adapter: RefCell::new(String::new()),
                fallback_hook: RefCell::new(None),
                trigger_ms: Cell::new(0.0),
                cold_start: Cell::new(None),
                last_init: Cell::new(None),
                pending_timing: Cell::new(None),
                visibility: RefCell::new(None),
                last_tick_ms: Cell::new(0.0),
                injections: Injections::default(),
                stalled: Cell::new(false),
                watchdog: RefCell::new(None),
                keep_alive: RefCell::new(None),
                sizer: RefCell::new(None),
                resizes: Cell::new(0),
                failed_resizes: Cell::new(0),
                crash_shown: Cell::new(false),
                fallback_view: RefCell::new(None),
            }),
        }
    }

    /// Starts: the first init runs now. Idempotent. Refused after a crash.
    ///
    /// A started runtime keeps itself alive until [`Runtime::stop`]: a `main`
    /// that starts it and returns, dropping its handle, leaves it running.
    pub fn start(&self) {
        crash::install_panic_hook();
        if !crash::crashed() {
            if let Ok(mut slot) = self.inner.keep_alive.try_borrow_mut() {
                *slot = Some(self.inner.clone());
            }
        }
        if !crash::crashed() {
            // The default fallback goes (a started runtime shows its canvas).
            let shown = self
                .inner
                .fallback_view
                .try_borrow_mut()
                .ok()
                .and_then(|mut v| v.take());
            drop(shown);
        }
        Inner::watch_visibility(&self.inner);
        Inner::watch_the_clock(&self.inner);
        Inner::watch_the_size(&self.inner);
        self.inner.trigger_ms.set(now_ms());
        Inner::dispatch(&self.inner, Event::Start);
    }

    /// Calls `hook` when the fallback must be shown, in place of the default:
    /// without a hook, the runtime shows the fallback's message in the page in
    /// place of the canvas (an element of class [`FALLBACK_CLASS`], removed
    /// when the runtime starts again).
    pub fn on_fallback(&self, hook: impl Fn(&Fallback) + 'static) {
        if let Ok(mut slot) = self.inner.fallback_hook.try_borrow_mut() {
            *slot = Some(Rc::new(hook));
        }
    }

    /// The canvas it draws on.
    pub fn canvas(&self) -> &HtmlCanvasElement {
        &self.inner.canvas
    }

    /// The application.
    pub fn app(&self) -> &Rc<A> {
        &self.inner.app
    }

    /// The net (the one fault sink).
    pub fn net(&self) -> &ErrorNet {
        self.inner.context.net()
    }

    /// The shared context (ledger, level, frame counter, net).
    pub fn context(&self) -> &GuardContext {
        &self.inner.context
    }

    /// Sets the diagnostics level, effective at once.
    pub fn set_level(&self, level: DiagnosticsLevel) {
        self.inner.context.set_level(level);
    }

    /// Changes which frames get scopes (one in 32 by default), effective from the
    /// next frame.
    pub fn set_frame_sampling(&self, sampling: crate::frame_sampling::FrameSampling) {
        self.inner.context.set_frame_sampling(sampling);
    }

    /// Runs `f` on the live GPU state, if the device is running.
    pub fn with_live<R>(&self, f: impl FnOnce(&GpuContext, &A::Resources) -> R) -> Option<R> {
        let live = self.inner.live.try_borrow().ok()?.clone()?;
        let resources = live.resources.try_borrow().ok()?;
        Some(f(&live.gpu, &resources))
    }

    /// Forces the full recovery path (what `window.matarGPU()` does): stop the
    /// loop, release every GPU object, destroy the device, run init again at once,
    /// exactly as a real loss would. During a recovery already under way, nothing
    /// more happens (one recovery); during a backoff wait, the attempt starts now.
    pub fn force_recovery(&self) {
        self.inner.trigger_ms.set(now_ms());
        Inner::dispatch(&self.inner, Event::RequestRecovery);
    }

    /// Stops: releases every GPU object, destroys the device, cancels whatever is
    /// pending; nothing restarts until [`Runtime::start`].
    pub fn stop(&self) {
        self.inner.injections.clear(&self.inner.context);
        Inner::dispatch(&self.inner, Event::Stop);
        // Once stopped, the runtime lives as long as its handles.
        Inner::let_go(&self.inner);
    }

    /// A handle that does not keep the runtime alive (for closures the runtime
    /// outlives: window functions, listeners).
    pub fn downgrade(&self) -> WeakRuntime<A> {
        WeakRuntime {
            inner: Rc::downgrade(&self.inner),
        }
    }

    /// Whether the live device's error-scope stack is empty: a pop without a push
    /// must reject. `None` without a running device. (For tests and soaks: on an
    /// unbalanced stack the pop takes a scope that belonged to someone.)
    pub async fn scope_stack_balanced(&self) -> Option<bool> {
        let device = self.with_live(|gpu, _| gpu.device.clone())?;
        let outcome = crate::web::scope::pop_unmatched(&device).wait().await;
        Some(
            outcome
                .faults
                .iter()
                .any(|f| f.kind == FaultKind::ScopeStack),
        )
    }

    /// A snapshot of everything `gpuStatus()` reports. Never fails, from anywhere.
    pub fn status(&self) -> Status {
        let inner = &self.inner;
        let supervisor = inner.supervisor.try_borrow().map(|s| s.clone()).ok();
        let ledger = inner
            .context
            .ledger()
            .try_borrow()
            .map(|l| (l.live(), l.peak()))
            .unwrap_or_default();
        let (state, generation, recoveries, last_loss, fallback, hidden) = match &supervisor {
            Some(s) => (
                s.state(),
                s.generation(),
                s.recoveries(),
                s.last_loss().cloned(),
                s.fallback().cloned(),
                s.hidden(),
            ),
            None => (
                crate::supervisor::DeviceState::Idle,
                0,
                0,
                None,
                None,
                false,
            ),
        };
        Status {
            state,
            generation,
            recoveries,
            frames: inner.frames.get(),
            last_loss,
            net: inner.context.net().stats(),
            live: ledger.0,
            peak: ledger.1,
            adapter: inner
                .adapter
                .try_borrow()
                .map(|a| a.clone())
                .unwrap_or_default(),
            fallback,
            level: inner.context.level(),
            frame_ms: inner.frame_ms.get(),
            frame_ms_total: inner.frame_ms_total.get(),
            cold_start: inner.cold_start.get(),
            last_init: inner.last_init.get(),
            loop_alive: inner.frame_loop.pending(),
            hidden,
            frames_thrown: inner.frames_thrown.get(),
            stalled: inner.stalled.get(),
            resizes: inner.resizes.get(),
            frames_from_timer: inner.frame_loop.driven_by_timer(),
            wasm_memory_bytes: status::wasm_memory_bytes(),
            js_heap_bytes: status::js_heap_bytes(),
        }
    }
}

impl<A: App> Drop for Inner<A> {
    fn drop(&mut self) {
        self.frame_loop.cancel();
        if let Ok(mut timers) = self.timers.try_borrow_mut() {
            timers.clear();
        }
        if let Ok(mut watchdog) = self.watchdog.try_borrow_mut() {
            watchdog.take();
        }
        self.injections.clear(&self.context);
    }
}

/// Takes what `slot` holds if it matches `wanted` (nothing while it is borrowed).
fn take_if<T>(slot: &RefCell<Option<T>>, wanted: impl FnOnce(&T) -> bool) -> Option<T> {
    let mut slot = slot.try_borrow_mut().ok()?;
    if slot.as_ref().is_some_and(wanted) {
        slot.take()
    } else {
        None
    }
}

fn page_hidden() -> bool {
    web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| js_sys::Reflect::get(&d, &"visibilityState".into()).ok())
        .and_then(|v| v.as_string())
        .is_some_and(|state| state == "hidden")
}

impl<A: App> Inner<A> {
    /// Hands `event` to the supervisor and carries out its commands. A call made
    /// while another is being handled (or while a frame runs) is queued and
    /// handled right after it. Whatever throws on the way cannot leave the
    /// runtime dispatching for good; after a crash, nothing is handled.
    fn dispatch(this: &Rc<Self>, event: Event) {
        if crash::crashed() {
            Inner::on_crash(this);
            return;
        }
        if let Ok(mut queue) = this.queue.try_borrow_mut() {
            queue.push_back(event);
        }
        if this.dispatching.replace(true) {
            return;
        }
        Inner::drain(this);
    }

    /// Handles the queued events, then leaves the dispatching state (also when
    /// something threw on the way).
    fn drain(this: &Rc<Self>) {
        let drained = crash::catching(&mut || loop {
            let next = this
                .queue
                .try_borrow_mut()
                .ok()
                .and_then(|mut q| q.pop_front());
            match next {
                Some(event) => Inner::handle_one(this, event),
                None => break,
            }
        });
        this.dispatching.set(false);
        if let Err(thrown) = drained {
            if crash::crashed() {
                Inner::on_crash(this);
            } else {
                this.context.net().report_ref(&Fault::new(
                    FaultKind::Exception,
                    format!(
                        "the runtime caught an exception while handling its events: {}",
                        crate::web::js::describe(&thrown)
                    ),
                ));
                // What was queued behind it is still handled.
                if this.queue.try_borrow().is_ok_and(|q| !q.is_empty()) {
                    this.dispatching.set(true);
                    Inner::drain(this);
                }
            }
        }
    }

    fn handle_one(this: &Rc<Self>, event: Event) {
        let commands = match this.supervisor.try_borrow_mut() {
            Ok(mut supervisor) => supervisor.handle(event),
            Err(_) => return,
        };
        for command in &commands {
            Inner::carry_out(this, command);
        }
    }

    /// Drops the runtime's hold on itself (after a stop), later: the
    /// caller may be the runtime's own code, which must not free it mid-call.
    fn let_go(this: &Rc<Self>) {
        if crash::crashed() {
            // Nothing of the crashed state may be dropped.
            return;
        }
        let held = this
            .keep_alive
            .try_borrow_mut()
            .ok()
            .and_then(|mut s| s.take());
        if let Some(held) = held {
            wasm_bindgen_futures::spawn_local(async move { drop(held) });
        }
    }

    /// The module panicked or trapped: the supervisor stops everything for good
    /// (once), bypassing the queue, which the crash may have left mid-way.
    fn on_crash(this: &Rc<Self>) {
        // Devices attempts obtained and parked are destroyed, and their
        // attempts, woken with "gone", end (none waits for a word that the
        // crashed dispatcher will never give), however often this runs.
        let parked = this
            .arrivals
            .try_borrow_mut()
            .map(|mut a| std::mem::take(&mut *a))
            .unwrap_or_default();
        for arrival in parked {
            arrival.raw.destroy();
        }
        let message = crash::crash_message().unwrap_or_default();
        let commands = match this.supervisor.try_borrow_mut() {
            Ok(mut supervisor) if supervisor.state() != DeviceState::Crashed => {
                supervisor.handle(Event::Crashed { message })
            }
            Ok(_) => return,
            // The crash left the supervisor borrowed (it panicked inside it): the
            // loop stops and the fallback is shown all the same, once.
            Err(_) if this.crash_shown.replace(true) => return,
            Err(_) => vec![Command::ShowFallback(Fallback::Crashed(message))],
        };
        this.crash_shown.set(true);
        this.frame_loop.cancel();
        if let Ok(mut watchdog) = this.watchdog.try_borrow_mut() {
            watchdog.take();
        }
        this.injections.clear(&this.context);
        for command in &commands {
            Inner::carry_out(this, command);
        }
    }

    fn carry_out(this: &Rc<Self>, command: &Command) {
        match command {
            Command::BeginInit { attempt } => {
                // The attempt holds the runtime weakly: one stuck in the
                // browser keeps nothing of a runtime that was let go.
                let weak = Rc::downgrade(this);
                let attempt = *attempt;
                wasm_bindgen_futures::spawn_local(Inner::run_attempt(weak, attempt));
            }
            Command::Adopt {
                attempt,
                generation,
            } => Inner::adopt(this, *attempt, *generation),
            Command::Discard { attempt } => {
                for arrival in Inner::take_arrivals(this, *attempt) {
                    GuardedDevice::with_context(arrival.raw, this.context.clone()).let_go();
                }
            }
            Command::Run { generation } => Inner::run(this, *generation),
            Command::Schedule {
                token,
                delay_ms,
                purpose,
            } => Inner::schedule(this, *token, *delay_ms, *purpose),
            Command::CancelTimer { token } => {
                if let Ok(mut timers) = this.timers.try_borrow_mut() {
                    timers.retain(|(t, _)| t != token);
                }
            }
            Command::Destroy { generation } => Inner::destroy(this, *generation),
            Command::Teardown { generation } => Inner::teardown(this, *generation),
            Command::ReportStall {
                generation,
                waited_ms,
                action,
            } => {
                this.stalled.set(true);
                let what = match action {
                    StallAction::RequestFrame => "asking for a frame again",
                    StallAction::DriveFromTimer => {
                        "still frozen: probing the device and drawing from a timer until animation frames come back (a new device would stall the same way)"
                    }
                };
                this.context.net().report_ref(&Fault::new(
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
                Inner::probe_live(this, *generation);
            }
            Command::ShowFallback(fallback) => {
                // Once, as what it is: a failed build was reported already as
                // its own fault, and the fallback only refers to it.
                let text = match fallback {
                    Fallback::InitFailed(_) => {
                        "giving up: the application's build failed (the fault above)".to_string()
                    }
                    _ => format!("giving up: {}", fallback.message()),
                };
                match fallback.fault_kind() {
                    Some(kind) => this.context.net().report_ref(&Fault::new(kind, text)),
                    None => this.context.net().note(&text),
                }
                let hook = this.fallback_hook.try_borrow().ok().and_then(|h| h.clone());
                if hook.is_none() {
                    if let Ok(mut view) = this.fallback_view.try_borrow_mut() {
                        drop(view.take());
                        *view = fallback_view::FallbackView::show(&this.canvas, fallback);
                    }
                }
                if let Some(hook) = hook {
                    if let Err(thrown) = crash::catching(&mut || hook(fallback)) {
                        this.context.net().report_ref(&Fault::new(
                            FaultKind::Exception,
                            format!(
                                "the fallback hook threw: {}",
                                crate::web::js::describe(&thrown)
                            ),
                        ));
                    }
                }
            }
        }
    }

    fn take_arrivals(this: &Rc<Self>, attempt: u64) -> Vec<Arrival> {
        let Ok(mut arrivals) = this.arrivals.try_borrow_mut() else {
            return Vec::new();
        };
        let (taken, kept) = arrivals.drain(..).partition(|a| a.attempt == attempt);
        *arrivals = kept;
        taken
    }

    /// The device `attempt` parked is generation `generation`: it becomes the
    /// device being initialised.
    fn adopt(this: &Rc<Self>, attempt: u64, generation: u64) {
        let Some(arrival) = Inner::take_arrivals(this, attempt).pop() else {
            return;
        };
        let device = GuardedDevice::with_context(arrival.raw, this.context.clone());
        if let Ok(mut slot) = this.initializing.try_borrow_mut() {
            *slot = Some(Initializing {
                generation,
                device: device.clone(),
            });
        }
        // The attempt goes on from its await, after this dispatch.
        arrival.decision.send((device, generation));
    }

    /// Whether `generation` is the device the runtime runs or initialises now
    /// (a loss of any other is not news).
    fn generation_current(&self, generation: u64) -> bool {
        self.supervisor
            .try_borrow()
            .is_ok_and(|s| s.owns_generation(generation))
    }

    /// Drops whatever the init of `generation` produced and destroys its device.
    fn destroy(this: &Rc<Self>, generation: u64) {
        let taken = take_if(&this.initializing, |i| i.generation == generation);
        // Quietly: what its work fails with from now on is not news.
        if let Some(initializing) = taken {
            initializing.device.let_go();
        }
        if let Some(built) = take_if(&this.built, |b| b.generation == generation) {
            built.gpu.device.let_go();
            Inner::drop_resources(this, built.resources);
            Inner::release(this, &built.gpu);
        }
    }

    /// Init of `generation` finished and the supervisor says run: its parked
    /// resources go live and the loop starts.
    fn run(this: &Rc<Self>, generation: u64) {
        let Some(Built { gpu, resources, .. }) =
            take_if(&this.built, |b| b.generation == generation)
        else {
            return;
        };
        drop(take_if(&this.initializing, |i| i.generation == generation));
        // Its build saw the canvas's size: no resize is owed to it.
        this.failed_resizes.set(0);
        let max_dimension = gpu.device.raw().limits().max_texture_dimension_2d();
        let live = Rc::new(Live {
            gpu,
            resources: RefCell::new(resources),
            frames: Cell::new(0),
            max_dimension,
        });
        if let Ok(mut slot) = this.live.try_borrow_mut() {
            *slot = Some(live);
        }
        this.context.net().note(&format!(
            "device generation {generation} running ({})",
            this.adapter
                .try_borrow()
                .map(|a| a.clone())
                .unwrap_or_default()
        ));
        Inner::start_loop(this);
    }

    /// Drops the application's resources through the trampoline (its `Drop` may
    /// throw); leaked after a crash.
    fn drop_resources<T>(this: &Rc<Self>, resources: T) {
        if let Err(thrown) = crash::drop_catching(resources) {
            if crash::crashed() {
                return;
            }
            this.context.net().report_ref(&Fault::new(
                FaultKind::Exception,
                format!(
                    "dropping the application's resources threw: {}",
                    crate::web::js::describe(&thrown)
                ),
            ));
        }
    }

    fn schedule(this: &Rc<Self>, token: u64, delay_ms: u32, purpose: TimerPurpose) {
        if purpose == TimerPurpose::Retry {
            this.context
                .net()
                .note(&format!("re-initialising the GPU in {delay_ms} ms"));
        }
        let weak = Rc::downgrade(this);
        let timeout = Timeout::new(delay_ms, move || {
            let Some(runtime) = weak.upgrade() else {
                return;
            };
            if let Ok(mut timers) = runtime.timers.try_borrow_mut() {
                if let Some(at) = timers.iter().position(|(t, _)| *t == token) {
                    let (_, fired) = timers.swap_remove(at);
                    fired.forget();
                }
            }
            Inner::dispatch(&runtime, Event::TimerFired { token });
        });
        if let Ok(mut timers) = this.timers.try_borrow_mut() {
            timers.retain(|(t, _)| *t != token);
            timers.push((token, timeout));
        }
    }

    /// Lets `gpu`'s device go; unconfigures the canvas only if that device still
    /// owns it (an old attempt must not unconfigure a newer device's canvas).
    fn release(this: &Rc<Self>, gpu: &GpuContext) {
        if this.canvas_owner.get() == Some(gpu.generation) {
            this.canvas_owner.set(None);
            gpu.release();
        } else {
            gpu.device.retire();
        }
    }

    /// Stops the loop, releases every GPU object of `generation` and destroys it.
    fn teardown(this: &Rc<Self>, generation: u64) {
        this.frame_loop.cancel();
        // A new device starts on animation frames.
        this.frame_loop.stop_driving();
        let live = take_if(&this.live, |l| l.gpu.generation == generation);
        this.injections.cancel_pending_loss();
        if let Some(live) = live {
            Inner::release(this, &live.gpu);
            Inner::drop_resources(this, live);
        }
    }

    fn watch_visibility(this: &Rc<Self>) {
        let Ok(mut slot) = this.visibility.try_borrow_mut() else {
            return;
        };
        if slot.is_some() {
            return;
        }
        if page_hidden() {
            let runtime = this.clone();
            // Queued behind whatever runs now.
            wasm_bindgen_futures::spawn_local(async move {
                Inner::dispatch(&runtime, Event::Visibility { hidden: true });
            });
        }
        let Some(document) = web_sys::window().and_then(|w| w.document()) else {
            return;
        };
        let weak: Weak<Self> = Rc::downgrade(this);
        let listener = EventListener::new(&document, "visibilitychange", move |_| {
            if let Some(runtime) = weak.upgrade() {
                if crash::crashed() {
                    return Inner::on_crash(&runtime);
                }
                let hidden = page_hidden();
                if hidden {
                    // No frames from a timer while nobody sees them.
                    runtime.frame_loop.stop_driving();
                }
                if !hidden {
                    runtime.trigger_ms.set(now_ms());
                    // No stall while hidden: the wait starts again.
                    runtime.last_tick_ms.set(now_ms());
                }
                Inner::dispatch(&runtime, Event::Visibility { hidden });
            }
        });
        *slot = Some(listener);
    }

    /// Reads the clock for the supervisor about once a second: it judges stalls
    /// (and anything else that depends on time) from it.
    fn watch_the_clock(this: &Rc<Self>) {
        let Ok(mut slot) = this.watchdog.try_borrow_mut() else {
            return;
        };
        if slot.is_some() {
            return;
        }
        let weak = Rc::downgrade(this);
        *slot = Some(gloo_timers::callback::Interval::new(1000, move || {
            let Some(runtime) = weak.upgrade() else {
                return;
            };
            Inner::dispatch(
                &runtime,
                Event::Tick {
                    now_ms: now_ms() as u64,
                    last_frame_ms: runtime.last_tick_ms.get() as u64,
                    frame_pending: runtime.frame_loop.pending(),
                },
            );
        }));
    }

    fn watch_the_size(this: &Rc<Self>) {
        if this.options.canvas_size != CanvasSize::FollowDisplay {
            return;
        }
        if let Ok(mut slot) = this.sizer.try_borrow_mut() {
            if slot.is_none() {
                *slot = CanvasSizer::observe(&this.canvas);
            }
        }
    }

    /// The drawing buffer the canvas needs now, clamped to `max_dimension`;
    /// `None` when it keeps its size.
    fn wanted_size(this: &Rc<Self>, max_dimension: u32) -> Option<(u32, u32)> {
        let wanted = this
            .sizer
            .try_borrow()
            .ok()?
            .as_ref()?
            .wanted(max_dimension)?;
        let now = (this.canvas.width(), this.canvas.height());
        (wanted != now).then_some(wanted)
    }

    /// Gives the canvas the size it needs before a device is configured on it:
    /// `build` sees the size, and no resize follows.
    pub(super) fn size_for(this: &Rc<Self>, device: &web_sys::GpuDevice) {
        if let Ok(Some(sizer)) = this.sizer.try_borrow().as_deref() {
            sizer.refresh();
        }
        let max = device.limits().max_texture_dimension_2d();
        if let Some((width, height)) = Inner::wanted_size(this, max) {
            this.canvas.set_width(width);
            this.canvas.set_height(height);
        }
    }

    /// Before a frame: if the canvas's displayed size changed (once, however
    /// many resize events came), resize the drawing buffer and let the
    /// application rebuild what depends on it, in a "resize" phase.
    ///
    /// A resize whose `App::resize` fails (the buffer has the new size, the
    /// resources perhaps the old) is owed: tried again before each of the next
    /// frames, and after [`RESIZE_TRIES`] failures in a row the resources are
    /// rebuilt on a new device, whose `build` sees the new size. Returns
    /// whether the frame may run (not when a rebuild was asked for).
    fn follow_the_size(this: &Rc<Self>, live: &Live<A::Resources>) -> bool {
        let owed = this.failed_resizes.get() > 0;
        match Inner::wanted_size(this, live.max_dimension) {
            Some((width, height)) => {
                this.canvas.set_width(width);
                this.canvas.set_height(height);
                this.resizes.set(this.resizes.get() + 1);
            }
            None if owed => {}
            None => return true,
        }
        let Ok(mut resources) = live.resources.try_borrow_mut() else {
            return true;
        };
        let resized = live
            .gpu
            .device
            .phase_now("resize", || this.app.resize(&live.gpu, &mut resources));
        drop(resources);
        if resized.is_ok() {
            this.failed_resizes.set(0);
            return true;
        }
        let failed = this.failed_resizes.get() + 1;
        if failed < RESIZE_TRIES {
            this.failed_resizes.set(failed);
            return true;
        }
        this.failed_resizes.set(0);
        this.context.net().note(&format!(
            "the resize to {}x{} failed {failed} times in a row: rebuilding on a new device",
            this.canvas.width(),
            this.canvas.height()
        ));
        this.trigger_ms.set(now_ms());
        Inner::dispatch(this, Event::RequestRecovery);
        false
    }

    /// Asks the GPU process whether the live device `generation` is alive; a
    /// lost one is handled as a loss (on some engines `lost` resolves late).
    fn probe_live(this: &Rc<Self>, generation: u64) {
        let Some(device) = this
            .live
            .try_borrow()
            .ok()
            .and_then(|l| l.as_ref().map(|l| l.gpu.device.clone()))
            .filter(|_| this.generation_current(generation))
        else {
            return;
        };
        let weak = Rc::downgrade(this);
        wasm_bindgen_futures::spawn_local(async move {
            if device.confirm_alive().await {
                return;
            }
            if let Some(runtime) = weak.upgrade() {
                Inner::found_lost(&runtime, generation);
            }
        });
    }

    /// A probe found device `generation` lost: a loss, if it is still current
    /// (on some engines `lost` resolves late, or not at all).
    pub(super) fn found_lost(this: &Rc<Self>, generation: u64) {
        if !this.generation_current(generation) {
            return;
        }
        this.context
            .net()
            .note(&format!("device {generation} found lost by a probe"));
        Inner::dispatch(
            this,
            Event::Lost {
                generation,
                reason: crate::supervisor::LossReason::Unknown,
                at_ms: now_ms() as u64,
            },
        );
    }

    fn start_loop(this: &Rc<Self>) {
        this.last_tick_ms.set(now_ms());
        let weak = Rc::downgrade(this);
        this.frame_loop
            .set_callback(Closure::<dyn FnMut(f64)>::new(move |time: f64| {
                if let Some(runtime) = weak.upgrade() {
                    if crash::crashed() {
                        return Inner::on_crash(&runtime);
                    }
                    let time = match runtime.frame_loop.fired(time) {
                        frame_loop::Source::AnimationFrame => time,
                        frame_loop::Source::Timer => now_ms(),
                        frame_loop::Source::AnimationFrameBack => {
                            runtime
                                .context
                                .net()
                                .note("animation frames came back: drawing from them again");
                            time
                        }
                    };
                    Inner::tick(&runtime, time);
                }
            }));
        // The first frame now, not at the next animation frame: after a loss the
        // picture is back up to one frame interval sooner. It requests the next.
        Inner::tick(this, now_ms());
    }

    fn tick(this: &Rc<Self>, time: f64) {
        this.last_tick_ms.set(now_ms());
        this.stalled.set(false);
        let Some(live) = this.live.try_borrow().ok().and_then(|l| l.clone()) else {
            return;
        };
        let generation = live.gpu.generation;
        let may_draw = this
            .supervisor
            .try_borrow()
            .map(|s| s.may_draw(generation))
            .unwrap_or(false);
        if !may_draw {
            return;
        }
        if Inner::injected_loss_due(this, &live.gpu) {
            return;
        }
        // Requested before the frame runs: a frame that throws cannot stop the loop.
        this.frame_loop.request();
        // Calls the resize and the frame make (stop, force_recovery...) are
        // queued and handled once the frame returns.
        let outermost = !this.dispatching.replace(true);
        let may_draw = Inner::follow_the_size(this, &live);
        if crash::crashed() {
            // The resize's state cannot be trusted: nothing more runs.
            std::mem::forget(live);
            this.dispatching.set(false);
            return Inner::on_crash(this);
        }
        if !may_draw {
            // A rebuild was asked for: it runs now, as the frame's calls do.
            if outermost {
                Inner::drain(this);
            }
            Inner::drop_resources(this, live);
            return;
        }
        let number = this.frames.get() + 1;
        this.frames.set(number);
        let info = FrameInfo {
            number,
            time_ms: time,
            generation,
        };
        let started = now_ms();
        let scope = live.gpu.device.begin_frame(number);
        // Through a JavaScript trampoline: an exception thrown by a raw call in the
        // application's frame stops there, and everything here drops as usual.
        // The resources are borrowed outside it: a throw skips the destructors of
        // the frames it crosses, and a borrow taken inside would stay taken.
        let mut result = Ok(());
        let resources = live.resources.try_borrow();
        let thrown = crash::catching(&mut || {
            if let Ok(resources) = &resources {
                result = this.app.frame(&live.gpu, resources, &info);
            }
        });
        drop(resources);
        if crash::crashed() {
            // The frame's state cannot be trusted: its scopes and resources are
            // left as they are, and everything stops.
            std::mem::forget(scope);
            std::mem::forget(live);
            this.dispatching.set(false);
            return Inner::on_crash(this);
        }
        drop(scope);
        if let Err(thrown) = thrown {
            this.frames_thrown.set(this.frames_thrown.get() + 1);
            result = Err(Fault::new(
                FaultKind::Exception,
                format!(
                    "the frame threw (a raw web-sys call that does not catch?): {}",
                    crate::web::js::describe(&thrown)
                ),
            ));
        }
        let elapsed = now_ms() - started;
        // A frame that ran long (a breakpoint, a long compile) is no stall:
        // the wait for the next one starts when it ends.
        this.last_tick_ms.set(now_ms());
        this.frame_ms_total.set(this.frame_ms_total.get() + elapsed);
        let smoothed = this.frame_ms.get();
        this.frame_ms.set(if smoothed == 0.0 {
            elapsed
        } else {
            smoothed * 0.9 + elapsed * 0.1
        });
        if let Err(fault) = result {
            let fault = if fault.origin.frame.is_none() {
                fault.in_frame(number)
            } else {
                fault
            };
            this.context.net().report_ref(&fault);
        }
        let first = live.frames.get() == 0;
        live.frames.set(live.frames.get() + 1);
        if first {
            let now = now_ms();
            if let Some((mut timings, t0)) = this.pending_timing.take() {
                timings.to_first_frame_ms = now - t0;
                timings.to_picture_ms = now - this.trigger_ms.get();
                timings.first_frame_at_ms = now;
                if !timings.recovery {
                    this.cold_start.set(Some(timings));
                }
                this.last_init.set(Some(timings));
            }
            Inner::dispatch(
                this,
                Event::FirstFrame {
                    generation,
                    at_ms: now as u64,
                },
            );
        }
        if outermost {
            Inner::drain(this);
        }
        // The last reference, when the frame's calls tore it down.
        Inner::drop_resources(this, live);
    }
}
