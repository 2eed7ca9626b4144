//! Start-up of 240 mixed resources under four scope strategies.

use std::any::Any;

use web_sys::{
    GpuBindGroupDescriptor, GpuBindGroupEntry, GpuBindGroupLayout, GpuBindGroupLayoutDescriptor,
    GpuBindGroupLayoutEntry, GpuBuffer, GpuBufferBindingLayout, GpuBufferBindingType,
    GpuComputePipeline, GpuComputePipelineDescriptor, GpuPipelineLayoutDescriptor,
    GpuProgrammableStage, GpuSamplerDescriptor, GpuShaderModule, GpuTextureFormat,
};
use webgpu_guard::fault::Fault;
use webgpu_guard::usage::{BufferUsages, ShaderStages, TextureUsages};

use webgpu_guard::web::js::{now_ms, nullable};
use webgpu_guard::web::scope::{Filter, ScopeSet};
use webgpu_guard::web::{
    Binding, DiagnosticsLevel, GuardedDevice, SamplerSpec, TextureSpec, Tracked,
};

/// Resources per start-up.
pub const RESOURCES: usize = 240;
/// Phases per start-up.
pub const PHASES: usize = 8;

/// A scope strategy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Strategy {
    /// No scopes at all.
    None,
    /// One scope set (validation + out-of-memory + internal) per phase.
    Phases,
    /// One validation scope per resource, each pop awaited before the next creation.
    PerResourceAwaited,
    /// webgpu-guard's per-call mode: three scopes per resource, pops awaited together per phase.
    PerCallTogether,
    /// webgpu-guard's attributed mode: phase scopes, call sites found through labels.
    Attributed,
}

impl Strategy {
    /// Every strategy, baseline first.
    pub const ALL: [Strategy; 5] = [
        Strategy::None,
        Strategy::Phases,
        Strategy::PerResourceAwaited,
        Strategy::PerCallTogether,
        Strategy::Attributed,
    ];

    /// The strategy's name in the hand-written JavaScript baseline (`baseline.js`).
    pub fn baseline_name(self) -> &'static str {
        match self {
            Strategy::None => "none",
            Strategy::Phases => "phases",
            Strategy::PerResourceAwaited => "per-resource-awaited",
            Strategy::PerCallTogether => "per-call",
            Strategy::Attributed => "attributed",
        }
    }

    /// The row name.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::None => "no scopes",
            Strategy::Phases => "8 phase scopes",
            Strategy::PerResourceAwaited => "scope per resource, awaited one by one",
            Strategy::PerCallTogether => "per-call scopes, pops awaited together",
            Strategy::Attributed => "per-call attribution through labels",
        }
    }
}

/// What the resources are made from (created once, outside the timing).
pub struct Kit {
    layout: Tracked<GpuBindGroupLayout>,
    module: Tracked<GpuShaderModule>,
    pipeline_layout: Tracked<web_sys::GpuPipelineLayout>,
}

/// Builds the kit.
pub async fn kit(d: &GuardedDevice) -> Result<Kit, Fault> {
    let entry = GpuBindGroupLayoutEntry::new(0, ShaderStages::COMPUTE.bits());
    let buffer = GpuBufferBindingLayout::new();
    buffer.set_type(GpuBufferBindingType::Uniform);
    entry.set_buffer(&buffer);
    let layout =
        d.create_bind_group_layout("bench-layout", &GpuBindGroupLayoutDescriptor::new(&[entry]))?;
    let pipeline_layout = d.create_pipeline_layout(
        "bench-pipeline-layout",
        &GpuPipelineLayoutDescriptor::new(&[nullable(&*layout)]),
    )?;
    let module = d
        .create_shader_module(
            "bench-compute",
            "@group(0) @binding(0) var<uniform> u: vec4f;\n@compute @workgroup_size(1) fn main() { _ = u; }\n",
            &[],
        )
        .await
        .map_err(Fault::from)?
        .module;
    Ok(Kit {
        layout,
        module,
        pipeline_layout,
    })
}

/// Creates resource `i` of the 240: 100 buffers, 60 textures, 20 samplers,
/// 40 bind groups (on the buffers), 20 compute pipelines.
fn create(
    d: &GuardedDevice,
    kit: &Kit,
    i: usize,
    buffers: &mut Vec<GpuBuffer>,
) -> Result<Box<dyn Any>, Fault> {
    Ok(match i {
        0..=99 => {
            let b = d.create_buffer(
                &format!("b{i}"),
                256,
                BufferUsages::UNIFORM | BufferUsages::COPY_DST,
            )?;
            buffers.push((*b).clone());
            Box::new(b)
        }
        100..=159 => Box::new(d.create_texture(&TextureSpec::d2(
            &format!("t{i}"),
            GpuTextureFormat::Rgba8unorm,
            64,
            64,
            TextureUsages::TEXTURE_BINDING,
        ))?),
        160..=179 => Box::new(d.create_sampler_with(&SamplerSpec::new(&format!("s{i}")))?),
        180..=219 => {
            let buffer = buffers
                .get(i - 180)
                .cloned()
                .ok_or_else(|| Fault::from(wasm_bindgen::JsValue::from_str("buffer missing")))?;
            Box::new(d.create_bind_group_with(
                &format!("g{i}"),
                &kit.layout,
                &[(0, Binding::Buffer(&buffer))],
            )?)
        }
        _ => {
            let stage = GpuProgrammableStage::new(&kit.module);
            stage.set_entry_point("main");
            let desc = GpuComputePipelineDescriptor::new(&kit.pipeline_layout, &stage);
            let label = format!("p{i}");
            webgpu_guard::web::text::set_label(&desc, &label);
            Box::new(d.track::<GpuComputePipeline>(&label, 0, || {
                Ok(d.raw().create_compute_pipeline(&desc))
            })?)
        }
    })
}

/// Resource `i` made with web-sys directly: the same descriptors, no library.
fn create_raw(
    device: &web_sys::GpuDevice,
    kit: &Kit,
    i: usize,
    buffers: &mut Vec<GpuBuffer>,
) -> Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue> {
    Ok(match i {
        0..=99 => {
            let desc = web_sys::GpuBufferDescriptor::new(
                256,
                (BufferUsages::UNIFORM | BufferUsages::COPY_DST).bits(),
            );
            desc.set_label(&format!("b{i}"));
            let b = device.create_buffer(&desc)?;
            buffers.push(b.clone());
            b.into()
        }
        100..=159 => {
            let size = web_sys::GpuExtent3dDict::new(64);
            size.set_height(64);
            let desc = web_sys::GpuTextureDescriptor::new_with_gpu_extent_3d_dict(
                GpuTextureFormat::Rgba8unorm,
                &size,
                TextureUsages::TEXTURE_BINDING.bits(),
            );
            desc.set_label(&format!("t{i}"));
            device.create_texture(&desc)?.into()
        }
        160..=179 => {
            let desc = GpuSamplerDescriptor::new();
            desc.set_label(&format!("s{i}"));
            device.create_sampler_with_descriptor(&desc).into()
        }
        180..=219 => {
            let buffer = buffers.get(i - 180).cloned().unwrap_or_else(|| {
                wasm_bindgen::JsCast::unchecked_into(wasm_bindgen::JsValue::NULL)
            });
            let desc = GpuBindGroupDescriptor::new(
                &[GpuBindGroupEntry::new_with_gpu_buffer(0, &buffer)],
                &kit.layout,
            );
            desc.set_label(&format!("g{i}"));
            device.create_bind_group(&desc).into()
        }
        _ => {
            let stage = GpuProgrammableStage::new(&kit.module);
            stage.set_entry_point("main");
            let desc = GpuComputePipelineDescriptor::new(&kit.pipeline_layout, &stage);
            desc.set_label(&format!("p{i}"));
            device.create_compute_pipeline(&desc).into()
        }
    })
}

/// Resolves when the GPU process has answered everything issued before: an empty
/// scope's pop (one round trip; `onSubmittedWorkDone` would also wait for a
/// queue that Firefox polls every 100 ms).
pub async fn round_trip(device: &web_sys::GpuDevice) {
    device.push_error_scope(web_sys::GpuErrorFilter::Validation);
    let _ = wasm_bindgen_futures::JsFuture::from(device.pop_error_scope()).await;
}

async fn flush(d: &GuardedDevice) {
    round_trip(d.raw()).await;
}

/// The "no scopes" workload made with web-sys directly, no library: what the
/// Rust bindings cost on their own. Milliseconds.
pub async fn measure_raw(d: &GuardedDevice, kit: &Kit) -> Result<f64, String> {
    let mut kept = Vec::with_capacity(RESOURCES);
    let mut buffers = Vec::with_capacity(100);
    let start = now_ms();
    for i in 0..RESOURCES {
        kept.push(
            create_raw(d.raw(), kit, i, &mut buffers)
                .map_err(|e| webgpu_guard::web::js::describe(&e))?,
        );
    }
    round_trip(d.raw()).await;
    let elapsed = now_ms() - start;
    for made in kept {
        if let Some(buffer) = wasm_bindgen::JsCast::dyn_ref::<GpuBuffer>(&made) {
            buffer.destroy();
        } else if let Some(texture) = wasm_bindgen::JsCast::dyn_ref::<web_sys::GpuTexture>(&made) {
            texture.destroy();
        }
    }
    round_trip(d.raw()).await;
    Ok(elapsed)
}

#[wasm_bindgen::prelude::wasm_bindgen(module = "/src/baseline.js")]
extern "C" {
    #[wasm_bindgen(js_name = baselineKit)]
    fn baseline_kit(device: &web_sys::GpuDevice) -> wasm_bindgen::JsValue;
    #[wasm_bindgen(js_name = dispatchErrors, catch)]
    fn dispatch_errors(device: &web_sys::GpuDevice, n: u32) -> Result<f64, wasm_bindgen::JsValue>;
    #[wasm_bindgen(js_name = bareListener)]
    fn bare_listener(device: &web_sys::GpuDevice) -> wasm_bindgen::JsValue;
    #[wasm_bindgen(js_name = baselineRoundTrips)]
    fn baseline_round_trips(device: &web_sys::GpuDevice, n: u32) -> js_sys::Promise;
    #[wasm_bindgen(js_name = baselineMeasure, catch)]
    fn baseline_measure(
        device: &web_sys::GpuDevice,
        kit: &wasm_bindgen::JsValue,
        strategy: &str,
        probed: bool,
    ) -> Result<js_sys::Promise, wasm_bindgen::JsValue>;
}

/// Dispatches `n` synthetic uncaptured errors on `device`: milliseconds.
pub fn dispatch(device: &web_sys::GpuDevice, n: u32) -> Result<f64, String> {
    dispatch_errors(device, n).map_err(|e| webgpu_guard::web::js::describe(&e))
}

/// Installs the bare hand-written listener on `device`.
pub fn install_bare_listener(device: &web_sys::GpuDevice) {
    let _ = bare_listener(device);
}

/// The hand-written JavaScript workload's kit (`baseline.js`).
pub fn js_kit(d: &GuardedDevice) -> wasm_bindgen::JsValue {
    baseline_kit(d.raw())
}

/// The same workload and strategy written by hand in JavaScript, no library:
/// milliseconds, measured the same way. `probed`: with the library's liveness
/// probe after each awaited batch, written by hand too.
pub async fn measure_js(
    d: &GuardedDevice,
    kit: &wasm_bindgen::JsValue,
    strategy: Strategy,
    probed: bool,
) -> Result<f64, String> {
    let promise = baseline_measure(d.raw(), kit, strategy.baseline_name(), probed)
        .map_err(|e| webgpu_guard::web::js::describe(&e))?;
    wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .map_err(|e| webgpu_guard::web::js::describe(&e))?
        .as_f64()
        .ok_or_else(|| "the baseline returned no number".to_string())
}

/// Milliseconds from the first creation until every resource is known good (or,
/// without scopes, until the GPU process has taken the work).
pub async fn measure(d: &GuardedDevice, kit: &Kit, strategy: Strategy) -> Result<f64, Fault> {
    let mut kept: Vec<Box<dyn Any>> = Vec::with_capacity(RESOURCES);
    let mut buffers = Vec::with_capacity(100);
    let per_phase = RESOURCES / PHASES;
    let start = now_ms();
    match strategy {
        Strategy::None => {
            d.set_level(DiagnosticsLevel::Off);
            for i in 0..RESOURCES {
                kept.push(create(d, kit, i, &mut buffers)?);
            }
        }
        Strategy::Phases | Strategy::PerCallTogether | Strategy::Attributed => {
            d.set_level(match strategy {
                Strategy::Phases => DiagnosticsLevel::Phases,
                Strategy::PerCallTogether => DiagnosticsLevel::PerCall,
                _ => DiagnosticsLevel::Attributed,
            });
            for phase in 0..PHASES {
                let made = d
                    .phase(&format!("phase-{phase}"), || {
                        let mut made = Vec::with_capacity(per_phase);
                        for i in phase * per_phase..(phase + 1) * per_phase {
                            made.push(create(d, kit, i, &mut buffers)?);
                        }
                        Ok(made)
                    })
                    .await?;
                kept.extend(made);
            }
        }
        Strategy::PerResourceAwaited => {
            d.set_level(DiagnosticsLevel::Off);
            for i in 0..RESOURCES {
                let scope = ScopeSet::push(d, &[Filter::Validation]);
                let made = create(d, kit, i, &mut buffers)?;
                if let Some(fault) = scope.pop().await.into_fault() {
                    return Err(fault);
                }
                kept.push(made);
            }
        }
    }
    flush(d).await;
    let elapsed = now_ms() - start;
    d.set_level(DiagnosticsLevel::Phases);
    drop(kept);
    flush(d).await;
    Ok(elapsed)
}

/// How the empty round trips of [`round_trips`] are awaited.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Awaiter {
    /// A JavaScript loop (`baseline.js`).
    JavaScript,
    /// A Rust loop through `wasm_bindgen_futures::JsFuture`, as any
    /// wasm-bindgen application awaits a promise.
    JsFuture,
    /// A Rust loop through the library's `web::wait::settled`.
    Settled,
    /// The library's own scope set (`ScopeSet::pop`, its liveness probe
    /// included) instead of the raw calls.
    LibraryScope,
}

impl Awaiter {
    /// Every awaiter, in the order the bench rotates them.
    pub const ALL: [Awaiter; 4] = [
        Awaiter::JavaScript,
        Awaiter::JsFuture,
        Awaiter::Settled,
        Awaiter::LibraryScope,
    ];
}

/// Milliseconds for `RESOURCES` empty validation scopes, each popped and
/// awaited before the next push, with web-sys alone: the floor of the
/// one-by-one strategy, with nothing created and no library scope.
pub async fn round_trips(d: &GuardedDevice, awaiter: Awaiter) -> f64 {
    let device = d.raw();
    if awaiter == Awaiter::JavaScript {
        let promise = baseline_round_trips(device, RESOURCES as u32);
        return wasm_bindgen_futures::JsFuture::from(promise)
            .await
            .ok()
            .and_then(|v| v.as_f64())
            .unwrap_or(f64::NAN);
    }
    let start = now_ms();
    if awaiter == Awaiter::LibraryScope {
        d.set_level(DiagnosticsLevel::Off);
        for _ in 0..RESOURCES {
            let _ = ScopeSet::push(d, &[Filter::Validation]).pop().await;
        }
        let elapsed = now_ms() - start;
        d.set_level(DiagnosticsLevel::Phases);
        return elapsed;
    }
    for _ in 0..RESOURCES {
        device.push_error_scope(web_sys::GpuErrorFilter::Validation);
        let pop: js_sys::Promise = wasm_bindgen::JsCast::unchecked_into(device.pop_error_scope());
        let _ = match awaiter {
            Awaiter::JsFuture => wasm_bindgen_futures::JsFuture::from(pop).await,
            _ => webgpu_guard::web::wait::settled(&pop).await,
        };
    }
    now_ms() - start
}
