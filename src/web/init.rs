//! The steps of an idempotent init: `navigator.gpu` -> adapter -> device ->
//! canvas configured. Every call starts from nothing; nothing is kept between calls.

use wasm_bindgen::{JsCast, JsValue};
use web_sys::{GpuAdapter, GpuCanvasContext, GpuDevice, GpuDeviceDescriptor, HtmlCanvasElement};
#[cfg(feature = "web-sys-enums")]
use web_sys::{GpuCanvasAlphaMode, GpuTextureFormat};

use crate::supervisor::{InitFailure, InitStep};
use crate::web::device::GuardedDevice;
use crate::web::faults::UncapturedListener;
use crate::web::js::describe;
use crate::web::lost::LostWatch;

/// Options of init.
#[derive(Clone, Debug)]
pub struct InitOptions {
    /// The device's label.
    pub device_label: String,
    /// The canvas alpha mode (feature `web-sys-enums`; without it, `opaque`).
    #[cfg(feature = "web-sys-enums")]
    pub alpha_mode: GpuCanvasAlphaMode,
}

impl Default for InitOptions {
    fn default() -> Self {
        InitOptions {
            device_label: "main-device".into(),
            #[cfg(feature = "web-sys-enums")]
            alpha_mode: GpuCanvasAlphaMode::Opaque,
        }
    }
}

/// The canvas format as init carries it: web-sys's enum with the
/// `web-sys-enums` feature (passed as a number, no string table linked in),
/// its `GPUTextureFormat` string without it.
#[cfg(feature = "web-sys-enums")]
pub(crate) type CanvasFormat = GpuTextureFormat;
/// See the other definition.
#[cfg(not(feature = "web-sys-enums"))]
pub(crate) type CanvasFormat = String;

/// `navigator.gpu`, or [`InitFailure::NoWebGpu`].
pub fn navigator_gpu() -> Result<web_sys::Gpu, InitFailure> {
    crate::web::js::install_describer();
    let window = web_sys::window().ok_or(InitFailure::NoWebGpu)?;
    let navigator = window.navigator();
    let gpu = js_sys::Reflect::get(&navigator, &JsValue::from_str("gpu"))
        .map_err(|_| InitFailure::NoWebGpu)?;
    if gpu.is_undefined() || gpu.is_null() {
        return Err(InitFailure::NoWebGpu);
    }
    Ok(gpu.unchecked_into())
}

/// Requests an adapter; null is [`InitFailure::NoAdapter`], a rejection or a
/// throw names the step.
pub async fn request_adapter(gpu: &web_sys::Gpu) -> Result<GpuAdapter, InitFailure> {
    let promise: js_sys::Promise = gpu.request_adapter().unchecked_into();
    let value = wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .map_err(|e| InitFailure::Step(InitStep::Adapter, describe(&e)))?;
    if value.is_null() || value.is_undefined() {
        return Err(InitFailure::NoAdapter);
    }
    Ok(value.unchecked_into())
}

/// Requests a device labelled `label`.
pub async fn request_device(adapter: &GpuAdapter, label: &str) -> Result<GpuDevice, InitFailure> {
    let desc = GpuDeviceDescriptor::new();
    crate::web::text::set_label(&desc, label);
    let promise: js_sys::Promise = adapter
        .request_device_with_descriptor(&desc)
        .unchecked_into();
    let value = wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .map_err(|e| InitFailure::Step(InitStep::Device, describe(&e)))?;
    if value.is_null() || value.is_undefined() {
        return Err(InitFailure::Step(
            InitStep::Device,
            "requestDevice() resolved to nothing".into(),
        ));
    }
    Ok(value.unchecked_into())
}

/// A one-line description of the adapter, read defensively: a browser without
/// `adapter.info` (or with empty fields, as Firefox gives) gets a description
/// from what is there, never an exception.
pub fn adapter_name(adapter: &GpuAdapter) -> String {
    let info =
        js_sys::Reflect::get(adapter, &JsValue::from_str("info")).unwrap_or(JsValue::UNDEFINED);
    describe_adapter_info(&info, adapter)
}

/// The words of [`adapter_name`] for a `GPUAdapterInfo` (`info`: the
/// adapter's `info`, or a device's `adapterInfo`), `holder` the object it
/// came from (older engines tell `isFallbackAdapter` there).
#[doc(hidden)]
pub fn describe_adapter_info(info: &JsValue, holder: &JsValue) -> String {
    let mut name = String::new();
    if info.is_object() {
        for key in ["vendor", "architecture", "description"] {
            let part = crate::web::js::text_field(info, key);
            if part.is_empty() {
                continue;
            }
            if !name.is_empty() {
                name.push_str(" / ");
            }
            name.push_str(&part);
        }
    }
    if !name.is_empty() {
        return name;
    }
    let fallback = js_sys::Reflect::get(info, &JsValue::from_str("isFallbackAdapter"))
        .ok()
        .or_else(|| js_sys::Reflect::get(holder, &JsValue::from_str("isFallbackAdapter")).ok())
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let what = if fallback {
        "software adapter (the browser exposes no vendor details)"
    } else {
        "GPU adapter (the browser exposes no vendor details)"
    };
    what.to_string()
}

/// Gets the canvas's `webgpu` context and configures it for `device` (after
/// unconfiguring whatever an earlier device left).
pub fn configure_canvas(
    canvas: &HtmlCanvasElement,
    gpu: &web_sys::Gpu,
    device: &GpuDevice,
    options: &InitOptions,
) -> Result<(GpuCanvasContext, CanvasFormat), InitFailure> {
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
    let _ = crate::web::bindings::try_unconfigure(&context);
    #[cfg(feature = "web-sys-enums")]
    let format = {
        let format = gpu.get_preferred_canvas_format();
        let config = web_sys::GpuCanvasConfiguration::new(device, format);
        config.set_alpha_mode(options.alpha_mode);
        context
            .configure(&config)
            .map_err(|e| InitFailure::Canvas(describe(&e)))?;
        format
    };
    #[cfg(not(feature = "web-sys-enums"))]
    let format = {
        let _ = options;
        let format = crate::web::bindings::preferred_canvas_format(gpu);
        crate::web::bindings::try_configure(&context, device, &format, "opaque")
            .map_err(|e| InitFailure::Canvas(describe(&e)))?;
        format
    };
    Ok((context, format))
}

/// What an application draws with, for one device generation: the guarded
/// device, the configured canvas context and its format. Built whole by one init
/// once the canvas is configured (nothing is patched in afterwards); dropping it
/// removes the fault sink listener and disarms the loss watcher, and the device itself
/// is let go by the runtime.
pub struct GpuContext {
    /// The adapter's description.
    pub adapter_name: String,
    /// The device.
    pub device: GuardedDevice,
    /// The canvas's WebGPU context, where frames are presented
    /// (`get_current_texture`).
    pub surface: GpuCanvasContext,
    /// The canvas format (feature `web-sys-enums`; [`GpuContext::format_name`]
    /// without it).
    #[cfg(feature = "web-sys-enums")]
    pub format: GpuTextureFormat,
    /// The canvas format's `GPUTextureFormat` string.
    #[cfg(not(feature = "web-sys-enums"))]
    pub(crate) format_name: String,
    /// The canvas.
    pub canvas: HtmlCanvasElement,
    /// Which device this is (1 for the first).
    pub generation: u64,
    /// The installed `uncapturederror` listener (removed on drop).
    pub(crate) _listener: UncapturedListener,
    /// The armed loss watcher (disarmed on drop).
    pub(crate) _lost_watch: LostWatch,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext")
            .field("adapter_name", &self.adapter_name)
            .field("generation", &self.generation)
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

impl GpuContext {
    /// The canvas format's `GPUTextureFormat` string (`"bgra8unorm"`, …).
    pub fn format_name(&self) -> String {
        #[cfg(feature = "web-sys-enums")]
        return crate::web::js::enum_str(self.format);
        #[cfg(not(feature = "web-sys-enums"))]
        return self.format_name.clone();
    }

    /// The drawing buffer's size (the canvas's `width` and `height`).
    pub fn size(&self) -> (u32, u32) {
        (self.canvas.width(), self.canvas.height())
    }

    /// Unconfigures the canvas, then destroys the device (where the engine allows
    /// it, see [`Engine::destroy_is_safe`](crate::web::engine::Engine::destroy_is_safe)). The caller has released every object
    /// the device owned.
    pub(crate) fn release(&self) {
        let _ = crate::web::bindings::try_unconfigure(&self.surface);
        self.device.retire();
    }
}
