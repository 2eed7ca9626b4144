//! The steps of an idempotent init: `navigator.gpu` -> adapter -> device ->
//! canvas configured. Every call starts from nothing; nothing is kept between calls.

use wasm_bindgen::{JsCast, JsValue};
use web_sys::{
    GpuAdapter, GpuCanvasAlphaMode, GpuCanvasConfiguration, GpuCanvasContext, GpuDevice,
    GpuDeviceDescriptor, GpuTextureFormat, HtmlCanvasElement,
};

use crate::supervisor::InitFailure;
use crate::web::device::GuardedDevice;
use crate::web::js::describe;
use crate::web::lost::LostWatch;
use crate::web::net::NetListener;

/// Options of init.
#[derive(Clone, Debug)]
pub struct InitOptions {
    /// The device's label.
    pub device_label: String,
    /// The canvas alpha mode.
    pub alpha_mode: GpuCanvasAlphaMode,
}

impl Default for InitOptions {
    fn default() -> Self {
        InitOptions {
            device_label: "main-device".into(),
            alpha_mode: GpuCanvasAlphaMode::Opaque,
        }
    }
}

/// `navigator.gpu`, or [`InitFailure::NoWebGpu`].
pub fn navigator_gpu() -> Result<web_sys::Gpu, InitFailure> {
    let window = web_sys::window().ok_or(InitFailure::NoWebGpu)?;
    let navigator = window.navigator();
    let gpu = js_sys::Reflect::get(&navigator, &JsValue::from_str("gpu"))
        .map_err(|_| InitFailure::NoWebGpu)?;
    if gpu.is_undefined() || gpu.is_null() {
        return Err(InitFailure::NoWebGpu);
    }
    Ok(gpu.unchecked_into())
}

/// Requests an adapter; null is [`InitFailure::NoAdapter`].
pub async fn request_adapter(gpu: &web_sys::Gpu) -> Result<GpuAdapter, InitFailure> {
    let promise: js_sys::Promise = gpu.request_adapter().unchecked_into();
    let value = wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .map_err(|e| {
            InitFailure::DeviceRequest(format!("requestAdapter() rejected: {}", describe(&e)))
        })?;
    if value.is_null() || value.is_undefined() {
        return Err(InitFailure::NoAdapter);
    }
    Ok(value.unchecked_into())
}

/// Requests a device labelled `label`.
pub async fn request_device(adapter: &GpuAdapter, label: &str) -> Result<GpuDevice, InitFailure> {
    let desc = GpuDeviceDescriptor::new();
    desc.set_label(label);
    let promise: js_sys::Promise = adapter
        .request_device_with_descriptor(&desc)
        .unchecked_into();
    let value = wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .map_err(|e| InitFailure::DeviceRequest(describe(&e)))?;
    Ok(value.unchecked_into())
}

/// A one-line description of the adapter.
pub fn adapter_name(adapter: &GpuAdapter) -> String {
    let info = adapter.info();
    let parts: Vec<String> = [info.vendor(), info.architecture(), info.description()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    if parts.is_empty() {
        "unknown adapter".into()
    } else {
        parts.join(" / ")
    }
}

/// Gets the canvas's `webgpu` context and configures it for `device` (after
/// unconfiguring whatever an earlier device left).
pub fn configure_canvas(
    canvas: &HtmlCanvasElement,
    gpu: &web_sys::Gpu,
    device: &GpuDevice,
    alpha_mode: GpuCanvasAlphaMode,
) -> Result<(GpuCanvasContext, GpuTextureFormat), InitFailure> {
    let context = canvas
        .get_context("webgpu")
        .map_err(|e| InitFailure::Canvas(describe(&e)))?
        .ok_or_else(|| {
            InitFailure::Canvas(
                "getContext(\"webgpu\") returned null (the canvas already has another context?)"
                    .into(),
            )
        })?;
    let context: GpuCanvasContext = context
        .dyn_into()
        .map_err(|_| InitFailure::Canvas("the context is not a GPUCanvasContext".into()))?;
    context.unconfigure();
    let format = gpu.get_preferred_canvas_format();
    let config = GpuCanvasConfiguration::new(device, format);
    config.set_alpha_mode(alpha_mode);
    context
        .configure(&config)
        .map_err(|e| InitFailure::Canvas(describe(&e)))?;
    Ok((context, format))
}

/// Everything one init produced. Dropping it removes the net listener and disarms
/// the loss watcher; the device itself is destroyed by whoever owns the decision.
pub struct Gpu {
    /// The adapter's description.
    pub adapter_name: String,
    /// The device.
    pub device: GuardedDevice,
    /// The canvas context.
    pub context: GpuCanvasContext,
    /// The canvas format.
    pub format: GpuTextureFormat,
    /// The canvas.
    pub canvas: HtmlCanvasElement,
    /// Which device this is (1 for the first).
    pub generation: u64,
    pub(crate) _net: Option<NetListener>,
    pub(crate) _lost: Option<LostWatch>,
}

impl Gpu {
    /// Assembles a `Gpu` from parts (for code that runs init itself).
    pub fn from_parts(
        adapter_name: String,
        device: GuardedDevice,
        context: GpuCanvasContext,
        format: GpuTextureFormat,
        canvas: HtmlCanvasElement,
        generation: u64,
    ) -> Self {
        Gpu {
            adapter_name,
            device,
            context,
            format,
            canvas,
            generation,
            _net: None,
            _lost: None,
        }
    }
}
