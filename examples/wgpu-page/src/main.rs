//! A page that draws with wgpu 30 (its WebGPU backend) and watches wgpu's
//! device with webgpu-guard's browser parts: the `uncapturederror` listener
//! (the fault sink, rate-limited and classified) and the HTTP telemetry sink
//! (`?telemetry=<collector URL>`). It names no web-sys `Gpu*` enum: wgpu's
//! backend carries its own copies, and a build with both is refused by
//! wasm-bindgen. After its first frame it makes one deliberate mistake (a
//! write into a destroyed buffer) for the listener to catch;
//! `window.wgpuPageStatus()` says what happened.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use webgpu_guard::web::{FaultSink, HttpSink};

/// The label of the buffer made wrong on purpose.
const DELIBERATE: &str = "deliberately-invalid";
/// The colour the page clears its canvas to.
const CLEAR: wgpu::Color = wgpu::Color {
    r: 0.1,
    g: 0.6,
    b: 0.3,
    a: 1.0,
};

/// What `wgpuPageStatus()` reports.
#[derive(Default)]
struct PageState {
    drawn: bool,
    adapter: String,
    failure: Option<String>,
}

fn main() {
    let state = Rc::new(RefCell::new(PageState::default()));
    let frame = Rc::new(Cell::new(0));
    let faults = FaultSink::new(frame.clone());
    let telemetry = telemetry_url().and_then(|url| match HttpSink::new(&url, "wgpu-page") {
        Ok(sink) => Some(sink),
        Err(message) => {
            state.borrow_mut().failure = Some(message);
            None
        }
    });
    if let Some(sink) = &telemetry {
        faults.set_sink(Box::new(sink.clone()));
    }
    expose_status(state.clone(), faults.clone(), telemetry);
    wasm_bindgen_futures::spawn_local(async move {
        if let Err(message) = run(&state, &faults, &frame).await {
            state.borrow_mut().failure = Some(message);
        }
    });
}

/// `?telemetry=<url>` in the page's address.
fn telemetry_url() -> Option<String> {
    let search = web_sys::window()?.location().search().ok()?;
    web_sys::UrlSearchParams::new_with_str(&search)
        .ok()?
        .get("telemetry")
}

/// wgpu's instance, adapter, device and surface; one frame; the mistake.
async fn run(
    state: &Rc<RefCell<PageState>>,
    faults: &FaultSink,
    frame: &Rc<Cell<u64>>,
) -> Result<(), String> {
    let canvas: web_sys::HtmlCanvasElement = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id("canvas"))
        .and_then(|e| e.dyn_into().ok())
        .ok_or("no <canvas id=\"canvas\">")?;
    let (width, height) = (canvas.width(), canvas.height());
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
    descriptor.backends = wgpu::Backends::BROWSER_WEBGPU;
    let instance = wgpu::Instance::new(descriptor);
    let surface = instance
        .create_surface(wgpu::SurfaceTarget::Canvas(canvas))
        .map_err(|e| format!("surface: {e}"))?;
    let adapter = instance
        .request_adapter(&wgpu::RequestAdapterOptions {
            compatible_surface: Some(&surface),
            ..Default::default()
        })
        .await
        .map_err(|e| format!("adapter: {e}"))?;
    let (device, queue) = adapter
        .request_device(&wgpu::DeviceDescriptor {
            label: Some("wgpu-page-device"),
            ..Default::default()
        })
        .await
        .map_err(|e| format!("device: {e}"))?;
    let raw_device = device
        .as_webgpu()
        .ok_or("wgpu's device is not on the WebGPU backend")?;
    // The listener lives as long as the page: wgpu's device is never dropped.
    std::mem::forget(faults.install(raw_device.unchecked_ref()));
    state.borrow_mut().adapter = adapter.get_info().name;

    let config = surface
        .get_default_config(&adapter, width, height)
        .ok_or("the surface does not suit the adapter")?;
    surface.configure(&device, &config);
    let texture = match surface.get_current_texture() {
        wgpu::CurrentSurfaceTexture::Success(texture)
        | wgpu::CurrentSurfaceTexture::Suboptimal(texture) => texture,
        _ => return Err("no surface texture".into()),
    };
    let view = texture
        .texture
        .create_view(&wgpu::TextureViewDescriptor::default());
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("clear"),
    });
    {
        let _pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("clear-pass"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(CLEAR),
                    store: wgpu::StoreOp::Store,
                },
            })],
            ..Default::default()
        });
    }
    queue.submit([encoder.finish()]);
    queue.present(texture);
    frame.set(1);
    faults.set_frame(1);
    state.borrow_mut().drawn = true;

    // The mistake: a write into a buffer already destroyed (both engines
    // quote the buffer's label in their message for this one).
    let destroyed = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(DELIBERATE),
        size: 16,
        usage: wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    destroyed.destroy();
    queue.write_buffer(&destroyed, 0, &[0; 16]);
    // The device, queue and surface stay for the page's life.
    std::mem::forget((device, queue, surface, instance));
    Ok(())
}

/// `window.wgpuPageStatus()`: `{ drawn, adapter, failure, validation,
/// lines, telemetryDelivered }`.
fn expose_status(state: Rc<RefCell<PageState>>, faults: FaultSink, telemetry: Option<HttpSink>) {
    let status = Closure::<dyn Fn() -> JsValue>::new(move || {
        let object = js_sys::Object::new();
        let set = |key: &str, value: JsValue| {
            let _ = js_sys::Reflect::set(&object, &key.into(), &value);
        };
        let state = state.borrow();
        set("drawn", state.drawn.into());
        set("adapter", state.adapter.as_str().into());
        set(
            "failure",
            state
                .failure
                .as_deref()
                .map(JsValue::from)
                .unwrap_or(JsValue::NULL),
        );
        let stats = faults.stats();
        set("validation", (stats.validation as f64).into());
        let lines = js_sys::Array::new();
        for line in faults.recent_lines() {
            lines.push(&line.as_str().into());
        }
        set("lines", lines.into());
        let delivered = telemetry.as_ref().map_or(0, |sink| sink.stats().delivered);
        set("telemetryDelivered", (delivered as f64).into());
        object.into()
    });
    if let Some(window) = web_sys::window() {
        let _ = js_sys::Reflect::set(&window, &"wgpuPageStatus".into(), status.as_ref());
    }
    status.forget();
}
