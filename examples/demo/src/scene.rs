//! The demo application: application state (camera, time, scene data) in
//! [`DemoApp`], every GPU object in [`Resources`], rebuilt after a loss.

use std::cell::{Cell, RefCell};

use crate::math;
use web_sys::{
    GpuBindGroup, GpuBindGroupLayout, GpuBindGroupLayoutDescriptor, GpuBindGroupLayoutEntry,
    GpuBuffer, GpuBufferBindingLayout, GpuBufferBindingType, GpuColorTargetState,
    GpuCompareFunction, GpuCullMode, GpuDepthStencilState, GpuFragmentState, GpuIndexFormat,
    GpuLoadOp, GpuPipelineLayout, GpuPipelineLayoutDescriptor, GpuPrimitiveState,
    GpuRenderPassColorAttachment, GpuRenderPassDepthStencilAttachment, GpuRenderPassDescriptor,
    GpuRenderPipeline, GpuRenderPipelineDescriptor, GpuSampler, GpuSamplerBindingLayout,
    GpuSamplerBindingType, GpuShaderModule, GpuStoreOp, GpuTexture, GpuTextureBindingLayout,
    GpuTextureFormat, GpuTextureSampleType, GpuTextureView, GpuVertexAttribute,
    GpuVertexBufferLayout, GpuVertexFormat, GpuVertexState, GpuVertexStepMode,
};
use webgpu_guard::fault::Fault;
use webgpu_guard::payload::{f32_bytes, Payload};
use webgpu_guard::usage::{BufferUsages, ShaderStages, TextureUsages};

use webgpu_guard::web::js::nullable;
use webgpu_guard::web::GuardedDevice;
use webgpu_guard::web::{
    App, Binding, CommandEncoder, FrameInfo, GpuContext, RenderPass, SamplerSpec, TextureSpec,
    Tracked,
};

use crate::camera::OrbitCamera;
use crate::mesh::{self, Mesh, FLOATS_PER_VERTEX};

/// The scene shader.
pub const SCENE_WGSL: &str = include_str!("scene.wgsl");

/// The buffer the storm's invalid clears land in.
const STORM_TARGET_BYTES: u64 = 64 * 1024;

/// The storm's offset in frame `frame`: never a multiple of 4 (so the clear is
/// invalid), different from frame to frame (so every error has its own message:
/// Firefox delivers each distinct message once per device).
fn storm_offset(frame: u64) -> u32 {
    let slots = STORM_TARGET_BYTES / 4 - 2;
    (4 * (frame % slots) + 3) as u32
}
/// Floats per instance record (48 bytes, the payload's stride).
pub const RECORD_FLOATS: usize = 12;
/// The shadow-map sizes tried, largest first.
pub const SHADOW_LADDER: [u32; 3] = [4096, 2048, 1024];
const GLOBALS_BYTES: u64 = 4 * (16 + 16 + 4 + 4);

/// CPU-side scene data, parsed once from the payload and kept across recoveries.
pub struct SceneData {
    /// Instance records of cubes (the ground included).
    pub cubes: Vec<[f32; RECORD_FLOATS]>,
    /// Instance records of octahedra.
    pub octahedra: Vec<[f32; RECORD_FLOATS]>,
}

impl SceneData {
    /// Splits the payload's records by shape (color.a: 0 cube, 1 octahedron).
    pub fn from_payload(payload: &Payload) -> Result<SceneData, String> {
        let mut cubes = Vec::new();
        let mut octahedra = Vec::new();
        for i in 0..payload.count {
            let floats = payload
                .record_f32(i)
                .ok_or_else(|| format!("record {i} missing"))?;
            let mut record = [0.0f32; RECORD_FLOATS];
            for (dst, src) in record.iter_mut().zip(floats.iter()) {
                *dst = *src;
            }
            match record[7] as i32 {
                0 => cubes.push(record),
                1 => octahedra.push(record),
                other => return Err(format!("record {i} has unknown shape {other}")),
            }
        }
        Ok(SceneData { cubes, octahedra })
    }
}

/// Application state: survives device loss.
pub struct DemoApp {
    /// The camera.
    pub camera: RefCell<OrbitCamera>,
    /// `?still`: time frozen.
    pub still: bool,
    /// Scene time in seconds.
    pub time_s: Cell<f64>,
    last_frame_ms: Cell<Option<f64>>,
    /// The scene.
    pub scene: SceneData,
    cube: Mesh,
    octahedron: Mesh,
    /// Invalid submit every frame while set.
    pub storm: Cell<bool>,
    /// The shadow-map size the ladder obtained.
    pub shadow_size: Cell<u32>,
    /// The ladder's summary line.
    pub shadow_summary: RefCell<String>,
    /// Shader diagnostics shown in the page panel.
    pub diagnostics: RefCell<Vec<String>>,
    /// Largest shadow size to try first (a test can force degrading).
    pub shadow_ladder: Vec<TextureSpec>,
    /// Time the last build spent waiting for its pipelines after everything else
    /// was built (they compile in parallel with the rest).
    pub pipeline_wait_ms: Cell<f64>,
}

impl DemoApp {
    /// The application with its scene and options.
    pub fn new(scene: SceneData, still: bool, shadow_ladder: Vec<TextureSpec>) -> Self {
        DemoApp {
            camera: RefCell::new(OrbitCamera::default()),
            still,
            time_s: Cell::new(0.0),
            last_frame_ms: Cell::new(None),
            scene,
            cube: mesh::cube(),
            octahedron: mesh::octahedron(),
            storm: Cell::new(false),
            shadow_size: Cell::new(0),
            shadow_summary: RefCell::new(String::new()),
            diagnostics: RefCell::new(Vec::new()),
            shadow_ladder,
            pipeline_wait_ms: Cell::new(0.0),
        }
    }

    /// The shadow-map candidates: depth32float, 4096 then 2048 then 1024.
    pub fn default_ladder() -> Vec<TextureSpec> {
        SHADOW_LADDER
            .iter()
            .map(|&side| {
                TextureSpec::d2(
                    &format!("shadow-map-{side}"),
                    GpuTextureFormat::Depth32float,
                    side,
                    side,
                    TextureUsages::RENDER_ATTACHMENT | TextureUsages::TEXTURE_BINDING,
                )
            })
            .collect()
    }

    fn instance_bytes(&self, time: f32) -> Vec<u8> {
        let mut floats = Vec::with_capacity(
            (self.scene.cubes.len() + self.scene.octahedra.len()) * RECORD_FLOATS,
        );
        for (i, record) in self
            .scene
            .cubes
            .iter()
            .chain(self.scene.octahedra.iter())
            .enumerate()
        {
            let mut r = *record;
            let is_ground = r[10] <= 0.2;
            if !is_ground {
                r[8] += time * (0.3 + 0.07 * (i % 5) as f32);
            }
            floats.extend_from_slice(&r);
        }
        f32_bytes(&floats)
    }

    fn globals_bytes(&self, shadow_size: u32, (width, height): (u32, u32)) -> Vec<u8> {
        let camera = *self.camera.borrow();
        let aspect = width as f32 / height.max(1) as f32;
        let view_proj = camera.view_proj(aspect);
        let light_dir = math::normalize([-0.45, -1.0, -0.3]);
        let light_eye = [
            -light_dir[0] * 20.0,
            -light_dir[1] * 20.0,
            -light_dir[2] * 20.0,
        ];
        let light_view = math::look_at(light_eye, [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]);
        let light_proj = math::orthographic(-13.0, 13.0, -13.0, 13.0, 1.0, 45.0);
        let light_view_proj = math::mul(&light_proj, &light_view);
        let eye = camera.eye();
        let mut floats = Vec::with_capacity(40);
        floats.extend_from_slice(&view_proj);
        floats.extend_from_slice(&light_view_proj);
        floats.extend_from_slice(&[light_dir[0], light_dir[1], light_dir[2], 0.0]);
        floats.extend_from_slice(&[eye[0], eye[1], eye[2], shadow_size as f32]);
        f32_bytes(&floats)
    }
}

/// Every GPU object of the demo: released as a whole on loss.
pub struct Resources {
    globals: Tracked<GpuBuffer>,
    instances: Tracked<GpuBuffer>,
    cube_vertices: Tracked<GpuBuffer>,
    cube_indices: Tracked<GpuBuffer>,
    octa_vertices: Tracked<GpuBuffer>,
    octa_indices: Tracked<GpuBuffer>,
    /// The buffer the storm's invalid submit touches.
    pub storm_target: Tracked<GpuBuffer>,
    _globals_layout: Tracked<GpuBindGroupLayout>,
    _shadow_read_layout: Tracked<GpuBindGroupLayout>,
    _shadow_pipeline_layout: Tracked<GpuPipelineLayout>,
    _main_pipeline_layout: Tracked<GpuPipelineLayout>,
    _shader: Tracked<GpuShaderModule>,
    _sampler: Tracked<GpuSampler>,
    shadow_pipeline: Tracked<GpuRenderPipeline>,
    main_pipeline: Tracked<GpuRenderPipeline>,
    _shadow_map: Tracked<GpuTexture>,
    shadow_view: GpuTextureView,
    _depth: Tracked<GpuTexture>,
    depth_view: GpuTextureView,
    globals_group: Tracked<GpuBindGroup>,
    shadow_group: Tracked<GpuBindGroup>,
    shadow_size: u32,
    /// Whether the shadow map must be drawn again (after a build, or every frame
    /// while the scene moves). A still scene draws it once.
    shadow_dirty: Cell<bool>,
}

fn vertex_layouts() -> Vec<js_sys::JsNullable<GpuVertexBufferLayout>> {
    let geometry = GpuVertexBufferLayout::new(
        (FLOATS_PER_VERTEX * 4) as u32,
        &[
            GpuVertexAttribute::new(GpuVertexFormat::Float32x3, 0, 0),
            GpuVertexAttribute::new(GpuVertexFormat::Float32x3, 12, 1),
        ],
    );
    let instance = GpuVertexBufferLayout::new(
        (RECORD_FLOATS * 4) as u32,
        &[
            GpuVertexAttribute::new(GpuVertexFormat::Float32x4, 0, 2),
            GpuVertexAttribute::new(GpuVertexFormat::Float32x4, 16, 3),
            GpuVertexAttribute::new(GpuVertexFormat::Float32x4, 32, 4),
        ],
    );
    instance.set_step_mode(GpuVertexStepMode::Instance);
    vec![nullable(&geometry), nullable(&instance)]
}

/// Depth test `less` with writes, on `format`.
/// The depth target: the one resource whose size follows the canvas.
fn depth_target(gpu: &GpuContext) -> Result<(Tracked<GpuTexture>, GpuTextureView), Fault> {
    let (width, height) = gpu.size();
    let depth = gpu.device.create_texture(&TextureSpec::d2(
        "depth-target",
        GpuTextureFormat::Depth24plus,
        width,
        height,
        TextureUsages::RENDER_ATTACHMENT,
    ))?;
    let view = depth.create_view()?;
    Ok((depth, view))
}

fn depth_state(format: GpuTextureFormat) -> GpuDepthStencilState {
    let depth = GpuDepthStencilState::new(format);
    depth.set_depth_write_enabled(true);
    depth.set_depth_compare(GpuCompareFunction::Less);
    depth
}

/// Triangle lists with back faces culled.
fn back_face_culling() -> GpuPrimitiveState {
    let primitive = GpuPrimitiveState::new();
    primitive.set_cull_mode(GpuCullMode::Back);
    primitive
}

impl App for DemoApp {
    type Resources = Resources;

    async fn build(&self, gpu: &GpuContext) -> Result<Resources, Fault> {
        let d: &GuardedDevice = &gpu.device;
        let (globals_layout, shadow_read_layout, shadow_pl, main_pl) = d
            .phase("layouts", || {
                let uniform = GpuBindGroupLayoutEntry::new(
                    0,
                    (ShaderStages::VERTEX | ShaderStages::FRAGMENT).bits(),
                );
                let buffer = GpuBufferBindingLayout::new();
                buffer.set_type(GpuBufferBindingType::Uniform);
                uniform.set_buffer(&buffer);
                let globals_layout = d.create_bind_group_layout(
                    "globals-layout",
                    &GpuBindGroupLayoutDescriptor::new(&[uniform]),
                )?;
                let depth = GpuBindGroupLayoutEntry::new(0, ShaderStages::FRAGMENT.bits());
                let texture = GpuTextureBindingLayout::new();
                texture.set_sample_type(GpuTextureSampleType::Depth);
                depth.set_texture(&texture);
                let compare = GpuBindGroupLayoutEntry::new(1, ShaderStages::FRAGMENT.bits());
                let sampler = GpuSamplerBindingLayout::new();
                sampler.set_type(GpuSamplerBindingType::Comparison);
                compare.set_sampler(&sampler);
                let shadow_read_layout = d.create_bind_group_layout(
                    "shadow-read-layout",
                    &GpuBindGroupLayoutDescriptor::new(&[depth, compare]),
                )?;
                let shadow_pl = d.create_pipeline_layout(
                    "shadow-pipeline-layout",
                    &GpuPipelineLayoutDescriptor::new(&[nullable(&*globals_layout)]),
                )?;
                let main_pl = d.create_pipeline_layout(
                    "main-pipeline-layout",
                    &GpuPipelineLayoutDescriptor::new(&[
                        nullable(&*globals_layout),
                        nullable(&*shadow_read_layout),
                    ]),
                )?;
                Ok((globals_layout, shadow_read_layout, shadow_pl, main_pl))
            })
            .await?;

        let shader = d
            .create_shader_module(
                "scene-shader",
                SCENE_WGSL,
                &[
                    ("vs_shadow", &shadow_pl),
                    ("vs_main", &main_pl),
                    ("fs_main", &main_pl),
                ],
            )
            .await
            .map_err(|e| {
                self.diagnostics
                    .borrow_mut()
                    .extend(e.diagnostics.formatted.clone());
                Fault::from(e)
            })?;
        if !shader.diagnostics.is_empty() {
            self.diagnostics
                .borrow_mut()
                .extend(shader.diagnostics.formatted.clone());
        }

        // Both pipelines compile in parallel.
        let shadow_desc = {
            let vertex = GpuVertexState::new(&shader.module);
            vertex.set_entry_point("vs_shadow");
            vertex.set_buffers(&vertex_layouts());
            let desc = GpuRenderPipelineDescriptor::new(&shadow_pl, &vertex);
            let depth = depth_state(GpuTextureFormat::Depth32float);
            depth.set_depth_bias(2);
            depth.set_depth_bias_slope_scale(2.0);
            desc.set_depth_stencil(&depth);
            desc.set_primitive(&back_face_culling());
            desc
        };
        let main_desc = {
            let vertex = GpuVertexState::new(&shader.module);
            vertex.set_entry_point("vs_main");
            vertex.set_buffers(&vertex_layouts());
            let desc = GpuRenderPipelineDescriptor::new(&main_pl, &vertex);
            let fragment = GpuFragmentState::new(
                &shader.module,
                &[nullable(&GpuColorTargetState::new(gpu.format))],
            );
            fragment.set_entry_point("fs_main");
            desc.set_fragment(&fragment);
            desc.set_depth_stencil(&depth_state(GpuTextureFormat::Depth24plus));
            desc.set_primitive(&back_face_culling());
            desc
        };
        let shadow_pending = d.start_render_pipeline("shadow-pipeline", &shadow_desc);
        let main_pending = d.start_render_pipeline("main-pipeline", &main_desc);

        let (
            globals,
            instances,
            cube_vertices,
            cube_indices,
            octa_vertices,
            octa_indices,
            storm_target,
        ) = d
            .phase("buffers", || {
                let globals = d.create_buffer(
                    "globals",
                    GLOBALS_BYTES,
                    BufferUsages::UNIFORM | BufferUsages::COPY_DST,
                )?;
                let instances = d.create_buffer_init(
                    "instances",
                    BufferUsages::VERTEX,
                    &self.instance_bytes(0.0),
                )?;
                let cube_vertices = d.create_buffer_init(
                    "cube-vertices",
                    BufferUsages::VERTEX,
                    &f32_bytes(&self.cube.vertices),
                )?;
                let cube_indices = d.create_buffer_init(
                    "cube-indices",
                    BufferUsages::INDEX,
                    &index_bytes(&self.cube.indices),
                )?;
                let octa_vertices = d.create_buffer_init(
                    "octahedron-vertices",
                    BufferUsages::VERTEX,
                    &f32_bytes(&self.octahedron.vertices),
                )?;
                let octa_indices = d.create_buffer_init(
                    "octahedron-indices",
                    BufferUsages::INDEX,
                    &index_bytes(&self.octahedron.indices),
                )?;
                let storm_target =
                    d.create_buffer("storm-target", STORM_TARGET_BYTES, BufferUsages::COPY_DST)?;
                Ok((
                    globals,
                    instances,
                    cube_vertices,
                    cube_indices,
                    octa_vertices,
                    octa_indices,
                    storm_target,
                ))
            })
            .await?;

        let ladder = d.texture_ladder(&self.shadow_ladder).await?;
        let shadow_size = ladder.spec.width;
        self.shadow_size.set(shadow_size);
        *self.shadow_summary.borrow_mut() = ladder.summary();
        if ladder.degraded() {
            d.faults()
                .warn(&format!("shadow map degraded: {}", ladder.summary()));
        }
        let shadow_map = ladder.texture;

        let (depth, depth_view, shadow_view, sampler, globals_group, shadow_group) = d
            .phase("targets", || {
                let (depth, depth_view) = depth_target(gpu)?;
                let shadow_view = shadow_map.create_view()?;
                let sampler = d.create_sampler_with(
                    &SamplerSpec::new("shadow-sampler")
                        .linear()
                        .comparing(GpuCompareFunction::Less),
                )?;
                let globals_group = d.create_bind_group_with(
                    "globals-group",
                    &globals_layout,
                    &[(0, Binding::Buffer(&globals))],
                )?;
                let shadow_group = d.create_bind_group_with(
                    "shadow-group",
                    &shadow_read_layout,
                    &[
                        (0, Binding::TextureView(&shadow_view)),
                        (1, Binding::Sampler(&sampler)),
                    ],
                )?;
                Ok((
                    depth,
                    depth_view,
                    shadow_view,
                    sampler,
                    globals_group,
                    shadow_group,
                ))
            })
            .await?;

        let waiting = webgpu_guard::web::js::now_ms();
        let shadow_pipeline = shadow_pending.finish().await?;
        let main_pipeline = main_pending.finish().await?;
        self.pipeline_wait_ms
            .set(webgpu_guard::web::js::now_ms() - waiting);

        Ok(Resources {
            globals,
            instances,
            cube_vertices,
            cube_indices,
            octa_vertices,
            octa_indices,
            storm_target,
            _globals_layout: globals_layout,
            _shadow_read_layout: shadow_read_layout,
            _shadow_pipeline_layout: shadow_pl,
            _main_pipeline_layout: main_pl,
            _shader: shader.module,
            _sampler: sampler,
            shadow_pipeline,
            main_pipeline,
            _shadow_map: shadow_map,
            shadow_view,
            _depth: depth,
            depth_view,
            globals_group,
            shadow_group,
            shadow_size,
            shadow_dirty: Cell::new(true),
        })
    }

    fn resize(&self, gpu: &GpuContext, r: &mut Resources) -> Result<(), Fault> {
        let (depth, view) = depth_target(gpu)?;
        r._depth = depth;
        r.depth_view = view;
        Ok(())
    }

    fn frame(&self, gpu: &GpuContext, r: &Resources, info: &FrameInfo) -> Result<(), Fault> {
        if !self.still {
            if let Some(last) = self.last_frame_ms.get() {
                let dt = ((info.time_ms - last) / 1000.0).clamp(0.0, 0.1);
                self.time_s.set(self.time_s.get() + dt);
            }
            self.last_frame_ms.set(Some(info.time_ms));
        }
        let device = &gpu.device;
        device.write_buffer(
            &r.globals,
            0,
            &self.globals_bytes(r.shadow_size, gpu.size()),
        )?;
        device.write_buffer(
            &r.instances,
            0,
            &self.instance_bytes(self.time_s.get() as f32),
        )?;

        let target = gpu.surface.get_current_texture().map_err(Fault::from)?;
        let target_view = target.create_view().map_err(Fault::from)?;
        let encoder = device.create_command_encoder("frame")?;

        // Shadow pass: depth only, from the light; skipped while the scene is still.
        if !self.still || r.shadow_dirty.replace(false) {
            self.shadow_pass(&encoder, r)?;
        }

        // Main pass.
        let color = GpuRenderPassColorAttachment::new_with_gpu_texture_view(
            GpuLoadOp::Clear,
            GpuStoreOp::Store,
            &target_view,
        );
        color.set_clear_value(&[0.55.into(), 0.68.into(), 0.82.into(), 1.0.into()]);
        let depth = GpuRenderPassDepthStencilAttachment::new_with_gpu_texture_view(&r.depth_view);
        depth.set_depth_clear_value(1.0);
        depth.set_depth_load_op(GpuLoadOp::Clear);
        depth.set_depth_store_op(GpuStoreOp::Store);
        let main_desc = GpuRenderPassDescriptor::new(&[nullable(&color)]);
        main_desc.set_label("main-pass");
        main_desc.set_depth_stencil_attachment(&depth);
        let pass = encoder.begin_render_pass(&main_desc)?;
        pass.set_pipeline(&r.main_pipeline)?;
        pass.set_bind_group(0, Some(&r.globals_group))?;
        pass.set_bind_group(1, Some(&r.shadow_group))?;
        self.draw_meshes(&pass, r)?;
        pass.end()?;
        device.submit(&[encoder.finish()?])?;

        if self.storm.get() {
            // An invalid command buffer (clearBuffer at an offset that is not a
            // multiple of 4), in a submit of its own so that the scene's submit
            // stays valid: validated at submit, inside the frame scope.
            let bad = device.create_command_encoder("storm-encoder")?;
            bad.raw()
                .clear_buffer_with_u32_and_u32(&r.storm_target, storm_offset(info.number), 4);
            device.submit(&[bad.finish()?])?;
        }
        Ok(())
    }
}

impl DemoApp {
    fn shadow_pass(&self, encoder: &CommandEncoder, r: &Resources) -> Result<(), Fault> {
        let shadow_depth =
            GpuRenderPassDepthStencilAttachment::new_with_gpu_texture_view(&r.shadow_view);
        shadow_depth.set_depth_clear_value(1.0);
        shadow_depth.set_depth_load_op(GpuLoadOp::Clear);
        shadow_depth.set_depth_store_op(GpuStoreOp::Store);
        let shadow_pass_desc = GpuRenderPassDescriptor::new(&[]);
        shadow_pass_desc.set_label("shadow-pass");
        shadow_pass_desc.set_depth_stencil_attachment(&shadow_depth);
        let pass = encoder.begin_render_pass(&shadow_pass_desc)?;
        pass.set_pipeline(&r.shadow_pipeline)?;
        pass.set_bind_group(0, Some(&r.globals_group))?;
        self.draw_meshes(&pass, r)?;
        pass.end()
    }

    fn draw_meshes(&self, pass: &RenderPass, r: &Resources) -> Result<(), Fault> {
        let cubes = self.scene.cubes.len() as u32;
        let octahedra = self.scene.octahedra.len() as u32;
        pass.set_vertex_buffer(0, &r.cube_vertices)?;
        pass.set_vertex_buffer(1, &r.instances)?;
        pass.set_index_buffer(&r.cube_indices, GpuIndexFormat::Uint16)?;
        pass.draw_indexed(self.cube.indices.len() as u32, cubes, 0, 0, 0)?;
        if octahedra > 0 {
            pass.set_vertex_buffer(0, &r.octa_vertices)?;
            pass.set_index_buffer(&r.octa_indices, GpuIndexFormat::Uint16)?;
            pass.draw_indexed(self.octahedron.indices.len() as u32, octahedra, 0, 0, cubes)?;
        }
        Ok(())
    }
}

fn index_bytes(indices: &[u16]) -> Vec<u8> {
    indices.iter().flat_map(|i| i.to_le_bytes()).collect()
}
