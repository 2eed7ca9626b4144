//! The particles application and its page.

use web_sys::{
    GpuBindGroupLayoutDescriptor, GpuBindGroupLayoutEntry, GpuBufferBindingLayout,
    GpuBufferBindingType, GpuColorTargetState, GpuComputePipelineDescriptor, GpuFragmentState,
    GpuLoadOp, GpuPipelineLayoutDescriptor, GpuProgrammableStage, GpuRenderPassColorAttachment,
    GpuRenderPassDescriptor, GpuRenderPipelineDescriptor, GpuStoreOp, GpuVertexState,
};

use std::cell::Cell;

use webgpu_guard::prelude::*;
use webgpu_guard::web::Binding;

const FILL_WGSL: &str = "
@group(0) @binding(0) var<storage, read_write> field: array<vec4f>;

@compute @workgroup_size(64)
fn fill(@builtin(global_invocation_id) id: vec3u) {
  let n = arrayLength(&field);
  if (id.x >= n) { return; }
  let k = f32(id.x) / f32(n);
  let angle = f32(id.x) * 2.39996323;
  let radius = sqrt(k) * 0.92;
  field[id.x] = vec4f(radius * cos(angle), radius * sin(angle), k, 1.0);
}
";

const DRAW_WGSL: &str = "
@group(0) @binding(0) var<storage, read> points: array<vec4f>;

struct Out {
  @builtin(position) position: vec4f,
  @location(0) color: vec3f,
}

@vertex
fn vs(@builtin(vertex_index) corner: u32, @builtin(instance_index) i: u32) -> Out {
  let p = points[i];
  let quad = array(vec2f(-1.0, -1.0), vec2f(1.0, -1.0), vec2f(-1.0, 1.0),
                   vec2f(-1.0, 1.0), vec2f(1.0, -1.0), vec2f(1.0, 1.0));
  var out: Out;
  out.position = vec4f(p.xy + quad[corner] * 0.006, 0.0, 1.0);
  out.color = vec3f(1.0 - p.z, 0.4 + 0.5 * p.z, 0.3 + 0.7 * p.z);
  return out;
}

@fragment
fn fs(in: Out) -> @location(0) vec4f {
  return vec4f(in.color, 1.0);
}
";

/// How many points; application state, kept across losses.
pub struct Particles {
    count: u32,
}

/// Every GPU object; rebuilt (and the field recomputed) on every device.
pub struct Resources {
    _field: Tracked<web_sys::GpuBuffer>,
    group: Tracked<web_sys::GpuBindGroup>,
    draw: Tracked<web_sys::GpuRenderPipeline>,
    /// Whether the canvas shows the field at its current size: the picture
    /// never changes, so it is drawn once per device and per size, and the
    /// frames between leave the canvas as it is.
    drawn: Cell<bool>,
}

impl App for Particles {
    type Resources = Resources;

    async fn build(&self, gpu: &GpuContext) -> Result<Resources, Fault> {
        let d = &gpu.device;
        let fill_module = d.create_shader_module("fill", FILL_WGSL, &[]).await?;
        let draw_module = d.create_shader_module("draw", DRAW_WGSL, &[]).await?;

        // One labelled phase for the objects that need no await.
        let (field, compute_group, render_group, compute_layout, render_layout) = d
            .phase("buffers and layouts", || {
                let field =
                    d.create_buffer("field", u64::from(self.count) * 16, BufferUsages::STORAGE)?;
                let layout = |label: &str, stage: ShaderStages, kind: GpuBufferBindingType| {
                    let buffer = GpuBufferBindingLayout::new();
                    buffer.set_type(kind);
                    let entry = GpuBindGroupLayoutEntry::new(0, stage.bits());
                    entry.set_buffer(&buffer);
                    d.create_bind_group_layout(label, &GpuBindGroupLayoutDescriptor::new(&[entry]))
                };
                let compute = layout(
                    "fill-layout",
                    ShaderStages::COMPUTE,
                    GpuBufferBindingType::Storage,
                )?;
                let render = layout(
                    "draw-layout",
                    ShaderStages::VERTEX,
                    GpuBufferBindingType::ReadOnlyStorage,
                )?;
                let group = |label: &str, layout: &web_sys::GpuBindGroupLayout| {
                    d.create_bind_group_with(label, layout, &[(0, Binding::Buffer(&field))])
                };
                let compute_group = group("fill-group", &compute)?;
                let render_group = group("draw-group", &render)?;
                let compute_layout = d.create_pipeline_layout(
                    "fill-pipeline-layout",
                    &GpuPipelineLayoutDescriptor::new(&[nullable(&*compute)]),
                )?;
                let render_layout = d.create_pipeline_layout(
                    "draw-pipeline-layout",
                    &GpuPipelineLayoutDescriptor::new(&[nullable(&*render)]),
                )?;
                Ok((
                    field,
                    compute_group,
                    render_group,
                    compute_layout,
                    render_layout,
                ))
            })
            .await?;

        // Both pipelines compile in parallel, asynchronously.
        let stage = GpuProgrammableStage::new(&fill_module.module);
        stage.set_entry_point("fill");
        let fill = d.start_compute_pipeline(
            "fill",
            &GpuComputePipelineDescriptor::new(&compute_layout, &stage),
        );
        let vertex = GpuVertexState::new(&draw_module.module);
        vertex.set_entry_point("vs");
        let fragment = GpuFragmentState::new(
            &draw_module.module,
            &[nullable(&GpuColorTargetState::new(gpu.format))],
        );
        fragment.set_entry_point("fs");
        let desc = GpuRenderPipelineDescriptor::new(&render_layout, &vertex);
        desc.set_fragment(&fragment);
        let draw = d.start_render_pipeline("draw", &desc);
        let (fill, draw) = (fill.finish().await?, draw.finish().await?);

        // GPU-only data: computed here, so every new device computes it again.
        let encoder = d.create_command_encoder("fill-field")?;
        let pass = encoder.begin_compute_pass()?;
        pass.set_pipeline(&fill)?;
        pass.set_bind_group(0, Some(&compute_group))?;
        pass.dispatch_workgroups(self.count.div_ceil(64), 1, 1)?;
        pass.end()?;
        d.submit(&[encoder.finish()?])?;

        Ok(Resources {
            _field: field,
            group: render_group,
            draw,
            drawn: Cell::new(false),
        })
    }

    fn frame(&self, gpu: &GpuContext, r: &Resources, _: &FrameInfo) -> Result<(), Fault> {
        if r.drawn.get() {
            return Ok(());
        }
        let view = gpu.surface.get_current_texture()?.create_view()?;
        let color = GpuRenderPassColorAttachment::new_with_gpu_texture_view(
            GpuLoadOp::Clear,
            GpuStoreOp::Store,
            &view,
        );
        color.set_clear_value(&[0.02.into(), 0.02.into(), 0.05.into(), 1.0.into()]);
        let encoder = gpu.device.create_command_encoder("frame")?;
        let pass = encoder.begin_render_pass(&GpuRenderPassDescriptor::new(&[nullable(&color)]))?;
        pass.set_pipeline(&r.draw)?;
        pass.set_bind_group(0, Some(&r.group))?;
        pass.draw(6, self.count, 0, 0)?;
        pass.end()?;
        gpu.device.submit(&[encoder.finish()?])?;
        r.drawn.set(true);
        Ok(())
    }

    fn resize(&self, _: &GpuContext, r: &mut Resources) -> Result<(), Fault> {
        r.drawn.set(false);
        Ok(())
    }
}

/// Starts the application on `#canvas` and exposes `matarGPU()`, `gpuStop()`,
/// `gpuStart()` and `gpuStatus()`.
pub fn run() {
    match Runtime::on_canvas_id(
        Particles { count: 20_000 },
        "canvas",
        RuntimeOptions::default(),
    ) {
        Ok(runtime) => {
            runtime.on_fallback(|f| web_sys::console::error_1(&f.message().into()));
            runtime.expose_console();
            runtime.start();
        }
        Err(fault) => web_sys::console::error_1(&fault.to_string().into()),
    }
}
