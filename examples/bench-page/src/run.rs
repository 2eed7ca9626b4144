//! Runs every benchmark and returns the figures as JSON.

use std::rc::Rc;

use wasm_bindgen::{JsCast, JsValue};
use web_sys::{
    GpuLoadOp, GpuRenderPassColorAttachment, GpuRenderPassDescriptor, GpuStoreOp, GpuTextureFormat,
    HtmlCanvasElement,
};
use webgpu_guard::chaos::Injection;
use webgpu_guard::frame_sampling::FrameSampling;
use webgpu_guard::payload::Payload;
use webgpu_guard::usage::TextureUsages;

use webgpu_guard::web::js::{describe, now_ms, nullable};
use webgpu_guard::web::runtime::RuntimeOptions;
use webgpu_guard::web::{init, DiagnosticsLevel, GuardedDevice, Runtime, TextureSpec};

use crate::startup::{self, Awaiter, Strategy};
use webgpu_guard_demo::scene::{DemoApp, SceneData};

const REPEATS: usize = 21;

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
            TextureUsages::RENDER_ATTACHMENT,
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
    let js_kit = startup::js_kit(d);
    for strategy in Strategy::ALL {
        startup::measure(d, &kit, strategy)
            .await
            .map_err(|f| f.to_string())?;
        startup::measure_js(d, &js_kit, strategy, false).await?;
        startup::measure_js(d, &js_kit, strategy, true).await?;
    }
    let count = Strategy::ALL.len();
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); count];
    let mut js_times: Vec<Vec<f64>> = vec![Vec::new(); count];
    let mut probed_times: Vec<Vec<f64>> = vec![Vec::new(); count];
    let mut raw_times = Vec::new();
    let mut floor_times: Vec<Vec<f64>> = vec![Vec::new(); Awaiter::ALL.len()];
    startup::measure_raw(d, &kit).await?;
    for repeat in 0..REPEATS {
        progress(&format!("start-up, repeat {}/{REPEATS}", repeat + 1));
        raw_times.push(startup::measure_raw(d, &kit).await?);
        for k in 0..Awaiter::ALL.len() {
            let index = (k + repeat) % Awaiter::ALL.len();
            floor_times[index].push(startup::round_trips(d, Awaiter::ALL[index]).await);
        }
        for k in 0..count {
            let index = (k + repeat) % count;
            let strategy = Strategy::ALL[index];
            // The library, hand-written JavaScript and hand-written JavaScript
            // with the library's liveness probe back to back, the order rotating.
            for turn in 0..3 {
                match (turn + repeat) % 3 {
                    0 => times[index].push(
                        startup::measure(d, &kit, strategy)
                            .await
                            .map_err(|f| f.to_string())?,
                    ),
                    1 => js_times[index]
                        .push(startup::measure_js(d, &js_kit, strategy, false).await?),
                    _ => probed_times[index]
                        .push(startup::measure_js(d, &js_kit, strategy, true).await?),
                }
            }
        }
    }
    let rows: Vec<String> = Strategy::ALL
        .iter()
        .enumerate()
        .map(|(i, s)| {
            format!(
                "{{\"name\": {:?}, \"median_ms\": {:.3}, \"js_median_ms\": {:.3}, \"js_probed_median_ms\": {:.3}, \"runs\": {}, \"js_runs\": {}, \"js_probed_runs\": {}}}",
                s.name(),
                median(&times[i]),
                median(&js_times[i]),
                median(&probed_times[i]),
                list(&times[i]),
                list(&js_times[i]),
                list(&probed_times[i])
            )
        })
        .collect();
    Ok(format!(
        "{{\"rows\": [{}], \"raw_web_sys_ms\": {:.3}, \"raw_runs\": {}, \"round_trips_js_ms\": {:.3}, \"round_trips_jsfuture_ms\": {:.3}, \"round_trips_settled_ms\": {:.3}, \"round_trips_library_ms\": {:.3}}}",
        rows.join(", "),
        median(&raw_times),
        list(&raw_times),
        median(&floor_times[0]),
        median(&floor_times[1]),
        median(&floor_times[2]),
        median(&floor_times[3])
    ))
}

/// The frame scope's cost in a tight loop of small offscreen frames: no scopes,
/// a scope on every frame, and the default sampling (one frame in 32).
async fn frame_figures(d: &GuardedDevice) -> Result<String, String> {
    let (_target, view) = offscreen_target(d, "bench-frame-target")?;
    // The fault sink listens, as in any application run by the runtime (without it every
    // frame would be scoped).
    let _listener = d.session().faults().install(d.raw());
    const MODES: [(&str, u32); 3] = [
        ("none", 0),
        ("every", 1),
        ("default", FrameSampling::DEFAULT_EVERY),
    ];
    let mut in_frame = vec![Vec::new(); MODES.len()];
    let mut per_frame_total = vec![Vec::new(); MODES.len()];
    // Each mode's added cost against the "none" block just before it: paired
    // differences drift less than medians taken apart.
    let mut added = vec![Vec::new(); MODES.len()];
    let mut added_cpu = vec![Vec::new(); MODES.len()];
    const FRAMES: usize = 640;
    const ROUNDS: usize = 16;
    let mut number = 0u64;
    for block in 0..(MODES.len() * (ROUNDS + 1)) {
        let mode = block % MODES.len();
        let (_, every) = MODES[mode];
        if every == 0 {
            d.set_level(DiagnosticsLevel::Off);
        } else {
            d.set_level(DiagnosticsLevel::Phases);
            d.session().set_frame_sampling(FrameSampling::every(every));
        }
        let mut cpu = 0.0;
        let block_start = now_ms();
        for _ in 0..FRAMES {
            number += 1;
            let t = now_ms();
            let scope = d.begin_frame(number);
            offscreen_frame(d, &view).map_err(|e| describe(&e))?;
            scope.end();
            cpu += now_ms() - t;
        }
        startup::round_trip(d.raw()).await;
        if block >= MODES.len() {
            let total = (now_ms() - block_start) / FRAMES as f64;
            in_frame[mode].push(cpu / FRAMES as f64);
            per_frame_total[mode].push(total);
            if let (Some(none), Some(none_cpu)) = (per_frame_total[0].last(), in_frame[0].last()) {
                added[mode].push(total - none);
                added_cpu[mode].push(cpu / FRAMES as f64 - none_cpu);
            }
        }
        flush(d).await;
    }
    d.set_level(DiagnosticsLevel::Phases);
    d.session().set_frame_sampling(FrameSampling::default());
    let rows: Vec<String> = MODES
        .iter()
        .enumerate()
        .map(|(i, (name, _))| {
            format!(
                "{{\"name\": {name:?}, \"cpu_ms\": {:.4}, \"total_ms\": {:.4}, \"added_ms\": {:.4}, \"added_cpu_ms\": {:.4}}}",
                median(&in_frame[i]),
                median(&per_frame_total[i]),
                median(&added[i]),
                median(&added_cpu[i])
            )
        })
        .collect();
    Ok(format!("[{}]", rows.join(", ")))
}

/// The fault sink's cost per uncaptured error, from synthetic events dispatched on three
/// devices: no listener, a bare hand-written listener, the library's net.
async fn handler_figures() -> Result<String, String> {
    let mut devices = Vec::new();
    for label in ["handler-none", "handler-bare", "handler-net"] {
        let gpu = init::navigator_gpu().map_err(|f| f.describe())?;
        let adapter = init::request_adapter(&gpu)
            .await
            .map_err(|f| f.describe())?;
        devices.push(
            init::request_device(&adapter, label)
                .await
                .map_err(|f| f.describe())?,
        );
    }
    startup::install_bare_listener(&devices[1]);
    let net = webgpu_guard::web::FaultSink::new(std::rc::Rc::new(std::cell::Cell::new(0)));
    let _listener = net.install(&devices[2]);
    const N: u32 = 2000;
    let mut per_event = [Vec::new(), Vec::new(), Vec::new()];
    for round in 0..7 {
        progress(&format!("handler cost, round {}/7", round + 1));
        for (i, device) in devices.iter().enumerate() {
            let ms = startup::dispatch(device, N)?;
            if round > 0 {
                per_event[i].push(ms * 1000.0 / f64::from(N));
            }
        }
        gloo_timers::future::TimeoutFuture::new(50).await;
    }
    for device in &devices {
        device.destroy();
    }
    Ok(format!(
        "{{\"none_us\": {:.3}, \"bare_us\": {:.3}, \"net_us\": {:.3}}}",
        median(&per_event[0]),
        median(&per_event[1]),
        median(&per_event[2])
    ))
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
    let app = Rc::new(DemoApp::new(scene, true, DemoApp::default_ladder()));
    let runtime = Runtime::with_shared_app(app.clone(), canvas, RuntimeOptions::default());
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
    // The frame scope on the demo's real frame: alternate 2 s blocks, no scopes
    // and the default.
    let mut per_frame = [Vec::new(), Vec::new()];
    for block in 0..10 {
        let scoped = block % 2;
        runtime.set_level(if scoped == 1 {
            DiagnosticsLevel::Phases
        } else {
            DiagnosticsLevel::Off
        });
        progress(&format!("scene frame cost, block {}/10", block + 1));
        let before = runtime.status();
        gloo_timers::future::TimeoutFuture::new(2000).await;
        let after = runtime.status();
        let frames = (after.frames - before.frames).max(1) as f64;
        per_frame[scoped].push((after.frame_ms_total - before.frame_ms_total) / frames);
    }
    runtime.set_level(DiagnosticsLevel::Phases);
    // The storm on the demo's scene: 3 s clean, then 3 s of 1000 uncaptured
    // errors a second (the injector's timer), the default level.
    let mut storm_rows = Vec::new();
    // `?collector=URL`: a third run with the HTTP sink sending to it.
    let collector = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .and_then(|search| search.strip_prefix("?collector=").map(str::to_string));
    for (name, rate) in [("clean", 0u32), ("storm", 1000), ("storm+http", 1000)] {
        let sink = match (name, &collector) {
            ("storm+http", None) => continue,
            ("storm+http", Some(url)) => {
                let sink = webgpu_guard::web::HttpSink::new(url, "webgpu-guard-bench")?;
                runtime.faults().set_sink(Box::new(sink.clone()));
                Some(sink)
            }
            _ => None,
        };
        let busy_before = sink.as_ref().map_or((0.0, 0.0), |s| s.busy_ms());
        progress(&format!("storm on the scene: {name}"));
        if rate > 0 {
            runtime
                .inject(Injection::Storm {
                    per_second: rate,
                    for_ms: 3000,
                })
                .map_err(|e| e.to_string())?;
        }
        let before = runtime.status();
        let stats_before = runtime.faults().stats();
        gloo_timers::future::TimeoutFuture::new(3000).await;
        let after = runtime.status();
        // Errors land after the calls that caused them: let the tail arrive.
        gloo_timers::future::TimeoutFuture::new(300).await;
        let stats = runtime.faults().stats();
        // Rates over the storm's own 3 s: everything counted in the window came
        // from it (the tail included), so this is the conservative figure.
        let seconds = 3.0;
        let frames = (after.frames - before.frames).max(1) as f64;
        let frame_ms = (after.frame_ms_total - before.frame_ms_total) / frames;
        let errors = (stats.validation - stats_before.validation) as f64;
        let handler_ms = (stats.handler_us - stats_before.handler_us) as f64 / 1000.0;
        // The sink's own time over the run: taking errors, and sending.
        let busy = sink.as_ref().map_or((0.0, 0.0), |s| s.busy_ms());
        let (sink_ms, send_ms) = (busy.0 - busy_before.0, busy.1 - busy_before.1);
        let requests = sink.as_ref().map_or(0, |s| s.stats().requests);
        storm_rows.push(format!(
            "{{\"name\": {name:?}, \"frame_main_thread_ms\": {:.4}, \"handler_ms_per_frame\": {:.4}, \"handler_us_per_error\": {:.2}, \"sink_us_per_error\": {:.3}, \"sink_send_ms\": {send_ms:.3}, \"sink_requests\": {requests}, \"frame_interval_ms\": {:.2}, \"errors_per_s\": {:.1}, \"lines_per_s\": {:.2}, \"max_lines_in_a_second\": {}}}",
            frame_ms,
            handler_ms / frames,
            if errors > 0.0 { handler_ms * 1000.0 / errors } else { 0.0 },
            if errors > 0.0 { sink_ms * 1000.0 / errors } else { 0.0 },
            seconds * 1000.0 / frames,
            errors / seconds,
            (stats.logged - stats_before.logged) as f64 / seconds,
            stats.max_lines_in_a_second
        ));
    }
    runtime.set_level(webgpu_guard::web::DiagnosticsLevel::Phases);
    runtime.stop();
    let pick = |f: &dyn Fn(&(webgpu_guard::web::runtime::InitTimings, f64)) -> f64| {
        median(&rows.iter().map(f).collect::<Vec<_>>())
    };
    Ok(format!(
        "{{\"cold\": {{\"navigation_to_first_frame_ms\": {:.2}, \"assets_ms\": {:.2}, \"adapter_ms\": {:.2}, \"device_ms\": {:.2}, \"configure_ms\": {:.2}, \"resources_ms\": {:.2}, \"pipeline_wait_ms\": {:.2}, \"to_first_frame_ms\": {:.2}}}, \
          \"scene_frame\": {{\"none_ms\": {:.4}, \"scoped_ms\": {:.4}, \"none_blocks\": {}, \"scoped_blocks\": {}}}, \"scene_storm\": [{}], \"recovery\": {{\"adapter_ms\": {:.2}, \"device_ms\": {:.2}, \"configure_ms\": {:.2}, \"resources_ms\": {:.2}, \"pipeline_wait_ms\": {:.2}, \"to_first_frame_ms\": {:.2}, \"runs\": {}}}}}",
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
        list(&per_frame[0]),
        list(&per_frame[1]),
        storm_rows.join(", "),
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
    // `#startup` (the runner's BENCH_ONLY=startup): the start-up figures alone.
    let hash = web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .unwrap_or_default();
    if hash == "#startup" {
        let d = device().await?;
        progress("start-up");
        let startup = startup_figures(&d).await?;
        d.destroy();
        progress("done");
        return Ok(format!("{{\"startup\": {startup}}}"));
    }
    // Recovery first: its cold start is the page's own first start.
    progress("recovery");
    let recovery = recovery_figures().await?;
    let d = device().await?;
    progress("start-up");
    let startup = startup_figures(&d).await?;
    progress("frame cost");
    let frames = frame_figures(&d).await?;
    let handler = handler_figures().await?;
    d.destroy();
    progress("done");
    Ok(format!(
        "{{\"startup\": {startup}, \"frame\": {frames}, \"handler\": {handler}, \"recovery\": {recovery}}}"
    ))
}
