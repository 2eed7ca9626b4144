//! The page: loads the scene payload, starts the runtime, wires the console API
//! (`matarGPU`, `gpuStatus`, `gpuFault`, `gpuDebug`), input, the HUD and the fallback.

use std::rc::Rc;

use gloo_timers::callback::Interval;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Document, GpuTextureFormat, HtmlCanvasElement, HtmlElement};
use webgpu_guard::payload::Payload;
use webgpu_guard::supervisor::Fallback;
use webgpu_guard::telemetry::outbox::{ExportConfig, ExportStats};
use webgpu_guard::usage::{BufferUsages, TextureUsages};

use webgpu_guard::web::js::describe;
use webgpu_guard::web::runtime::{RuntimeOptions, Status};
use webgpu_guard::web::{log, DiagnosticsLevel, EventListener, HttpSink, Runtime, TextureSpec};

use crate::camera::{Gesture, GestureStep};
use crate::console_args::{self, Arg};
use crate::scene::{DemoApp, SceneData};
use webgpu_guard::chaos::Injection;

/// A WGSL module with a deliberate error (and a non-ASCII comment, so the caret
/// column conversion shows).
const BAD_WGSL: &str = "// módulo roto a propósito: «vec5» no existe\n@fragment\nfn main() -> @location(0) vec4f {\n  let color: vec5f = vec4f(1.0);\n  return color;\n}\n";

fn document() -> Option<Document> {
    web_sys::window()?.document()
}

fn element(id: &str) -> Option<HtmlElement> {
    document()?.get_element_by_id(id)?.dyn_into().ok()
}

fn show_fallback(code: &str, message: &str) {
    if let Some(panel) = element("fallback") {
        panel.set_text_content(Some(message));
        let _ = panel.set_attribute("data-reason", code);
        let _ = panel.style().set_property("display", "block");
    }
    if let Some(canvas) = element("scene") {
        let _ = canvas.style().set_property("visibility", "hidden");
    }
}

/// Hides the fallback and shows the canvas again (after a restart).
pub(crate) fn hide_fallback() {
    if let Some(panel) = element("fallback") {
        let _ = panel.style().set_property("display", "none");
    }
    if let Some(canvas) = element("scene") {
        let _ = canvas.style().set_property("visibility", "visible");
    }
}

fn set(object: &js_sys::Object, key: &str, value: JsValue) {
    let _ = js_sys::Reflect::set(object, &key.into(), &value);
}

fn status_object(status: &Status, app: &DemoApp) -> js_sys::Object {
    // The runtime's snapshot, and what the demo adds to it.
    let o = status.to_js();
    set(&o, "shadowMapSize", app.shadow_size.get().into());
    set(&o, "pipelinesMs", app.pipeline_wait_ms.get().into());
    let camera = *app.camera.borrow();
    let cam = js_sys::Object::new();
    set(&cam, "yaw", camera.yaw.into());
    set(&cam, "pitch", camera.pitch.into());
    set(&cam, "distance", camera.distance.into());
    set(&o, "camera", cam.into());
    o
}

/// `value` with `decimals` digits after the point, without pulling float
/// formatting into the binary.
fn fixed(value: f64, decimals: u32) -> String {
    let scale = 10u64.pow(decimals);
    let scaled = (value.max(0.0) * scale as f64).round() as u64;
    let fraction = (scaled % scale).to_string();
    format!(
        "{}.{}{}",
        scaled / scale,
        "0".repeat(decimals as usize - fraction.len().min(decimals as usize)),
        fraction
    )
}

fn hud_text(status: &Status, app: &DemoApp) -> String {
    let loss = status
        .last_loss
        .as_ref()
        .map(|l| {
            format!(
                "{}{}",
                l.reason.as_str(),
                if l.requested { " (requested)" } else { "" }
            )
        })
        .unwrap_or_else(|| "none".into());
    format!(
        "device      {}\nadapter     {}\ngeneration  {}   recoveries {}\nlast loss   {}\nerrors      validation {}  oom {}  internal {}\nlines       logged {}  held back {}\nlive        {} objects, {} MiB\nshadow map  {}\nframe       #{}  {} ms CPU\nscopes      {}",
        status.state.as_str(),
        status.adapter,
        status.generation,
        status.recoveries,
        loss,
        status.faults.validation,
        status.faults.out_of_memory,
        status.faults.internal,
        status.faults.logged,
        status.faults.suppressed,
        status.live.objects,
        fixed(status.live.bytes as f64 / (1024.0 * 1024.0), 1),
        match app.shadow_size.get() {
            0 => "-".to_string(),
            s => format!("{s}x{s} depth32float"),
        },
        status.frames,
        fixed(status.frame_ms, 2),
        status.level.as_str(),
    )
}

async fn load_scene(url: &str) -> Result<SceneData, String> {
    let window = web_sys::window().ok_or("no window")?;
    let response: web_sys::Response =
        wasm_bindgen_futures::JsFuture::from(window.fetch_with_str(url))
            .await
            .map_err(|e| format!("payload \"{url}\": fetch failed: {}", describe(&e)))?
            .dyn_into()
            .map_err(|_| format!("payload \"{url}\": not a response"))?;
    if !response.ok() {
        return Err(format!("payload \"{url}\": HTTP {}", response.status()));
    }
    let buffer = wasm_bindgen_futures::JsFuture::from(
        response
            .array_buffer()
            .map_err(|e| format!("payload \"{url}\": {}", describe(&e)))?,
    )
    .await
    .map_err(|e| format!("payload \"{url}\": {}", describe(&e)))?;
    let bytes = js_sys::Uint8Array::new(&buffer).to_vec();
    let payload = Payload::parse(url, &bytes, 48).map_err(|e| e.to_string())?;
    SceneData::from_payload(&payload).map_err(|e| format!("payload \"{url}\": {e}"))
}

fn expose(name: &str, f: &js_sys::Function) {
    if let Some(window) = web_sys::window() {
        let _ = js_sys::Reflect::set(&window, &name.into(), f);
    }
}

/// Runs the page.
pub async fn run() {
    let Some(window) = web_sys::window() else {
        return;
    };
    let search = window.location().search().unwrap_or_default();
    let params = web_sys::UrlSearchParams::new_with_str(&search).ok();
    let has = |key: &str| params.as_ref().map(|p| p.has(key)).unwrap_or(false);
    let get = |key: &str| params.as_ref().and_then(|p| p.get(key));
    let still = has("still");
    let Some(canvas) = element("scene").and_then(|e| e.dyn_into::<HtmlCanvasElement>().ok()) else {
        show_fallback("page", "The page has no <canvas id=\"scene\">.");
        return;
    };
    let scene = match load_scene("scene.bin").await {
        Ok(scene) => scene,
        Err(message) => {
            log::error(&message);
            show_fallback("payload", &message);
            return;
        }
    };
    let mut ladder = DemoApp::default_ladder();
    if get("shadow").as_deref() == Some("huge") {
        // Forces the ladder to degrade: a first candidate far beyond any memory.
        let mut huge = TextureSpec::d2(
            "shadow-map-huge",
            GpuTextureFormat::Depth32float,
            8192,
            8192,
            TextureUsages::RENDER_ATTACHMENT | TextureUsages::TEXTURE_BINDING,
        );
        huge.depth_or_layers = 256;
        ladder.insert(0, huge);
    }
    let app = Rc::new(DemoApp::new(scene, still, ladder));
    let mut options = RuntimeOptions::default();
    // `?crashwindow=MS`: what "soon after the first frame" means for the crash-loop
    // fallback (0 turns it off; the end-to-end suite crashes on purpose, quickly).
    if let Some(window_ms) = get("crashwindow").and_then(|v| v.parse::<u64>().ok()) {
        options.supervisor.crash_loop_window_ms = window_ms;
        if window_ms == 0 {
            options.supervisor.crash_loop_deaths = u32::MAX;
        }
    }
    let runtime = Runtime::with_shared_app(app.clone(), canvas.clone(), options);
    if let Some(level) = get("level").as_deref().and_then(DiagnosticsLevel::parse) {
        runtime.set_level(level);
    }
    // `?sampling=N`: one frame in N gets its scopes (1: every frame).
    if let Some(every) = get("sampling").and_then(|v| v.parse::<u32>().ok()) {
        runtime.set_frame_sampling(webgpu_guard::frame_sampling::FrameSampling::every(every));
    }
    runtime.on_fallback(|fallback: &Fallback| show_fallback(fallback.code(), &fallback.message()));

    // `?telemetry=URL`: errors also go to an OpenTelemetry collector as
    // OTLP/HTTP JSON logs (`&telemetryInterval=MS`: at most one request so often;
    // `&telemetryRetryCap=MS`: the longest retry delay).
    if let Some(url) = get("telemetry") {
        let mut config = ExportConfig::default();
        if let Some(ms) = get("telemetryInterval").and_then(|v| v.parse::<u32>().ok()) {
            config.interval_ms = ms.max(1);
        }
        if let Some(ms) = get("telemetryRetryCap").and_then(|v| v.parse::<u32>().ok()) {
            config.retry_cap_ms = ms;
        }
        match HttpSink::with_config(&url, "webgpu-guard-demo", config) {
            Ok(sink) => install_telemetry(&runtime, sink),
            Err(message) => log::error(&message),
        }
    }
    install_console_api(&runtime);
    install_input(&canvas, &app);
    install_hud(&runtime);
    runtime.start();
}

/// Sends the fault sink's telemetry to `sink` too, and exposes its counters as
/// `gpuTelemetry()`.
fn install_telemetry(runtime: &Runtime<DemoApp>, sink: HttpSink) {
    runtime.faults().set_sink(Box::new(sink.clone()));
    let stats = Closure::<dyn Fn() -> JsValue>::new(move || telemetry_object(&sink.stats()).into());
    expose("gpuTelemetry", stats.as_ref().unchecked_ref());
    stats.forget();
}

fn telemetry_object(stats: &ExportStats) -> js_sys::Object {
    let o = js_sys::Object::new();
    let count = |n: u64| JsValue::from(n as f64);
    set(&o, "counted", count(stats.counted));
    set(&o, "delivered", count(stats.delivered));
    set(&o, "beaconed", count(stats.beaconed));
    set(&o, "dropped", count(stats.dropped));
    set(&o, "rejected", count(stats.rejected));
    set(&o, "pending", count(stats.pending));
    set(&o, "inFlight", count(stats.in_flight));
    set(&o, "requests", count(stats.requests));
    set(&o, "failedRequests", count(stats.failed_requests));
    set(&o, "beacons", count(stats.beacons));
    set(&o, "retryAfterHonoured", count(stats.retry_after_honoured));
    set(&o, "lastStatus", stats.last_status.map(f64::from).into());
    set(&o, "lastFailure", stats.last_failure.clone().into());
    o
}

fn install_console_api(runtime: &Runtime<DemoApp>) {
    let r = runtime.clone();
    let matar = Closure::<dyn Fn() -> JsValue>::new(move || {
        let answer = r.force_recovery();
        // After a fallback it starts over: the page's fallback goes too.
        if answer == webgpu_guard::web::runtime::RecoveryAnswer::StartingOver {
            hide_fallback();
        }
        answer.message().into()
    });
    expose("matarGPU", matar.as_ref().unchecked_ref());
    matar.forget();

    let r = runtime.clone();
    let stop = Closure::<dyn Fn()>::new(move || r.stop());
    expose("gpuStop", stop.as_ref().unchecked_ref());
    stop.forget();

    let r = runtime.clone();
    let status = Closure::<dyn Fn() -> JsValue>::new(move || {
        let o = status_object(&r.status(), r.app());
        // Faults of the scope stack (a pop without its push), by group: the
        // end-to-end tests check that a lost device never counts as one.
        let misuse: u64 = r
            .faults()
            .groups()
            .iter()
            .filter(|g| g.kind == webgpu_guard::FaultKind::ScopeStack)
            .map(|g| g.occurrences)
            .sum();
        set(&o, "scopeStackFaults", (misuse as f64).into());
        o.into()
    });
    expose("gpuStatus", status.as_ref().unchecked_ref());
    status.forget();

    let r = runtime.clone();
    let levels: Vec<&'static str> = DiagnosticsLevel::ALL.iter().map(|l| l.as_str()).collect();
    let debug =
        Closure::<dyn Fn(JsValue) -> JsValue>::new(move |level: JsValue| match console_args::word(
            "gpuDebug",
            &arg(&level),
            &levels,
        ) {
            Ok(word) => match DiagnosticsLevel::parse(word) {
                Some(level) => {
                    r.set_level(level);
                    r.faults()
                        .note(&format!("diagnostics level: {}", level.as_str()));
                    JsValue::TRUE
                }
                None => JsValue::FALSE,
            },
            Err(usage) => JsValue::from_str(&usage),
        });
    expose("gpuDebug", debug.as_ref().unchecked_ref());
    debug.forget();

    let r = runtime.clone();
    let ledger = Closure::<dyn Fn() -> JsValue>::new(move || {
        r.session()
            .ledger()
            .with(|l| JsValue::from_str(&l.report().to_string()))
            .unwrap_or(JsValue::NULL)
    });
    expose("gpuLedger", ledger.as_ref().unchecked_ref());
    ledger.forget();

    let r = runtime.clone();
    let camera = Closure::<dyn Fn(JsValue, JsValue, JsValue) -> JsValue>::new(
        move |yaw: JsValue, pitch: JsValue, distance: JsValue| match console_args::camera(
            &arg(&yaw),
            &arg(&pitch),
            &arg(&distance),
        ) {
            Ok((yaw, pitch, distance)) => match r.app().camera.try_borrow_mut() {
                Ok(mut camera) => {
                    camera.yaw = yaw;
                    camera.pitch = pitch;
                    camera.distance = distance;
                    JsValue::TRUE
                }
                Err(_) => JsValue::from_str("the camera is busy; try again"),
            },
            Err(usage) => JsValue::from_str(&usage),
        },
    );
    expose("gpuCamera", camera.as_ref().unchecked_ref());
    camera.forget();

    let r = runtime.clone();
    let fault = Closure::<dyn Fn(JsValue) -> JsValue>::new(move |kind: JsValue| {
        match console_args::word("gpuFault", &arg(&kind), &FAULT_KINDS) {
            Ok(kind) => inject(&r, kind),
            Err(usage) => JsValue::from_str(&usage),
        }
    });
    expose("gpuFault", fault.as_ref().unchecked_ref());
    fault.forget();

    let r = runtime.clone();
    let inject_any = Closure::<dyn Fn(JsValue) -> JsValue>::new(move |spec: JsValue| {
        // A bad spec gets the usage line and changes nothing; a refusal of the
        // runtime (no running device) is said as it is.
        match console_args::injection(&arg(&spec)) {
            Ok(injection) => match r.inject(injection) {
                Ok(()) => JsValue::TRUE,
                Err(message) => JsValue::from_str(&format!("gpuInject: {message}")),
            },
            Err(usage) => JsValue::from_str(&usage),
        }
    });
    expose("gpuInject", inject_any.as_ref().unchecked_ref());
    inject_any.forget();

    // Whether an injected storm still runs (a test waits for its end).
    let r = runtime.clone();
    let storm = Closure::<dyn Fn() -> bool>::new(move || r.session().injector().storm_running());
    expose("gpuStormRunning", storm.as_ref().unchecked_ref());
    storm.forget();

    let r = runtime.clone();
    let start = Closure::<dyn Fn()>::new(move || {
        hide_fallback();
        r.start();
    });
    expose("gpuStart", start.as_ref().unchecked_ref());
    start.forget();

    let r = runtime.clone();
    let scopes = Closure::<dyn Fn() -> js_sys::Promise>::new(move || {
        let r = r.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            Ok(match r.scope_stack_balanced().await {
                Some(balanced) => JsValue::from_bool(balanced),
                None => JsValue::NULL,
            })
        })
    });
    expose("gpuScopeCheck", scopes.as_ref().unchecked_ref());
    scopes.forget();

    let r = runtime.clone();
    let chaos = Closure::<dyn Fn(JsValue, JsValue) -> js_sys::Promise>::new(
        move |seed: JsValue, count: JsValue| {
            let r = r.clone();
            let checked = console_args::count("gpuChaos", "seed", &arg(&seed), 0, u32::MAX as u64)
                .and_then(|seed| {
                    console_args::count("gpuChaos", "count", &arg(&count), 1, 1000)
                        .map(|count| (seed, count))
                });
            wasm_bindgen_futures::future_to_promise(async move {
                match checked {
                    Ok((seed, count)) => Ok(crate::chaos_run::run(&r, seed, count as u32).await),
                    Err(usage) => Ok(JsValue::from_str(&usage)),
                }
            })
        },
    );
    expose("gpuChaos", chaos.as_ref().unchecked_ref());
    chaos.forget();
}

/// What `gpuFault` accepts.
const FAULT_KINDS: [&str; 6] = ["validation", "storm", "stop", "shader", "oom", "secret"];

/// The label and phase of `gpuFault("secret")`: what an application must never
/// send anywhere (a token in a URL, an address), on an object that fails.
const SECRET_LABEL: &str = "avatar https://cdn.example.com/u?token=s3cr3t-t0ken";
const SECRET_PHASE: &str = "upload for ana@example.com";

/// A console argument, reduced to what the checks need.
fn arg(value: &JsValue) -> Arg {
    if value.is_undefined() {
        Arg::Missing
    } else if let Some(number) = value.as_f64() {
        Arg::Number(number)
    } else if let Some(text) = value.as_string() {
        Arg::Text(text)
    } else if value.is_null() {
        Arg::Other("null".into())
    } else {
        Arg::Other(format!(
            "a value of type {}",
            value.js_typeof().as_string().unwrap_or_default()
        ))
    }
}

fn inject(runtime: &Runtime<DemoApp>, kind: &str) -> JsValue {
    let app = runtime.app().clone();
    match kind {
        "storm" => {
            // An invalid submit every frame (in its own submit: the scene keeps
            // drawing) and 1000 uncaptured errors a second however slow the
            // frames are, until "stop".
            app.storm.set(true);
            if let Err(message) = runtime.inject(Injection::Storm {
                per_second: 1000,
                for_ms: u32::MAX,
            }) {
                return JsValue::from_str(&message);
            }
        }
        "stop" => {
            app.storm.set(false);
            runtime.stop_storm();
        }
        "validation" => {
            if let Err(message) = runtime.inject(Injection::Uncaptured) {
                return JsValue::from_str(&message);
            }
        }
        "oom" => {
            let done = runtime.with_live(|gpu, _| {
                let mut spec = TextureSpec::d2(
                    "injected-oom-texture",
                    GpuTextureFormat::Rgba32float,
                    8192,
                    8192,
                    TextureUsages::TEXTURE_BINDING,
                );
                spec.depth_or_layers = 64;
                let desc = web_sys::GpuTextureDescriptor::new_with_gpu_extent_3d_dict(
                    spec.format,
                    &{
                        let e = web_sys::GpuExtent3dDict::new(spec.width);
                        e.set_height(spec.height);
                        e.set_depth_or_array_layers(spec.depth_or_layers);
                        e
                    },
                    spec.usage.bits(),
                );
                desc.set_label(&spec.label);
                if let Ok(texture) = gpu.device.raw().create_texture(&desc) {
                    texture.destroy();
                }
            });
            if done.is_none() {
                return JsValue::from_str("no running device");
            }
        }
        "secret" => {
            let Some(device) = runtime.with_live(|gpu, _| gpu.device.clone()) else {
                return JsValue::from_str("no running device");
            };
            wasm_bindgen_futures::spawn_local(async move {
                // MAP_READ with MAP_WRITE is invalid: a validation error on the
                // labelled buffer, caught by the phase and reported.
                let _ = device
                    .phase(SECRET_PHASE, || {
                        device.create_buffer(
                            SECRET_LABEL,
                            16,
                            BufferUsages::MAP_READ | BufferUsages::MAP_WRITE,
                        )
                    })
                    .await;
            });
        }
        "shader" => {
            let Some(device) = runtime.with_live(|gpu, _| gpu.device.clone()) else {
                return JsValue::from_str("no running device");
            };
            wasm_bindgen_futures::spawn_local(async move {
                match device
                    .create_shader_module("injected-bad-shader", BAD_WGSL, &[])
                    .await
                {
                    Ok(_) => log::warn("the broken shader compiled?"),
                    Err(error) => {
                        // Already reported through the fault sink, counted and rate-limited.
                        *app.diagnostics.borrow_mut() = error.diagnostics.formatted.clone();
                        if let Some(panel) = element("diagnostics") {
                            panel.set_text_content(Some(&error.diagnostics.to_string()));
                        }
                    }
                }
            });
        }
        other => {
            return JsValue::from_str(&format!(
                "unknown fault \"{other}\": use validation, storm, stop, shader, oom or secret"
            ))
        }
    }
    JsValue::TRUE
}

/// The canvas's pointer and wheel listeners, for the life of the page.
fn install_input(canvas: &HtmlCanvasElement, app: &Rc<DemoApp>) {
    let gesture = Rc::new(std::cell::RefCell::new(Gesture::default()));
    let target: &web_sys::EventTarget = canvas.as_ref();
    let pointer = |e: web_sys::Event| e.dyn_into::<web_sys::PointerEvent>().ok();

    let g = gesture.clone();
    let c = canvas.clone();
    EventListener::new(target, "pointerdown", move |e| {
        let Some(e) = pointer(e) else { return };
        g.borrow_mut().down(
            e.pointer_id(),
            e.client_x(),
            e.client_y(),
            &e.pointer_type(),
        );
        let _ = c.set_pointer_capture(e.pointer_id());
    })
    .forget();

    let g = gesture.clone();
    let a = app.clone();
    EventListener::new(target, "pointermove", move |e| {
        let Some(e) = pointer(e) else { return };
        if e.buttons() == 0 {
            // Released somewhere we did not hear about: no longer down.
            g.borrow_mut().up(e.pointer_id());
            return;
        }
        let step = g
            .borrow_mut()
            .moved(e.pointer_id(), e.client_x(), e.client_y());
        let mut camera = a.camera.borrow_mut();
        match step {
            GestureStep::Drag(dx, dy) => camera.drag(dx as f32, dy as f32),
            GestureStep::Pinch(change) => camera.zoom(-(change as f32) * 4.0),
            GestureStep::None => {}
        }
    })
    .forget();

    for event in ["pointerup", "pointercancel", "lostpointercapture"] {
        let g = gesture.clone();
        EventListener::new(target, event, move |e| {
            if let Some(e) = pointer(e) {
                g.borrow_mut().up(e.pointer_id())
            }
        })
        .forget();
    }

    let a = app.clone();
    EventListener::new(target, "wheel", move |e| {
        let Some(e) = e.dyn_into::<web_sys::WheelEvent>().ok() else {
            return;
        };
        e.prevent_default();
        a.camera.borrow_mut().zoom(e.delta_y() as f32);
    })
    .forget();
}

fn install_hud(runtime: &Runtime<DemoApp>) {
    let r = runtime.clone();
    let mut shown_diagnostics = 0usize;
    let interval = Interval::new(250, move || {
        let status = r.status();
        if status.state == webgpu_guard::supervisor::DeviceState::Running {
            hide_fallback();
        }
        if let Some(hud) = element("hud") {
            hud.set_text_content(Some(&hud_text(&status, r.app())));
            let _ = hud.set_attribute("data-state", status.state.as_str());
        }
        let diagnostics = r.app().diagnostics.borrow();
        if diagnostics.len() != shown_diagnostics {
            shown_diagnostics = diagnostics.len();
            if let Some(panel) = element("diagnostics") {
                panel.set_text_content(Some(&diagnostics.join("\n")));
            }
        }
        if let Some(lines) = element("log") {
            let recent = r.faults().recent_lines();
            let tail: Vec<String> = recent.iter().rev().take(6).rev().cloned().collect();
            lines.set_text_content(Some(&tail.join("\n")));
        }
    });
    interval.forget();
}
