//! A triangle that survives the loss of its GPU device.
use web_sys::{
    GpuAutoLayoutMode, GpuColorTargetState, GpuFragmentState, GpuLoadOp,
    GpuRenderPassColorAttachment, GpuRenderPassDescriptor, GpuRenderPipeline,
    GpuRenderPipelineDescriptor, GpuStoreOp, GpuVertexState,
};
use webgpu_guard::prelude::*;

const SHADER: &str = "
@vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
  let corners = array(vec2f(0.0, 0.7), vec2f(-0.7, -0.6), vec2f(0.7, -0.6));
  return vec4f(corners[i], 0.0, 1.0);
}
@fragment fn fs() -> @location(0) vec4f {
  return vec4f(1.0, 0.55, 0.1, 1.0);
}
";

/// Application state: kept when the device is lost (this one has none).
struct Hello;

/// Every GPU object: built again on each new device.
struct Resources {
    pipeline: Tracked<GpuRenderPipeline>,
}

impl App for Hello {
    type Resources = Resources;

    async fn build(&self, gpu: &GpuContext) -> Result<Resources, Fault> {
        let device = &gpu.device;
        let shader = device.create_shader_module("triangle", SHADER, &[]).await?;
        let vertex = GpuVertexState::new(&shader.module);
        vertex.set_entry_point("vs");
        let target = GpuColorTargetState::new(gpu.format);
        let fragment = GpuFragmentState::new(&shader.module, &[nullable(&target)]);
        fragment.set_entry_point("fs");
        let descriptor = GpuRenderPipelineDescriptor::new_with_gpu_auto_layout_mode(
            GpuAutoLayoutMode::Auto,
            &vertex,
        );
        descriptor.set_fragment(&fragment);
        let pipeline = device.start_render_pipeline("triangle", &descriptor);
        Ok(Resources {
            pipeline: pipeline.finish().await?,
        })
    }

    fn frame(&self, gpu: &GpuContext, r: &Resources, _: &FrameInfo) -> Result<(), Fault> {
        let view = gpu.surface.get_current_texture()?.create_view()?;
        let color = GpuRenderPassColorAttachment::new_with_gpu_texture_view(
            GpuLoadOp::Clear,
            GpuStoreOp::Store,
            &view,
        );
        color.set_clear_value(&[0.05.into(), 0.05.into(), 0.1.into(), 1.0.into()]);
        let encoder = gpu.device.create_command_encoder("frame")?;
        let pass = encoder.begin_render_pass(&GpuRenderPassDescriptor::new(&[nullable(&color)]))?;
        pass.set_pipeline(&r.pipeline)?;
        pass.draw(3, 1, 0, 0)?;
        pass.end()?;
        gpu.device.submit(&[encoder.finish()?])
    }
}

fn main() {
    match Runtime::on_canvas_id(Hello, "canvas", RuntimeOptions::default()) {
        Ok(runtime) => {
            // Without WebGPU, the fallback's text replaces the canvas (on_fallback to change it).
            // matarGPU(), gpuStatus(), gpuStop() and gpuStart() in the console.
            runtime.expose_console();
            // The runtime keeps itself alive until gpuStop().
            runtime.start();
        }
        Err(fault) => web_sys::console::error_1(&fault.to_string().into()),
    }
}
