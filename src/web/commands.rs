//! The rest of WebGPU's commands through bindings that catch (`commands.js`):
//! the drawing commands a render pass and a render bundle share, debug groups,
//! scissor, blend constant, stencil reference, indirect draws and dispatches,
//! occlusion queries, bundles, copies between buffers and textures, query
//! resolution, `writeTexture`, `copyExternalImageToTexture`,
//! `onSubmittedWorkDone` and external textures. Every call returns `Err` with
//! the call's name, the object's label and the Rust call site when the browser
//! throws, so no scope or guard is skipped. Offsets and sizes are `u64`.

use wasm_bindgen::prelude::*;
use web_sys::{
    GpuBindGroup, GpuBuffer, GpuComputePassDescriptor, GpuCopyExternalImageDestInfo,
    GpuCopyExternalImageSourceInfo, GpuExtent3dDict, GpuExternalTexture,
    GpuExternalTextureDescriptor, GpuQuerySet, GpuRenderBundle, GpuRenderBundleDescriptor,
    GpuRenderBundleEncoder, GpuRenderBundleEncoderDescriptor, GpuRenderPipeline,
    GpuTexelCopyBufferInfo, GpuTexelCopyBufferLayout, GpuTexelCopyTextureInfo,
};

use crate::fault::{CallSite, Fault};
use crate::web::alloc::Tracked;
use crate::web::device::GuardedDevice;
use crate::web::encoder::{thrown, CommandEncoder, ComputePass, RenderPass};
#[cfg(feature = "web-sys-enums")]
use crate::web::js::enum_str;
use crate::web::js::{label_of, member_label};
#[cfg(feature = "web-sys-enums")]
use web_sys::GpuIndexFormat;

#[wasm_bindgen(module = "/src/web/commands.js")]
extern "C" {
    #[wasm_bindgen(catch)]
    fn try_set_pipeline(o: &JsValue, pipeline: &JsValue) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_set_bind_group(
        o: &JsValue,
        index: u32,
        group: Option<&GpuBindGroup>,
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_set_bind_group_with_offsets(
        o: &JsValue,
        index: u32,
        group: Option<&GpuBindGroup>,
        offsets: &[u32],
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_set_vertex_buffer(
        o: &JsValue,
        slot: u32,
        buffer: Option<&GpuBuffer>,
        offset: f64,
        size: f64,
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_set_index_buffer(
        o: &JsValue,
        buffer: &GpuBuffer,
        format: &str,
        offset: f64,
        size: f64,
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_draw(
        o: &JsValue,
        vertices: u32,
        instances: u32,
        first: u32,
        first_instance: u32,
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_draw_indexed(
        o: &JsValue,
        indices: u32,
        instances: u32,
        first_index: u32,
        base_vertex: i32,
        first_instance: u32,
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_draw_indirect(o: &JsValue, buffer: &GpuBuffer, offset: f64) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_draw_indexed_indirect(
        o: &JsValue,
        buffer: &GpuBuffer,
        offset: f64,
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_set_immediates(o: &JsValue, range_offset: u32, data: &[u8]) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_push_debug_group(o: &JsValue, label: &str) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_pop_debug_group(o: &JsValue) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_insert_debug_marker(o: &JsValue, label: &str) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_set_scissor_rect(
        o: &JsValue,
        x: u32,
        y: u32,
        width: u32,
        height: u32,
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_set_blend_constant(o: &JsValue, r: f64, g: f64, b: f64, a: f64) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_set_stencil_reference(o: &JsValue, reference: u32) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_execute_bundles(o: &JsValue, bundles: &js_sys::Array) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_begin_occlusion_query(o: &JsValue, index: u32) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_end_occlusion_query(o: &JsValue) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_dispatch_workgroups_indirect(
        o: &JsValue,
        buffer: &GpuBuffer,
        offset: f64,
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_copy_buffer_to_texture(
        o: &JsValue,
        source: &GpuTexelCopyBufferInfo,
        destination: &GpuTexelCopyTextureInfo,
        size: &GpuExtent3dDict,
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_copy_texture_to_buffer(
        o: &JsValue,
        source: &GpuTexelCopyTextureInfo,
        destination: &GpuTexelCopyBufferInfo,
        size: &GpuExtent3dDict,
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_copy_texture_to_texture(
        o: &JsValue,
        source: &GpuTexelCopyTextureInfo,
        destination: &GpuTexelCopyTextureInfo,
        size: &GpuExtent3dDict,
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_clear_buffer_range(
        o: &JsValue,
        buffer: &GpuBuffer,
        offset: f64,
        size: f64,
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_resolve_query_set(
        o: &JsValue,
        set: &GpuQuerySet,
        first: u32,
        count: u32,
        destination: &GpuBuffer,
        offset: f64,
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_begin_compute_pass_with(
        o: &JsValue,
        desc: &GpuComputePassDescriptor,
    ) -> Result<web_sys::GpuComputePassEncoder, JsValue>;
    #[wasm_bindgen(catch)]
    fn try_create_render_bundle_encoder(
        o: &JsValue,
        desc: &GpuRenderBundleEncoderDescriptor,
    ) -> Result<GpuRenderBundleEncoder, JsValue>;
    #[wasm_bindgen(catch)]
    fn try_finish_bundle(
        o: &JsValue,
        desc: &GpuRenderBundleDescriptor,
    ) -> Result<GpuRenderBundle, JsValue>;
    #[wasm_bindgen(catch)]
    fn try_import_external_texture(
        o: &JsValue,
        desc: &GpuExternalTextureDescriptor,
    ) -> Result<GpuExternalTexture, JsValue>;
    #[wasm_bindgen(catch)]
    fn try_write_buffer(
        o: &JsValue,
        buffer: &GpuBuffer,
        offset: f64,
        data: &[u8],
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_write_texture(
        o: &JsValue,
        destination: &GpuTexelCopyTextureInfo,
        data: &[u8],
        layout: &GpuTexelCopyBufferLayout,
        size: &GpuExtent3dDict,
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn try_copy_external_image_to_texture(
        o: &JsValue,
        source: &GpuCopyExternalImageSourceInfo,
        destination: &GpuCopyExternalImageDestInfo,
        size: &GpuExtent3dDict,
    ) -> Result<(), JsValue>;
    pub(crate) fn try_on_submitted_work_done(o: &JsValue) -> js_sys::Promise;
    pub(crate) fn try_map_async(o: &JsValue, mode: u32, offset: f64, size: f64) -> js_sys::Promise;
    #[wasm_bindgen(catch)]
    pub(crate) fn try_get_mapped_range(
        o: &JsValue,
        offset: f64,
        size: f64,
    ) -> Result<js_sys::ArrayBuffer, JsValue>;
    #[wasm_bindgen(catch)]
    pub(crate) fn try_unmap(o: &JsValue) -> Result<(), JsValue>;
}

/// A size, or the rest of the buffer (`None`): what the JavaScript half reads.
pub(crate) fn size_or_rest(size: Option<u64>) -> f64 {
    size.map_or(-1.0, |s| s as f64)
}

/// Debug groups and markers, on an encoder `$ty` with `raw` and `label`.
macro_rules! debug_commands {
    ($ty:ty) => {
        impl $ty {
            /// `pushDebugGroup(label)`: a named group in captures and messages.
            #[track_caller]
            pub fn push_debug_group(&self, group: &str) -> Result<(), Fault> {
                let site = CallSite::here();
                try_push_debug_group(self.raw.as_ref(), group)
                    .map_err(|e| thrown(&self.label, "pushDebugGroup", site, e))
            }

            /// `popDebugGroup()`.
            #[track_caller]
            pub fn pop_debug_group(&self) -> Result<(), Fault> {
                let site = CallSite::here();
                try_pop_debug_group(self.raw.as_ref())
                    .map_err(|e| thrown(&self.label, "popDebugGroup", site, e))
            }

            /// `insertDebugMarker(label)`.
            #[track_caller]
            pub fn insert_debug_marker(&self, marker: &str) -> Result<(), Fault> {
                let site = CallSite::here();
                try_insert_debug_marker(self.raw.as_ref(), marker)
                    .map_err(|e| thrown(&self.label, "insertDebugMarker", site, e))
            }
        }
    };
}

/// `setImmediates`, on the encoders that have it.
macro_rules! immediate_commands {
    ($ty:ty) => {
        impl $ty {
            /// `setImmediates(range_offset, data)`: immediate data for the next
            /// draws or dispatches (where the engine offers it; elsewhere an
            /// `Err` naming the call).
            #[track_caller]
            pub fn set_immediates(&self, range_offset: u32, data: &[u8]) -> Result<(), Fault> {
                let site = CallSite::here();
                try_set_immediates(self.raw.as_ref(), range_offset, data)
                    .map_err(|e| thrown(&self.label, "setImmediates", site, e))
            }
        }
    };
}

/// The drawing commands a render pass and a render bundle encoder share.
macro_rules! render_commands {
    ($ty:ty) => {
        impl $ty {
            /// `setPipeline`.
            #[track_caller]
            pub fn set_pipeline(&self, pipeline: &GpuRenderPipeline) -> Result<(), Fault> {
                let site = CallSite::here();
                try_set_pipeline(self.raw.as_ref(), pipeline.as_ref())
                    .map_err(|e| thrown(&self.label, "setPipeline", site, e))
            }

            /// `setBindGroup(index, group)`.
            #[track_caller]
            pub fn set_bind_group(
                &self,
                index: u32,
                group: Option<&GpuBindGroup>,
            ) -> Result<(), Fault> {
                let site = CallSite::here();
                try_set_bind_group(self.raw.as_ref(), index, group)
                    .map_err(|e| thrown(&self.label, "setBindGroup", site, e))
            }

            /// `setBindGroup(index, group, dynamicOffsets)`.
            #[track_caller]
            pub fn set_bind_group_with_offsets(
                &self,
                index: u32,
                group: Option<&GpuBindGroup>,
                dynamic_offsets: &[u32],
            ) -> Result<(), Fault> {
                let site = CallSite::here();
                try_set_bind_group_with_offsets(self.raw.as_ref(), index, group, dynamic_offsets)
                    .map_err(|e| thrown(&self.label, "setBindGroup", site, e))
            }

            /// `setVertexBuffer(slot, buffer)`: the whole buffer.
            #[track_caller]
            pub fn set_vertex_buffer(&self, slot: u32, buffer: &GpuBuffer) -> Result<(), Fault> {
                let site = CallSite::here();
                try_set_vertex_buffer(self.raw.as_ref(), slot, Some(buffer), 0.0, -1.0)
                    .map_err(|e| thrown(&self.label, "setVertexBuffer", site, e))
            }

            /// `setVertexBuffer(slot, buffer, offset, size)`; `size` `None`: to
            /// the end of the buffer.
            #[track_caller]
            pub fn set_vertex_buffer_range(
                &self,
                slot: u32,
                buffer: &GpuBuffer,
                offset: u64,
                size: Option<u64>,
            ) -> Result<(), Fault> {
                let site = CallSite::here();
                try_set_vertex_buffer(
                    self.raw.as_ref(),
                    slot,
                    Some(buffer),
                    offset as f64,
                    size_or_rest(size),
                )
                .map_err(|e| thrown(&self.label, "setVertexBuffer", site, e))
            }

            /// `setIndexBuffer(buffer, format)`: the whole buffer.
            #[cfg(feature = "web-sys-enums")]
            #[track_caller]
            pub fn set_index_buffer(
                &self,
                buffer: &GpuBuffer,
                format: GpuIndexFormat,
            ) -> Result<(), Fault> {
                let site = CallSite::here();
                try_set_index_buffer(self.raw.as_ref(), buffer, &enum_str(format), 0.0, -1.0)
                    .map_err(|e| thrown(&self.label, "setIndexBuffer", site, e))
            }

            /// `setIndexBuffer(buffer, format, offset, size)`; `size` `None`: to
            /// the end of the buffer.
            #[cfg(feature = "web-sys-enums")]
            #[track_caller]
            pub fn set_index_buffer_range(
                &self,
                buffer: &GpuBuffer,
                format: GpuIndexFormat,
                offset: u64,
                size: Option<u64>,
            ) -> Result<(), Fault> {
                let site = CallSite::here();
                try_set_index_buffer(
                    self.raw.as_ref(),
                    buffer,
                    &enum_str(format),
                    offset as f64,
                    size_or_rest(size),
                )
                .map_err(|e| thrown(&self.label, "setIndexBuffer", site, e))
            }

            /// `draw(vertex_count, instance_count, first_vertex, first_instance)`.
            #[track_caller]
            pub fn draw(
                &self,
                vertex_count: u32,
                instance_count: u32,
                first_vertex: u32,
                first_instance: u32,
            ) -> Result<(), Fault> {
                let site = CallSite::here();
                try_draw(
                    self.raw.as_ref(),
                    vertex_count,
                    instance_count,
                    first_vertex,
                    first_instance,
                )
                .map_err(|e| thrown(&self.label, "draw", site, e))
            }

            /// `drawIndexed(index_count, instance_count, first_index, base_vertex,
            /// first_instance)`.
            #[track_caller]
            pub fn draw_indexed(
                &self,
                index_count: u32,
                instance_count: u32,
                first_index: u32,
                base_vertex: i32,
                first_instance: u32,
            ) -> Result<(), Fault> {
                let site = CallSite::here();
                try_draw_indexed(
                    self.raw.as_ref(),
                    index_count,
                    instance_count,
                    first_index,
                    base_vertex,
                    first_instance,
                )
                .map_err(|e| thrown(&self.label, "drawIndexed", site, e))
            }

            /// `drawIndirect(buffer, offset)`: the draw's arguments read from
            /// `buffer` (a buffer with `INDIRECT` usage).
            #[track_caller]
            pub fn draw_indirect(&self, buffer: &GpuBuffer, offset: u64) -> Result<(), Fault> {
                let site = CallSite::here();
                try_draw_indirect(self.raw.as_ref(), buffer, offset as f64)
                    .map_err(|e| thrown(&self.label, "drawIndirect", site, e))
            }

            /// `drawIndexedIndirect(buffer, offset)`.
            #[track_caller]
            pub fn draw_indexed_indirect(
                &self,
                buffer: &GpuBuffer,
                offset: u64,
            ) -> Result<(), Fault> {
                let site = CallSite::here();
                try_draw_indexed_indirect(self.raw.as_ref(), buffer, offset as f64)
                    .map_err(|e| thrown(&self.label, "drawIndexedIndirect", site, e))
            }
        }
    };
}

render_commands!(RenderPass);
render_commands!(RenderBundleEncoder);
debug_commands!(RenderPass);
debug_commands!(RenderBundleEncoder);
debug_commands!(ComputePass);
debug_commands!(CommandEncoder);
immediate_commands!(RenderPass);
immediate_commands!(RenderBundleEncoder);
immediate_commands!(ComputePass);

impl RenderPass {
    /// `setScissorRect(x, y, width, height)`, in pixels of the attachments.
    #[track_caller]
    pub fn set_scissor_rect(&self, x: u32, y: u32, width: u32, height: u32) -> Result<(), Fault> {
        let site = CallSite::here();
        try_set_scissor_rect(self.raw.as_ref(), x, y, width, height)
            .map_err(|e| thrown(&self.label, "setScissorRect", site, e))
    }

    /// `setBlendConstant({r, g, b, a})`.
    #[track_caller]
    pub fn set_blend_constant(&self, rgba: [f64; 4]) -> Result<(), Fault> {
        let site = CallSite::here();
        let [r, g, b, a] = rgba;
        try_set_blend_constant(self.raw.as_ref(), r, g, b, a)
            .map_err(|e| thrown(&self.label, "setBlendConstant", site, e))
    }

    /// `setStencilReference(reference)`.
    #[track_caller]
    pub fn set_stencil_reference(&self, reference: u32) -> Result<(), Fault> {
        let site = CallSite::here();
        try_set_stencil_reference(self.raw.as_ref(), reference)
            .map_err(|e| thrown(&self.label, "setStencilReference", site, e))
    }

    /// `executeBundles(bundles)`.
    #[track_caller]
    pub fn execute_bundles(&self, bundles: &[&GpuRenderBundle]) -> Result<(), Fault> {
        let site = CallSite::here();
        let array = js_sys::Array::new();
        for bundle in bundles {
            array.push(bundle);
        }
        try_execute_bundles(self.raw.as_ref(), &array)
            .map_err(|e| thrown(&self.label, "executeBundles", site, e))
    }

    /// `beginOcclusionQuery(index)`: into the pass's `occlusionQuerySet`.
    #[track_caller]
    pub fn begin_occlusion_query(&self, index: u32) -> Result<(), Fault> {
        let site = CallSite::here();
        try_begin_occlusion_query(self.raw.as_ref(), index)
            .map_err(|e| thrown(&self.label, "beginOcclusionQuery", site, e))
    }

    /// `endOcclusionQuery()`.
    #[track_caller]
    pub fn end_occlusion_query(&self) -> Result<(), Fault> {
        let site = CallSite::here();
        try_end_occlusion_query(self.raw.as_ref())
            .map_err(|e| thrown(&self.label, "endOcclusionQuery", site, e))
    }
}

impl ComputePass {
    /// `setBindGroup(index, group, dynamicOffsets)`.
    #[track_caller]
    pub fn set_bind_group_with_offsets(
        &self,
        index: u32,
        group: Option<&GpuBindGroup>,
        dynamic_offsets: &[u32],
    ) -> Result<(), Fault> {
        let site = CallSite::here();
        try_set_bind_group_with_offsets(self.raw.as_ref(), index, group, dynamic_offsets)
            .map_err(|e| thrown(&self.label, "setBindGroup", site, e))
    }

    /// `dispatchWorkgroupsIndirect(buffer, offset)`.
    #[track_caller]
    pub fn dispatch_workgroups_indirect(
        &self,
        buffer: &GpuBuffer,
        offset: u64,
    ) -> Result<(), Fault> {
        try_dispatch_workgroups_indirect(self.raw.as_ref(), buffer, offset as f64).map_err(|e| {
            thrown(
                &self.label,
                "dispatchWorkgroupsIndirect",
                CallSite::here(),
                e,
            )
        })
    }
}

impl CommandEncoder {
    /// Begins a compute pass described by `desc` (its `timestampWrites`).
    #[track_caller]
    pub fn begin_compute_pass_with_descriptor(
        &self,
        desc: &GpuComputePassDescriptor,
    ) -> Result<ComputePass, Fault> {
        let site = CallSite::here();
        let raw = try_begin_compute_pass_with(self.raw.as_ref(), desc)
            .map_err(|e| thrown(&self.label, "beginComputePass", site, e))?;
        Ok(ComputePass::from_raw(raw, &self.label))
    }

    /// `clearBuffer(buffer, offset, size)`; `size` `None`: to the end.
    #[track_caller]
    pub fn clear_buffer_range(
        &self,
        buffer: &GpuBuffer,
        offset: u64,
        size: Option<u64>,
    ) -> Result<(), Fault> {
        let site = CallSite::here();
        try_clear_buffer_range(self.raw.as_ref(), buffer, offset as f64, size_or_rest(size))
            .map_err(|e| thrown(&self.label, "clearBuffer", site, e))
    }

    /// `copyBufferToTexture(source, destination, size)`.
    #[track_caller]
    pub fn copy_buffer_to_texture(
        &self,
        source: &GpuTexelCopyBufferInfo,
        destination: &GpuTexelCopyTextureInfo,
        size: &GpuExtent3dDict,
    ) -> Result<(), Fault> {
        let site = CallSite::here();
        try_copy_buffer_to_texture(self.raw.as_ref(), source, destination, size)
            .map_err(|e| thrown(&self.label, "copyBufferToTexture", site, e))
    }

    /// `copyTextureToBuffer(source, destination, size)`.
    #[track_caller]
    pub fn copy_texture_to_buffer(
        &self,
        source: &GpuTexelCopyTextureInfo,
        destination: &GpuTexelCopyBufferInfo,
        size: &GpuExtent3dDict,
    ) -> Result<(), Fault> {
        let site = CallSite::here();
        try_copy_texture_to_buffer(self.raw.as_ref(), source, destination, size)
            .map_err(|e| thrown(&self.label, "copyTextureToBuffer", site, e))
    }

    /// `copyTextureToTexture(source, destination, size)`.
    #[track_caller]
    pub fn copy_texture_to_texture(
        &self,
        source: &GpuTexelCopyTextureInfo,
        destination: &GpuTexelCopyTextureInfo,
        size: &GpuExtent3dDict,
    ) -> Result<(), Fault> {
        let site = CallSite::here();
        try_copy_texture_to_texture(self.raw.as_ref(), source, destination, size)
            .map_err(|e| thrown(&self.label, "copyTextureToTexture", site, e))
    }

    /// `resolveQuerySet(set, first, count, destination, offset)`.
    #[track_caller]
    pub fn resolve_query_set(
        &self,
        set: &GpuQuerySet,
        first_query: u32,
        query_count: u32,
        destination: &GpuBuffer,
        destination_offset: u64,
    ) -> Result<(), Fault> {
        let site = CallSite::here();
        try_resolve_query_set(
            self.raw.as_ref(),
            set,
            first_query,
            query_count,
            destination,
            destination_offset as f64,
        )
        .map_err(|e| thrown(&self.label, "resolveQuerySet", site, e))
    }
}

/// A render bundle encoder whose methods catch: record once, replay with
/// [`RenderPass::execute_bundles`].
#[derive(Debug)]
pub struct RenderBundleEncoder {
    raw: GpuRenderBundleEncoder,
    label: String,
    device: GuardedDevice,
}

impl RenderBundleEncoder {
    /// The raw encoder.
    pub fn raw(&self) -> &GpuRenderBundleEncoder {
        &self.raw
    }

    /// Finishes the bundle, labelled as the encoder, counted in the ledger
    /// (released when the `Tracked` bundle is dropped).
    #[track_caller]
    pub fn finish(self) -> Result<Tracked<GpuRenderBundle>, Fault> {
        let desc = GpuRenderBundleDescriptor::new();
        crate::web::text::set_label(&desc, &self.label);
        let raw = self.raw.clone();
        self.device.track(&self.label, 0, move || {
            try_finish_bundle(raw.as_ref(), &desc)
        })
    }
}

impl GuardedDevice {
    /// Creates a render bundle encoder labelled `label` for attachments as
    /// `desc` describes them.
    #[track_caller]
    pub fn create_render_bundle_encoder(
        &self,
        label: &str,
        desc: &GpuRenderBundleEncoderDescriptor,
    ) -> Result<RenderBundleEncoder, Fault> {
        let site = CallSite::here();
        crate::web::text::set_label(desc, label);
        let raw = try_create_render_bundle_encoder(self.raw().as_ref(), desc)
            .map_err(|e| thrown(label, "createRenderBundleEncoder", site, e))?;
        Ok(RenderBundleEncoder {
            raw,
            label: label.to_string(),
            device: self.clone(),
        })
    }

    /// `importExternalTexture(desc)`, labelled `label` (a video frame, valid
    /// until the task ends: import it in each frame that samples it).
    #[track_caller]
    pub fn import_external_texture(
        &self,
        label: &str,
        desc: &GpuExternalTextureDescriptor,
    ) -> Result<GpuExternalTexture, Fault> {
        let site = CallSite::here();
        crate::web::text::set_label(desc, label);
        try_import_external_texture(self.raw().as_ref(), desc)
            .map_err(|e| thrown(label, "importExternalTexture", site, e))
    }

    /// `queue.writeBuffer(buffer, offset, data)`.
    #[track_caller]
    pub fn write_buffer(&self, buffer: &GpuBuffer, offset: u64, data: &[u8]) -> Result<(), Fault> {
        let site = CallSite::here();
        try_write_buffer(self.queue().as_ref(), buffer, offset as f64, data)
            .map_err(|e| thrown(&label_of(buffer), "writeBuffer", site, e))
    }

    /// `queue.writeTexture(destination, data, layout, size)`: CPU bytes into a
    /// texture (no staging buffer, no 256-byte row alignment). The web-sys
    /// features to list: `GpuTexelCopyTextureInfo`, `GpuTexelCopyBufferLayout`,
    /// `GpuExtent3dDict`.
    ///
    /// ```no_run
    /// # use web_sys::{GpuExtent3dDict, GpuTexelCopyBufferLayout, GpuTexelCopyTextureInfo};
    /// # fn upload(device: &webgpu_guard::web::GuardedDevice, texture: &web_sys::GpuTexture,
    /// #           rgba: &[u8], width: u32, height: u32) -> Result<(), webgpu_guard::Fault> {
    /// let layout = GpuTexelCopyBufferLayout::new();
    /// layout.set_bytes_per_row(width * 4); // RGBA8
    /// let size = GpuExtent3dDict::new(width);
    /// size.set_height(height);
    /// device.write_texture(&GpuTexelCopyTextureInfo::new(texture), rgba, &layout, &size)?;
    /// # Ok(()) }
    /// ```
    #[track_caller]
    pub fn write_texture(
        &self,
        destination: &GpuTexelCopyTextureInfo,
        data: &[u8],
        layout: &GpuTexelCopyBufferLayout,
        size: &GpuExtent3dDict,
    ) -> Result<(), Fault> {
        let site = CallSite::here();
        try_write_texture(self.queue().as_ref(), destination, data, layout, size).map_err(|e| {
            let label = member_label(destination, "texture");
            thrown(&label, "writeTexture", site, e)
        })
    }

    /// `queue.copyExternalImageToTexture(source, destination, size)`: an image,
    /// a canvas or a video frame into a texture. The destination needs
    /// `COPY_DST | RENDER_ATTACHMENT` usage. The sources engines take differ:
    /// Firefox refuses `ImageData` (take an `ImageBitmap` or a canvas there);
    /// list the web-sys features of the source you name
    /// (`GpuCopyExternalImageSourceInfo`, `GpuCopyExternalImageDestInfo`,
    /// `GpuExtent3dDict`, and `HtmlCanvasElement`, `ImageBitmap`...). A source
    /// that lives on the GPU (a canvas) does not survive a GPU-process crash:
    /// see [`App`](crate::web::App).
    #[track_caller]
    pub fn copy_external_image_to_texture(
        &self,
        source: &GpuCopyExternalImageSourceInfo,
        destination: &GpuCopyExternalImageDestInfo,
        size: &GpuExtent3dDict,
    ) -> Result<(), Fault> {
        let site = CallSite::here();
        try_copy_external_image_to_texture(self.queue().as_ref(), source, destination, size)
            .map_err(|e| {
                let label = member_label(destination, "texture");
                thrown(&label, "copyExternalImageToTexture", site, e)
            })
    }

    /// Waits until the GPU has done the work submitted so far
    /// (`queue.onSubmittedWorkDone()`); `Err` if it rejects (a lost device).
    pub async fn on_submitted_work_done(&self) -> Result<(), Fault> {
        let site = CallSite::here();
        let promise = try_on_submitted_work_done(self.queue().as_ref());
        crate::web::wait::settled(&promise)
            .await
            .map(|_| ())
            .map_err(|e| thrown("queue", "onSubmittedWorkDone", site, e))
    }
}
