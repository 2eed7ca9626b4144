//! The flock and its page.

use std::cell::Cell;

use wasm_bindgen::prelude::*;
use web_sys::{
    GpuAutoLayoutMode, GpuBindGroupLayoutDescriptor, GpuBindGroupLayoutEntry,
    GpuBufferBindingLayout, GpuBufferBindingType, GpuColorTargetState,
    GpuComputePipelineDescriptor, GpuFragmentState, GpuLoadOp, GpuPipelineLayoutDescriptor,
    GpuProgrammableStage, GpuRenderPassColorAttachment, GpuRenderPassDescriptor,
    GpuRenderPipelineDescriptor, GpuStoreOp, GpuVertexState,
};

use webgpu_guard::prelude::*;
use webgpu_guard::texel_rows::TexelRows;
use webgpu_guard::web::snapshot::GpuSnapshot;

/// Particles in the flock.
const COUNT: u32 = 4096;

/// Bytes a particle takes: position and velocity, two `vec2f`.
const PARTICLE_BYTES: u64 = 16;

/// Frames between two snapshots.
const SNAPSHOT_EVERY: u64 = 30;

/// The trails texture's side, in texels (the canvas's).
const TRAILS_SIDE: u32 = 512;

/// The trails texture's rows, as a snapshot reads and writes them.
fn trail_rows() -> TexelRows {
    TexelRows::new(TRAILS_SIDE, TRAILS_SIDE, 4).expect("512 x 512 RGBA8 rows")
}

const STEP_WGSL: &str = "
struct Particle { pos: vec2f, vel: vec2f }
@group(0) @binding(0) var<storage, read_write> flock: array<Particle>;

@compute @workgroup_size(64)
fn step(@builtin(global_invocation_id) id: vec3u) {
  if (id.x >= arrayLength(&flock)) { return; }
  var p = flock[id.x];
  // Pulled to the centre, swirling, a little drag, bouncing off the edges.
  p.vel = (p.vel - p.pos * 0.0006 + vec2f(-p.pos.y, p.pos.x) * 0.0003) * 0.999;
  p.pos = p.pos + p.vel;
  if (abs(p.pos.x) > 0.98) { p.vel.x = -p.vel.x; p.pos.x = clamp(p.pos.x, -0.98, 0.98); }
  if (abs(p.pos.y) > 0.98) { p.vel.y = -p.vel.y; p.pos.y = clamp(p.pos.y, -0.98, 0.98); }
  flock[id.x] = p;
}
";

const DRAW_WGSL: &str = "
struct Particle { pos: vec2f, vel: vec2f }
@group(0) @binding(0) var<storage, read> flock: array<Particle>;

struct Out {
  @builtin(position) position: vec4f,
  @location(0) color: vec3f,
}

@vertex
fn vs(@builtin(vertex_index) corner: u32, @builtin(instance_index) i: u32) -> Out {
  let p = flock[i];
  let quad = array(vec2f(-1.0, -1.0), vec2f(1.0, -1.0), vec2f(-1.0, 1.0),
                   vec2f(-1.0, 1.0), vec2f(1.0, -1.0), vec2f(1.0, 1.0));
  var out: Out;
  out.position = vec4f(p.pos + quad[corner] * 0.008, 0.0, 1.0);
  let speed = clamp(length(p.vel) * 60.0, 0.0, 1.0);
  out.color = vec3f(0.3 + 0.7 * speed, 0.5, 1.0 - 0.6 * speed);
  return out;
}

@fragment
fn fs(in: Out) -> @location(0) vec4f { return vec4f(in.color, 1.0); }

@fragment
fn fs_trail(in: Out) -> @location(0) vec4f { return vec4f(in.color * 0.35, 1.0); }
";

/// The trails texture, shown under the flock.
const SHOW_WGSL: &str = "
@group(0) @binding(0) var trails: texture_2d<f32>;

@vertex
fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
  let corners = array(vec2f(-1.0, -1.0), vec2f(3.0, -1.0), vec2f(-1.0, 3.0));
  return vec4f(corners[i], 0.0, 1.0);
}

@fragment
fn fs(@builtin(position) p: vec4f) -> @location(0) vec4f {
  return textureLoad(trails, vec2i(p.xy), 0);
}
";

/// The flock's state on the CPU: whether it is paused, and its last
/// snapshots. Kept across losses; where the particles are, and the trails
/// they left (a texture every step draws into), live on the GPU.
pub struct Flock {
    paused: Cell<bool>,
    /// A snapshot of the particles is owed once paused: the paused state, exactly.
    owe_snapshot: Cell<bool>,
    snapshot: GpuSnapshot,
    /// The same for the trails texture (its rows padded in the copy, kept tight).
    owe_trails: Cell<bool>,
    trail_snapshot: GpuSnapshot,
}

/// Every GPU object; rebuilt on every device, the flock from the last snapshot.
pub struct Resources {
    flock: Tracked<web_sys::GpuBuffer>,
    step_group: Tracked<web_sys::GpuBindGroup>,
    draw_group: Tracked<web_sys::GpuBindGroup>,
    step: Tracked<web_sys::GpuComputePipeline>,
    draw: Tracked<web_sys::GpuRenderPipeline>,
    /// The particles drawn into the trails, every step.
    stamp: Tracked<web_sys::GpuRenderPipeline>,
    /// The trails drawn under the flock.
    show: Tracked<web_sys::GpuRenderPipeline>,
    show_group: Tracked<web_sys::GpuBindGroup>,
    trails_view: web_sys::GpuTextureView,
    trails: Tracked<web_sys::GpuTexture>,
    /// Whether the canvas shows the paused flock at its current size: a
    /// paused picture is drawn once per device and per size, and the frames
    /// between leave the canvas as it is.
    paused_shown: Cell<bool>,
}

/// The flock at frame 0: a sunflower spiral, each particle moving along it.
fn initial_flock() -> Vec<u8> {
    let mut bytes = Vec::with_capacity((COUNT as usize) * PARTICLE_BYTES as usize);
    for i in 0..COUNT {
        let k = i as f32 / COUNT as f32;
        let angle = i as f32 * 2.399_963;
        let radius = k.sqrt() * 0.9;
        let (sin, cos) = (angle.sin(), angle.cos());
        for value in [radius * cos, radius * sin, -sin * 0.004, cos * 0.004] {
            bytes.extend_from_slice(&value.to_le_bytes());
        }
    }
    bytes
}

impl App for Flock {
    type Resources = Resources;

    async fn build(&self, gpu: &GpuContext) -> Result<Resources, Fault> {
        let d = &gpu.device;
        let step_module = d.create_shader_module("step", STEP_WGSL, &[]).await?;
        let draw_module = d.create_shader_module("draw", DRAW_WGSL, &[]).await?;
        let show_module = d.create_shader_module("show", SHOW_WGSL, &[]).await?;
        let trails = d.create_texture(&TextureSpec::d2(
            "trails",
            web_sys::GpuTextureFormat::Rgba8unorm,
            TRAILS_SIDE,
            TRAILS_SIDE,
            TextureUsages::COPY_SRC
                | TextureUsages::COPY_DST
                | TextureUsages::RENDER_ATTACHMENT
                | TextureUsages::TEXTURE_BINDING,
        ))?;
        // A new texture is clear: the trails start over unless a snapshot has them.
        self.trail_snapshot.restore_texture(gpu, &trails)?;
        let trails_view = trails.create_view()?;
        // The last snapshot if there is one: the flock goes on from there.
        let start = self
            .snapshot
            .restore(gpu)
            .map(|snapshot| snapshot.bytes)
            .unwrap_or_else(initial_flock);
        let (flock, step_group, draw_group, step_layout, draw_layout) = d
            .phase("flock and layouts", || {
                let flock = d.create_buffer_init(
                    "flock",
                    BufferUsages::STORAGE | BufferUsages::COPY_SRC,
                    &start,
                )?;
                let layout = |label: &str, stage: ShaderStages, kind: GpuBufferBindingType| {
                    let buffer = GpuBufferBindingLayout::new();
                    buffer.set_type(kind);
                    let entry = GpuBindGroupLayoutEntry::new(0, stage.bits());
                    entry.set_buffer(&buffer);
                    d.create_bind_group_layout(label, &GpuBindGroupLayoutDescriptor::new(&[entry]))
                };
                let step = layout(
                    "step-layout",
                    ShaderStages::COMPUTE,
                    GpuBufferBindingType::Storage,
                )?;
                let draw = layout(
                    "draw-layout",
                    ShaderStages::VERTEX,
                    GpuBufferBindingType::ReadOnlyStorage,
                )?;
                let group = |label: &str, layout: &web_sys::GpuBindGroupLayout| {
                    d.create_bind_group_with(label, layout, &[(0, Binding::Buffer(&flock))])
                };
                let step_group = group("step-group", &step)?;
                let draw_group = group("draw-group", &draw)?;
                let step_layout = d.create_pipeline_layout(
                    "step-pipeline-layout",
                    &GpuPipelineLayoutDescriptor::new(&[nullable(&*step)]),
                )?;
                let draw_layout = d.create_pipeline_layout(
                    "draw-pipeline-layout",
                    &GpuPipelineLayoutDescriptor::new(&[nullable(&*draw)]),
                )?;
                Ok((flock, step_group, draw_group, step_layout, draw_layout))
            })
            .await?;
        let stage = GpuProgrammableStage::new(&step_module.module);
        stage.set_entry_point("step");
        let step = d.start_compute_pipeline(
            "step",
            &GpuComputePipelineDescriptor::new(&step_layout, &stage),
        );
        let vertex = GpuVertexState::new(&draw_module.module);
        vertex.set_entry_point("vs");
        let fragment = GpuFragmentState::new(
            &draw_module.module,
            &[nullable(&GpuColorTargetState::new(gpu.format))],
        );
        fragment.set_entry_point("fs");
        let desc = GpuRenderPipelineDescriptor::new(&draw_layout, &vertex);
        desc.set_fragment(&fragment);
        let draw = d.start_render_pipeline("draw", &desc);
        let trail_target = GpuColorTargetState::new(web_sys::GpuTextureFormat::Rgba8unorm);
        let trail_fragment = GpuFragmentState::new(&draw_module.module, &[nullable(&trail_target)]);
        trail_fragment.set_entry_point("fs_trail");
        let desc = GpuRenderPipelineDescriptor::new(&draw_layout, &vertex);
        desc.set_fragment(&trail_fragment);
        let stamp = d.start_render_pipeline("stamp", &desc);
        let show_vertex = GpuVertexState::new(&show_module.module);
        show_vertex.set_entry_point("vs");
        let show_fragment = GpuFragmentState::new(
            &show_module.module,
            &[nullable(&GpuColorTargetState::new(gpu.format))],
        );
        show_fragment.set_entry_point("fs");
        let desc = GpuRenderPipelineDescriptor::new_with_gpu_auto_layout_mode(
            GpuAutoLayoutMode::Auto,
            &show_vertex,
        );
        desc.set_fragment(&show_fragment);
        let show = d.start_render_pipeline("show", &desc);
        let (step, draw) = (step.finish().await?, draw.finish().await?);
        let (stamp, show) = (stamp.finish().await?, show.finish().await?);
        let show_group = d.create_bind_group_with(
            "show-group",
            &show.get_bind_group_layout(0),
            &[(0, Binding::TextureView(&trails_view))],
        )?;
        Ok(Resources {
            flock,
            step_group,
            draw_group,
            step,
            draw,
            stamp,
            show,
            show_group,
            trails_view,
            trails,
            paused_shown: Cell::new(false),
        })
    }

    fn frame(&self, gpu: &GpuContext, r: &Resources, info: &FrameInfo) -> Result<(), Fault> {
        let paused = self.paused.get();
        let owed = self.owe_snapshot.get() || self.owe_trails.get();
        if paused && !owed && r.paused_shown.get() {
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
        if !paused {
            let pass = encoder.begin_compute_pass()?;
            pass.set_pipeline(&r.step)?;
            pass.set_bind_group(0, Some(&r.step_group))?;
            pass.dispatch_workgroups(COUNT.div_ceil(64), 1, 1)?;
            pass.end()?;
            // Each step leaves the particles in the trails (kept, never cleared).
            let trail = GpuRenderPassColorAttachment::new_with_gpu_texture_view(
                GpuLoadOp::Load,
                GpuStoreOp::Store,
                &r.trails_view,
            );
            let pass =
                encoder.begin_render_pass(&GpuRenderPassDescriptor::new(&[nullable(&trail)]))?;
            pass.set_pipeline(&r.stamp)?;
            pass.set_bind_group(0, Some(&r.draw_group))?;
            pass.draw(6, COUNT, 0, 0)?;
            pass.end()?;
        }
        let pass = encoder.begin_render_pass(&GpuRenderPassDescriptor::new(&[nullable(&color)]))?;
        pass.set_pipeline(&r.show)?;
        pass.set_bind_group(0, Some(&r.show_group))?;
        pass.draw(3, 1, 0, 0)?;
        pass.set_pipeline(&r.draw)?;
        pass.set_bind_group(0, Some(&r.draw_group))?;
        pass.draw(6, COUNT, 0, 0)?;
        pass.end()?;
        gpu.device.submit(&[encoder.finish()?])?;
        r.paused_shown.set(paused);
        let size = u64::from(COUNT) * PARTICLE_BYTES;
        if paused {
            // Once, after the last step: the snapshots are the paused flock
            // and its trails.
            if self.owe_snapshot.get()
                && self
                    .snapshot
                    .capture_now(gpu, info.number, &r.flock, size)?
            {
                self.owe_snapshot.set(false);
            }
            if self.owe_trails.get()
                && self.trail_snapshot.capture_texture_now(
                    gpu,
                    info.number,
                    &r.trails,
                    trail_rows(),
                )?
            {
                self.owe_trails.set(false);
            }
            Ok(())
        } else {
            self.snapshot.capture(gpu, info.number, &r.flock, size)?;
            self.trail_snapshot
                .capture_texture(gpu, info.number, &r.trails, trail_rows())
                .map(|_| ())
        }
    }

    fn resize(&self, _: &GpuContext, r: &mut Resources) -> Result<(), Fault> {
        r.paused_shown.set(false);
        Ok(())
    }
}

fn expose(name: &str, f: &JsValue) {
    if let Some(window) = web_sys::window() {
        let _ = js_sys::Reflect::set(&window, &name.into(), f);
    }
}

/// Starts the flock on `#canvas` and exposes `matarGPU()`, `gpuStop()`,
/// `gpuStart()`, `gpuStatus()`, `flockPause(paused)` and `flockStatus()`.
pub fn run() {
    let flock = Flock {
        paused: Cell::new(false),
        owe_snapshot: Cell::new(false),
        snapshot: GpuSnapshot::new("flock", SNAPSHOT_EVERY),
        owe_trails: Cell::new(false),
        trail_snapshot: GpuSnapshot::new("trails", SNAPSHOT_EVERY),
    };
    let runtime = match Runtime::on_canvas_id(flock, "canvas", RuntimeOptions::default()) {
        Ok(runtime) => runtime,
        Err(fault) => return web_sys::console::error_1(&fault.to_string().into()),
    };
    runtime.on_fallback(|f| web_sys::console::error_1(&f.message().into()));
    runtime.expose_console();

    let app = runtime.app().clone();
    let pause = Closure::<dyn Fn(JsValue)>::new(move |paused: JsValue| {
        let paused = paused.as_bool().unwrap_or(true);
        if paused && !app.paused.get() {
            app.owe_snapshot.set(true);
            app.owe_trails.set(true);
        }
        app.paused.set(paused);
    });
    expose("flockPause", pause.as_ref());
    pause.forget();

    let app = runtime.app().clone();
    let status = Closure::<dyn Fn() -> JsValue>::new(move || {
        let o = js_sys::Object::new();
        let set = |key: &str, value: JsValue| {
            let _ = js_sys::Reflect::set(&o, &key.into(), &value);
        };
        let latest = app.snapshot.latest();
        set("paused", app.paused.get().into());
        set(
            "snapshotOwed",
            (app.owe_snapshot.get() || app.owe_trails.get()).into(),
        );
        set(
            "snapshots",
            (app.snapshot.taken().min(app.trail_snapshot.taken()) as f64).into(),
        );
        set("interrupted", (app.snapshot.interrupted() as f64).into());
        set(
            "reading",
            (app.snapshot.reading() || app.trail_snapshot.reading()).into(),
        );
        set("snapshotFrame", latest.map(|s| s.frame as f64).into());
        o.into()
    });
    expose("flockStatus", status.as_ref());
    status.forget();
    runtime.start();
}
