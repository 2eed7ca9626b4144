//! Bind groups described in Rust and created in one JavaScript call, as a
//! hand-written page writes an object literal: a `web-sys` descriptor costs one
//! call into JavaScript per field and per entry.
//! [`GuardedDevice::create_bind_group_with`] labels, counts and scopes exactly
//! like the allocator's other creations (samplers: `sampler_spec`).

use wasm_bindgen::prelude::*;
use web_sys::{GpuBindGroup, GpuBindGroupLayout, GpuBuffer, GpuDevice, GpuSampler, GpuTextureView};

use crate::fault::Fault;
use crate::web::alloc::Tracked;
use crate::web::device::GuardedDevice;
use crate::web::text::raw_text;

#[wasm_bindgen(module = "/src/web/calls.js")]
extern "C" {
    #[wasm_bindgen(catch)]
    fn guard_create_bind_group(
        device: &GpuDevice,
        label_ptr: u32,
        label_len: u32,
        layout: &GpuBindGroupLayout,
        numbers: &[f64],
        resources: Vec<JsValue>,
    ) -> Result<GpuBindGroup, JsValue>;
}

/// What one bind group entry binds.
#[derive(Clone, Copy, Debug)]
pub enum Binding<'a> {
    /// A whole buffer.
    Buffer(&'a GpuBuffer),
    /// `size` bytes of a buffer, from byte `offset`.
    BufferRange {
        /// The buffer.
        buffer: &'a GpuBuffer,
        /// The first byte bound.
        offset: u64,
        /// How many bytes are bound.
        size: u64,
    },
    /// A sampler.
    Sampler(&'a GpuSampler),
    /// A texture view.
    TextureView(&'a GpuTextureView),
}

impl Binding<'_> {
    /// (kind, offset, size, the object) as the JavaScript side reads them.
    fn parts(&self) -> (f64, f64, f64, JsValue) {
        match *self {
            Binding::Buffer(buffer) => (0.0, 0.0, 0.0, buffer.into()),
            Binding::BufferRange {
                buffer,
                offset,
                size,
            } => (1.0, offset as f64, size as f64, buffer.into()),
            Binding::Sampler(sampler) => (2.0, 0.0, 0.0, sampler.into()),
            Binding::TextureView(view) => (2.0, 0.0, 0.0, view.into()),
        }
    }
}

impl GuardedDevice {
    /// Creates a bind group on `layout` from `entries` (binding number, what it
    /// binds), in one JavaScript call.
    ///
    /// On a pipeline made with the automatic layout (`GpuAutoLayoutMode::Auto`),
    /// the layout of group N is the pipeline's `get_bind_group_layout(N)`, which
    /// never throws; a `Tracked` object passes where its web-sys type is asked for:
    ///
    /// ```no_run
    /// # fn demo(device: &webgpu_guard::web::GuardedDevice,
    /// #         pass: &webgpu_guard::web::RenderPass) -> Result<(), webgpu_guard::Fault> {
    /// use webgpu_guard::web::{Binding, Tracked};
    /// # let pipeline: Tracked<web_sys::GpuRenderPipeline> = todo!();
    /// # let uniforms: Tracked<web_sys::GpuBuffer> = todo!();
    /// // pipeline: Tracked<GpuRenderPipeline>, uniforms: Tracked<GpuBuffer>
    /// let layout = pipeline.get_bind_group_layout(0);
    /// let group =
    ///     device.create_bind_group_with("globals", &layout, &[(0, Binding::Buffer(&uniforms))])?;
    /// pass.set_pipeline(&pipeline)?;
    /// pass.set_bind_group(0, Some(&group))?;
    /// # Ok(()) }
    /// ```
    #[track_caller]
    pub fn create_bind_group_with(
        &self,
        label: &str,
        layout: &GpuBindGroupLayout,
        entries: &[(u32, Binding<'_>)],
    ) -> Result<Tracked<GpuBindGroup>, Fault> {
        self.track(label, 0, || {
            let mut numbers = Vec::with_capacity(entries.len() * 4);
            let mut resources = Vec::with_capacity(entries.len());
            for (binding, bound) in entries {
                let (kind, offset, size, object) = bound.parts();
                numbers.extend_from_slice(&[f64::from(*binding), kind, offset, size]);
                resources.push(object);
            }
            let (label_ptr, label_len) = raw_text(label);
            guard_create_bind_group(
                self.raw(),
                label_ptr,
                label_len,
                layout,
                &numbers,
                resources,
            )
        })
    }
}
