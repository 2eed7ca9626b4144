//! The browser's [`Runtime`]: an [`App`] on a `<canvas>`, through wgpu's
//! WebGPU backend.

mod console;
mod host;

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::JsCast;
use web_sys::HtmlCanvasElement;
use webgpu_guard::web::FaultSink;
use webgpu_guard_core::fault::{Fault, FaultKind};
use webgpu_guard_core::supervisor::RecoveryAnswer;

use crate::app::App;
use crate::driver::Driver;
use crate::gpu::Gpu;
pub use crate::runtime::{RuntimeOptions, Status};
use host::WebHost;

/// The class of the element shown in place of the canvas when the runtime
/// gives up, for a page's own style sheet.
pub use webgpu_guard::web::runtime::FALLBACK_CLASS;

/// The browser console's lines (`log::error`, `log::warn`, `log::info`), as
/// the runtime writes them.
pub use webgpu_guard::web::log;

thread_local! {
    /// Started runtimes: each keeps itself alive until `stop()`.
    static STARTED: RefCell<Vec<Rc<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

/// Runs an [`App`] on a canvas with wgpu (WebGPU backend): brings a device
/// up, draws frames, and after a loss makes a new adapter and device and
/// builds again; see the crate's documentation. Cheap to clone (a handle).
pub struct Runtime<A: App> {
    driver: Rc<Driver<A, WebHost>>,
}

impl<A: App> Clone for Runtime<A> {
    fn clone(&self) -> Self {
        Runtime {
            driver: self.driver.clone(),
        }
    }
}

impl<A: App> std::fmt::Debug for Runtime<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("state", &self.driver.state())
            .finish_non_exhaustive()
    }
}

impl<A: App> Runtime<A> {
    /// A runtime for `app` on the page's `<canvas id="…">`; `Err` naming the
    /// id when there is no such canvas.
    pub fn on_canvas_id(app: A, id: &str, options: RuntimeOptions) -> Result<Self, Fault> {
        let canvas = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id(id))
            .ok_or_else(|| {
                Fault::new(FaultKind::Exception, format!("no element with id \"{id}\""))
            })?
            .dyn_into::<HtmlCanvasElement>()
            .map_err(|_| {
                Fault::new(
                    FaultKind::Exception,
                    format!("the element with id \"{id}\" is not a <canvas>"),
                )
            })?;
        Ok(Runtime::new(app, canvas, options))
    }

    /// A runtime for `app` on `canvas`. Nothing happens until [`Runtime::start`].
    pub fn new(app: A, canvas: HtmlCanvasElement, options: RuntimeOptions) -> Self {
        webgpu_guard::web::crash::install_panic_hook();
        let faults = FaultSink::new(Rc::new(Cell::new(0)));
        let host = WebHost::new(canvas, faults);
        Runtime {
            driver: Driver::new(Rc::new(app), host, options.driver_options()),
        }
    }

    /// Starts (or starts again after `stop()` or a fallback). The runtime
    /// keeps itself alive until [`Runtime::stop`].
    pub fn start(&self) {
        let me: Rc<dyn Any> = self.driver.clone();
        STARTED.with(|started| {
            let mut started = started.borrow_mut();
            if !started.iter().any(|s| Rc::ptr_eq(s, &me)) {
                started.push(me);
            }
        });
        self.driver.start();
    }

    /// Stops on purpose: releases every GPU object and the device, no restart.
    pub fn stop(&self) {
        self.driver.stop();
        let me: Rc<dyn Any> = self.driver.clone();
        STARTED.with(|started| started.borrow_mut().retain(|s| !Rc::ptr_eq(s, &me)));
    }

    /// The full recovery path, as a real loss would take it (`matarGPU()`):
    /// the resources released, the device let go, a new adapter and device
    /// built. Returns what it does.
    pub fn force_recovery(&self) -> RecoveryAnswer {
        self.driver.force_recovery()
    }

    /// The application.
    pub fn app(&self) -> &Rc<A> {
        &self.driver.app
    }

    /// The canvas.
    pub fn canvas(&self) -> &HtmlCanvasElement {
        &self.driver.host.canvas
    }

    /// The fault sink: every fault, note and warning goes there (the console,
    /// the counters, the telemetry sink: `faults().set_sink(...)`).
    pub fn faults(&self) -> &FaultSink {
        &self.driver.host.outlet.faults
    }

    /// Lends the running device's [`Gpu`] and the resources to `f`; `None`
    /// when no device runs or they are in use (called from inside a frame).
    pub fn with_live<R>(&self, f: impl FnOnce(&Gpu, &mut A::Resources) -> R) -> Option<R> {
        self.driver.with_live(f)
    }

    /// Where the runtime stands.
    pub fn status(&self) -> Status {
        self.driver.status(&self.faults().stats())
    }
}
