//! The runtime: runs an [`App`] on a canvas, draws every animation frame inside a
//! frame scope, and carries out the supervisor's decisions on device loss.
//!
//! On loss: one log line; the frame loop stops (no animation-frame callback is
//! left calling the dead device); every GPU object is released; then init runs
//! again after the backoff, or the fallback is shown. The application's own state
//! lives in the [`App`] value, which survives, so the first frame after recovery
//! is the frame before.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::{Rc, Weak};

use gloo_timers::callback::Timeout;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::HtmlCanvasElement;

use crate::backoff::Backoff;
use crate::fault::Fault;
use crate::ledger::Tally;
use crate::supervisor::{
    Action, DestroyIntent, DeviceState, Fallback, InitFailure, LossReason, LossRecord, Supervisor,
};
use crate::web::context::{DiagnosticsLevel, GuardContext};
use crate::web::device::GuardedDevice;
use crate::web::init::{self, Gpu, InitOptions};
use crate::web::js::now_ms;
use crate::web::log;
use crate::web::lost::watch_lost;
use crate::web::net::{ErrorNet, NetStats};

/// The application the runtime drives. Keep application state (camera, scene,
/// time) in `Self`, GPU objects in `Resources`: resources are rebuilt after a loss,
/// `Self` is not.
pub trait App: 'static {
    /// Every GPU object the application needs; dropped (and so released) on loss.
    type Resources: 'static;

    /// Builds the resources on a fresh device. Called on start and after each loss.
    fn build(&self, gpu: &Gpu) -> impl Future<Output = Result<Self::Resources, Fault>>;

    /// Records and submits one frame. Runs inside the frame's error scopes.
    fn frame(&self, gpu: &Gpu, resources: &Self::Resources, info: &FrameInfo) -> Result<(), Fault>;
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

/// How long the last init took, step by step (milliseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InitTimings {
    /// `requestAdapter()`.
    pub adapter_ms: f64,
    /// `requestDevice()`.
    pub device_ms: f64,
    /// Canvas configuration.
    pub configure_ms: f64,
    /// The application's `build` (resources and pipelines).
    pub resources_ms: f64,
    /// From the start of init to the first frame submitted.
    pub to_first_frame_ms: f64,
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
    /// Successful recoveries.
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
    /// The adapter.
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
}

/// Runtime options.
#[derive(Clone, Debug, Default)]
pub struct RuntimeOptions {
    /// Init options.
    pub init: InitOptions,
    /// The recovery backoff.
    pub backoff: Backoff,
}

struct Live<R> {
    gpu: Gpu,
    resources: R,
}

type FrameCallback = Closure<dyn FnMut(f64)>;

struct FrameLoop {
    running: Cell<bool>,
    handle: Cell<Option<i32>>,
    callback: RefCell<Option<FrameCallback>>,
}

type FallbackHook = Rc<dyn Fn(&Fallback)>;

struct Inner<A: App> {
    app: Rc<A>,
    canvas: HtmlCanvasElement,
    options: RuntimeOptions,
    supervisor: RefCell<Supervisor>,
    context: GuardContext,
    net: ErrorNet,
    live: RefCell<Option<Live<A::Resources>>>,
    initializing: RefCell<Option<GuardedDevice>>,
    initializing_generation: Cell<u64>,
    epoch: Cell<u64>,
    frames: Cell<u64>,
    frame_ms: Cell<f64>,
    frame_ms_total: Cell<f64>,
    frame_loop: FrameLoop,
    retry: RefCell<Option<Timeout>>,
    adapter: RefCell<String>,
    fallback_hook: RefCell<Option<FallbackHook>>,
    cold_start: Cell<Option<InitTimings>>,
    last_init: Cell<Option<InitTimings>>,
    pending_timing: Cell<Option<(InitTimings, f64)>>,
}

/// Runs an [`App`]; cheap to clone.
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

impl<A: App> Runtime<A> {
    /// Creates the runtime; nothing happens until [`Runtime::start`].
    pub fn new(app: Rc<A>, canvas: HtmlCanvasElement, options: RuntimeOptions) -> Self {
        let context = GuardContext::default();
        let net = context.net().clone();
        let supervisor = Supervisor::new(options.backoff);
        Runtime {
            inner: Rc::new(Inner {
                app,
                canvas,
                options,
                supervisor: RefCell::new(supervisor),
                context,
                net,
                live: RefCell::new(None),
                initializing: RefCell::new(None),
                initializing_generation: Cell::new(0),
                epoch: Cell::new(0),
                frames: Cell::new(0),
                frame_ms: Cell::new(0.0),
                frame_ms_total: Cell::new(0.0),
                frame_loop: FrameLoop {
                    running: Cell::new(false),
                    handle: Cell::new(None),
                    callback: RefCell::new(None),
                },
                retry: RefCell::new(None),
                adapter: RefCell::new(String::new()),
                fallback_hook: RefCell::new(None),
                cold_start: Cell::new(None),
                last_init: Cell::new(None),
                pending_timing: Cell::new(None),
            }),
        }
    }

    /// Starts: the first init runs now.
    pub fn start(&self) {
        let action = self.inner.supervisor.borrow_mut().start();
        Inner::apply(&self.inner, action);
    }

    /// Calls `hook` when the fallback must be shown.
    pub fn on_fallback(&self, hook: impl Fn(&Fallback) + 'static) {
        *self.inner.fallback_hook.borrow_mut() = Some(Rc::new(hook));
    }

    /// The application.
    pub fn app(&self) -> &Rc<A> {
        &self.inner.app
    }

    /// The net.
    pub fn net(&self) -> &ErrorNet {
        &self.inner.net
    }

    /// The shared context (ledger, level, frame counter).
    pub fn context(&self) -> &GuardContext {
        &self.inner.context
    }

    /// Sets the diagnostics level, effective at once.
    pub fn set_level(&self, level: DiagnosticsLevel) {
        self.inner.context.set_level(level);
    }

    /// Runs `f` on the live GPU state, if the device is running.
    pub fn with_live<R>(&self, f: impl FnOnce(&Gpu, &A::Resources) -> R) -> Option<R> {
        let live = self.inner.live.try_borrow().ok()?;
        live.as_ref().map(|l| f(&l.gpu, &l.resources))
    }

    /// Forces the full recovery path (what `window.matarGPU()` does): stop the loop,
    /// release every GPU object, destroy the device, run init again, exactly as a
    /// real loss would.
    pub fn force_recovery(&self) {
        self.destroy_with(DestroyIntent::Recreate);
    }

    /// Unmounts: stop, release, destroy; no restart.
    pub fn stop(&self) {
        self.destroy_with(DestroyIntent::Stop);
    }

    fn destroy_with(&self, intent: DestroyIntent) {
        let inner = &self.inner;
        if inner.supervisor.borrow().state() != DeviceState::Running {
            log::warn("no running device to destroy");
            return;
        }
        inner.supervisor.borrow_mut().request_destroy(intent);
        inner.stop_loop();
        let live = inner.live.borrow_mut().take();
        if let Some(live) = live {
            let device = live.gpu.device.clone();
            drop(live.resources);
            // Keep the loss watcher armed: the supervisor hears about the loss from
            // `device.lost`, like any other.
            let Gpu { _lost, .. } = live.gpu;
            if let Some(watch) = _lost {
                watch.forget();
            }
            device.destroy();
        }
    }

    /// A snapshot of everything `gpuStatus()` reports.
    pub fn status(&self) -> Status {
        let inner = &self.inner;
        let supervisor = inner.supervisor.borrow();
        let report = inner
            .context
            .ledger()
            .try_borrow()
            .map(|l| (l.live(), l.report().peak))
            .unwrap_or_default();
        Status {
            state: supervisor.state(),
            generation: supervisor.generation(),
            recoveries: supervisor.recoveries(),
            frames: inner.frames.get(),
            last_loss: supervisor.last_loss().cloned(),
            net: inner.net.stats(),
            live: report.0,
            peak: report.1,
            adapter: inner.adapter.borrow().clone(),
            fallback: supervisor.fallback().cloned(),
            level: inner.context.level(),
            frame_ms: inner.frame_ms.get(),
            frame_ms_total: inner.frame_ms_total.get(),
            cold_start: inner.cold_start.get(),
            last_init: inner.last_init.get(),
            loop_alive: inner.frame_loop.running.get(),
        }
    }
}

impl<A: App> Inner<A> {
    fn apply(this: &Rc<Self>, action: Action) {
        match action {
            Action::Init => {
                let runtime = this.clone();
                wasm_bindgen_futures::spawn_local(async move {
                    Inner::run_init(&runtime).await;
                });
            }
            Action::RetryAfter(ms) => {
                log::warn(&format!("re-initialising the GPU in {ms} ms"));
                let weak = Rc::downgrade(this);
                let timeout = Timeout::new(ms, move || {
                    if let Some(runtime) = weak.upgrade() {
                        runtime.retry.borrow_mut().take();
                        let action = runtime.supervisor.borrow_mut().retry_due();
                        Inner::apply(&runtime, action);
                    }
                });
                *this.retry.borrow_mut() = Some(timeout);
            }
            Action::ShowFallback(fallback) => {
                log::error(&format!("giving up: {}", fallback.message()));
                let hook = this.fallback_hook.borrow().clone();
                if let Some(hook) = hook {
                    hook(&fallback);
                }
            }
            Action::Stop => log::info("device destroyed on request; not restarting"),
            Action::Nothing => {}
        }
    }

    fn fail_init(this: &Rc<Self>, failure: InitFailure) {
        log::error(&format!("init failed: {}", failure.describe()));
        if let Some(device) = this.initializing.borrow_mut().take() {
            device.destroy();
        }
        this.initializing_generation.set(0);
        let action = this.supervisor.borrow_mut().init_failed(failure);
        Inner::apply(this, action);
    }

    async fn run_init(this: &Rc<Self>) {
        let epoch = this.epoch.get() + 1;
        this.epoch.set(epoch);
        let stale = |runtime: &Rc<Self>| runtime.epoch.get() != epoch;
        let recovery = this.supervisor.borrow().generation() > 0;
        let t0 = now_ms();
        let gpu_api = match init::navigator_gpu() {
            Ok(gpu) => gpu,
            Err(failure) => return Inner::fail_init(this, failure),
        };
        let adapter = match init::request_adapter(&gpu_api).await {
            Ok(adapter) => adapter,
            Err(failure) if !stale(this) => return Inner::fail_init(this, failure),
            Err(_) => return,
        };
        if stale(this) {
            return;
        }
        *this.adapter.borrow_mut() = init::adapter_name(&adapter);
        let t1 = now_ms();
        let raw_device = match init::request_device(&adapter, &this.options.init.device_label).await
        {
            Ok(device) => device,
            Err(failure) if !stale(this) => return Inner::fail_init(this, failure),
            Err(_) => return,
        };
        if stale(this) {
            raw_device.destroy();
            return;
        }
        let t2 = now_ms();
        this.supervisor.borrow_mut().device_created();
        let generation = this.supervisor.borrow().generation();
        let device = GuardedDevice::with_context(raw_device.clone(), this.context.clone());
        *this.initializing.borrow_mut() = Some(device.clone());
        this.initializing_generation.set(generation);
        // Armed before the canvas is configured: a device can arrive already lost.
        let weak: Weak<Self> = Rc::downgrade(this);
        let watched = device.clone();
        let lost = watch_lost(&raw_device, move |reason, message| {
            watched.mark_lost();
            if let Some(runtime) = weak.upgrade() {
                Inner::on_lost(&runtime, generation, reason, message);
            }
        });
        let net = this.net.install(&raw_device);
        let (context, format) = match init::configure_canvas(
            &this.canvas,
            &gpu_api,
            &raw_device,
            this.options.init.alpha_mode,
        ) {
            Ok(pair) => pair,
            Err(failure) => return Inner::fail_init(this, failure),
        };
        let t3 = now_ms();
        let mut gpu = Gpu::from_parts(
            this.adapter.borrow().clone(),
            device.clone(),
            context,
            format,
            this.canvas.clone(),
            generation,
        );
        gpu._net = Some(net);
        let built = this.app.build(&gpu).await;
        if stale(this) {
            drop(built);
            return;
        }
        let resources = match built {
            Ok(resources) => resources,
            Err(fault) => return Inner::fail_init(this, InitFailure::Resources(fault.to_string())),
        };
        if device.is_lost() {
            drop(resources);
            return Inner::fail_init(
                this,
                InitFailure::LostDuringInit("lost while building".into()),
            );
        }
        let t4 = now_ms();
        gpu._lost = Some(lost);
        this.initializing.borrow_mut().take();
        this.initializing_generation.set(0);
        *this.live.borrow_mut() = Some(Live { gpu, resources });
        this.supervisor.borrow_mut().init_succeeded();
        let timings = InitTimings {
            adapter_ms: t1 - t0,
            device_ms: t2 - t1,
            configure_ms: t3 - t2,
            resources_ms: t4 - t3,
            to_first_frame_ms: 0.0,
            recovery,
        };
        this.pending_timing.set(Some((timings, t0)));
        log::info(&format!(
            "device generation {generation} running ({})",
            this.adapter.borrow()
        ));
        Inner::start_loop(this);
    }

    fn on_lost(this: &Rc<Self>, generation: u64, reason: LossReason, message: String) {
        let live_generation = this
            .live
            .try_borrow()
            .ok()
            .and_then(|l| l.as_ref().map(|l| l.gpu.generation));
        let is_live = live_generation == Some(generation);
        let is_initializing = this.initializing_generation.get() == generation && generation != 0;
        let state = this.supervisor.borrow().state();
        let destroyed_on_request = state == DeviceState::Running && live_generation.is_none();
        if !is_live && !is_initializing && !destroyed_on_request {
            return;
        }
        log::warn(&format!(
            "device lost (generation {generation}, reason {}): {message}",
            reason.as_str()
        ));
        this.stop_loop();
        if let Ok(mut live) = this.live.try_borrow_mut() {
            if let Some(live) = live.take() {
                drop(live.resources);
                drop(live.gpu);
            }
        }
        if is_initializing {
            this.epoch.set(this.epoch.get() + 1);
            this.initializing.borrow_mut().take();
            this.initializing_generation.set(0);
        }
        let action = this.supervisor.borrow_mut().lost(reason, message);
        Inner::apply(this, action);
    }

    fn start_loop(this: &Rc<Self>) {
        let weak = Rc::downgrade(this);
        let callback = Closure::<dyn FnMut(f64)>::new(move |time: f64| {
            if let Some(runtime) = weak.upgrade() {
                Inner::tick(&runtime, time);
            }
        });
        *this.frame_loop.callback.borrow_mut() = Some(callback);
        this.frame_loop.running.set(true);
        this.request_frame();
    }

    fn request_frame(&self) {
        let Some(window) = web_sys::window() else {
            return;
        };
        let callback = self.frame_loop.callback.borrow();
        if let Some(callback) = callback.as_ref() {
            match window.request_animation_frame(callback.as_ref().unchecked_ref()) {
                Ok(handle) => self.frame_loop.handle.set(Some(handle)),
                Err(_) => self.frame_loop.running.set(false),
            }
        }
    }

    fn stop_loop(&self) {
        self.frame_loop.running.set(false);
        if let (Some(handle), Some(window)) = (self.frame_loop.handle.take(), web_sys::window()) {
            let _ = window.cancel_animation_frame(handle);
        }
    }

    fn tick(this: &Rc<Self>, time: f64) {
        this.frame_loop.handle.set(None);
        if !this.frame_loop.running.get() || !this.supervisor.borrow().may_draw() {
            this.frame_loop.running.set(false);
            return;
        }
        let number = this.frames.get() + 1;
        this.frames.set(number);
        this.context.set_frame(number);
        let started = now_ms();
        let result = match this.live.try_borrow() {
            Ok(live) => match live.as_ref() {
                Some(live) => {
                    let info = FrameInfo {
                        number,
                        time_ms: time,
                        generation: live.gpu.generation,
                    };
                    let scope = live.gpu.device.begin_frame(number);
                    let result = this.app.frame(&live.gpu, &live.resources, &info);
                    scope.end();
                    result
                }
                None => Ok(()),
            },
            Err(_) => Ok(()),
        };
        let elapsed = now_ms() - started;
        this.frame_ms_total.set(this.frame_ms_total.get() + elapsed);
        let smoothed = this.frame_ms.get();
        this.frame_ms.set(if smoothed == 0.0 {
            elapsed
        } else {
            smoothed * 0.9 + elapsed * 0.1
        });
        if let Err(fault) = result {
            this.net.report_ref(&fault.in_frame(number));
        }
        if let Some((mut timings, t0)) = this.pending_timing.take() {
            timings.to_first_frame_ms = now_ms() - t0;
            if timings.recovery {
                this.last_init.set(Some(timings));
            } else {
                this.cold_start.set(Some(timings));
                this.last_init.set(Some(timings));
            }
        }
        if this.frame_loop.running.get() {
            this.request_frame();
        }
    }
}
