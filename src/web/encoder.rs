//! Command encoders, passes and submission through bindings that catch: a
//! malformed argument comes back as a [`crate::FaultKind::Exception`] fault naming the
//! encoder and the Rust call site, so every guard still pops.
//!
//! A pass that is dropped without [`RenderPass::end`] (an early `?`) is ended on
//! `Drop`, so the encoder's real error is the one reported, not "pass not ended".

use wasm_bindgen::JsValue;
use web_sys::{
    GpuBindGroup, GpuBuffer, GpuCommandBuffer, GpuCommandEncoder, GpuCommandEncoderDescriptor,
    GpuComputePassDescriptor, GpuComputePassEncoder, GpuComputePipeline, GpuRenderPassDescriptor,
    GpuRenderPassEncoder,
};

use crate::fault::{CallSite, Fault};
use crate::web::bindings as c;
use crate::web::device::GuardedDevice;

/// The fault of a call `call` on the object labelled `label` that threw `e`.
pub(crate) fn thrown(label: &str, call: &str, site: CallSite, e: JsValue) -> Fault {
    let mut fault = Fault::from(e).on_object(label).at(site);
    fault.message = format!("{call}: {}", fault.message);
    fault
}

/// A command encoder whose methods catch.
///
/// ```no_run
/// # fn demo(device: &webgpu_guard::web::GuardedDevice, desc: &web_sys::GpuRenderPassDescriptor,
/// #         pipeline: &web_sys::GpuRenderPipeline) -> Result<(), webgpu_guard::Fault> {
/// let encoder = device.create_command_encoder("frame")?;
/// let pass = encoder.begin_render_pass(desc)?;
/// pass.set_pipeline(pipeline)?;
/// pass.draw(3, 1, 0, 0)?;
/// pass.end()?;
/// device.submit(&[encoder.finish()?])
/// # }
/// ```
#[derive(Debug)]
pub struct CommandEncoder {
    pub(crate) raw: GpuCommandEncoder,
    pub(crate) label: String,
}

impl GuardedDevice {
    /// Creates a command encoder labelled `label`.
    #[track_caller]
    pub fn create_command_encoder(&self, label: &str) -> Result<CommandEncoder, Fault> {
        let desc = GpuCommandEncoderDescriptor::new();
        self.encoder_with(label, &desc, CallSite::here())
    }

    /// Creates a command encoder from `desc`, labelled `label`.
    #[track_caller]
    pub fn create_command_encoder_with_descriptor(
        &self,
        label: &str,
        desc: &GpuCommandEncoderDescriptor,
    ) -> Result<CommandEncoder, Fault> {
        self.encoder_with(label, desc, CallSite::here())
    }

    fn encoder_with(
        &self,
        label: &str,
        desc: &GpuCommandEncoderDescriptor,
        site: CallSite,
    ) -> Result<CommandEncoder, Fault> {
        crate::web::text::set_label(desc, label);
        let raw = c::try_create_command_encoder(self.raw(), desc)
            .map_err(|e| thrown(label, "createCommandEncoder", site, e))?;
        Ok(CommandEncoder {
            raw,
            label: label.to_string(),
        })
    }

    /// `queue.submit(buffers)`.
    #[track_caller]
    pub fn submit(&self, buffers: &[GpuCommandBuffer]) -> Result<(), Fault> {
        let site = CallSite::here();
        let array = js_sys::Array::new();
        for buffer in buffers {
            array.push(buffer);
        }
        c::try_submit(&self.queue(), &array).map_err(|e| thrown("queue", "submit", site, e))
    }
}

impl CommandEncoder {
    /// The raw encoder.
    pub fn raw(&self) -> &GpuCommandEncoder {
        &self.raw
    }

    /// The label.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Begins a render pass.
    #[track_caller]
    pub fn begin_render_pass(&self, desc: &GpuRenderPassDescriptor) -> Result<RenderPass, Fault> {
        let site = CallSite::here();
        let raw = self
            .raw
            .begin_render_pass(desc)
            .map_err(|e| thrown(&self.label, "beginRenderPass", site, e))?;
        // Labelled after its encoder where the descriptor gave it none.
        if crate::web::js::label_of(&raw).is_empty() {
            crate::web::text::set_label(&raw, &self.label);
        }
        Ok(RenderPass {
            raw,
            label: self.label.clone(),
            open: true,
        })
    }

    /// Begins a compute pass.
    #[track_caller]
    pub fn begin_compute_pass(&self) -> Result<ComputePass, Fault> {
        let site = CallSite::here();
        let desc = GpuComputePassDescriptor::new();
        crate::web::text::set_label(&desc, &self.label);
        let raw = c::try_begin_compute_pass(&self.raw, &desc)
            .map_err(|e| thrown(&self.label, "beginComputePass", site, e))?;
        Ok(ComputePass::from_raw(raw, &self.label))
    }

    /// `clearBuffer(buffer)`.
    #[track_caller]
    pub fn clear_buffer(&self, buffer: &GpuBuffer) -> Result<(), Fault> {
        let site = CallSite::here();
        c::try_clear_buffer(&self.raw, buffer)
            .map_err(|e| thrown(&self.label, "clearBuffer", site, e))
    }

    /// `copyBufferToBuffer(source, source_offset, destination, destination_offset, size)`.
    #[track_caller]
    pub fn copy_buffer_to_buffer(
        &self,
        source: &GpuBuffer,
        source_offset: u64,
        destination: &GpuBuffer,
        destination_offset: u64,
        size: u64,
    ) -> Result<(), Fault> {
        let site = CallSite::here();
        c::try_copy_buffer_to_buffer(
            &self.raw,
            source,
            source_offset as f64,
            destination,
            destination_offset as f64,
            size as f64,
        )
        .map_err(|e| thrown(&self.label, "copyBufferToBuffer", site, e))
    }

    /// Finishes the encoder.
    #[track_caller]
    pub fn finish(self) -> Result<GpuCommandBuffer, Fault> {
        let site = CallSite::here();
        let buffer =
            c::try_finish(&self.raw).map_err(|e| thrown(&self.label, "finish", site, e))?;
        // Labelled after its encoder: errors at submit name it.
        crate::web::text::set_label(&buffer, &self.label);
        Ok(buffer)
    }
}

/// A render pass whose methods catch; ended on `Drop` if not ended.
#[must_use = "a pass is ended when dropped"]
#[derive(Debug)]
pub struct RenderPass {
    pub(crate) raw: GpuRenderPassEncoder,
    pub(crate) label: String,
    open: bool,
}

impl RenderPass {
    /// The raw pass encoder.
    pub fn raw(&self) -> &GpuRenderPassEncoder {
        &self.raw
    }

    /// `setViewport(x, y, width, height, min_depth, max_depth)`.
    #[track_caller]
    pub fn set_viewport(
        &self,
        x: f32,
        y: f32,
        width: f32,
        height: f32,
        min_depth: f32,
        max_depth: f32,
    ) -> Result<(), Fault> {
        let site = CallSite::here();
        c::try_set_viewport(&self.raw, x, y, width, height, min_depth, max_depth)
            .map_err(|e| thrown(&self.label, "setViewport", site, e))
    }

    /// Ends the pass.
    #[track_caller]
    pub fn end(mut self) -> Result<(), Fault> {
        let site = CallSite::here();
        self.open = false;
        c::try_end_render_pass(&self.raw).map_err(|e| thrown(&self.label, "end", site, e))
    }
}

impl Drop for RenderPass {
    fn drop(&mut self) {
        if std::mem::replace(&mut self.open, false) {
            let _ = c::try_end_render_pass(&self.raw);
        }
    }
}

/// A compute pass whose methods catch; ended on `Drop` if not ended.
#[must_use = "a pass is ended when dropped"]
#[derive(Debug)]
pub struct ComputePass {
    pub(crate) raw: GpuComputePassEncoder,
    pub(crate) label: String,
    open: bool,
}

impl ComputePass {
    /// An open pass of the encoder labelled `label`.
    pub(crate) fn from_raw(raw: GpuComputePassEncoder, label: &str) -> Self {
        ComputePass {
            raw,
            label: label.to_string(),
            open: true,
        }
    }
}

impl ComputePass {
    /// The raw pass encoder.
    pub fn raw(&self) -> &GpuComputePassEncoder {
        &self.raw
    }

    /// `setPipeline`.
    #[track_caller]
    pub fn set_pipeline(&self, pipeline: &GpuComputePipeline) -> Result<(), Fault> {
        let site = CallSite::here();
        c::try_set_compute_pipeline(&self.raw, pipeline)
            .map_err(|e| thrown(&self.label, "setPipeline", site, e))
    }

    /// `setBindGroup(index, group)`.
    #[track_caller]
    pub fn set_bind_group(&self, index: u32, group: Option<&GpuBindGroup>) -> Result<(), Fault> {
        let site = CallSite::here();
        c::try_set_compute_bind_group(&self.raw, index, group)
            .map_err(|e| thrown(&self.label, "setBindGroup", site, e))
    }

    /// `dispatchWorkgroups(x, y, z)`.
    #[track_caller]
    pub fn dispatch_workgroups(&self, x: u32, y: u32, z: u32) -> Result<(), Fault> {
        let site = CallSite::here();
        c::try_dispatch_workgroups(&self.raw, x, y, z)
            .map_err(|e| thrown(&self.label, "dispatchWorkgroups", site, e))
    }

    /// Ends the pass.
    #[track_caller]
    pub fn end(mut self) -> Result<(), Fault> {
        let site = CallSite::here();
        self.open = false;
        c::try_end_compute_pass(&self.raw).map_err(|e| thrown(&self.label, "end", site, e))
    }
}

impl Drop for ComputePass {
    fn drop(&mut self) {
        if std::mem::replace(&mut self.open, false) {
            let _ = c::try_end_compute_pass(&self.raw);
        }
    }
}
