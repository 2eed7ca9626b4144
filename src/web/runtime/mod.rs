//! The runtime: runs an [`App`] on a canvas. This module is its public face;
//! the work is done by modules with one job each:
//! * `driver`: the one loop that hands events to the pure [`Supervisor`](crate::supervisor::Supervisor) and
//!   carries out its [`Command`](crate::supervisor::Command)s (frames run inside it too);
//! * `slot`: the one place a generation's device lives (initialising, live),
//!   and the hand-overs an attempt sends with its events;
//! * `attempt`: one idempotent init attempt (adapter, device, loss watcher and
//!   fault sink listener armed before the canvas is configured, resources);
//! * `frame`: the animation frame, inside its frame scope, and the resize;
//! * `frame_loop`: the requests for animation (or timer) frames;
//! * `watchers`: the page's visibility, the clock and the canvas's size;
//! * `timers`: the supervisor's timers;
//! * [`status`]: the snapshot `gpuStatus()` reads.
//!
//! The invariants they keep (docs/design.md, "Invariants of the runtime, and
//! what catches a breach"):
//! the runtime's state is lent only to short closures (`crate::held`), so no
//! borrow is held while the application's code, a hook or a sink runs; the
//! loop that drives events is the only code that marks the runtime busy, around
//! a trampoline that returns on every throw; a generation's device is in one
//! slot, and an attempt hands what it made over with its event instead of
//! parking it.

mod attempt;
mod console;
mod driver;
mod fallback_view;
mod frame;
mod frame_loop;
mod injection;
mod inner;
mod loss;
mod slot;
pub mod status;
mod timers;
mod watchers;

use std::future::Future;
use std::rc::{Rc, Weak};

use wasm_bindgen::JsCast;
use web_sys::HtmlCanvasElement;

use crate::fault::{Fault, FaultKind};
pub use crate::supervisor::RecoveryAnswer;
use crate::supervisor::{Event, Fallback, SupervisorOptions};
use crate::web::crash;
use crate::web::faults::FaultSink;
use crate::web::init::{GpuContext, InitOptions};
use crate::web::session::{DiagnosticsLevel, Session};

use inner::Inner;

#[doc(hidden)]
pub use fallback_view::FallbackView;
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
///
/// State in `Self` must live on the CPU. A 2D canvas, an `OffscreenCanvas` or
/// an `ImageBitmap` kept there as the source of an upload lives on the GPU in
/// Chromium, and a GPU-process crash wipes it (the upload is then black):
/// keep the bytes (`ImageData`'s, a decoded file's) or redraw the source in
/// `build`. `matarGPU()` destroys the WebGPU device only and cannot show this:
/// try a real crash (`chrome://gpucrash`, or CDP's `Browser.crashGpuProcess`).
pub trait App: 'static {
    /// Every GPU object the application needs; dropped (and so released) on loss.
    type Resources: 'static;

    /// Builds the resources on a fresh device. Called on start and after each loss.
    ///
    /// An `Err` is reported once by the runtime (the console line, telemetry,
    /// `gpuStatus()`): no need to log it. A fault that can pass on a fresh
    /// device (out of memory, an internal error, a device lost meanwhile) is
    /// retried with backoff, up to the cap; any other (a validation error, an
    /// exception: a bug in the build, which would fail the same way every time)
    /// ends in the `init-failed` fallback.
    fn build(&self, gpu: &GpuContext) -> impl Future<Output = Result<Self::Resources, Fault>>;

    /// Records and submits one frame. Runs inside the frame's error scopes.
    ///
    /// An `Err` (a call the library refused, an exception) is reported once by
    /// the runtime, with the frame's number, and the loop goes on with the next
    /// frame; a loss is handled apart, whatever the frame returned. A GPU error
    /// the frame's calls cause (a validation error, out of memory) is not an
    /// `Err` here: WebGPU reports it later, the frame's scopes catch it and the
    /// fault sink reports it ([`Runtime::faults`] to read or hook it).
    ///
    /// It takes `&self`: the runtime, the page's input handlers and your own
    /// callbacks all hold the application at once (`Runtime::app`), so what a
    /// frame changes lives in a `Cell` (numbers, flags) or a `RefCell` (the
    /// rest), borrowed for the frame only (the frame's number and time are in
    /// [`FrameInfo`], no need to count them):
    ///
    /// ```no_run
    /// # use std::cell::Cell;
    /// # use webgpu_guard::prelude::*;
    /// struct Spin {
    ///     angle: Cell<f32>,
    /// }
    /// # struct Resources;
    /// impl App for Spin {
    ///     # type Resources = Resources;
    ///     # async fn build(&self, _: &GpuContext) -> Result<Resources, Fault> { Ok(Resources) }
    ///     fn frame(&self, gpu: &GpuContext, r: &Resources, info: &FrameInfo) -> Result<(), Fault> {
    ///         self.angle.set(self.angle.get() + 0.01); // the state a loss keeps
    ///         // ... write it to a uniform buffer of `r`, record, submit
    ///         # let _ = (gpu, r, info);
    ///         Ok(())
    ///     }
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
    /// Frame number, from 1, counting on across device generations (a
    /// recovery does not start it again).
    pub number: u64,
    /// The animation-frame timestamp, in milliseconds since the page's time
    /// origin (`performance.now()`'s clock; the same clock when a frame is
    /// drawn from a timer while animation frames are frozen).
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
        Runtime {
            inner: Rc::new(Inner::new(app, canvas, options)),
        }
    }

    /// Starts: the first init runs now. Idempotent. Refused after a crash.
    ///
    /// A started runtime keeps itself alive until [`Runtime::stop`]: a `main`
    /// that starts it and returns, dropping its handle, leaves it running.
    pub fn start(&self) {
        crash::install_panic_hook();
        Inner::start(&self.inner);
    }

    /// Calls `hook` when the fallback must be shown, in place of the default:
    /// without a hook, the runtime shows the fallback's message in the page in
    /// place of the canvas (an element of class [`FALLBACK_CLASS`], removed
    /// when the runtime starts again).
    pub fn on_fallback(&self, hook: impl Fn(&Fallback) + 'static) {
        self.inner.fallback.set_hook(Rc::new(hook));
    }

    /// The canvas it draws on.
    pub fn canvas(&self) -> &HtmlCanvasElement {
        &self.inner.canvas
    }

    /// The application.
    pub fn app(&self) -> &Rc<A> {
        &self.inner.app
    }

    /// The fault sink: where every fault, note and warning goes (the console,
    /// the counters, the telemetry sink).
    pub fn faults(&self) -> &FaultSink {
        self.inner.session.faults()
    }

    /// The session every device of this runtime shares: ledger, diagnostics
    /// level, frame counter, fault sink.
    pub fn session(&self) -> &Session {
        &self.inner.session
    }

    /// [`Self::session`]'s name before 0.2.0.
    #[deprecated(since = "0.2.0", note = "renamed `session`")]
    pub fn guard(&self) -> &Session {
        self.session()
    }

    /// The fault sink's accessor before 0.2.0.
    #[deprecated(since = "0.2.0", note = "renamed `faults`")]
    pub fn net(&self) -> &FaultSink {
        self.faults()
    }

    /// The shared diagnostics context's accessor before 0.2.0.
    #[deprecated(since = "0.2.0", note = "renamed `session`")]
    pub fn context(&self) -> &Session {
        &self.inner.session
    }

    /// Sets the diagnostics level, effective at once.
    pub fn set_level(&self, level: DiagnosticsLevel) {
        self.inner.session.set_level(level);
    }

    /// Changes which frames get scopes (one in 32 by default), effective from the
    /// next frame.
    pub fn set_frame_sampling(&self, sampling: crate::frame_sampling::FrameSampling) {
        self.inner.session.set_frame_sampling(sampling);
    }

    /// Runs `f` on the live GPU state, if the device is running (`None`
    /// too from inside [`App::resize`], which holds the resources mutably,
    /// and when `f` throws through WebAssembly: the throw ends there, is
    /// reported as a fault, and nothing is left borrowed).
    pub fn with_live<R>(&self, f: impl FnOnce(&GpuContext, &A::Resources) -> R) -> Option<R> {
        let live = self.inner.slot.live()?;
        let mut answer = None;
        // Not the runtime's borrow: the resources' own, shared with frames,
        // exclusive during a resize. Taken here and `f` called through the
        // trampoline, so that a throw in `f` (which skips every destructor of
        // the frames it crosses) ends before this borrow's release.
        if let Ok(resources) = live.resources.try_borrow() {
            let mut f = Some(f);
            let called = crate::web::crash::trampoline(&mut || {
                if let Some(f) = f.take() {
                    answer = Some(f(&live.gpu, &resources));
                }
            });
            if let Err(thrown) = called {
                if !crate::web::crash::crashed() {
                    self.inner
                        .session
                        .faults()
                        .report_ref(&crate::web::crash::thrown_fault(
                            "the closure given to with_live threw",
                            &thrown,
                        ));
                }
            }
        }
        // The last reference when `f` stopped or recovered: the resources'
        // `Drop` runs through the trampoline.
        Inner::drop_resources(&self.inner, live);
        answer
    }

    /// Forces the full recovery path (what `window.matarGPU()` does): stop the
    /// loop, release every GPU object, destroy the device, run init again at once,
    /// exactly as a real loss would. During a recovery already under way, nothing
    /// more happens (one recovery); during a backoff wait, the attempt starts now.
    ///
    /// After a fallback it starts over (a person asked for it); stopped, it
    /// does nothing (a start comes first); on a hidden page the rebuild waits
    /// until the page is shown. Which of these happens is returned, and said
    /// on the console.
    pub fn force_recovery(&self) -> RecoveryAnswer {
        Inner::request_recovery(&self.inner)
    }

    /// Stops: releases every GPU object, destroys the device, cancels whatever is
    /// pending; nothing restarts until [`Runtime::start`].
    pub fn stop(&self) {
        self.inner.clear_injections();
        // Nothing of a stopped runtime ticks until it starts again.
        self.inner.watchers.stop_the_clock();
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
        // The rejection is the answer: taken, not reported.
        let answer = outcome.take_faults();
        Some(answer.iter().any(|f| f.kind == FaultKind::ScopeStack))
    }

    /// A snapshot of everything `gpuStatus()` reports. Never fails, from
    /// anywhere. The errors the uncaptured-error listener held during a storm
    /// are handed over first, so that the counts are whole: the application's
    /// sanitiser and telemetry sink run for them.
    pub fn status(&self) -> Status {
        self.inner.status()
    }
}
