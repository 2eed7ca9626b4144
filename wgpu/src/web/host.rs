//! The browser as a [`Host`]: a canvas, animation frames, timers, the page's
//! visibility, and webgpu-guard's browser parts on wgpu's device (through
//! `as_webgpu()`): the `lost` promise, the `uncapturederror` listener with
//! its rate-limited fault sink, the trampoline that catches what application
//! code throws or how it traps, and the fallback shown in place of the canvas.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::HtmlCanvasElement;
use webgpu_guard::web::crash;
use webgpu_guard::web::engine::Engine;
use webgpu_guard::web::runtime::FallbackView;
use webgpu_guard::web::sizer::CanvasSizer;
use webgpu_guard::web::{EventListener, FaultSink};
use webgpu_guard_core::fault::{Fault, FaultKind};
use webgpu_guard_core::supervisor::{Fallback, LossReason};

use crate::gpu::Outlet;
use crate::host::{Handle, Host};

/// The fault sink as the driver's outlet.
pub(crate) struct WebOutlet {
    pub(crate) faults: FaultSink,
}

impl Outlet for WebOutlet {
    fn report(&self, fault: &Fault) {
        self.faults.report_ref(fault);
    }

    fn report_final(&self, fault: Fault) {
        self.faults.report_final(&fault);
    }

    fn note(&self, text: &str) {
        self.faults.note(text);
    }

    fn note_final(&self, text: &str) {
        self.faults.note_final(text);
    }

    fn warn(&self, text: &str) {
        self.faults.warn(text);
    }

    fn spawn(&self, future: Pin<Box<dyn Future<Output = ()>>>) {
        wasm_bindgen_futures::spawn_local(future);
    }

    fn set_frame(&self, frame: u64) {
        self.faults.set_frame(frame);
    }

    fn set_adapter(&self, adapter: &str) {
        self.faults.set_adapter(adapter);
    }
}

/// The browser's side of the runtime.
pub(crate) struct WebHost {
    pub(crate) canvas: HtmlCanvasElement,
    pub(crate) outlet: Rc<WebOutlet>,
    fallback: RefCell<Option<FallbackView>>,
    engine: Engine,
    /// The canvas's displayed size, observed: the drawing buffer follows it
    /// times `devicePixelRatio` (`None` without `ResizeObserver`: the
    /// canvas keeps the size its attributes give).
    sizer: Option<CanvasSizer>,
}

impl WebHost {
    pub(crate) fn new(canvas: HtmlCanvasElement, faults: FaultSink) -> Self {
        WebHost {
            sizer: CanvasSizer::observe(&canvas),
            canvas,
            outlet: Rc::new(WebOutlet { faults }),
            fallback: RefCell::default(),
            engine: Engine::detect(),
        }
    }
}

/// wgpu's device as web-sys's (the same JavaScript object).
fn raw_device(device: &wgpu::Device) -> Option<&web_sys::GpuDevice> {
    device.as_webgpu().map(|raw| raw.unchecked_ref())
}

/// A requested animation frame; dropping it cancels the request.
struct AnimationFrame {
    id: i32,
    _closure: Closure<dyn FnMut(f64)>,
}

impl Drop for AnimationFrame {
    fn drop(&mut self) {
        if let Some(window) = web_sys::window() {
            let _ = window.cancel_animation_frame(self.id);
        }
    }
}

impl Host for WebHost {
    fn has_gpu_api(&self) -> bool {
        web_sys::window()
            .and_then(|w| js_sys::Reflect::get(&w.navigator(), &"gpu".into()).ok())
            .is_some_and(|gpu| !gpu.is_undefined() && !gpu.is_null())
    }

    fn adapter_name(&self, adapter: &wgpu::Adapter, device: &wgpu::Device) -> String {
        // wgpu's `AdapterInfo` carries the description alone (often empty):
        // the browser's own `adapterInfo` says vendor and architecture too,
        // where the engine has it on the device.
        let info = device
            .as_webgpu()
            .and_then(|device| {
                let device: &JsValue = device.as_ref();
                js_sys::Reflect::get(device, &"adapterInfo".into()).ok()
            })
            .filter(JsValue::is_object);
        if let Some(info) = info {
            return webgpu_guard::web::init::describe_adapter_info(&info, &info);
        }
        let info = adapter.get_info();
        match (info.name.is_empty(), info.device_type) {
            (false, _) => info.name,
            (true, wgpu::DeviceType::Cpu) => {
                "software adapter (the browser exposes no vendor details)".into()
            }
            (true, _) => "GPU adapter (the browser exposes no vendor details)".into(),
        }
    }

    fn instance_descriptor(&self) -> wgpu::InstanceDescriptor {
        let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
        descriptor.backends = wgpu::Backends::BROWSER_WEBGPU;
        descriptor
    }

    fn surface_target(&self) -> Option<wgpu::SurfaceTarget<'static>> {
        Some(wgpu::SurfaceTarget::Canvas(self.canvas.clone()))
    }

    fn drawing_size(&self, max_side: u32) -> (u32, u32) {
        // Cut with its shape kept (webgpu-guard's rule); configuring the
        // surface gives the canvas that size.
        let given = (self.canvas.width().max(1), self.canvas.height().max(1));
        self.sizer
            .as_ref()
            .and_then(|sizer| sizer.wanted(max_side))
            .unwrap_or(given)
    }

    fn request_frame(&self, on_frame: Box<dyn FnOnce(f64)>) -> Handle {
        let mut on_frame = Some(on_frame);
        let closure = Closure::<dyn FnMut(f64)>::new(move |time: f64| {
            if let Some(on_frame) = on_frame.take() {
                on_frame(time);
            }
        });
        let id = web_sys::window()
            .and_then(|w| {
                w.request_animation_frame(closure.as_ref().unchecked_ref())
                    .ok()
            })
            .unwrap_or(0);
        Box::new(AnimationFrame {
            id,
            _closure: closure,
        })
    }

    fn timer(&self, delay_ms: u32, fire: Box<dyn FnOnce()>) -> Handle {
        Box::new(gloo_timers::callback::Timeout::new(delay_ms, fire))
    }

    fn watch_visibility(&self, on_change: Box<dyn Fn(bool)>) -> Handle {
        let Some(document) = web_sys::window().and_then(|w| w.document()) else {
            return Box::new(());
        };
        let target = document.clone();
        Box::new(EventListener::new(&target, "visibilitychange", move |_| {
            on_change(document.hidden())
        }))
    }

    fn hidden(&self) -> bool {
        web_sys::window()
            .and_then(|w| w.document())
            .is_some_and(|d| d.hidden())
    }

    fn now_ms(&self) -> f64 {
        webgpu_guard::web::js::now_ms()
    }

    fn outlet(&self) -> Rc<dyn Outlet> {
        self.outlet.clone()
    }

    fn watch_loss(
        &self,
        device: &wgpu::Device,
        on_lost: Box<dyn FnOnce(LossReason, String)>,
    ) -> Handle {
        match raw_device(device) {
            Some(raw) => Box::new(webgpu_guard::web::lost::watch_lost(raw, on_lost)),
            None => Box::new(()),
        }
    }

    fn listen(&self, device: &wgpu::Device) -> Handle {
        match raw_device(device) {
            Some(raw) => Box::new(self.outlet.faults.install(raw)),
            None => Box::new(()),
        }
    }

    fn let_go(&self, device: &wgpu::Device) {
        // Firefox: a destroyed device stops animation frames for the whole
        // page; there the device is left to the garbage collector.
        if self.engine.destroy_is_safe() {
            device.destroy();
        }
    }

    fn fallback_message(&self, fallback: &Fallback) -> String {
        fallback.message()
    }

    fn show_fallback(&self, fallback: &Fallback) {
        // The old view goes first: it gives the canvas its own display back,
        // which the new one keeps to give back in turn.
        drop(self.fallback.borrow_mut().take());
        let view = FallbackView::show(&self.canvas, fallback);
        *self.fallback.borrow_mut() = view;
    }

    fn hide_fallback(&self) {
        self.fallback.borrow_mut().take();
    }

    fn call_app(&self, what: &str, f: &mut dyn FnMut()) -> Result<(), Fault> {
        crash::trampoline(f).map_err(|thrown| thrown_fault(what, &thrown))
    }

    fn guard_future<'a, T: 'a>(
        &self,
        what: &'static str,
        future: impl Future<Output = T> + 'a,
    ) -> impl Future<Output = Result<T, Fault>> + 'a {
        let guarded = crash::Trampolined::new(future);
        async move { guarded.await.map_err(|thrown| thrown_fault(what, &thrown)) }
    }

    fn crashed(&self) -> Option<String> {
        crash::crash_message()
    }

    fn on_crash_elsewhere(&self, on_crash: Box<dyn Fn()>) {
        // In the browser a panic is a trap, seen where webgpu-guard's
        // trampoline runs the application's code; nothing else reports one.
        drop(on_crash);
    }

    fn state_survives_a_crash(&self) -> bool {
        false
    }

    fn spawn(&self, future: impl Future<Output = ()> + 'static) {
        wasm_bindgen_futures::spawn_local(future);
    }
}

/// The fault of application code that threw `thrown` (or trapped).
fn thrown_fault(what: &str, thrown: &JsValue) -> Fault {
    Fault::new(
        FaultKind::Exception,
        format!("{what} threw: {}", webgpu_guard::web::js::describe(thrown)),
    )
}
