//! Bindings that catch: the WebGPU methods whose `web-sys` bindings are not marked
//! `catch` (they throw a `TypeError` for a malformed descriptor straight through
//! the Rust frames, skipping every pop and every guard), declared again here so
//! that a thrown exception comes back as `Err`. The library calls WebGPU through
//! these or through `web-sys` bindings that already catch, never through a
//! binding that throws.

use wasm_bindgen::prelude::*;
use web_sys::{
    GpuBindGroup, GpuBindGroupDescriptor, GpuBuffer, GpuCommandBuffer, GpuCommandEncoder,
    GpuCommandEncoderDescriptor, GpuComputePassDescriptor, GpuComputePassEncoder,
    GpuComputePipeline, GpuDevice, GpuPipelineLayout, GpuPipelineLayoutDescriptor, GpuQueue,
    GpuRenderPassEncoder, GpuSampler, GpuSamplerDescriptor, GpuShaderModule,
    GpuShaderModuleDescriptor,
};

#[wasm_bindgen(module = "/src/web/bindings.js")]
extern "C" {
    #[wasm_bindgen(catch)]
    pub(crate) fn try_create_bind_group(
        this: &GpuDevice,
        desc: &GpuBindGroupDescriptor,
    ) -> Result<GpuBindGroup, JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_create_pipeline_layout(
        this: &GpuDevice,
        desc: &GpuPipelineLayoutDescriptor,
    ) -> Result<GpuPipelineLayout, JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_create_sampler(
        this: &GpuDevice,
        desc: &GpuSamplerDescriptor,
    ) -> Result<GpuSampler, JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_create_shader_module(
        this: &GpuDevice,
        desc: &GpuShaderModuleDescriptor,
    ) -> Result<GpuShaderModule, JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_create_command_encoder(
        this: &GpuDevice,
        desc: &GpuCommandEncoderDescriptor,
    ) -> Result<GpuCommandEncoder, JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_submit(this: &GpuQueue, buffers: &js_sys::Array) -> Result<(), JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_finish(this: &GpuCommandEncoder) -> Result<GpuCommandBuffer, JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_begin_compute_pass(
        this: &GpuCommandEncoder,
        desc: &GpuComputePassDescriptor,
    ) -> Result<GpuComputePassEncoder, JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_clear_buffer(
        this: &GpuCommandEncoder,
        buffer: &GpuBuffer,
    ) -> Result<(), JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_copy_buffer_to_buffer(
        this: &GpuCommandEncoder,
        source: &GpuBuffer,
        source_offset: f64,
        destination: &GpuBuffer,
        destination_offset: f64,
        size: f64,
    ) -> Result<(), JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_set_viewport(
        this: &GpuRenderPassEncoder,
        x: f32,
        y: f32,
        width: f32,
        height: f32,
        min_depth: f32,
        max_depth: f32,
    ) -> Result<(), JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_end_render_pass(this: &GpuRenderPassEncoder) -> Result<(), JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_set_compute_pipeline(
        this: &GpuComputePassEncoder,
        pipeline: &GpuComputePipeline,
    ) -> Result<(), JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_set_compute_bind_group(
        this: &GpuComputePassEncoder,
        index: u32,
        group: Option<&GpuBindGroup>,
    ) -> Result<(), JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_dispatch_workgroups(
        this: &GpuComputePassEncoder,
        x: u32,
        y: u32,
        z: u32,
    ) -> Result<(), JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_end_compute_pass(this: &GpuComputePassEncoder) -> Result<(), JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_unconfigure(this: &web_sys::GpuCanvasContext) -> Result<(), JsValue>;

    /// `getPreferredCanvasFormat()`, as the format's string (web-sys returns
    /// `GpuTextureFormat`, which a build beside wgpu leaves out).
    #[cfg(not(feature = "web-sys-enums"))]
    pub(crate) fn preferred_canvas_format(gpu: &web_sys::Gpu) -> String;

    /// `configure({ device, format, alphaMode })`, the format and the alpha
    /// mode as strings.
    #[cfg(not(feature = "web-sys-enums"))]
    #[wasm_bindgen(catch)]
    pub(crate) fn try_configure(
        this: &web_sys::GpuCanvasContext,
        device: &GpuDevice,
        format: &str,
        alpha_mode: &str,
    ) -> Result<(), JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_destroy_device(this: &GpuDevice) -> Result<(), JsValue>;
}
