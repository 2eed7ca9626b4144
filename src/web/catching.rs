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
    GpuRenderPassEncoder, GpuRenderPipeline, GpuSampler, GpuSamplerDescriptor, GpuShaderModule,
    GpuShaderModuleDescriptor,
};

#[wasm_bindgen(inline_js = r#"
export function try_create_bind_group(o, desc) { return o.createBindGroup(desc); }
export function try_create_pipeline_layout(o, desc) { return o.createPipelineLayout(desc); }
export function try_create_sampler(o, desc) { return o.createSampler(desc); }
export function try_create_shader_module(o, desc) { return o.createShaderModule(desc); }
export function try_create_command_encoder(o, desc) { return o.createCommandEncoder(desc); }
export function try_submit(o, buffers) { return o.submit(buffers); }
export function try_finish(o) { return o.finish(); }
export function try_begin_compute_pass(o, desc) { return o.beginComputePass(desc); }
export function try_clear_buffer(o, buffer) { return o.clearBuffer(buffer); }
export function try_copy_buffer_to_buffer(o, source, source_offset, destination, destination_offset, size) { return o.copyBufferToBuffer(source, source_offset, destination, destination_offset, size); }
export function try_set_render_pipeline(o, pipeline) { return o.setPipeline(pipeline); }
export function try_set_render_bind_group(o, index, group) { return o.setBindGroup(index, group); }
export function try_set_vertex_buffer(o, slot, buffer, offset) { return o.setVertexBuffer(slot, buffer, offset); }
export function try_set_index_buffer(o, buffer, format, offset) { return o.setIndexBuffer(buffer, format, offset); }
export function try_set_viewport(o, x, y, width, height, min_depth, max_depth) { return o.setViewport(x, y, width, height, min_depth, max_depth); }
export function try_draw(o, vertex_count, instance_count, first_vertex, first_instance) { return o.draw(vertex_count, instance_count, first_vertex, first_instance); }
export function try_draw_indexed(o, index_count, instance_count, first_index, base_vertex, first_instance) { return o.drawIndexed(index_count, instance_count, first_index, base_vertex, first_instance); }
export function try_end_render_pass(o) { return o.end(); }
export function try_set_compute_pipeline(o, pipeline) { return o.setPipeline(pipeline); }
export function try_set_compute_bind_group(o, index, group) { return o.setBindGroup(index, group); }
export function try_dispatch_workgroups(o, x, y, z) { return o.dispatchWorkgroups(x, y, z); }
export function try_end_compute_pass(o) { return o.end(); }
export function try_unconfigure(o) { return o.unconfigure(); }
export function try_destroy_device(o) { return o.destroy(); }
"#)]
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
    pub(crate) fn try_set_render_pipeline(
        this: &GpuRenderPassEncoder,
        pipeline: &GpuRenderPipeline,
    ) -> Result<(), JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_set_render_bind_group(
        this: &GpuRenderPassEncoder,
        index: u32,
        group: Option<&GpuBindGroup>,
    ) -> Result<(), JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_set_vertex_buffer(
        this: &GpuRenderPassEncoder,
        slot: u32,
        buffer: Option<&GpuBuffer>,
        offset: f64,
    ) -> Result<(), JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_set_index_buffer(
        this: &GpuRenderPassEncoder,
        buffer: &GpuBuffer,
        format: &str,
        offset: f64,
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
    pub(crate) fn try_draw(
        this: &GpuRenderPassEncoder,
        vertex_count: u32,
        instance_count: u32,
        first_vertex: u32,
        first_instance: u32,
    ) -> Result<(), JsValue>;

    #[wasm_bindgen(catch)]
    pub(crate) fn try_draw_indexed(
        this: &GpuRenderPassEncoder,
        index_count: u32,
        instance_count: u32,
        first_index: u32,
        base_vertex: i32,
        first_instance: u32,
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

    #[wasm_bindgen(catch)]
    pub(crate) fn try_destroy_device(this: &GpuDevice) -> Result<(), JsValue>;
}
