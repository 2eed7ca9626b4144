//! Runs every benchmark and returns the figures as JSON.

use std::cell::Cell;
use std::rc::Rc;

use wasm_bindgen::{JsCast, JsValue};
use web_sys::{
    GpuBufferDescriptor, GpuLoadOp, GpuRenderPassColorAttachment, GpuRenderPassDescriptor,
    GpuStoreOp, GpuTextureFormat, HtmlCanvasElement,
};
use webgpu_guard::payload::Payload;
use webgpu_guard::web::alloc::{MAP_READ, MAP_WRITE, RENDER_ATTACHMENT};
use webgpu_guard::web::js::{describe, now_ms, nullable};
use webgpu_guard::web::runtime::RuntimeOptions;
use webgpu_guard::web::{init, ErrorNet, GuardedDevice, Runtime, TextureSpec};

use crate::startup::{self, Strategy};
use webgpu_guard_demo::scene::{DemoApp, SceneData};

const REPEATS: usize = 7;

fn progress(text: &str) {
    if let Some(window) = web_sys::window() {
        let _ = js_sys::Reflect::set(&window, &"benchProgress".into(), &text.into());
    }
    web_sys::console::log_1(&format!("[bench] {text}").into());
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    if v.is_empty() {
        0.0
    } else {
        v[v.len() / 2]
    }
}

fn list(values: &[f64]) -> String {
    let items: Vec<String> = values.iter().map(|v| format!("{v:.3}")).collect();
    format!("[{}]", items.join(", "))
}

async fn next_frame() -> f64 {
    let promise = js_sys::Promise::new(&mut |resolve, _reject| {
        if let Some(window) = web_sys::window() {
            let _ = window.request_animation_frame(&resolve);
        }
    });
    wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .ok()
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0)
}

async fn flush(d: &GuardedDevice) {
    let done: js_sys::Promise = d.queue().on_submitted_work_done().unchecked_into();
    let _ = wasm_bindgen_futures::JsFuture::from(done).await;
}

async fn device() -> Result<GuardedDevice, String> {
    let gpu = init::navigator_gpu().map_err(|f| f.describe())?;
    let adapter = init::request_adapter(&gpu)
        .await
        .map_err(|f| f.describe())?;
    let raw = init::request_device(&adapter, "bench-device")
        .await
        .map_err(|f| f.describe())?;
    Ok(GuardedDevice::new(raw))
}

/// A 256x256 render target for offscreen frames, and its view.
fn offscreen_target(
    d: &GuardedDevice,
    label: &str,
) -> Result<
    (
        webgpu_guard::web::Tracked<web_sys::GpuTexture>,
        web_sys::GpuTextureView,
    ),
    String,
> {
    let target = d
        .create_texture(&TextureSpec::d2(
            label,
            GpuTextureFormat::Rgba8unorm,
            256,
            256,
            RENDER_ATTACHMENT,
        ))
        .map_err(|f| f.to_string())?;
    let view = target.create_view().map_err(|e| describe(&e))?;
    Ok((target, view))
}

/// One small offscreen frame: a cleared 256x256 target, submitted.
fn offscreen_frame(d: &GuardedDevice, target: &web_sys::GpuTextureView) -> Result<(), JsValue> {
    let encoder = d.raw().create_command_encoder();
    let color = GpuRenderPassColorAttachment::new_with_gpu_texture_view(
        GpuLoadOp::Clear,
        GpuStoreOp::Store,
        target,
    );
    let pass = encoder.begin_render_pass(&GpuRenderPassDescriptor::new(&[nullable(&color)]))?;
    pass.end();
    d.queue().submit(&[encoder.finish()]);
    Ok(())
}

async fn startup_figures(d: &GuardedDevice) -> Result<String, String> {
    let kit = startup::kit(d).await.map_err(|f| f.to_string())?;
    for strategy in Strategy::ALL {
        startup::measure(d, &kit, strategy)
            .await
            .map_err(|f| f.to_string())?;
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); Strategy::ALL.len()];
    for repeat in 0..REPEATS {
        progress(&format!("start-up, repeat {}/{REPEATS}", repeat + 1));
        for k in 0..Strategy::ALL.len() {
            let index = (k + repeat) % Strategy::ALL.len();
            let ms = startup::measure(d, &kit, Strategy::ALL[index])
                .await
                .map_err(|f| f.to_string())?;
            times[index].push(ms);
        }
    }
    let rows: Vec<String> = Strategy::ALL
        .iter()
        .zip(&times)
        .map(|(s, t)| {
            format!(
                "{{\"name\": {:?}, \"median_ms\": {:.3}, \"runs\": {}}}",
                s.name(),
                median(t),
                list(t)
            )
        })
        .collect();
    Ok(format!("[{}]", rows.join(", ")))
}

async fn frame_figures(d: &GuardedDevice) -> Result<String, String> {
    let (_target, view) = offscreen_target(d, "bench-frame-target")?;
    let mut in_frame = [Vec::new(), Vec::new()];
    let mut per_frame_total = [Vec::new(), Vec::new()];
    const FRAMES: usize = 200;
    for block in 0..12 {
        let scoped = block % 2;
        let mut cpu = 0.0;
        let block_start = now_ms();
        for n in 0..FRAMES {
            let t = now_ms();
            let scope = (scoped == 1).then(|| d.begin_frame(n as u64));
            offscreen_frame(d, &view).map_err(|e| describe(&e))?;
            if let Some(scope) = scope {
                scope.end();
            }
            cpu += now_ms() - t;
        }
        flush(d).await;
        if block >= 2 {
            in_frame[scoped].push(cpu / FRAMES as f64);
            per_frame_total[scoped].push((now_ms() - block_start) / FRAMES as f64);
        }
    }
    Ok(format!(
        "{{\"none_cpu_ms\": {:.4}, \"scoped_cpu_ms\": {:.4}, \"none_total_ms\": {:.4}, \"scoped_total_ms\": {:.4}}}",
        median(&in_frame[0]),
        median(&in_frame[1]),
        median(&per_frame_total[0]),
        median(&per_frame_total[1])
    ))
}

async fn storm_figures(d: &GuardedDevice) -> Result<String, String> {
    let frame_counter = Rc::new(Cell::new(0u64));
    let net = ErrorNet::new(frame_counter.clone());
    let _listener = net.install(d.raw());
    let (_target, view) = offscreen_target(d, "bench-storm-target")?;
    let bad = GpuBufferDescriptor::new(16, MAP_READ | MAP_WRITE);
    bad.set_label("storm-buffer");
    let mut results = Vec::new();
    for (name, rate) in [("clean", 0.0f64), ("storm", 1000.0)] {
        progress(&format!("storm: {name}"));
        let before = net.stats();
        let mut intervals = Vec::new();
        let mut cpu = Vec::new();
        let mut owed = 0.0;
        let mut last = next_frame().await;
        let start = last;
        let wall_start = now_ms();
        while last - start < 3000.0 {
            let now = next_frame().await;
            let dt = now - last;
            last = now;
            intervals.push(dt);
            frame_counter.set(frame_counter.get() + 1);
            let t = now_ms();
            owed += rate * dt / 1000.0;
            while owed >= 1.0 {
                let _ = d.raw().create_buffer(&bad);
                owed -= 1.0;
            }
            offscreen_frame(d, &view).map_err(|e| describe(&e))?;
            cpu.push(now_ms() - t);
        }
        flush(d).await;
        // Errors arrive after the calls that caused them: count lines over the whole
        // span in which they were written, the tail until the flush included.
        let seconds = (now_ms() - wall_start) / 1000.0;
        let after = net.stats();
        let errors = (after.validation - before.validation) as f64;
        let lines = (after.logged - before.logged) as f64;
        let handler_ms = (after.handler_us - before.handler_us) as f64 / 1000.0;
        let frames = intervals.len() as f64;
        results.push(format!(
            "{{\"name\": {name:?}, \"frame_ms\": {:.3}, \"main_thread_ms\": {:.4}, \"errors_per_s\": {:.1}, \"lines_per_s\": {:.2}, \"seconds\": {:.2}}}",
            median(&intervals),
            (cpu.iter().sum::<f64>() + handler_ms) / frames,
            errors / seconds,
            lines / seconds,
            seconds
        ));
    }
    Ok(format!("[{}]", results.join(", ")))
}

async fn recovery_figures() -> Result<String, String> {
    let window = web_sys::window().ok_or("no window")?;
    let canvas: HtmlCanvasElement = window
        .document()
        .and_then(|d| d.get_element_by_id("scene"))
        .ok_or("no canvas")?
        .dyn_into()
        .map_err(|_| "not a canvas")?;
    let t0 = now_ms();
    let response: web_sys::Response =
        wasm_bindgen_futures::JsFuture::from(window.fetch_with_str("scene.bin"))
            .await
            .map_err(|e| describe(&e))?
            .dyn_into()
            .map_err(|_| "not a response")?;
    let buffer =
        wasm_bindgen_futures::JsFuture::from(response.array_buffer().map_err(|e| describe(&e))?)
            .await
            .map_err(|e| describe(&e))?;
    let bytes = js_sys::Uint8Array::new(&buffer).to_vec();
    let payload = Payload::parse("scene.bin", &bytes, 48).map_err(|e| e.to_string())?;
    let scene = SceneData::from_payload(&payload)?;
    let assets_ms = now_ms() - t0;
    let size = (canvas.width(), canvas.height());
    let app = Rc::new(DemoApp::new(scene, true, size, DemoApp::default_ladder()));
    let runtime = Runtime::new(app.clone(), canvas, RuntimeOptions::default());
    runtime.start();
    let wait = |generation: u64| {
        let runtime = runtime.clone();
        async move {
            for _ in 0..600 {
                let s = runtime.status();
                let timed = if generation == 1 {
                    s.cold_start.is_some()
                } else {
                    s.last_init.map(|t| t.recovery).unwrap_or(false)
                };
                if s.state.as_str() == "running" && s.generation == generation && timed {
                    return Ok(s);
                }
                gloo_timers::future::TimeoutFuture::new(20).await;
            }
            Err(format!("generation {generation} never ran"))
        }
    };
    let cold = wait(1).await?.cold_start.ok_or("no cold start")?;
    // performance.now() counts from navigation: t0 is when the page's code began,
    // so this is the page's whole cold start (HTML, wasm, assets, init, first frame).
    let since_navigation = t0 + assets_ms + cold.to_first_frame_ms;
    let cold_pipelines = app.pipeline_wait_ms.get();
    let mut rows = Vec::new();
    for generation in 2..=6 {
        progress(&format!("recovery {}", generation - 1));
        runtime.force_recovery();
        let s = wait(generation).await?;
        let t = s.last_init.ok_or("no timings")?;
        rows.push((t, app.pipeline_wait_ms.get()));
    }
    // The frame scope on the demo's real frame: alternate 2 s blocks off / on.
    let mut per_frame = [Vec::new(), Vec::new()];
    for block in 0..6 {
        let scoped = block % 2;
        runtime.set_level(if scoped == 1 {
            webgpu_guard::web::DiagnosticsLevel::Phases
        } else {
            webgpu_guard::web::DiagnosticsLevel::Off
        });
        progress(&format!("scene frame cost, block {}/6", block + 1));
        let before = runtime.status();
        gloo_timers::future::TimeoutFuture::new(2000).await;
        let after = runtime.status();
        let frames = (after.frames - before.frames).max(1) as f64;
        per_frame[scoped].push((after.frame_ms_total - before.frame_ms_total) / frames);
    }
    runtime.set_level(webgpu_guard::web::DiagnosticsLevel::Phases);
    runtime.stop();
    let pick = |f: &dyn Fn(&(webgpu_guard::web::runtime::InitTimings, f64)) -> f64| {
        median(&rows.iter().map(f).collect::<Vec<_>>())
    };
    Ok(format!(
        "{{\"cold\": {{\"navigation_to_first_frame_ms\": {:.2}, \"assets_ms\": {:.2}, \"adapter_ms\": {:.2}, \"device_ms\": {:.2}, \"configure_ms\": {:.2}, \"resources_ms\": {:.2}, \"pipeline_wait_ms\": {:.2}, \"to_first_frame_ms\": {:.2}}}, \
          \"scene_frame\": {{\"none_ms\": {:.4}, \"scoped_ms\": {:.4}}}, \"recovery\": {{\"adapter_ms\": {:.2}, \"device_ms\": {:.2}, \"configure_ms\": {:.2}, \"resources_ms\": {:.2}, \"pipeline_wait_ms\": {:.2}, \"to_first_frame_ms\": {:.2}, \"runs\": {}}}}}",
        since_navigation,
        assets_ms,
        cold.adapter_ms,
        cold.device_ms,
        cold.configure_ms,
        cold.resources_ms,
        cold_pipelines,
        cold.to_first_frame_ms + assets_ms,
        median(&per_frame[0]),
        median(&per_frame[1]),
        pick(&|r| r.0.adapter_ms),
        pick(&|r| r.0.device_ms),
        pick(&|r| r.0.configure_ms),
        pick(&|r| r.0.resources_ms),
        pick(&|r| r.1),
        pick(&|r| r.0.to_first_frame_ms),
        list(&rows.iter().map(|r| r.0.to_first_frame_ms).collect::<Vec<_>>()),
    ))
}

/// Every benchmark, as one JSON object.
pub async fn all() -> Result<String, String> {
    // Recovery first: its cold start is the page's own first start.
    progress("recovery");
    let recovery = recovery_figures().await?;
    let d = device().await?;
    progress("start-up");
    let startup = startup_figures(&d).await?;
    progress("frame cost");
    let frames = frame_figures(&d).await?;
    let storm = storm_figures(&d).await?;
    d.destroy();
    progress("done");
    Ok(format!(
        "{{\"startup\": {startup}, \"frame\": {frames}, \"storm\": {storm}, \"recovery\": {recovery}}}"
    ))
}
