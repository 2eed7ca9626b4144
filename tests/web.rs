//! Browser tests against real WebGPU (headless Chromium, SwiftShader), run by
//! `wasm-bindgen-test-runner` with the flags in `webdriver.json`.
#![cfg(target_arch = "wasm32")]

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use gloo_timers::future::TimeoutFuture;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use web_sys::{GpuBufferDescriptor, GpuTextureFormat};
use webgpu_guard::fault::{Fault, FaultKind};
use webgpu_guard::frame_sampling::FrameSampling;
use webgpu_guard::ledger::ObjectKind;
use webgpu_guard::shader_diag::MessageType;
use webgpu_guard::usage::{BufferUsages, TextureUsages};

use webgpu_guard::web::faults::JsFunctionSink;
use webgpu_guard::web::init;
use webgpu_guard::web::scope::{pop_unmatched, wait_all, Filter, ScopeSet};
use webgpu_guard::web::{
    Binding, DiagnosticsLevel, FaultSink, GuardedDevice, SamplerSpec, Session, TextureSpec,
};

wasm_bindgen_test_configure!(run_in_browser);

async fn device() -> GuardedDevice {
    let gpu = init::navigator_gpu().expect("navigator.gpu");
    let adapter = init::request_adapter(&gpu).await.expect("adapter");
    let raw = init::request_device(&adapter, "test-device")
        .await
        .expect("device");
    GuardedDevice::new(raw)
}

/// An invalid texture: no usage at all.
fn bad_texture(d: &GuardedDevice, label: &str) {
    let desc =
        web_sys::GpuTextureDescriptor::new(GpuTextureFormat::Rgba8unorm, &[4.into(), 4.into()], 0);
    desc.set_label(label);
    let _ = d.raw().create_texture(&desc);
}

/// An invalid buffer: BufferUsages::MAP_READ and BufferUsages::MAP_WRITE together are not allowed.
fn bad_buffer(d: &GuardedDevice, label: &str) {
    let desc = GpuBufferDescriptor::new(
        16,
        (BufferUsages::MAP_READ | BufferUsages::MAP_WRITE).bits(),
    );
    desc.set_label(label);
    let _ = d.raw().create_buffer(&desc);
}

thread_local! {
    static NEXT_ERROR: Cell<u32> = const { Cell::new(0) };
}

/// One validation error whose message no earlier error on the page repeats:
/// `queue.writeBuffer` at an offset that is not a multiple of 4, a different
/// offset each time. (Firefox delivers each distinct uncaptured-error message
/// once per device.)
fn distinct_bad_submit(d: &GuardedDevice) {
    let n = NEXT_ERROR.with(|c| c.replace(c.get() + 1));
    let offset = 4 * n + 1;
    let desc = GpuBufferDescriptor::new(offset + 8, BufferUsages::COPY_DST.bits());
    desc.set_label("distinct-target");
    let buffer = d.raw().create_buffer(&desc).unwrap();
    d.write_buffer(&buffer, offset.into(), &[1, 2, 3, 4])
        .unwrap();
}

/// Whether the engine quotes object labels in its messages (Dawn does, wgpu does
/// not): what the library knows itself never depends on it.
fn engine_quotes_labels() -> bool {
    // Firefox's wgpu does not; WebKit's generic messages (the quirks shim)
    // quote nothing.
    let ua = web_sys::window()
        .and_then(|w| w.navigator().user_agent().ok())
        .unwrap_or_default();
    !ua.contains("Firefox") && !ua.contains("webgpu-guard-quirks/webkit")
}

fn is_firefox() -> bool {
    web_sys::window()
        .and_then(|w| w.navigator().user_agent().ok())
        .is_some_and(|ua| ua.contains("Firefox"))
}

/// A 2048 x 2048 depth texture: the ladder's size that fits.
fn depth_2048(label: &str) -> TextureSpec {
    TextureSpec::d2(
        label,
        GpuTextureFormat::Depth32float,
        2048,
        2048,
        TextureUsages::RENDER_ATTACHMENT | TextureUsages::TEXTURE_BINDING,
    )
}

/// rgba32float 8192 x 8192 x 64 = 16 GiB: valid, and refused as out of memory.
fn huge_texture(label: &str) -> TextureSpec {
    let mut spec = TextureSpec::d2(
        label,
        GpuTextureFormat::Rgba32float,
        8192,
        8192,
        TextureUsages::TEXTURE_BINDING,
    );
    spec.depth_or_layers = 64;
    spec
}

/// Chromium delivers errors of unscoped calls when the wire is flushed; a
/// promise-returning call (what any frame's submit does) flushes it.
async fn flush(d: &GuardedDevice) {
    let done: js_sys::Promise = d.queue().on_submitted_work_done().unchecked_into();
    let _ = wasm_bindgen_futures::JsFuture::from(done).await;
}

async fn settle() {
    TimeoutFuture::new(50).await;
}

/// Counts `unhandledrejection` events on the page while alive.
struct RejectionCounter {
    count: Rc<Cell<u32>>,
    _listener: Closure<dyn Fn(web_sys::Event)>,
}

fn count_unhandled_rejections() -> RejectionCounter {
    let count = Rc::new(Cell::new(0));
    let c = count.clone();
    let listener =
        Closure::<dyn Fn(web_sys::Event)>::new(move |_e: web_sys::Event| c.set(c.get() + 1));
    web_sys::window()
        .unwrap()
        .add_event_listener_with_callback("unhandledrejection", listener.as_ref().unchecked_ref())
        .unwrap();
    RejectionCounter {
        count,
        _listener: listener,
    }
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..100 {
        if done() {
            return;
        }
        TimeoutFuture::new(30).await;
    }
    panic!("timed out waiting for {what}");
}

// ---------------------------------------------------------------- foundation

#[wasm_bindgen_test]
async fn adapter_and_device_are_created() {
    let d = device().await;
    assert_eq!(d.raw().label(), "test-device");
    assert!(!d.is_lost());
}

#[wasm_bindgen_test]
async fn the_adapter_is_named_by_the_fields_its_info_fills_in() {
    let gpu = init::navigator_gpu().expect("navigator.gpu");
    let adapter = init::request_adapter(&gpu).await.expect("adapter");
    let info = js_sys::Reflect::get(&adapter, &"info".into()).unwrap_or_default();
    let parts: Vec<String> = ["vendor", "architecture", "description"]
        .iter()
        .filter_map(|key| js_sys::Reflect::get(&info, &(*key).into()).ok())
        .filter_map(|v| v.as_string())
        .filter(|s| !s.is_empty())
        .collect();
    let name = init::adapter_name(&adapter);
    if parts.is_empty() {
        // Firefox on lavapipe fills in none of them.
        assert!(name.contains("exposes no vendor details"), "{name}");
    } else {
        assert_eq!(name, parts.join(" / "));
    }
}

#[wasm_bindgen_test]
async fn a_scope_captures_a_validation_error_with_its_message() {
    let d = device().await;
    let scope = ScopeSet::push(&d, &[Filter::Validation]);
    bad_buffer(&d, "bad-usage-buffer");
    let popped = scope.pop().await;
    let fault = popped.into_fault().expect("a validation error");
    assert_eq!(fault.kind, FaultKind::Validation);
    assert!(!fault.message.is_empty());
    // A raw call: the library knows no label, only what the message quotes.
    let expected = engine_quotes_labels().then_some("bad-usage-buffer");
    assert_eq!(
        fault.object_label().as_deref(),
        expected,
        "{}",
        fault.message
    );
}

#[wasm_bindgen_test]
async fn destroy_resolves_lost_with_reason_destroyed() {
    let d = device().await;
    let seen: Rc<RefCell<Option<(String, String)>>> = Rc::default();
    let s = seen.clone();
    let _watch = d.watch_lost(move |reason, message| {
        *s.borrow_mut() = Some((reason.as_str().to_string(), message));
    });
    d.destroy();
    wait_until("lost", || seen.borrow().is_some()).await;
    let (reason, message) = seen.borrow().clone().unwrap();
    assert_eq!(reason, "destroyed");
    // The engine's own words come through (Dawn and wgpu both give some).
    assert!(!message.trim().is_empty(), "no message with the loss");
    assert!(d.is_lost());
}

// ---------------------------------------------------------------- scopes

#[wasm_bindgen_test]
async fn only_the_first_error_of_a_scope_is_reported() {
    let d = device().await;
    let scope = ScopeSet::push(&d, &[Filter::Validation]);
    bad_buffer(&d, "first-bad");
    bad_texture(&d, "second-bad");
    bad_texture(&d, "third-bad");
    let fault = scope.pop().await.into_fault().unwrap();
    // The buffer's error, not a texture's.
    assert!(
        !fault.message.to_lowercase().contains("texture"),
        "{}",
        fault.message
    );
    // The other two were discarded, not left for the next scope.
    let next = ScopeSet::push(&d, &[Filter::Validation]);
    assert!(next.pop().await.is_clean());
}

#[wasm_bindgen_test]
async fn validation_scope_lets_out_of_memory_through_to_the_oom_scope() {
    let d = device().await;
    let validation = ScopeSet::push(&d, &[Filter::Validation]);
    let oom = ScopeSet::push(&d, &[Filter::OutOfMemory]);
    let texture = d.create_texture(&huge_texture("sixteen-gib")).unwrap();
    let oom_popped = oom.pop().await;
    let validation_popped = validation.pop().await;
    drop(texture);
    let fault = oom_popped
        .into_fault()
        .expect("the OOM scope catches the OOM error");
    assert_eq!(fault.kind, FaultKind::OutOfMemory);
    assert!(
        validation_popped.is_clean(),
        "the validation scope caught an OOM error"
    );

    // A validation scope alone does not catch it either: it escapes to the outer OOM scope.
    let outer_oom = ScopeSet::push(&d, &[Filter::OutOfMemory]);
    let inner_validation = ScopeSet::push(&d, &[Filter::Validation]);
    let texture = d
        .create_texture(&huge_texture("sixteen-gib-again"))
        .unwrap();
    assert!(inner_validation.pop().await.is_clean());
    assert_eq!(
        outer_oom.pop().await.into_fault().unwrap().kind,
        FaultKind::OutOfMemory
    );
    drop(texture);
}

#[wasm_bindgen_test]
async fn a_phase_reports_both_nested_faults_naming_the_phase() {
    let d = device().await;
    let result: Result<(), Fault> = d
        .phase("startup", || {
            let _huge = d.create_texture(&huge_texture("phase-huge"))?;
            bad_buffer(&d, "phase-bad-descriptor");
            Ok(())
        })
        .await;
    let fault = result.unwrap_err();
    assert_eq!(fault.origin.phase.as_deref(), Some("startup"));
    let kinds: Vec<FaultKind> = std::iter::once(fault.kind)
        .chain(fault.related.iter().map(|f| f.kind))
        .collect();
    assert!(kinds.contains(&FaultKind::Validation), "{kinds:?}");
    assert!(kinds.contains(&FaultKind::OutOfMemory), "{kinds:?}");
    assert!(fault.to_string().contains("phase \"startup\""));
}

#[wasm_bindgen_test]
async fn pop_on_an_empty_stack_is_an_err_not_an_unhandled_rejection() {
    let d = device().await;
    let rejections = count_unhandled_rejections();
    let result = pop_unmatched(&d).wait().await;
    let fault = result.into_fault().expect("a pop without a push rejects");
    assert_eq!(fault.kind, FaultKind::ScopeStack);
    // Dropped, detached pops on an empty stack are observed too.
    pop_unmatched(&d).detach();
    TimeoutFuture::new(200).await;
    assert_eq!(rejections.count.get(), 0, "an unhandled rejection escaped");
}

/// Proves the stack is empty: a pop rejects and an unscoped error reaches the fault sink.
async fn assert_stack_balanced(d: &GuardedDevice) {
    assert_eq!(
        pop_unmatched(d).wait().await.into_fault().map(|f| f.kind),
        Some(FaultKind::ScopeStack),
        "a scope was left open"
    );
    let net = FaultSink::new(Rc::new(Cell::new(0)));
    let _listener = net.install(d.raw());
    distinct_bad_submit(d);
    flush(d).await;
    wait_until("uncaptured error", || net.stats().validation == 1).await;
    // A fresh scope catches its own error: an out-of-memory one, which nothing
    // else on this device raised.
    let scope = ScopeSet::push(d, &[Filter::OutOfMemory]);
    let desc = web_sys::GpuTextureDescriptor::new(
        GpuTextureFormat::Rgba32float,
        &[8192.into(), 8192.into(), 64.into()],
        TextureUsages::TEXTURE_BINDING.bits(),
    );
    let texture = d.raw().create_texture(&desc).unwrap();
    let own = scope.pop().await.into_fault().expect("its own error");
    texture.destroy();
    assert_eq!(own.kind, FaultKind::OutOfMemory, "a stale error: {own}");
}

#[wasm_bindgen_test]
async fn the_stack_is_balanced_after_an_early_return() {
    let d = device().await;
    fn early(d: &GuardedDevice) -> Result<(), Fault> {
        let _scope = ScopeSet::push(d, &[Filter::Validation]);
        let _outer = ScopeSet::push(d, &[Filter::OutOfMemory]);
        Err(Fault::new(FaultKind::Exception, "bail out"))?;
        unreachable!()
    }
    assert!(early(&d).is_err());
    settle().await;
    assert_stack_balanced(&d).await;
}

#[wasm_bindgen_test]
async fn the_stack_is_balanced_after_an_exception_thrown_through_wasm_in_a_phase() {
    let d = device().await;
    let result: Result<(), Fault> = d
        .phase("throws-through", || {
            let _buffer = d.create_buffer("before-the-throw", 16, BufferUsages::UNIFORM)?;
            // A raw binding that does not catch, given a bad argument: the
            // exception crosses the WebAssembly frames of this closure (no Rust
            // code after it runs, no destructor), and only the phase's own
            // trampoline can stop it and pop its scopes.
            let raw: web_sys::GpuQueue = js_sys::Object::new().unchecked_into();
            raw.submit(&[]);
            Ok(())
        })
        .await;
    let fault = result.unwrap_err();
    assert_eq!(fault.kind, FaultKind::Exception, "{fault}");
    assert!(fault.message.contains("TypeError"), "{}", fault.message);
    assert_stack_balanced(&d).await;
}

#[wasm_bindgen_test]
async fn a_scope_set_a_throw_abandoned_inside_a_phase_is_popped_with_it() {
    // The application's own set inside the phase: the throw skips its `Drop`.
    // Before, the phase's pops took its scope and one of the phase's stayed
    // pushed for good, swallowing every later validation error.
    let (d, net, _) = device_with_net(raw_device().await);
    let result: Result<(), Fault> = d
        .phase("abandons-a-set", || {
            let _own = ScopeSet::push(&d, &[Filter::Validation]);
            bad_buffer(&d, "caught-by-the-abandoned-set");
            let raw: web_sys::GpuQueue = js_sys::Object::new().unchecked_into();
            raw.submit(&[]);
            Ok(())
        })
        .await;
    assert_eq!(result.unwrap_err().kind, FaultKind::Exception);
    flush(&d).await;
    settle().await;
    // What the abandoned set caught is reported, named by the phase.
    let groups = net.groups();
    assert!(
        groups
            .iter()
            .any(|g| g.label == "caught-by-the-abandoned-set"
                || g.first_message.contains("caught-by-the-abandoned-set")
                || g.label == "abandons-a-set"),
        "{groups:?}"
    );
    assert_stack_balanced(&d).await;
}

#[wasm_bindgen_test]
async fn the_stack_is_balanced_after_a_js_exception_in_a_phase() {
    let d = device().await;
    let result: Result<(), Fault> = d
        .phase("throws", || {
            // A descriptor whose format is not a GPUTextureFormat: the bindings throw
            // a TypeError before any GPU work.
            let desc = web_sys::GpuTextureDescriptor::new(
                GpuTextureFormat::Rgba8unorm,
                &[4.into(), 4.into()],
                TextureUsages::TEXTURE_BINDING.bits(),
            );
            js_sys::Reflect::set(&desc, &"format".into(), &"not-a-format".into()).unwrap();
            let _texture = d.track::<web_sys::GpuTexture>("throwing-texture", 0, || {
                d.raw().create_texture(&desc)
            })?;
            Ok(())
        })
        .await;
    let fault = result.unwrap_err();
    assert_eq!(fault.kind, FaultKind::Exception);
    assert!(fault.message.contains("TypeError"), "{}", fault.message);
    assert_eq!(fault.origin.object.as_deref(), Some("throwing-texture"));
    assert_stack_balanced(&d).await;
}

/// Gives `net` a telemetry sink that collects every event it is sent into the
/// array returned.
fn collect_telemetry(net: &FaultSink) -> js_sys::Array {
    let events = js_sys::Array::new();
    let collect = js_sys::Function::new_with_args("events", "return (e) => events.push(e);")
        .call1(&JsValue::NULL, &events)
        .unwrap()
        .unchecked_into::<js_sys::Function>();
    net.set_sink(Box::new(JsFunctionSink(collect)));
    events
}

/// A device whose faults go to a fresh net (returned), with a telemetry sink
/// collecting `[kind, label, message]` into a JavaScript array.
fn device_with_net(raw: web_sys::GpuDevice) -> (GuardedDevice, FaultSink, js_sys::Array) {
    let frame = Rc::new(Cell::new(0));
    let net = FaultSink::new(frame.clone());
    let events = collect_telemetry(&net);
    // The listener stays installed for the life of the test page.
    std::mem::forget(net.install(&raw));
    let d = GuardedDevice::with_context(raw, Session::new(net.clone(), frame));
    (d, net, events)
}

async fn raw_device() -> web_sys::GpuDevice {
    device().await.raw().clone()
}

#[wasm_bindgen_test]
async fn a_frame_scope_catches_what_a_scope_closed_before_submit_misses() {
    let (d, net, _) = device_with_net(raw_device().await);
    let buffer = d
        .create_buffer("destroyed-after-recording", 256, BufferUsages::COPY_DST)
        .unwrap();

    // The near miss: a scope around recording and finish, closed before submit,
    // sees nothing, although these very commands are invalid at submit.
    let early = ScopeSet::push(&d, &[Filter::Validation]);
    let encoder = d.create_command_encoder("near-miss").unwrap();
    encoder.clear_buffer(&buffer).unwrap();
    let commands = encoder.finish().unwrap();
    buffer.destroy();
    let near_miss = early.pop().await;
    assert!(near_miss.is_clean(), "{near_miss:?}");

    // The neighbouring scope, spanning submit, catches it and names the frame
    // (frame 32: one frame in 32 is scoped by default).
    let frame = d.begin_frame(32);
    assert!(frame.is_scoped());
    d.submit(&[commands]).unwrap();
    frame.end();
    wait_until("frame fault", || net.stats().validation == 1).await;
    let line = net.recent_lines()[0].clone();
    assert!(line.contains("at frame 32"), "{line}");
    if engine_quotes_labels() {
        assert!(line.contains("destroyed-after-recording"), "{line}");
    }
    assert_eq!(net.last_uncaptured_frame(), None, "caught by the scope");

    // A clean frame reports nothing and leaves the stack balanced.
    let clean = d.begin_frame(64);
    assert!(clean.is_scoped());
    clean.end();
    settle().await;
    assert_eq!(net.stats().total_errors(), 1);
    assert_stack_balanced(&d).await;
}

#[wasm_bindgen_test]
async fn an_error_in_an_unscoped_frame_reaches_the_net_with_its_frame_and_the_next_frames_are_scoped(
) {
    let (d, net, _) = device_with_net(raw_device().await);
    assert_eq!(d.session().frame_sampling(), FrameSampling::default());
    let scoped: Vec<u64> = (1..=65)
        .filter(|&n| {
            let frame = d.begin_frame(n);
            frame.is_scoped()
        })
        .collect();
    assert_eq!(scoped, vec![32, 64], "one frame in 32 by default");

    // Frame 67 has no scope: its error reaches the fault sink, tagged with frame 67.
    let frame = d.begin_frame(67);
    assert!(!frame.is_scoped());
    distinct_bad_submit(&d);
    frame.end();
    flush(&d).await;
    wait_until("the fault sink catches frame 67's error", || {
        net.stats().validation == 1
    })
    .await;
    assert_eq!(net.last_uncaptured_frame(), Some(67));
    let line = net.recent_lines().last().cloned().unwrap();
    assert!(line.contains("at frame 67"), "{line}");

    // From then on every frame is scoped: the next error is caught by frame 68's
    // own scope (the fault sink's record stays at frame 67), named with its frame.
    let frame = d.begin_frame(68);
    assert!(frame.is_scoped(), "the frame after a net error is scoped");
    distinct_bad_submit(&d);
    frame.end();
    flush(&d).await;
    wait_until("frame 68's scope reports", || net.stats().validation == 2).await;
    assert_eq!(net.last_uncaptured_frame(), Some(67), "caught by the scope");
    let line = net.recent_lines().last().cloned().unwrap();
    assert!(line.contains("at frame 68"), "{line}");

    // A frame scope's catch extends the hunt too: 120 frames from frame 68.
    assert!(d.begin_frame(188).is_scoped(), "hunting until frame 188");
    assert!(!d.begin_frame(189).is_scoped(), "back to one in 32");

    // Off scopes no frame at all; per-call scopes every frame.
    d.set_level(DiagnosticsLevel::Off);
    assert!(!d.begin_frame(80).is_scoped());
    d.set_level(DiagnosticsLevel::PerCall);
    assert!((1000..1010).all(|n| d.begin_frame(n).is_scoped()));
    d.set_level(DiagnosticsLevel::Phases);
    d.session().set_frame_sampling(FrameSampling::every(1));
    assert!(d.begin_frame(1001).is_scoped());
    settle().await;
    assert_stack_balanced(&d).await;
}

#[wasm_bindgen_test]
async fn errors_from_outside_the_frames_stop_scoping_every_frame_after_one_fruitless_hunt() {
    // A timer issues a bad call after every frame: the fault sink sees an error in each
    // frame, and no frame's own scope ever catches one. One hunt (every frame
    // scoped for 120 frames) shows that; after it, back to one frame in 32.
    let (d, net, _) = device_with_net(raw_device().await);
    let mut scoped = Vec::new();
    for n in 1..=300 {
        let frame = d.begin_frame(n);
        if frame.is_scoped() {
            scoped.push(n);
        }
        frame.end();
        distinct_bad_submit(&d);
        // A round trip (not `flush`: Firefox answers that every 100 ms).
        d.raw()
            .push_error_scope(web_sys::GpuErrorFilter::Validation);
        let _ = wasm_bindgen_futures::JsFuture::from(d.raw().pop_error_scope()).await;
    }
    wait_until("every timer error", || net.stats().validation == 300).await;
    assert!(net.hunt().is_muted(), "{:?}", net.hunt());
    // The first error arrives within a few frames; from the frame after it,
    // one hunt of 120 frames, then sampling only.
    let sampled = |n: &u64| n.is_multiple_of(32);
    let hunted: Vec<u64> = scoped.iter().copied().filter(|n| !sampled(n)).collect();
    let start = hunted.first().copied().unwrap_or(0);
    assert!((2..=10).contains(&start), "{scoped:?}");
    let expected: Vec<u64> = (start..start + FrameSampling::HUNT_FRAMES)
        .filter(|n| !sampled(n))
        .collect();
    assert_eq!(hunted, expected, "one hunt, then sampling only");
    // A sampled frame's own scope catches an error: hunting again.
    let frame = d.begin_frame(320);
    assert!(frame.is_scoped());
    distinct_bad_submit(&d);
    frame.end();
    flush(&d).await;
    wait_until("frame 320's scope reports", || {
        net.stats().validation == 301
    })
    .await;
    assert!(
        d.begin_frame(321).is_scoped(),
        "the catch restarts the hunt"
    );
    assert!(!net.hunt().is_muted());
    settle().await;
    assert_stack_balanced(&d).await;
}

#[wasm_bindgen_test]
async fn per_call_mode_names_the_right_call_site_among_many() {
    let d = device().await;
    d.set_level(DiagnosticsLevel::PerCall);
    let mut bad_line = 0;
    let result = d
        .phase("many-buffers", || {
            let mut kept = Vec::new();
            for i in 0..12 {
                kept.push(d.create_buffer(
                    &format!("ok-{i}"),
                    64,
                    BufferUsages::UNIFORM | BufferUsages::COPY_DST,
                )?);
                if i == 7 {
                    bad_line = line!() + 1;
                    kept.push(d.create_buffer(
                        "the-bad-one",
                        64,
                        BufferUsages::MAP_READ | BufferUsages::MAP_WRITE,
                    )?);
                }
            }
            Ok(kept.len())
        })
        .await;
    let fault = result.unwrap_err();
    assert_eq!(fault.kind, FaultKind::Validation);
    assert_eq!(fault.origin.object.as_deref(), Some("the-bad-one"));
    let site = fault.origin.call_site.expect("a call site");
    assert!(site.file.ends_with("web.rs"), "{site}");
    assert_eq!(site.line, bad_line, "{fault}");
    assert_eq!(fault.origin.phase.as_deref(), Some("many-buffers"));

    // Switched off at run time: the same mistake is only named by the phase.
    d.set_level(DiagnosticsLevel::Phases);
    let fault = d
        .phase("phases-only", || {
            d.create_buffer(
                "bad-again",
                64,
                BufferUsages::MAP_READ | BufferUsages::MAP_WRITE,
            )
            .map(|_| ())
        })
        .await
        .unwrap_err();
    assert_eq!(fault.origin.call_site, None);
}

/// Two objects of one label made at two places in a phase: the engine's
/// message names the label, not which of them failed; both are suspects and
/// no call site is pinned on the wrong one.
#[wasm_bindgen_test]
async fn attributed_mode_pins_no_call_site_on_an_object_whose_label_is_shared() {
    if !engine_quotes_labels() {
        return;
    }
    let d = device().await;
    d.set_level(DiagnosticsLevel::Attributed);
    let fault = d
        .phase("namesakes", || {
            let bad =
                d.create_buffer("twin", 64, BufferUsages::MAP_READ | BufferUsages::MAP_WRITE)?;
            let fine = d.create_buffer("twin", 64, BufferUsages::UNIFORM)?;
            Ok((bad, fine))
        })
        .await
        .unwrap_err();
    assert_eq!(fault.origin.object.as_deref(), Some("twin"), "{fault}");
    assert_eq!(fault.origin.call_site, None, "{fault}");
    assert_eq!(fault.suspects.as_ref().map(Vec::len), Some(2), "{fault}");
}

#[wasm_bindgen_test]
async fn attributed_mode_names_the_call_site_at_the_cost_of_phases() {
    let d = device().await;
    d.set_level(DiagnosticsLevel::Attributed);
    let mut bad_line = 0;
    let result = d
        .phase("attributed-buffers", || {
            let mut kept = Vec::new();
            for i in 0..12 {
                kept.push(d.create_buffer(
                    &format!("fine-{i}"),
                    64,
                    BufferUsages::UNIFORM | BufferUsages::COPY_DST,
                )?);
                if i == 4 {
                    bad_line = line!() + 1;
                    kept.push(d.create_buffer(
                        "attributed-bad",
                        64,
                        BufferUsages::MAP_READ | BufferUsages::MAP_WRITE,
                    )?);
                }
            }
            Ok(kept.len())
        })
        .await;
    let fault = result.unwrap_err();
    assert_eq!(fault.origin.phase.as_deref(), Some("attributed-buffers"));
    if engine_quotes_labels() {
        assert_eq!(fault.origin.object.as_deref(), Some("attributed-bad"));
        assert_eq!(
            fault.origin.call_site.map(|s| s.line),
            Some(bad_line),
            "{fault}"
        );
    } else {
        // Degraded: the message names no object, so the phase is all that is
        // known; `per-call` names the call on every engine.
        assert_eq!(fault.origin.object, None, "{fault}");
        assert_eq!(fault.origin.call_site, None, "{fault}");
    }
    // The table is per phase: a later phase does not reuse it.
    d.set_level(DiagnosticsLevel::Phases);
    let fault = d
        .phase("later", || {
            d.create_buffer(
                "attributed-bad",
                64,
                BufferUsages::MAP_READ | BufferUsages::MAP_WRITE,
            )
            .map(|_| ())
        })
        .await
        .unwrap_err();
    assert_eq!(fault.origin.call_site, None);
}

#[wasm_bindgen_test]
async fn the_oom_ladder_degrades_to_a_size_that_fits() {
    let d = device().await;
    let medium = depth_2048("shadow-2048");
    let outcome = d
        .texture_ladder(&[huge_texture("shadow-huge"), medium])
        .await
        .expect("a size fits");
    assert_eq!(outcome.chosen, 1);
    assert!(outcome.degraded());
    assert_eq!(outcome.failures.len(), 1);
    assert_eq!(outcome.failures[0].1.kind, FaultKind::OutOfMemory);
    assert!(
        outcome.summary().contains("got 2048x2048"),
        "{}",
        outcome.summary()
    );
    let report = d.ledger().report();
    assert_eq!(
        report.kind(ObjectKind::Texture).objects,
        1,
        "the failed texture is released"
    );
    assert_eq!(report.live.bytes, 2048 * 2048 * 4);

    let none = d
        .texture_ladder(&[huge_texture("a"), huge_texture("b")])
        .await;
    let fault = none.expect_err("nothing fits");
    assert_eq!(fault.kind, FaultKind::OutOfMemory);
    assert!(fault.message.contains("no size fits"));
}

/// A candidate refused for a mistake (no usage at all) ends the ladder with
/// that fault: no smaller size would mend it, and a build that gives up with
/// it is a bug, not an out-of-memory to retry on a fresh device.
#[wasm_bindgen_test]
async fn the_oom_ladder_ends_at_a_mistake_instead_of_trying_smaller_sizes() {
    let d = device().await;
    let no_usage = |side| {
        TextureSpec::d2(
            "no-usage",
            GpuTextureFormat::Rgba8unorm,
            side,
            side,
            TextureUsages::empty(),
        )
    };
    let fault = d
        .texture_ladder(&[no_usage(256), no_usage(128)])
        .await
        .expect_err("a texture with no usage fitted");
    assert_eq!(fault.kind, FaultKind::Validation, "{fault}");
    assert!(fault.related.is_empty(), "{fault:?}");
    assert!(!fault.message.contains("no size fits"), "{fault}");
    assert_eq!(d.faults().stats().warnings, 0);
}

#[wasm_bindgen_test]
async fn a_lost_device_pop_is_not_mistaken_for_success() {
    let d = device().await;
    let _watch = d.watch_lost(|_, _| {});
    d.destroy();
    wait_until("lost", || d.is_lost()).await;
    let scope = ScopeSet::push(&d, &[Filter::Validation]);
    bad_buffer(&d, "on-a-dead-device");
    let popped = scope.pop().await;
    assert!(popped.faults().is_empty(), "a lost device reports nothing");
    assert!(popped.device_lost);
    assert!(!popped.is_clean());
    let phase = d.phase("dead", || Ok(())).await.unwrap_err();
    assert_eq!(phase.kind, FaultKind::DeviceLost);
}

#[wasm_bindgen_test]
async fn a_device_lost_between_push_and_pop_is_never_clean() {
    // No loss watcher at all: the verdict cannot come from a flag set by the
    // `lost` callback, which may run after the pops settle.
    let d = device().await;
    let scopes = ScopeSet::push(&d, &Filter::ALL);
    d.destroy();
    let outcome = scopes.pop().await;
    assert!(outcome.device_lost, "{outcome:?}");
    assert!(!outcome.is_clean());
    assert_eq!(
        outcome.into_fault().map(|f| f.kind),
        Some(FaultKind::DeviceLost)
    );

    // The same inside a phase and the ladder: never a success on a lost device.
    let d = device().await;
    let result = d
        .phase("loses-its-device", || {
            d.destroy();
            Ok(())
        })
        .await;
    assert_eq!(result.unwrap_err().kind, FaultKind::DeviceLost);
    let d = device().await;
    let small = TextureSpec::d2(
        "tiny",
        GpuTextureFormat::Rgba8unorm,
        4,
        4,
        TextureUsages::TEXTURE_BINDING,
    );
    let ladder = {
        let pending = d.texture_ladder(std::slice::from_ref(&small));
        d.destroy();
        pending.await
    };
    assert_eq!(ladder.err().map(|f| f.kind), Some(FaultKind::DeviceLost));
}

#[wasm_bindgen_test]
async fn the_probe_inside_a_validation_scope_never_hides_a_real_error_nor_leaks_its_own() {
    // An awaited set issues the liveness probe's invalid call inside its own
    // validation scope: it must land there (not in an application's scope
    // around the set, not in the fault sink), be recognised and dropped on a clean
    // pop, and lose to a real error caught first.
    let (d, net, events) = device_with_net(raw_device().await);
    d.raw()
        .push_error_scope(web_sys::GpuErrorFilter::Validation);
    for filters in [&[Filter::Validation][..], &Filter::ALL[..]] {
        let clean = ScopeSet::push(&d, filters).pop().await;
        assert!(clean.is_clean(), "{filters:?}: {clean:?}");
    }
    let phase = d.phase("clean-phase", || Ok(7)).await;
    assert_eq!(phase.ok(), Some(7));
    assert!(d.confirm_alive().await);
    let outer = wasm_bindgen_futures::JsFuture::from(d.raw().pop_error_scope())
        .await
        .unwrap();
    assert!(
        outer.is_null(),
        "the probe's error escaped into the application's scope: {outer:?}"
    );

    let scope = ScopeSet::push(&d, &Filter::ALL);
    bad_buffer(&d, "real-error-before-the-probe");
    let fault = scope.pop().await.into_fault().expect("the real error");
    assert_eq!(fault.kind, FaultKind::Validation);
    assert!(
        !fault.message.contains("-31337"),
        "the probe's error was reported instead: {}",
        fault.message
    );
    assert!(fault.related.is_empty(), "{fault:?}");
    // Per-call pops settled with the phase: the phase's set is popped last and
    // vouches for them; a bad call among them is still caught.
    d.set_level(DiagnosticsLevel::PerCall);
    let result = d
        .phase("per-call-phase", || {
            let _ok = d.create_buffer("fine", 16, BufferUsages::UNIFORM)?;
            let _bad = d.create_buffer(
                "bad-in-per-call",
                16,
                BufferUsages::MAP_READ | BufferUsages::MAP_WRITE,
            )?;
            Ok(())
        })
        .await;
    d.set_level(DiagnosticsLevel::Phases);
    let fault = result.expect_err("the bad call");
    assert!(!fault.message.contains("-31337"), "{}", fault.message);
    flush(&d).await;
    settle().await;
    // The phase's one fault, and nothing uncaptured.
    assert_eq!(net.stats().validation, 1, "{:?}", net.stats());
    assert_eq!(
        events
            .iter()
            .filter(|e| describe_event(e).contains("-31337"))
            .count(),
        0
    );
    assert_stack_balanced(&d).await;
}

#[wasm_bindgen_test]
async fn sets_closed_out_of_order_or_across_devices_never_misjudge_a_device() {
    // An outer set awaited while an inner one is still open pops the inner
    // set's scope: the probe's error lands in the outer validation scope, and
    // the awaited pop reads null. The device must not be judged lost for it,
    // and the probe's error, popped later by the inner set, is no fault.
    let (d, net, _events) = device_with_net(raw_device().await);
    let outer = ScopeSet::push(&d, &[Filter::Validation]);
    let inner = ScopeSet::push(&d, &[Filter::OutOfMemory]);
    let outcome = outer.pop().await;
    assert!(!outcome.device_lost, "{outcome:?}");
    drop(inner);
    flush(&d).await;
    settle().await;
    assert!(!d.is_lost());
    assert_eq!(net.stats().validation, 0, "{:?}", net.stats());
    assert!(d.confirm_alive().await);
    assert_stack_balanced(&d).await;

    // Sets of two devices awaited together: each device answers for its own.
    for lost_first in [false, true] {
        let alive = device().await;
        let doomed = device().await;
        let on_alive = ScopeSet::push(&alive, &[Filter::Validation]).close();
        let on_doomed = {
            let scope = ScopeSet::push(&doomed, &[Filter::Validation]);
            doomed.destroy();
            scope.close()
        };
        let sets = if lost_first {
            vec![on_doomed, on_alive]
        } else {
            vec![on_alive, on_doomed]
        };
        let outcomes = wait_all(sets).await;
        let (for_alive, for_doomed) = if lost_first {
            (&outcomes[1], &outcomes[0])
        } else {
            (&outcomes[0], &outcomes[1])
        };
        assert!(
            for_alive.is_clean(),
            "lost first: {lost_first}: {outcomes:?}"
        );
        assert!(
            for_doomed.device_lost,
            "lost first: {lost_first}: {outcomes:?}"
        );
        assert!(!alive.is_lost());
    }
}

#[wasm_bindgen_test]
async fn pops_dropped_before_anything_awaited_them_still_reach_the_sink() {
    // A future cancelled while it holds pending pops (shader creation awaiting
    // its compilation info, say) drops them unawaited: what they caught must
    // still reach the fault sink, and the stack stays balanced.
    let (d, net, _events) = device_with_net(raw_device().await);
    let scope = ScopeSet::push(&d, &Filter::ALL);
    bad_buffer(&d, "dropped-unawaited");
    drop(scope.close());
    flush(&d).await;
    wait_until("the dropped pops' error", || net.stats().validation == 1).await;
    assert_stack_balanced(&d).await;
}

#[wasm_bindgen_test]
async fn a_wait_cancelled_while_it_settles_still_hands_its_faults_to_the_sink() {
    // The future awaiting the pops is polled once (the settle is under way in
    // JavaScript), then dropped: the error the pops caught must still reach the
    // net, and a lost device must still be found lost.
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    fn poll_once_then_drop<T>(mut future: std::pin::Pin<Box<dyn Future<Output = T>>>) {
        let polled = future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()));
        assert!(
            matches!(polled, Poll::Pending),
            "nothing settles synchronously"
        );
    }
    let (d, net, _events) = device_with_net(raw_device().await);
    let scope = ScopeSet::push(&d, &Filter::ALL);
    bad_buffer(&d, "cancelled-while-settling");
    poll_once_then_drop(Box::pin(scope.pop()));
    let other = ScopeSet::push(&d, &[Filter::Validation]);
    bad_texture(&d, "cancelled-in-wait-all");
    poll_once_then_drop(Box::pin(wait_all(vec![other.close()])));
    flush(&d).await;
    wait_until("both cancelled waits' errors", || {
        net.stats().validation == 2
    })
    .await;
    settle().await;
    assert_eq!(net.stats().validation, 2, "each reported once");
    assert_stack_balanced(&d).await;

    // Two devices in one wait, settled one after the other: cancelled once the
    // first device's pops are read and while the second's settle, both
    // devices' errors still reach their nets.
    let (a, net_a, _) = device_with_net(raw_device().await);
    let (b, net_b, _) = device_with_net(raw_device().await);
    let on_a = ScopeSet::push(&a, &[Filter::Validation]);
    bad_buffer(&a, "cancelled-first-device");
    let on_b = ScopeSet::push(&b, &[Filter::Validation]);
    bad_buffer(&b, "cancelled-second-device");
    let mut waiting: std::pin::Pin<Box<dyn Future<Output = _>>> =
        Box::pin(wait_all(vec![on_a.close(), on_b.close()]));
    let mut context = Context::from_waker(Waker::noop());
    assert!(waiting.as_mut().poll(&mut context).is_pending());
    flush(&a).await;
    settle().await;
    // The first device's settle has its answer: this poll reads it and starts
    // the second's.
    assert!(waiting.as_mut().poll(&mut context).is_pending());
    drop(waiting);
    flush(&b).await;
    wait_until("both devices' errors", || {
        net_a.stats().validation == 1 && net_b.stats().validation == 1
    })
    .await;

    let (d, _net, _events) = device_with_net(raw_device().await);
    let scope = ScopeSet::push(&d, &[Filter::Validation]);
    d.raw().destroy();
    poll_once_then_drop(Box::pin(scope.pop()));
    wait_until("the loss, found by a cancelled wait", || d.is_lost()).await;
}

fn describe_event(event: &JsValue) -> String {
    js_sys::JSON::stringify(event)
        .map(String::from)
        .unwrap_or_default()
}

#[wasm_bindgen_test]
async fn a_promise_settles_into_its_own_future_even_after_others_were_dropped() {
    use webgpu_guard::web::wait::settled;
    let resolvers = js_sys::Array::new();
    let pending = |resolvers: &js_sys::Array| {
        let resolvers = resolvers.clone();
        js_sys::Promise::new(&mut move |resolve, _reject| {
            resolvers.push(&resolve);
        })
    };
    // Dropped before settling: its slot must not be handed to the next one
    // until it settles, and its late value must reach nobody.
    let first = pending(&resolvers);
    drop(settled(&first));
    let second = pending(&resolvers);
    let waiting = settled(&second);
    resolvers
        .get(0)
        .unchecked_into::<js_sys::Function>()
        .call1(&JsValue::NULL, &"first".into())
        .unwrap();
    // Let the first settle before the second does.
    TimeoutFuture::new(0).await;
    resolvers
        .get(1)
        .unchecked_into::<js_sys::Function>()
        .call1(&JsValue::NULL, &"second".into())
        .unwrap();
    assert_eq!(
        waiting.await.unwrap().as_string().as_deref(),
        Some("second")
    );
    let rejected = js_sys::Promise::reject(&"refused".into());
    assert_eq!(
        settled(&rejected).await.unwrap_err().as_string().as_deref(),
        Some("refused")
    );
    let many: Vec<_> = (0..50)
        .map(|i| settled(&js_sys::Promise::resolve(&JsValue::from(i))))
        .collect();
    for (i, future) in many.into_iter().enumerate().rev() {
        assert_eq!(future.await.unwrap().as_f64(), Some(i as f64));
    }
}

// ---------------------------------------------------------------- calls that throw

/// Makes reading `key` from `object` throw (writing it is ignored): the browser's
/// bindings read every dictionary member, so the WebGPU call throws a TypeError.
fn throwing_member(object: &JsValue, key: &str) {
    js_sys::Function::new_with_args(
        "o, k",
        "Object.defineProperty(o, k, { get() { throw new TypeError('member ' + k + ' throws'); }, set(v) {}, configurable: true });",
    )
    .call2(&JsValue::NULL, object, &key.into())
    .unwrap();
}

fn not_a<T: JsCast>() -> T {
    js_sys::Object::new().unchecked_into()
}

fn render_pass(d: &GuardedDevice) -> Result<webgpu_guard::web::RenderPass, Fault> {
    let target = d.create_texture(&TextureSpec::d2(
        "pass-target",
        GpuTextureFormat::Rgba8unorm,
        4,
        4,
        TextureUsages::RENDER_ATTACHMENT,
    ))?;
    let view = target.create_view()?;
    let color = web_sys::GpuRenderPassColorAttachment::new_with_gpu_texture_view(
        web_sys::GpuLoadOp::Clear,
        web_sys::GpuStoreOp::Store,
        &view,
    );
    let encoder = d.create_command_encoder("pass-encoder")?;
    encoder.begin_render_pass(&web_sys::GpuRenderPassDescriptor::new(&[
        webgpu_guard::web::js::nullable(&color),
    ]))
}

type Op = fn(&GuardedDevice) -> Result<(), Fault>;

/// One call per WebGPU method whose web-sys binding does not catch, each made to
/// throw through the library's API.
fn throwing_calls() -> Vec<(&'static str, Op)> {
    vec![
        ("createBindGroup", |d| {
            let layout = d.create_bind_group_layout(
                "empty-layout",
                &web_sys::GpuBindGroupLayoutDescriptor::new(&[]),
            )?;
            let desc = web_sys::GpuBindGroupDescriptor::new(&[], &layout);
            throwing_member(&desc, "entries");
            d.create_bind_group("throwing-bind-group", &desc).map(drop)
        }),
        ("createPipelineLayout", |d| {
            let desc = web_sys::GpuPipelineLayoutDescriptor::new(&[]);
            throwing_member(&desc, "bindGroupLayouts");
            d.create_pipeline_layout("throwing-layout", &desc).map(drop)
        }),
        ("createSampler", |d| {
            let desc = web_sys::GpuSamplerDescriptor::new();
            throwing_member(&desc, "addressModeU");
            d.create_sampler("throwing-sampler", &desc).map(drop)
        }),
        ("createCommandEncoder", |d| {
            let desc = web_sys::GpuCommandEncoderDescriptor::new();
            throwing_member(&desc, "label");
            d.create_command_encoder_with_descriptor("throwing-encoder", &desc)
                .map(drop)
        }),
        ("queue.submit", |d| d.submit(&[not_a()])),
        ("setPipeline", |d| render_pass(d)?.set_pipeline(&not_a())),
        ("setBindGroup", |d| {
            render_pass(d)?.set_bind_group(0, Some(&not_a()))
        }),
        ("setVertexBuffer", |d| {
            render_pass(d)?.set_vertex_buffer(0, &not_a())
        }),
        ("setIndexBuffer", |d| {
            render_pass(d)?.set_index_buffer(&not_a(), web_sys::GpuIndexFormat::Uint16)
        }),
        ("setViewport", |d| {
            render_pass(d)?.set_viewport(0.0, 0.0, f32::NAN, 1.0, 0.0, 1.0)
        }),
        ("compute setPipeline", |d| {
            let encoder = d.create_command_encoder("compute-encoder")?;
            encoder.begin_compute_pass()?.set_pipeline(&not_a())
        }),
    ]
}

#[wasm_bindgen_test]
async fn every_throwing_method_becomes_a_fault_and_every_scope_pops() {
    let rejections = count_unhandled_rejections();
    for (name, op) in throwing_calls() {
        // Inside a phase.
        let d = device().await;
        let fault = d.phase("throwing-phase", || op(&d)).await.expect_err(name);
        assert_eq!(fault.kind, FaultKind::Exception, "{name}: {fault}");
        assert!(fault.message.contains("TypeError"), "{name}: {fault}");
        assert_eq!(fault.origin.phase.as_deref(), Some("throwing-phase"));
        assert!(fault.origin.call_site.is_some(), "{name}: {fault}");
        assert_stack_balanced(&d).await;

        // Inside a frame (scoped: no net listens on this device, so every frame
        // is).
        let d = device().await;
        let frame = d.begin_frame(3);
        assert!(frame.is_scoped(), "{name}");
        let fault = op(&d).expect_err(name);
        drop(frame);
        assert_eq!(fault.kind, FaultKind::Exception, "{name}: {fault}");
        assert!(fault.message.contains("TypeError"), "{name}: {fault}");
        settle().await;
        assert_stack_balanced(&d).await;
    }
    assert_eq!(rejections.count.get(), 0);
}

#[wasm_bindgen_test]
async fn a_shader_module_whose_descriptor_throws_is_a_fault() {
    let d = device().await;
    let layout: web_sys::GpuPipelineLayout = not_a();
    let error = d
        .create_shader_module(
            "throwing-module",
            "@compute @workgroup_size(1) fn main() {}",
            &[("main", &layout)],
        )
        .await
        .expect_err("throws");
    assert_eq!(error.fault.kind, FaultKind::Exception, "{}", error.fault);
    assert!(error.fault.message.contains("TypeError"));
    assert_eq!(
        error.fault.origin.object.as_deref(),
        Some("throwing-module")
    );
    assert_stack_balanced(&d).await;
}

// ---------------------------------------------------------------- levels compose

const BAD_WGSL: &str = "@compute @workgroup_size(1)\nfn main() {\n  let x: f32 = ;\n}\n";

#[wasm_bindgen_test]
async fn every_level_composes_with_the_ladder_shaders_phases_and_frames() {
    for level in DiagnosticsLevel::ALL {
        let (d, net, _) = device_with_net(raw_device().await);
        d.set_level(level);
        // Every frame scoped, so that the frame below goes through its own scope
        // (the sampled default is tested on its own).
        d.session().set_frame_sampling(FrameSampling::every(1));
        let name = level.as_str();

        // The ladder lands on the size that fits.
        let medium = depth_2048("matrix-2048");
        let outcome = d
            .texture_ladder(&[huge_texture("matrix-huge"), medium])
            .await
            .unwrap_or_else(|f| panic!("{name}: {f}"));
        assert_eq!(outcome.chosen, 1, "{name}");
        assert_eq!(outcome.failures[0].1.kind, FaultKind::OutOfMemory, "{name}");
        drop(outcome);
        settle().await;
        assert_eq!(
            net.stats().total_errors(),
            0,
            "{name}: {:?}",
            net.recent_lines()
        );

        // A shader error is reported exactly once.
        let error = d
            .create_shader_module("matrix-shader", BAD_WGSL, &[])
            .await
            .expect_err("does not compile");
        assert!(
            error.fault.message.contains("matrix-shader:3:"),
            "{name}: {}",
            error.fault
        );
        flush(&d).await;
        settle().await;
        assert_eq!(
            net.stats().validation,
            1,
            "{name}: {:?}",
            net.recent_lines()
        );

        // A phase's fault names its phase (a GPU error needs the phase's scopes,
        // which `off` does not push: there it reaches the fault sink).
        let fault = d
            .phase("matrix-phase", || {
                let _bad = d.create_buffer(
                    "matrix-bad-buffer",
                    64,
                    BufferUsages::MAP_READ | BufferUsages::MAP_WRITE,
                )?;
                Ok(())
            })
            .await;
        flush(&d).await;
        settle().await;
        assert_eq!(
            net.stats().validation,
            2,
            "{name}: {:?}",
            net.recent_lines()
        );
        if level == DiagnosticsLevel::Off {
            assert!(fault.is_ok(), "{name}");
        } else {
            let fault = fault.expect_err(name);
            assert_eq!(
                fault.origin.phase.as_deref(),
                Some("matrix-phase"),
                "{name}"
            );
            assert_eq!(fault.kind, FaultKind::Validation, "{name}");
        }
        let refused = d
            .phase("matrix-refused", || {
                d.create_buffer("", 4, BufferUsages::UNIFORM).map(drop)
            })
            .await
            .expect_err(name);
        assert_eq!(
            refused.origin.phase.as_deref(),
            Some("matrix-refused"),
            "{name}"
        );

        // A frame's fault names its frame.
        let buffer = d
            .create_buffer("matrix-frame-buffer", 256, BufferUsages::COPY_DST)
            .unwrap();
        let encoder = d.create_command_encoder("matrix-frame").unwrap();
        encoder.clear_buffer(&buffer).unwrap();
        let commands = encoder.finish().unwrap();
        buffer.destroy();
        let frame = d.begin_frame(11);
        assert_eq!(frame.is_scoped(), level != DiagnosticsLevel::Off, "{name}");
        d.submit(&[commands]).unwrap();
        frame.end();
        flush(&d).await;
        wait_until("the frame fault", || net.stats().validation == 3).await;
        let line = net.recent_lines().last().cloned().unwrap();
        assert!(line.contains("at frame 11"), "{name}: {line}");
        assert_stack_balanced(&d).await;
    }
}

#[wasm_bindgen_test]
async fn call_sites_propagate_through_the_public_api() {
    let d = device().await;
    let line = line!() + 1;
    let fault = d.create_buffer("", 4, BufferUsages::UNIFORM).unwrap_err();
    let site = fault.origin.call_site.expect("a call site");
    assert!(site.file.ends_with("web.rs"), "{site}");
    assert_eq!(site.line, line);

    let sizes = [huge_texture("no-fit")];
    let line = line!() + 1;
    let pending = d.texture_ladder(&sizes);
    let fault = pending.await.unwrap_err();
    assert_eq!(
        fault.origin.call_site.map(|s| s.line),
        Some(line),
        "{fault}"
    );

    let line = line!() + 1;
    let pending = d.create_shader_module("site-shader", BAD_WGSL, &[]);
    let error = pending.await.unwrap_err();
    assert_eq!(error.fault.origin.call_site.map(|s| s.line), Some(line));

    d.set_level(DiagnosticsLevel::PerCall);
    let line = line!() + 2;
    let work = || {
        d.create_buffer_init(
            "site-init",
            BufferUsages::MAP_READ | BufferUsages::MAP_WRITE,
            &[1, 2],
        )
    };
    let fault = d.phase("sites", || work().map(drop)).await.unwrap_err();
    assert_eq!(
        fault.origin.call_site.map(|s| s.line),
        Some(line),
        "{fault}"
    );
}

#[wasm_bindgen_test]
async fn telemetry_groups_by_the_sanitised_label_the_library_knows() {
    let (d, net, events) = device_with_net(raw_device().await);
    net.set_sanitizer(Some(Box::new(webgpu_guard::sanitize::strict)));
    // Per call: the library knows which object failed, whatever the engine writes.
    d.set_level(DiagnosticsLevel::PerCall);
    let _ = d
        .phase("uploads", || {
            d.create_buffer(
                "upload:/home/ana/cat.png",
                64,
                BufferUsages::MAP_READ | BufferUsages::MAP_WRITE,
            )
            .map(drop)
        })
        .await
        .unwrap_err();
    assert_eq!(events.length(), 1);
    let label = js_sys::Reflect::get(&events.get(0), &"label".into())
        .unwrap()
        .as_string()
        .unwrap();
    assert_eq!(label, "upload:…");
    assert!(net.groups().iter().all(|g| !g.label.contains("ana")));
}

// ---------------------------------------------------------------- diagnostics

#[wasm_bindgen_test]
async fn a_wgsl_syntax_error_comes_back_with_line_column_and_caret() {
    let (d, net, _) = device_with_net(raw_device().await);
    // Before the error on its line: a two-unit UTF-16 character (the crab) and
    // a one-unit one (é), so UTF-16 columns and character columns differ.
    let source = "// línea con acentos: ñandú\n@compute @workgroup_size(1)\nfn main() {\n  let é = 1;\n  let x: f32 = é /* 🦀 */ +;\n}\n";
    let error = d
        .create_shader_module("broken-wgsl", source, &[])
        .await
        .expect_err("does not compile");
    let first = &error.diagnostics.formatted[0];
    assert!(first.starts_with("broken-wgsl:5:"), "{first}");
    let raw = &error.diagnostics.messages[0];
    assert_eq!(raw.kind, MessageType::Error);
    let lines: Vec<&str> = first.lines().collect();
    assert_eq!(lines[1], "    let x: f32 = é /* 🦀 */ +;");
    let column: usize = lines[0]
        .split(':')
        .nth(2)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // Independently of the library: the character the engine's UTF-16 offset
    // points at, and its column counted in characters.
    let units: Vec<u16> = source.encode_utf16().collect();
    let before: String = char::decode_utf16(units[..raw.offset as usize].iter().copied())
        .map(|c| c.unwrap())
        .collect();
    let expected_column = before.chars().rev().take_while(|c| *c != '\n').count() + 1;
    let pointed = char::decode_utf16(units[raw.offset as usize..].iter().copied())
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(column, expected_column, "{first}");
    assert_eq!(
        raw.line_pos as usize,
        column + 1,
        "the crab is two UTF-16 units and one character"
    );
    let source_line = source.lines().nth(4).unwrap();
    assert_eq!(source_line.chars().nth(column - 1), Some(pointed));
    // The caret sits under that character's display column: the crab before it
    // takes two columns of a monospace console, `é` one.
    let before_pointed: String = source_line.chars().take(column - 1).collect();
    let display_width = before_pointed.chars().count() + before_pointed.matches('🦀').count();
    assert_eq!(before_pointed.matches('🦀').count(), 1);
    let caret_at = lines[2].chars().position(|c| c == '^').unwrap() - 2;
    assert_eq!(caret_at, display_width, "{first}");
    assert_eq!(error.fault.origin.object.as_deref(), Some("broken-wgsl"));
    assert!(error.fault.message.contains('^'));
    // Reported once, through the fault sink.
    settle().await;
    assert_eq!(net.stats().validation, 1, "{:?}", net.recent_lines());
    assert!(error.fault.is_reported());
}

/// Puts back `GPUShaderModule.prototype.getCompilationInfo` when dropped.
struct CompilationInfoWrapped;

impl CompilationInfoWrapped {
    /// Wraps the page's `getCompilationInfo` so that every module's answer has
    /// `extra` (a JavaScript object literal) after the engine's own messages.
    fn add(extra: &str) -> Self {
        let body = format!(
            "const proto = GPUShaderModule.prototype;\
             const original = proto.getCompilationInfo;\
             proto.getCompilationInfo = function () {{\
               return original.call(this).then(info => ({{ messages: [...info.messages, {extra}] }}));\
             }};\
             proto.__originalCompilationInfo = original;"
        );
        js_sys::Function::new_no_args(&body)
            .call0(&JsValue::NULL)
            .expect("wraps getCompilationInfo");
        CompilationInfoWrapped
    }
}

impl Drop for CompilationInfoWrapped {
    fn drop(&mut self) {
        let _ = js_sys::Function::new_no_args(
            "const proto = GPUShaderModule.prototype;\
             proto.getCompilationInfo = proto.__originalCompilationInfo;\
             delete proto.__originalCompilationInfo;",
        )
        .call0(&JsValue::NULL);
    }
}

/// A mock stands here: neither Dawn nor naga reports an info message for
/// WGSL, so the page's `getCompilationInfo` adds one to the engine's answer.
#[wasm_bindgen_test]
async fn an_info_message_from_the_compiler_is_written_as_a_note() {
    let (d, net, _) = device_with_net(raw_device().await);
    let source = "@compute @workgroup_size(1)\nfn main() {\n  let kept = 1;\n}\n";
    let offset = source.find("kept").unwrap();
    let _wrapped = CompilationInfoWrapped::add(&format!(
        "{{ type: 'info', message: 'an info the test added', lineNum: 3, linePos: 7, offset: {offset}, length: 4 }}"
    ));
    let compiled = d
        .create_shader_module("informed", source, &[])
        .await
        .expect("an info is no error");
    assert_eq!(compiled.diagnostics.count(MessageType::Info), 1);
    settle().await;
    let lines = net.recent_lines();
    let note = lines
        .iter()
        .find(|l| l.contains("an info the test added"))
        .unwrap_or_else(|| panic!("no note written: {lines:?}"));
    assert!(note.contains("informed:3:7"), "{note}");
    // Caret under `kept`.
    assert!(note.contains("^^^^"), "{note}");
    // A note: neither a warning nor a fault.
    let stats = net.stats();
    assert_eq!((stats.warnings, stats.total_errors()), (0, 0), "{lines:?}");
}

#[wasm_bindgen_test]
async fn warnings_are_reported_when_compilation_succeeds() {
    let (d, net, _) = device_with_net(raw_device().await);
    let source =
        "@compute @workgroup_size(1)\nfn main() {\n  return;\n  let unreachable_here = 1;\n}\n";
    let compiled = d
        .create_shader_module("warns", source, &[])
        .await
        .expect("compiles");
    if is_firefox() {
        // Degraded: naga reports no warning for unreachable code.
        assert!(
            compiled.diagnostics.is_empty(),
            "{:?}",
            compiled.diagnostics
        );
        return;
    }
    assert_eq!(
        net.stats().warnings as usize,
        compiled.diagnostics.messages.len()
    );
    assert!(
        compiled.diagnostics.count(MessageType::Warning) >= 1,
        "{:?}",
        compiled.diagnostics
    );
    assert!(
        compiled.diagnostics.formatted[0].starts_with("warns:4:"),
        "{}",
        compiled.diagnostics
    );
}

#[wasm_bindgen_test]
async fn an_async_pipeline_with_a_bad_entry_point_is_a_fault_naming_it() {
    let d = device().await;
    let shader = d
        .create_shader_module(
            "compute-shader",
            "@compute @workgroup_size(1) fn main() {}",
            &[],
        )
        .await
        .unwrap();
    let stage = web_sys::GpuProgrammableStage::new(&shader.module);
    stage.set_entry_point("does_not_exist");
    let desc = web_sys::GpuComputePipelineDescriptor::new_with_gpu_auto_layout_mode(
        web_sys::GpuAutoLayoutMode::Auto,
        &stage,
    );
    let fault = d
        .create_compute_pipeline("bad-entry-pipeline", &desc)
        .await
        .expect_err("rejected");
    assert_eq!(fault.kind, FaultKind::Pipeline);
    assert_eq!(fault.origin.object.as_deref(), Some("bad-entry-pipeline"));
    assert!(fault.message.contains("validation"), "{}", fault.message);
    stage.set_entry_point("main");
    let ok = web_sys::GpuComputePipelineDescriptor::new_with_gpu_auto_layout_mode(
        web_sys::GpuAutoLayoutMode::Auto,
        &stage,
    );
    assert!(d
        .create_compute_pipeline("good-pipeline", &ok)
        .await
        .is_ok());
}

#[wasm_bindgen_test]
async fn labels_reach_the_browser_intact_whatever_their_text() {
    // Labels cross without TextDecoder when short and ASCII; every other text
    // must arrive the same, and so must one read after the memory has grown.
    let d = device().await;
    let long = "l".repeat(64) + "-and-more";
    let labels = [
        "b0",
        "ñandú ✓",
        long.as_str(),
        &"x".repeat(64),
        "tab\tand \u{7f}",
        "emoji 🦀 last",
    ];
    for label in labels {
        let buffer = d.create_buffer(label, 16, BufferUsages::UNIFORM).unwrap();
        // The object's own label, as the browser holds it (not `Tracked::label`).
        assert_eq!(web_sys::GpuBuffer::label(&buffer), label);
        let texture = d
            .create_texture(&TextureSpec::d2(
                label,
                GpuTextureFormat::Rgba8unorm,
                4,
                4,
                TextureUsages::TEXTURE_BINDING,
            ))
            .unwrap();
        assert_eq!(web_sys::GpuTexture::label(&texture), label);
        let sampler = d
            .create_sampler(label, &web_sys::GpuSamplerDescriptor::new())
            .unwrap();
        assert_eq!(web_sys::GpuSampler::label(&sampler), label);
        let sampler = d.create_sampler_with(&SamplerSpec::new(label)).unwrap();
        assert_eq!(web_sys::GpuSampler::label(&sampler), label);
        let encoder = d.create_command_encoder(label).unwrap();
        assert_eq!(encoder.raw().label(), label);
    }
    let before = wasm_bindgen::memory()
        .unchecked_into::<js_sys::WebAssembly::Memory>()
        .buffer()
        .unchecked_into::<js_sys::ArrayBuffer>()
        .byte_length();
    let grown: Vec<u8> = vec![1; 8 << 20];
    let after = wasm_bindgen::memory()
        .unchecked_into::<js_sys::WebAssembly::Memory>()
        .buffer()
        .unchecked_into::<js_sys::ArrayBuffer>()
        .byte_length();
    assert!(after > before, "the memory grew");
    let buffer = d
        .create_buffer("after-growth", 16, BufferUsages::UNIFORM)
        .unwrap();
    assert_eq!(web_sys::GpuBuffer::label(&buffer), "after-growth");
    drop(grown);
    flush(&d).await;
}

/// A layout of four entries: a uniform buffer, a 16-byte uniform range, a
/// filtering sampler and a float texture.
fn four_entry_layout(d: &GuardedDevice) -> webgpu_guard::web::Tracked<web_sys::GpuBindGroupLayout> {
    let uniform = |binding: u32| {
        let entry = web_sys::GpuBindGroupLayoutEntry::new(binding, 0x2);
        let buffer = web_sys::GpuBufferBindingLayout::new();
        buffer.set_min_binding_size(16);
        entry.set_buffer(&buffer);
        entry
    };
    let sampler = web_sys::GpuBindGroupLayoutEntry::new(2, 0x2);
    sampler.set_sampler(&web_sys::GpuSamplerBindingLayout::new());
    let texture = web_sys::GpuBindGroupLayoutEntry::new(3, 0x2);
    texture.set_texture(&web_sys::GpuTextureBindingLayout::new());
    d.create_bind_group_layout(
        "four-entry-layout",
        &web_sys::GpuBindGroupLayoutDescriptor::new(&[uniform(0), uniform(1), sampler, texture]),
    )
    .unwrap()
}

#[wasm_bindgen_test]
async fn bind_groups_and_samplers_made_in_one_call_bind_what_was_asked_and_fail_by_name() {
    let d = device().await;
    let layout = four_entry_layout(&d);
    let buffer = d
        .create_buffer("one-call-uniform", 256, BufferUsages::UNIFORM)
        .unwrap();
    let texture = d
        .create_texture(&TextureSpec::d2(
            "one-call-texture",
            GpuTextureFormat::Rgba8unorm,
            4,
            4,
            TextureUsages::TEXTURE_BINDING,
        ))
        .unwrap();
    let view = texture.create_view().unwrap();
    let objects = d.ledger().live().objects;
    let scopes = ScopeSet::push(&d, &Filter::ALL);
    let sampler = d
        .create_sampler_with(&SamplerSpec::new("one-call-sampler").linear())
        .unwrap();
    let group = |label: &str, offset: u64| {
        d.create_bind_group_with(
            label,
            &layout,
            &[
                (0, Binding::Buffer(&buffer)),
                (
                    1,
                    Binding::BufferRange {
                        buffer: &buffer,
                        offset,
                        size: 16,
                    },
                ),
                (2, Binding::Sampler(&sampler)),
                (3, Binding::TextureView(&view)),
            ],
        )
    };
    let good = group("one-call-group", 0).unwrap();
    assert!(scopes.pop().await.is_clean(), "every entry bound as asked");
    assert_eq!(web_sys::GpuBindGroup::label(&good), "one-call-group");
    assert_eq!(web_sys::GpuSampler::label(&sampler), "one-call-sampler");
    assert_eq!(d.ledger().live().objects, objects + 2);

    // The range's offset and size reach the browser: 16 bytes at 256 lie past
    // the end of a 256-byte buffer.
    let outcome = d
        .phase("past-the-end", || group("past-the-end-group", 256))
        .await;
    let fault = outcome.expect_err("a range past the buffer's end");
    assert_eq!(fault.kind, FaultKind::Validation, "{fault}");
    assert_eq!(fault.origin.phase.as_deref(), Some("past-the-end"));
    if engine_quotes_labels() {
        assert!(fault.message.contains("past-the-end-group"), "{fault}");
    }

    // And the size: 512 bytes from 0 do not fit in 256.
    let oversized = d
        .phase("oversized", || {
            d.create_bind_group_with(
                "oversized-group",
                &layout,
                &[
                    (0, Binding::Buffer(&buffer)),
                    (
                        1,
                        Binding::BufferRange {
                            buffer: &buffer,
                            offset: 0,
                            size: 512,
                        },
                    ),
                    (2, Binding::Sampler(&sampler)),
                    (3, Binding::TextureView(&view)),
                ],
            )
        })
        .await;
    assert_eq!(
        oversized.expect_err("a range larger than its buffer").kind,
        FaultKind::Validation
    );

    // A comparison sampler in a filtering slot is a validation error: the
    // comparison reached the browser.
    let scopes = ScopeSet::push(&d, &[Filter::Validation]);
    let comparing = d
        .create_sampler_with(
            &SamplerSpec::new("comparing-sampler").comparing(web_sys::GpuCompareFunction::Less),
        )
        .unwrap();
    let _mismatched = d.create_bind_group_with(
        "comparing-in-filtering-slot",
        &layout,
        &[
            (0, Binding::Buffer(&buffer)),
            (1, Binding::Buffer(&buffer)),
            (2, Binding::Sampler(&comparing)),
            (3, Binding::TextureView(&view)),
        ],
    );
    let fault = scopes
        .pop()
        .await
        .into_fault()
        .expect("a comparison sampler");
    assert_eq!(fault.kind, FaultKind::Validation, "{fault}");

    // What throws (a clamp that is not finite, a layout that is not one) is a
    // fault naming the object, counts nothing and leaves no scope open.
    d.set_level(DiagnosticsLevel::PerCall);
    let before = d.ledger().live().objects;
    let mut spec = SamplerSpec::new("nan-clamp-sampler");
    spec.lod_min_clamp = f32::NAN;
    let fault = d.create_sampler_with(&spec).expect_err("NaN is no float");
    assert_eq!(fault.kind, FaultKind::Exception, "{fault}");
    assert_eq!(fault.origin.object.as_deref(), Some("nan-clamp-sampler"));
    let fault = d
        .create_bind_group_with(
            "no-layout-group",
            &not_a(),
            &[(0, Binding::Buffer(&buffer))],
        )
        .expect_err("not a layout");
    assert_eq!(fault.kind, FaultKind::Exception, "{fault}");
    assert_eq!(fault.origin.object.as_deref(), Some("no-layout-group"));
    assert_eq!(d.ledger().live().objects, before);
    d.set_level(DiagnosticsLevel::Phases);
    settle().await;
    assert_stack_balanced(&d).await;
}

#[wasm_bindgen_test]
async fn live_counts_rise_on_create_and_fall_on_destroy() {
    let d = device().await;
    let ledger = d.ledger();
    let base = ledger.live();
    let a = d
        .create_buffer("counted-a", 1024, BufferUsages::STORAGE)
        .unwrap();
    let t = d
        .create_texture(&TextureSpec::d2(
            "counted-t",
            GpuTextureFormat::Rgba8unorm,
            64,
            64,
            TextureUsages::TEXTURE_BINDING,
        ))
        .unwrap();
    let live = ledger.live();
    assert_eq!(live.objects, base.objects + 2);
    assert_eq!(live.bytes, base.bytes + 1024 + 64 * 64 * 4);
    assert_eq!(
        ledger.report().label("counted-t").map(|t| t.bytes),
        Some(16384)
    );
    drop(a);
    assert_eq!(ledger.live().objects, base.objects + 1);
    drop(t);
    assert_eq!(ledger.live(), base);
    assert_eq!(ledger.report().peak.objects, base.objects + 2);
    let unlabelled = d.create_buffer("", 4, BufferUsages::STORAGE);
    assert!(unlabelled.err().unwrap().message.contains("needs a label"));
}

// ---------------------------------------------------------------- nets

#[wasm_bindgen_test]
async fn a_foreign_event_on_the_device_is_counted_and_never_throws() {
    let d = device().await;
    let net = FaultSink::new(Rc::new(Cell::new(0)));
    let _listener = net.install(d.raw());
    // An exception in a listener never comes out of dispatchEvent: the page's
    // `error` event reports it.
    let page_errors = Rc::new(Cell::new(0));
    let counted = page_errors.clone();
    let on_error = Closure::<dyn Fn(web_sys::Event)>::new(move |_e: web_sys::Event| {
        counted.set(counted.get() + 1)
    });
    let window = web_sys::window().unwrap();
    window
        .add_event_listener_with_callback("error", on_error.as_ref().unchecked_ref())
        .unwrap();
    // A plain event named like ours, then one whose error is not a GPUError.
    let plain = web_sys::Event::new("uncapturederror").unwrap();
    assert!(d.raw().dispatch_event(&plain).is_ok());
    let odd = js_sys::Function::new_with_args(
        "device",
        "const e = new Event('uncapturederror', { cancelable: true }); \
         Object.defineProperty(e, 'error', { value: { message: 42 } }); \
         return device.dispatchEvent(e);",
    );
    let not_prevented = odd.call1(&JsValue::NULL, d.raw()).unwrap();
    assert_eq!(not_prevented, JsValue::FALSE, "the default is prevented");
    let stats = net.stats();
    assert_eq!(stats.handler_failures, 2, "{stats:?}");
    assert_eq!(stats.total_errors(), 0);
    assert_eq!(stats.logged, 0);
    settle().await;
    window
        .remove_event_listener_with_callback("error", on_error.as_ref().unchecked_ref())
        .unwrap();
    assert_eq!(page_errors.get(), 0, "the listener threw");
    assert!(net.is_installed());
    drop(_listener);
    assert!(
        !net.is_installed(),
        "the count falls when the listener is removed"
    );
}

#[wasm_bindgen_test]
async fn a_storm_of_100_uncaptured_errors_writes_5_lines_and_one_cut_off() {
    let d = device().await;
    let net = FaultSink::new(Rc::new(Cell::new(42)));
    let _listener = net.install(d.raw());
    for _ in 0..100 {
        distinct_bad_submit(&d);
    }
    flush(&d).await;
    wait_until("100 errors", || net.stats().validation == 100).await;
    let stats = net.stats();
    assert_eq!(stats.logged, 6, "{stats:?}");
    assert_eq!(stats.cut_offs, 1);
    assert_eq!(stats.suppressed, 95);
    let lines = net.recent_lines();
    assert_eq!(lines.len(), 6);
    assert!(lines[0].contains("at frame 42"), "{}", lines[0]);
    assert_eq!(
        lines[5],
        "more than 5 errors in a second, silencing the rest"
    );
    // 100 different messages, one label (or none): one group, not 100.
    let groups = net.groups();
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(groups[0].occurrences, 100);
}

/// Messages whose quoted labels the listener's JavaScript and the library's Rust
/// must read alike (`{i}` makes each message distinct).
fn tricky_message(i: usize) -> String {
    match i % 21 {
        0 => format!("Offset ({i}) is not a multiple of 4.\n - While calling [Queue].WriteBuffer([Buffer \"storm-target\"], {i})"),
        1 => format!("[Device \"dev\"] then [Texture \"tex {}\"] at {i}", i % 3),
        2 => format!("[Queue] [Buffer \"\"] [Sampler \"s\"] {i}"),
        3 => format!("no label at all {i}"),
        4 => format!("[Buffer \"a]b\"] {i}"),
        5 => format!("[Buffer  \"  spaced  \" ] {i}"),
        6 => format!("[ \"bare\" ] {i}"),
        7 => format!("[Buffer \"ñandú ✓\"] {i}"),
        8 => format!("[Buffer \"unterminated {i}"),
        9 => format!("[no quote] then [Buffer \"after\"] {i}"),
        10 => format!("[Buffer \"\"\"quoted\"\"\"] [x] {i}"),
        11 => format!("[\u{85}Device\u{a0}\"not the device\"] {i}"),
        12 => format!("[\u{feff}Device \"a device?\"] {i}"),
        13 => format!("[Buffer \"trailing \" \u{2003}] {i}"),
        14 => format!("[Buffer \"x\u{85}\"\u{85}] {i}"),
        15 => format!("[Queue \"q\"] [Buffer \"\u{feff}\"] {i}"),
        // wgpu's (Firefox's) form: no object blamed.
        16 => format!("In a set_pipeline command, caused by: Buffer with 'wg {}' label is invalid {i}", i % 3),
        // The object being created, after an argument; a creation naming
        // only its argument.
        17 => format!("[Buffer \"arg\"] too small.\n - While calling [Device].CreateBindGroup([BindGroupDescriptor \"\"group {}\"\"]) {i}", i % 3),
        18 => format!("[Buffer \"arg\"] too small.\n - While calling [Device \"d\"].CreateBindGroup([BindGroupDescriptor]) {i}"),
        19 => format!("[TextureDescriptor \"\"\"\"] then [Buffer \"after\"] {i}"),
        _ => format!("[ BufferDescriptor  \"  spaced  \" ] {i}"),
    }
}

/// Dispatches a synthetic `GPUUncapturedErrorEvent` of `kind` (1 validation, 2
/// out of memory, 3 internal) with `message` on `device`.
fn dispatch_uncaptured(device: &web_sys::GpuDevice, kind: u32, message: &str) {
    let dispatch = js_sys::Function::new_with_args(
        "device, kind, message",
        "const error = kind === 1 ? new GPUValidationError(message) \
           : kind === 2 ? new GPUOutOfMemoryError(message) : new GPUInternalError(message); \
         return device.dispatchEvent(new GPUUncapturedErrorEvent('uncapturederror', { error, cancelable: true }));",
    );
    let prevented = dispatch
        .call3(&JsValue::NULL, device, &kind.into(), &message.into())
        .unwrap();
    assert_eq!(prevented, JsValue::FALSE, "the default is prevented");
}

#[wasm_bindgen_test]
async fn a_storm_counted_in_javascript_while_the_log_is_silent_loses_nothing() {
    let d = device().await;
    let frame = Rc::new(Cell::new(7));
    let net = FaultSink::new(frame.clone());
    let listener = net.install(d.raw());
    // What recording every error one by one gives, grouped by kind and label.
    let mut expected = webgpu_guard::fault_log::FaultLog::new(Box::new(
        webgpu_guard::telemetry::MemorySink::default(),
    ));
    let record = |expected: &mut webgpu_guard::fault_log::FaultLog, kind, message: &str, frame| {
        let kind = match kind {
            1 => FaultKind::Validation,
            2 => FaultKind::OutOfMemory,
            _ => FaultKind::Internal,
        };
        let mut fault = Fault::without_hint(kind, message).in_frame(frame);
        if let Some(label) = webgpu_guard::fault::label_in_message(message) {
            fault = fault.on_object(label);
        }
        let clean = webgpu_guard::sanitize::Sanitized::new(&fault, None);
        expected.record(&fault, &clean, 0.0);
    };
    for i in 0..3000 {
        let kind = 1 + (i % 7 % 3) as u32;
        // Then the same two messages again and again, under changing kinds.
        let message = if i < 2000 {
            tricky_message(i)
        } else if (i / 10) % 2 == 0 {
            "[Buffer \"same\"] identical".to_string()
        } else {
            "[Texture \"other\"] identical".to_string()
        };
        dispatch_uncaptured(d.raw(), kind, &message);
        record(&mut expected, kind, &message, 7);
    }
    // The timer hands the held counts over within 100 ms. The frame cell is set
    // directly here, bypassing `FaultSink::set_frame` (which would hand them over
    // first), only to see which moment tagged them: the timer's.
    frame.set(9);
    TimeoutFuture::new(300).await;
    assert_eq!(net.last_uncaptured_frame(), Some(9), "the timer drained");
    let stats = net.stats();
    assert_eq!(stats.total_errors(), 3000, "{stats:?}");
    assert_eq!((stats.validation, stats.out_of_memory, stats.internal), {
        let e = expected.stats();
        (e.validation, e.out_of_memory, e.internal)
    });
    assert!(stats.held_by_listener > 2900, "the fast path: {stats:?}");
    assert_eq!(stats.logged, 6, "{stats:?}");
    assert_eq!(stats.suppressed, 2995);
    let strip = |groups: Vec<webgpu_guard::telemetry::GroupSummary>| {
        groups
            .into_iter()
            .map(|g| (g.kind, g.label, g.occurrences, g.first_message))
            .collect::<Vec<_>>()
    };
    let got = strip(net.groups());
    assert_eq!(got, strip(expected.groups()));
    assert!(got.len() >= 20, "{got:?}");
    // Silence ends: the next error is written again.
    TimeoutFuture::new(1100).await;
    dispatch_uncaptured(d.raw(), 1, "[Buffer \"after-the-storm\"] late");
    let lines = net.recent_lines();
    assert!(
        lines.last().is_some_and(|l| l.contains("after-the-storm")),
        "{lines:?}"
    );
    // What a listener holds when it is removed is handed over, not lost.
    for i in 0..10 {
        dispatch_uncaptured(d.raw(), 1, &tricky_message(i));
    }
    for i in 0..50 {
        dispatch_uncaptured(d.raw(), 2, &format!("[Texture \"late-{}\"] {i}", i % 2));
    }
    drop(listener);
    let stats = net.stats();
    assert_eq!(stats.total_errors(), 3061, "{stats:?}");
    assert!(stats.held_by_listener > 2940, "{stats:?}");
    let late: u64 = net
        .groups()
        .iter()
        .filter(|g| g.label.starts_with("late-"))
        .map(|g| g.occurrences)
        .sum();
    assert_eq!(late, 50);
}

#[wasm_bindgen_test]
async fn held_errors_go_in_before_a_later_fault_and_keep_their_frame() {
    let d = device().await;
    let net = FaultSink::new(Rc::new(Cell::new(20)));
    let _listener = net.install(d.raw());
    // Five lines and the cut-off line: the log is silent from here.
    for i in 0..10 {
        dispatch_uncaptured(d.raw(), 1, &format!("[Buffer \"warm-up\"] {i}"));
    }
    for i in 0..5 {
        dispatch_uncaptured(d.raw(), 1, &format!("[Buffer \"fresh\"] held {i}"));
    }
    // A fault a scope caught on the same object, reported after them: the held
    // errors go in first, so the group starts with the first of them.
    net.report(
        Fault::new(FaultKind::Validation, "popped later")
            .on_object("fresh")
            .in_frame(20),
    );
    let fresh = net
        .groups()
        .into_iter()
        .find(|g| g.label == "fresh")
        .unwrap();
    assert_eq!(fresh.occurrences, 6, "{fresh:?}");
    assert!(fresh.first_message.contains("held 0"), "{fresh:?}");
    // Held during frame 20, handed over as the frame moves on: tagged 20.
    for i in 0..5 {
        dispatch_uncaptured(d.raw(), 2, &format!("[Texture \"framed\"] {i}"));
    }
    net.set_frame(21);
    assert_eq!(net.last_uncaptured_frame(), Some(20));
    let framed = net
        .groups()
        .into_iter()
        .find(|g| g.label == "framed")
        .unwrap();
    assert_eq!((framed.occurrences, framed.last_frame), (5, Some(20)));
    let stats = net.stats();
    assert_eq!(stats.held_by_listener, 14, "{stats:?}");
    assert_eq!(stats.total_errors(), 21, "{stats:?}");
}

#[wasm_bindgen_test]
async fn identical_uncaptured_errors_reach_the_net_as_the_engine_delivers_them() {
    // Dawn delivers every occurrence; Firefox delivers each distinct message once
    // per device, upstream of the library. The fault sink counts what arrives.
    let d = device().await;
    let net = FaultSink::new(Rc::new(Cell::new(0)));
    let _listener = net.install(d.raw());
    for i in 0..20 {
        bad_buffer(&d, &format!("same-{i}"));
    }
    flush(&d).await;
    let expected = if is_firefox() { 1 } else { 20 };
    wait_until("the errors", || net.stats().validation == expected).await;
    settle().await;
    assert_eq!(net.stats().validation, expected);
}

#[wasm_bindgen_test]
async fn a_throwing_telemetry_sink_does_not_break_the_handler() {
    let d = device().await;
    let net = FaultSink::new(Rc::new(Cell::new(0)));
    let throws = js_sys::Function::new_no_args("throw new Error('telemetry endpoint down')");
    net.set_sink(Box::new(JsFunctionSink(throws)));
    let _listener = net.install(d.raw());
    for _ in 0..3 {
        distinct_bad_submit(&d);
    }
    flush(&d).await;
    wait_until("3 errors", || net.stats().validation == 3).await;
    let stats = net.stats();
    assert_eq!(stats.sink_failures, 3, "{stats:?}");
    assert_eq!(stats.logged, 3);
    distinct_bad_submit(&d);
    flush(&d).await;
    wait_until("the handler still works", || net.stats().validation == 4).await;
}

/// A telemetry sink that reports into the fault sink it serves (a note, a
/// reading of the counters) is heard: it runs after the log's borrow ends, so
/// nothing is counted as re-entrant and nothing is lost.
#[wasm_bindgen_test]
async fn a_telemetry_sink_that_reports_back_into_the_fault_sink_is_heard() {
    use webgpu_guard::telemetry::{TelemetryEvent, TelemetrySink};
    struct Echo(FaultSink, Rc<Cell<u32>>);
    impl TelemetrySink for Echo {
        fn send(&self, event: &TelemetryEvent) -> Result<(), String> {
            self.1.set(self.1.get() + 1);
            let _ = self.0.stats();
            self.0.note(&format!("the sink saw \"{}\"", event.label));
            Ok(())
        }
    }
    let faults = FaultSink::new(Rc::new(Cell::new(0)));
    let sent = Rc::new(Cell::new(0));
    faults.set_sink(Box::new(Echo(faults.clone(), sent.clone())));
    faults.report_ref(
        &webgpu_guard::Fault::new(webgpu_guard::FaultKind::Validation, "invalid")
            .on_object("echoed-buffer"),
    );
    assert_eq!(sent.get(), 1);
    let stats = faults.stats();
    assert_eq!(stats.handler_failures, 0, "{stats:?}");
    assert_eq!(stats.telemetry_sent, 1, "{stats:?}");
    let lines = faults.recent_lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("the sink saw \"echoed-buffer\"")),
        "{lines:?}"
    );
}

#[wasm_bindgen_test]
async fn a_sanitizer_that_reports_back_into_the_fault_sink_is_heard() {
    // The sanitizer runs before the log is borrowed: what it reads and reports
    // reaches the log, and none of it is counted as a re-entrant call.
    let faults = FaultSink::new(Rc::new(Cell::new(0)));
    let (inner, calls) = (faults.clone(), Rc::new(Cell::new(0)));
    let counted = calls.clone();
    faults.set_sanitizer(Some(Box::new(move |text: &str| {
        counted.set(counted.get() + 1);
        let before = inner.stats().validation;
        if text.contains("secret") {
            inner.note(&format!("the sanitizer saw {before} validation errors"));
        }
        text.replace("secret", "…")
    })));
    faults.report_ref(
        &webgpu_guard::Fault::new(webgpu_guard::FaultKind::Validation, "a secret message")
            .on_object("sanitised-buffer"),
    );
    assert!(calls.get() >= 2, "message and label: {}", calls.get());
    let stats = faults.stats();
    assert_eq!(stats.handler_failures, 0, "{stats:?}");
    assert_eq!(stats.validation, 1, "{stats:?}");
    let lines = faults.recent_lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("the sanitizer saw 0 validation errors")),
        "{lines:?}"
    );
    // The console keeps the raw text; telemetry's group got the clean one.
    assert!(
        lines.iter().any(|l| l.contains("a secret message")),
        "{lines:?}"
    );
    let groups = faults.groups();
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(groups[0].first_message, "a … message");
}

#[wasm_bindgen_test]
async fn a_sanitizer_that_reports_back_cannot_lift_the_line_limit() {
    // The sanitiser notes something and takes a moment: its note is recorded
    // later than the uncaptured error it sanitises. Before, that error was then
    // recorded at the earlier time, which the limiter read as a clock gone
    // backwards: it started afresh, and every error was written.
    let (d, net, _) = device_with_net(raw_device().await);
    let inner = net.clone();
    net.set_sanitizer(Some(Box::new(move |text: &str| {
        inner.note("sanitising");
        let start = webgpu_guard::web::js::now_ms();
        while webgpu_guard::web::js::now_ms() - start < 0.5 {}
        text.to_string()
    })));
    // Synthetic events, dispatched at once: real ones arrive as the engine
    // pleases (Firefox folds repeated ones).
    for n in 0..30 {
        dispatch_uncaptured(d.raw(), 1, &format!("[Buffer \"limited-{n}\"] invalid"));
    }
    let stats = net.stats();
    assert_eq!(stats.validation, 30, "{stats:?}");
    assert!(
        stats.max_lines_in_a_second <= 6,
        "{} lines in one second: {stats:?}",
        stats.max_lines_in_a_second
    );
}

#[wasm_bindgen_test]
async fn a_sanitizer_that_reports_every_time_it_runs_ends_its_recursion() {
    // What the sanitizer reports is sanitised by it too, a few runs deep: then
    // the recursion ends, and the deepest fault reaches telemetry as a
    // placeholder, never raw.
    let faults = FaultSink::new(Rc::new(Cell::new(0)));
    let inner = faults.clone();
    faults.set_sanitizer(Some(Box::new(move |text: &str| {
        inner.report_ref(&Fault::new(
            FaultKind::Internal,
            "reported by the sanitizer",
        ));
        text.replace("secret", "…")
    })));
    faults.report_ref(&Fault::new(FaultKind::Validation, "a secret").on_object("outer"));
    let stats = faults.stats();
    assert_eq!(stats.validation, 1, "{stats:?}");
    // Each run reports one more, until the depth is reached: finitely many.
    assert!(stats.internal >= 1, "{stats:?}");
    assert!(stats.internal < 1000, "{stats:?}");
    assert_eq!(stats.handler_failures, 0, "{stats:?}");
    // Grouped as one (same kind, no label); the first recorded is the deepest.
    let groups = faults.groups();
    let internal = groups
        .iter()
        .find(|g| g.kind == FaultKind::Internal)
        .expect("the sanitizer's own faults");
    assert_eq!(internal.occurrences, stats.internal, "{groups:?}");
    assert_eq!(
        internal.first_message,
        webgpu_guard::web::faults::SANITIZER_REPORTED
    );
}

// ------------------------------------------------- engines' wording (WebKit)

// The engine-quirks shim (`tests/quirks/webkit.js`): evaluated before the wasm
// module, it installs itself only on a page whose user agent carries its
// marker (scripts/test's shimmed Chromium stage), and then makes every error
// the engine produces read "Validation failure." (or "Out of memory.",
// "Internal error."), as Safari's do, and removes `onuncapturederror` and
// `adapter.info`.
#[wasm_bindgen(module = "/tests/quirks/webkit.js")]
extern "C" {
    fn webkit_quirks_installed() -> bool;
    fn webkit_quirks_requested() -> bool;
}

#[wasm_bindgen_test]
#[ignore = "run by scripts/test under the WebKit-quirks shim (--include-ignored)"]
async fn the_webkit_quirks_shim_is_installed_where_asked() {
    // Run only by the shimmed stage: it fails if that stage ran unshimmed.
    assert!(
        webkit_quirks_requested(),
        "the page did not ask for the shim"
    );
    assert!(webkit_quirks_installed());
    let gpu = init::navigator_gpu().expect("navigator.gpu");
    let adapter = init::request_adapter(&gpu).await.expect("adapter");
    let info = js_sys::Reflect::get(&adapter, &"info".into()).unwrap();
    assert!(info.is_undefined(), "adapter.info is still there");
    // What the library shows without it.
    assert!(
        init::adapter_name(&adapter).contains("exposes no vendor details"),
        "{}",
        init::adapter_name(&adapter)
    );
    let d = device().await;
    let attribute = js_sys::Reflect::has(d.raw(), &"onuncapturederror".into()).unwrap();
    assert!(!attribute, "onuncapturederror is still there");
    let raw = d.raw();
    raw.push_error_scope(web_sys::GpuErrorFilter::Validation);
    bad_buffer(&d, "a-label-the-message-must-not-quote");
    let error = wasm_bindgen_futures::JsFuture::from(raw.pop_error_scope())
        .await
        .unwrap();
    let error: web_sys::GpuError = error.unchecked_into();
    assert_eq!(error.message(), "Validation failure.");
}

#[wasm_bindgen_test]
async fn the_liveness_probe_never_leaks_as_a_fault_whatever_the_engine_s_wording() {
    // Under the shim every message is "Validation failure.": the probe's error
    // cannot be told from a real one by its text. It must never come back as a
    // fault, a live device must read clean, a destroyed one lost.
    let (d, net, events) = device_with_net(raw_device().await);
    for filters in [
        &[Filter::Validation][..],
        &[Filter::OutOfMemory][..],
        &Filter::ALL[..],
    ] {
        let clean = ScopeSet::push(&d, filters).pop().await;
        assert!(clean.is_clean(), "{filters:?}: {clean:?}");
        assert!(clean.faults().is_empty(), "{filters:?}: {clean:?}");
    }
    assert!(d.confirm_alive().await);
    assert_eq!(d.phase("clean-phase", || Ok(7)).await.ok(), Some(7));
    // Several sets awaited together, closed in order and out of order.
    let first = ScopeSet::push(&d, &Filter::ALL).close();
    let second = ScopeSet::push(&d, &[Filter::Validation]).pop();
    let outcomes = wait_all(vec![first]).await;
    assert!(outcomes.iter().all(|o| o.is_clean()), "{outcomes:?}");
    assert!(second.await.is_clean());
    let outer = ScopeSet::push(&d, &[Filter::Validation]);
    let inner = ScopeSet::push(&d, &[Filter::OutOfMemory]);
    let outcome = outer.pop().await;
    assert!(outcome.is_clean(), "{outcome:?}");
    drop(inner);
    // A real error is the set's one fault.
    let scope = ScopeSet::push(&d, &Filter::ALL);
    bad_buffer(&d, "the-real-error");
    let outcome = scope.pop().await;
    assert!(!outcome.device_lost, "{outcome:?}");
    assert_eq!(outcome.faults().len(), 1, "{outcome:?}");
    assert_eq!(outcome.faults()[0].kind, FaultKind::Validation);
    // Per-call pops settled with their phase: one fault, the bad call's.
    d.set_level(DiagnosticsLevel::PerCall);
    let result = d
        .phase("per-call-phase", || {
            let _ok = d.create_buffer("fine", 16, BufferUsages::UNIFORM)?;
            let _bad = d.create_buffer(
                "bad-in-per-call",
                16,
                BufferUsages::MAP_READ | BufferUsages::MAP_WRITE,
            )?;
            Ok(())
        })
        .await;
    d.set_level(DiagnosticsLevel::Phases);
    let fault = result.expect_err("the bad call");
    assert!(fault.related.is_empty(), "{fault:?}");
    assert_eq!(fault.origin.object.as_deref(), Some("bad-in-per-call"));
    flush(&d).await;
    settle().await;
    // The phase's fault was reported (the one `Err`); nothing else, nothing
    // uncaptured.
    assert_eq!(net.stats().validation, 1, "{:?}", net.stats());
    assert_eq!(events.length(), 1, "{:?}", describe_event(&events));
    assert!(!d.is_lost());
    assert_stack_balanced(&d).await;

    // A destroyed device: the loss, and no fault.
    let d = device().await;
    let scopes = ScopeSet::push(&d, &Filter::ALL);
    d.destroy();
    let outcome = scopes.pop().await;
    assert!(outcome.device_lost, "{outcome:?}");
    assert!(outcome.faults().is_empty(), "{outcome:?}");
    let d = device().await;
    let result = d
        .phase("loses-its-device", || {
            d.destroy();
            Ok(())
        })
        .await;
    assert_eq!(result.err().map(|f| f.kind), Some(FaultKind::DeviceLost));
}

/// A minimal application: one phase and one shader module in its build.
struct ShaderApp;

impl webgpu_guard::web::App for ShaderApp {
    type Resources = (webgpu_guard::web::Tracked<web_sys::GpuBuffer>,);

    async fn build(&self, gpu: &webgpu_guard::web::GpuContext) -> Result<Self::Resources, Fault> {
        let d = &gpu.device;
        let _module = d
            .create_shader_module(
                "shader-app",
                "@compute @workgroup_size(1) fn main() {}",
                &[],
            )
            .await?;
        let buffer = d
            .phase("shader-app", || {
                d.create_buffer("shader-app-buffer", 256, BufferUsages::UNIFORM)
            })
            .await?;
        Ok((buffer,))
    }

    fn frame(
        &self,
        _: &webgpu_guard::web::GpuContext,
        _: &Self::Resources,
        _: &webgpu_guard::web::FrameInfo,
    ) -> Result<(), Fault> {
        Ok(())
    }
}

#[wasm_bindgen_test]
async fn a_runtime_starts_whatever_the_engine_s_wording() {
    // Init awaits a shader module and a phase, each with the liveness probe:
    // were the probe's error read as a fault, every start would fail.
    let document = web_sys::window().unwrap().document().unwrap();
    let canvas: web_sys::HtmlCanvasElement =
        document.create_element("canvas").unwrap().unchecked_into();
    canvas.set_width(16);
    canvas.set_height(16);
    document.body().unwrap().append_child(&canvas).unwrap();
    let runtime = webgpu_guard::web::Runtime::new(ShaderApp, canvas, Default::default());
    runtime.start();
    for _ in 0..150 {
        let status = runtime.status();
        if status.state.as_str() == "running" && status.frames > 2 {
            break;
        }
        assert!(
            status.fallback.is_none() && status.state.as_str() != "failed",
            "{status:?}"
        );
        TimeoutFuture::new(30).await;
    }
    let status = runtime.status();
    assert_eq!(status.state.as_str(), "running", "{status:?}");
    assert_eq!((status.generation, status.recoveries), (1, 0), "{status:?}");
    assert_eq!(status.faults.total_errors(), 0, "{status:?}");
    runtime.stop();
}

// ---------------------------------------------------------------- every fault reaches the fault sink

/// A compute pipeline descriptor for `shader` with entry point `entry`.
fn compute_desc(
    shader: &web_sys::GpuShaderModule,
    entry: &str,
) -> web_sys::GpuComputePipelineDescriptor {
    let stage = web_sys::GpuProgrammableStage::new(shader);
    stage.set_entry_point(entry);
    web_sys::GpuComputePipelineDescriptor::new_with_gpu_auto_layout_mode(
        web_sys::GpuAutoLayoutMode::Auto,
        &stage,
    )
}

#[wasm_bindgen_test]
async fn a_pipeline_dropped_unawaited_reaches_the_net_and_rejects_nothing_unhandled() {
    // An application's `build` starts two pipelines, the first invalid, and a
    // `?` after them returns early: both are dropped unawaited. The first one's
    // rejection must reach the fault sink (once), never the page as an unhandled
    // rejection; the valid one reports nothing.
    let (d, net, _events) = device_with_net(raw_device().await);
    let rejections = count_unhandled_rejections();
    let shader = d
        .create_shader_module(
            "dropped-pipeline-shader",
            "@compute @workgroup_size(1) fn main() {}",
            &[],
        )
        .await
        .unwrap();
    let bad = compute_desc(&shader.module, "does_not_exist");
    let good = compute_desc(&shader.module, "main");
    fn build(
        d: &GuardedDevice,
        bad: &web_sys::GpuComputePipelineDescriptor,
        good: &web_sys::GpuComputePipelineDescriptor,
    ) -> Result<(), Fault> {
        let first = d.start_compute_pipeline("dropped-unawaited", bad);
        let second = d.start_compute_pipeline("dropped-valid", good);
        // Refused before any GPU call (a buffer needs a label): returns early.
        let _ = d.create_buffer("", 4, BufferUsages::UNIFORM)?;
        let _ = (first, second);
        unreachable!()
    }
    assert!(build(&d, &bad, &good).is_err());
    wait_until("the dropped pipeline's fault", || {
        net.groups()
            .iter()
            .any(|g| g.kind == FaultKind::Pipeline && g.label == "dropped-unawaited")
    })
    .await;
    // The page reports an unhandled rejection after the task that rejected.
    TimeoutFuture::new(300).await;
    assert_eq!(rejections.count.get(), 0, "an unhandled rejection escaped");
    let stats = net.stats();
    assert_eq!(stats.other, 1, "{stats:?} {:?}", net.recent_lines());
    assert_eq!(stats.total_errors(), 1, "{stats:?}");
    // An awaited one is still reported once, by `finish`.
    let fault = d
        .start_compute_pipeline("finished-bad", &bad)
        .finish()
        .await
        .expect_err("rejected");
    assert!(fault.is_reported());
    assert_eq!(net.stats().other, 2);
}

#[wasm_bindgen_test]
async fn an_awaited_scope_hands_what_it_caught_to_the_net_exactly_once() {
    let (d, net, _events) = device_with_net(raw_device().await);
    // Awaited and dropped: nobody forwards it, the outcome does.
    let scope = ScopeSet::push(&d, &Filter::ALL);
    bad_buffer(&d, "awaited-and-dropped");
    let outcome = scope.pop().await;
    assert!(
        outcome.caught(FaultKind::Validation).is_some(),
        "{outcome:?}"
    );
    drop(outcome);
    flush(&d).await;
    settle().await;
    assert_eq!(net.stats().validation, 1, "{:?}", net.recent_lines());
    // Forwarded by the caller as well (reported, returned as `Err`): still once.
    let scope = ScopeSet::push(&d, &[Filter::Validation]);
    bad_buffer(&d, "awaited-and-forwarded");
    let outcome = scope.pop().await;
    for fault in outcome.faults() {
        net.report_ref(fault);
    }
    let returned = net.report(outcome.faults()[0].clone());
    assert!(returned.is_reported());
    drop(outcome);
    assert_eq!(net.stats().validation, 2, "{:?}", net.recent_lines());
    // Awaited through `wait` and `wait_all`.
    let scope = ScopeSet::push(&d, &[Filter::Validation]);
    bad_buffer(&d, "awaited-by-wait");
    let _ = scope.close().wait().await;
    let scope = ScopeSet::push(&d, &[Filter::Validation]);
    bad_buffer(&d, "awaited-by-wait-all");
    let outcomes = wait_all(vec![scope.close()]).await;
    assert_eq!(outcomes[0].faults().len(), 1);
    drop(outcomes);
    assert_eq!(net.stats().validation, 4, "{:?}", net.recent_lines());
    // Taken with `into_fault`: the caller's, to return as `Err` (the runtime
    // reports it) or to report; counted once when it is.
    let scope = ScopeSet::push(&d, &[Filter::Validation]);
    bad_buffer(&d, "taken-by-into-fault");
    let fault = scope.pop().await.into_fault().expect("caught");
    assert!(!fault.is_reported());
    assert_eq!(net.stats().validation, 4);
    net.report_ref(&fault);
    assert_eq!(net.stats().validation, 5);
    // The library's own waits forward what they catch themselves: once.
    let phase = d
        .phase("reported-once", || {
            bad_buffer(&d, "in-a-phase");
            Ok(())
        })
        .await;
    assert!(phase.expect_err("caught").is_reported());
    flush(&d).await;
    settle().await;
    assert_eq!(net.stats().validation, 6, "{:?}", net.recent_lines());
    assert_eq!(net.stats().total_errors(), 6, "{:?}", net.recent_lines());
    // Batched with a pop without a push (whose rejection a test reads as its
    // answer): each outcome owns its own faults, the application's included.
    let scope = ScopeSet::push(&d, &[Filter::Validation]);
    bad_buffer(&d, "batched-with-an-unmatched-pop");
    let outcomes = wait_all(vec![scope.close(), pop_unmatched(&d)]).await;
    assert_eq!(outcomes[1].faults()[0].kind, FaultKind::ScopeStack);
    drop(outcomes);
    let stats = net.stats();
    assert_eq!((stats.validation, stats.other), (7, 1), "{stats:?}");
    // A clone owns nothing: what it hands back stays marked, and the original
    // reports it, once.
    let scope = ScopeSet::push(&d, &[Filter::Validation]);
    bad_buffer(&d, "awaited-and-cloned");
    let outcome = scope.pop().await;
    let copy = outcome.clone().into_fault().expect("caught");
    assert!(copy.is_reported(), "{copy:?}");
    net.report_ref(&copy);
    drop(outcome);
    assert_eq!(net.stats().validation, 8, "{:?}", net.recent_lines());
    assert_stack_balanced(&d).await;
}

/// A live error whose listener a sanitizer removed while it handed its held
/// counts over (the drain that runs before a live error) is written as the
/// live error it is, not counted among the errors the silence held back.
#[wasm_bindgen_test]
async fn a_live_error_a_removed_listener_left_behind_is_written_not_held() {
    let d = device().await;
    let net = FaultSink::new(Rc::new(Cell::new(40)));
    let events = collect_telemetry(&net);
    let listener = Rc::new(RefCell::new(Some(net.install(d.raw()))));
    let owned = listener.clone();
    net.set_sanitizer(Some(Box::new(move |text: &str| {
        if text.contains("remove-the-listener") {
            let taken = owned.borrow_mut().take();
            drop(taken);
        }
        text.to_string()
    })));
    // The page's clock, set by hand: the held group and the live error come
    // in one go, before the listener's 100 ms timer hands the group over.
    let clock = js_sys::Function::new_with_args(
        "ms",
        "if (ms === undefined) { delete performance.now; } \
         else { performance.now = () => ms; }",
    );
    /// Gives the page its clock back, whatever happens to the test.
    struct RealClock(js_sys::Function);
    impl Drop for RealClock {
        fn drop(&mut self) {
            let _ = self.0.call0(&JsValue::NULL);
        }
    }
    let real_clock = RealClock(clock.clone());
    clock.call1(&JsValue::NULL, &1.0e9.into()).unwrap();
    // Five lines and the cut-off line: the log is silent from here, and the
    // listener holds what comes meanwhile.
    for i in 0..10 {
        dispatch_uncaptured(d.raw(), 1, &format!("[Buffer \"warm-up\"] {i}"));
    }
    for i in 0..2 {
        dispatch_uncaptured(d.raw(), 1, &format!("[Buffer \"remove-the-listener\"] {i}"));
    }
    // (Nothing read here: a reading hands the held counts over.)
    // The silence over, a live error: the listener first hands the held group
    // over, whose sanitising removes the listener.
    clock
        .call1(&JsValue::NULL, &(1.0e9 + 1100.0).into())
        .unwrap();
    dispatch_uncaptured(d.raw(), 1, "[Texture \"live-after-removal\"] written");
    drop(real_clock);
    assert!(
        listener.borrow().is_none(),
        "the sanitizer removed the listener"
    );
    // Handed over by itself, with nothing reading the fault sink first: the
    // telemetry sink hears it.
    settle().await;
    let sent: Vec<String> = events.iter().map(|e| describe_event(&e)).collect();
    assert!(
        sent.iter().any(|e| e.contains("live-after-removal")),
        "never sent: {sent:?}"
    );
    let stats = net.stats();
    assert_eq!(stats.validation, 13, "{stats:?}");
    // The cut-off's error, the four the listener held after it and the two
    // held later: the live error is none of them.
    assert_eq!(stats.suppressed, 7, "{stats:?}");
    assert_eq!(stats.held_by_listener, 6, "{stats:?}");
    assert_eq!(stats.logged, 7, "{stats:?}");
    let lines = net.recent_lines().join("\n");
    assert!(
        lines.contains("live-after-removal"),
        "never written: {lines}"
    );
}

#[wasm_bindgen_test]
async fn a_listener_removed_by_the_sanitizer_hands_its_held_counts_over_at_once() {
    // The sanitizer runs before the log is borrowed (as the telemetry sink runs
    // after). One that removes the listener (drops its guard) while the listener
    // holds counts makes `close()` hand them over: they reach the log at once,
    // tagged with the frame of that moment, none lost.
    let d = device().await;
    let net = FaultSink::new(Rc::new(Cell::new(30)));
    let listener = Rc::new(RefCell::new(Some(net.install(d.raw()))));
    // Five lines and the cut-off line: the log is silent from here.
    for i in 0..10 {
        dispatch_uncaptured(d.raw(), 1, &format!("[Buffer \"busy-warm-up\"] {i}"));
    }
    let device = d.raw().clone();
    let owned = listener.clone();
    net.set_sanitizer(Some(Box::new(move |text: &str| {
        if text == "remove-the-listener" {
            // Held by the listener (the log is silent), then the listener goes.
            for i in 0..7 {
                dispatch_uncaptured(&device, 2, &format!("[Texture \"held-while-busy\"] {i}"));
            }
            let taken = owned.borrow_mut().take();
            drop(taken);
        }
        text.to_string()
    })));
    net.report(Fault::new(FaultKind::Validation, "the trigger").on_object("remove-the-listener"));
    assert!(listener.borrow().is_none(), "the sanitizer ran");
    assert!(!net.is_installed());
    let stats = net.stats();
    assert_eq!(stats.out_of_memory, 7, "{stats:?}");
    assert_eq!(stats.total_errors(), 18, "{stats:?}");
    let held = net
        .groups()
        .into_iter()
        .find(|g| g.label == "held-while-busy")
        .map(|g| (g.occurrences, g.last_frame));
    assert_eq!(held, Some((7, Some(30))));
    // Handed over on their own too, soon after, without waiting for a reading.
    let frame = Rc::new(Cell::new(31));
    let net = FaultSink::new(frame.clone());
    let listener = Rc::new(RefCell::new(Some(net.install(d.raw()))));
    for i in 0..10 {
        dispatch_uncaptured(d.raw(), 1, &format!("[Buffer \"busy-warm-up-2\"] {i}"));
    }
    let device = d.raw().clone();
    let owned = listener.clone();
    net.set_sanitizer(Some(Box::new(move |text: &str| {
        if text == "remove-the-listener" {
            for i in 0..3 {
                dispatch_uncaptured(&device, 3, &format!("[Buffer \"held-again\"] {i}"));
            }
            let taken = owned.borrow_mut().take();
            drop(taken);
        }
        text.to_string()
    })));
    // Set directly (no hand-over), only to see which moment tags them.
    frame.set(32);
    net.report(Fault::new(FaultKind::Validation, "the trigger").on_object("remove-the-listener"));
    assert_eq!(
        net.last_uncaptured_frame(),
        Some(32),
        "handed over while the sanitizer ran, the log not borrowed"
    );
    let stats = net.stats();
    assert_eq!(stats.internal, 3, "{stats:?}");
    assert_eq!(stats.handler_failures, 0, "{stats:?}");
    settle().await;
    assert_eq!(net.stats().internal, 3, "nothing counted twice");
}

/// A frame whose scopes someone else popped: its own pops reject on a device
/// that is alive, which is a misused stack and is said so; the same rejection on
/// a device that is gone is the loss, which the loss watcher says (see
/// `guard_pop_report`; a GPU-process crash makes it, driven end to end).
#[wasm_bindgen_test]
async fn a_frame_whose_scopes_were_taken_reports_the_misuse_on_a_live_device() {
    let (d, net, _) = device_with_net(raw_device().await);
    let rejections = count_unhandled_rejections();
    let frame = d.begin_frame(32);
    assert!(frame.is_scoped());
    for _ in 0..Filter::ALL.len() {
        pop_unmatched(&d).detach();
    }
    frame.end();
    wait_until("the scope-stack fault", || {
        net.groups().iter().any(|g| g.kind == FaultKind::ScopeStack)
    })
    .await;
    let line = net.recent_lines().join("\n");
    assert!(line.contains("at frame 32"), "{line}");
    assert_eq!(rejections.count.get(), 0, "an unhandled rejection escaped");
}

/// Two phases of one device waiting at the same time: each keeps the per-call
/// scopes and call sites of its own work (taken before it awaits), so each
/// fails naming its own phase and call, and neither takes the other's.
#[wasm_bindgen_test]
async fn two_phases_waiting_at_once_each_keep_their_own_calls() {
    use std::future::Future;
    use std::task::{Context, Waker};
    for level in [DiagnosticsLevel::Attributed, DiagnosticsLevel::PerCall] {
        let d = device().await;
        d.set_level(level);
        let (mut line_a, mut line_b) = (0, 0);
        let bad = BufferUsages::MAP_READ | BufferUsages::MAP_WRITE;
        let mut a = Box::pin(d.phase("phase-a", || {
            line_a = line!() + 1;
            d.create_buffer("bad-in-a", 64, bad).map(|_| ())
        }));
        let mut b = Box::pin(d.phase("phase-b", || {
            line_b = line!() + 1;
            d.create_buffer("bad-in-b", 64, bad).map(|_| ())
        }));
        // Both run their work and wait: `a` first, then `b`.
        let mut context = Context::from_waker(Waker::noop());
        assert!(a.as_mut().poll(&mut context).is_pending());
        assert!(b.as_mut().poll(&mut context).is_pending());
        let (a, b) = (a.await, b.await);
        let names_its_call = level == DiagnosticsLevel::PerCall || engine_quotes_labels();
        for (result, phase, object, line) in [
            (a, "phase-a", "bad-in-a", line_a),
            (b, "phase-b", "bad-in-b", line_b),
        ] {
            let fault = result.expect_err(&format!("{phase} fails at {level:?}"));
            assert_eq!(
                fault.origin.phase.as_deref(),
                Some(phase),
                "{level:?}: {fault}"
            );
            assert!(fault.related.is_empty(), "{level:?}: {fault}");
            if names_its_call {
                assert_eq!(fault.origin.object.as_deref(), Some(object), "{fault}");
                assert_eq!(
                    fault.origin.call_site.map(|s| s.line),
                    Some(line),
                    "{fault}"
                );
            }
        }
        assert_eq!(
            d.recorded_call_sites(),
            0,
            "call sites kept after the phases"
        );
        assert_stack_balanced(&d).await;
    }
}

/// A phase started inside another phase's work (polled there, awaited after)
/// names its own call from the sites recorded so far: the outer phase takes
/// them, and the inner one reads a copy.
#[wasm_bindgen_test]
async fn a_phase_started_inside_another_s_work_names_its_call() {
    use std::future::Future;
    use std::task::{Context, Waker};
    if !engine_quotes_labels() {
        return; // Attribution reads the label the engine quotes.
    }
    let d = device().await;
    d.set_level(DiagnosticsLevel::Attributed);
    let bad = BufferUsages::MAP_READ | BufferUsages::MAP_WRITE;
    let mut line = 0;
    let mut inner = None;
    let outer = d
        .phase("outer", || {
            let mut started = Box::pin(d.phase("inner", || {
                line = line!() + 1;
                d.create_buffer("bad-in-the-inner-phase", 64, bad)
                    .map(|_| ())
            }));
            let mut context = Context::from_waker(Waker::noop());
            assert!(started.as_mut().poll(&mut context).is_pending());
            inner = Some(started);
            Ok(())
        })
        .await;
    let fault = inner
        .expect("started")
        .await
        .expect_err("the inner phase fails");
    assert_eq!(fault.origin.phase.as_deref(), Some("inner"), "{fault}");
    assert_eq!(
        fault.origin.call_site.map(|s| s.line),
        Some(line),
        "{fault}"
    );
    // The inner phase's scopes, innermost, caught it: the outer saw nothing.
    assert!(outer.is_ok(), "{outer:?}");
    d.set_level(DiagnosticsLevel::Phases);
}

#[wasm_bindgen_test]
async fn attributed_call_sites_of_an_unawaited_phase_are_cleared_with_it() {
    let d = device().await;
    d.set_level(DiagnosticsLevel::Attributed);
    for _ in 0..5 {
        let buffers = d.phase_now("resize", || {
            let a = d.create_buffer("resize-a", 64, BufferUsages::UNIFORM)?;
            let b = d.create_buffer("resize-b", 64, BufferUsages::UNIFORM)?;
            Ok((a, b))
        });
        assert!(buffers.is_ok());
        assert_eq!(
            d.recorded_call_sites(),
            0,
            "call sites kept after the phase"
        );
    }
    d.set_level(DiagnosticsLevel::Phases);
}

#[wasm_bindgen_test]
async fn a_per_call_creation_whose_closure_throws_through_wasm_leaves_the_stack_balanced() {
    let d = device().await;
    d.set_level(DiagnosticsLevel::PerCall);
    let created: Result<_, Fault> = d.track("throwing-creation", 0, || {
        // A raw binding that does not catch: the exception crosses the closure.
        let raw: web_sys::GpuQueue = js_sys::Object::new().unchecked_into();
        raw.submit(&[]);
        Ok(d.raw().create_sampler())
    });
    let fault = created.err().expect("the creation fails");
    assert_eq!(fault.kind, FaultKind::Exception, "{fault}");
    assert!(fault.to_string().contains("throwing-creation"), "{fault}");
    d.set_level(DiagnosticsLevel::Phases);
    settle().await;
    assert_stack_balanced(&d).await;
}

/// An HTTP sink refuses a URL it could never send to, naming it and why; one
/// whose collector cannot be reached takes every error without a throw, fails
/// its requests with the reason, and keeps what it holds (nothing dropped).
#[wasm_bindgen_test]
async fn an_http_sink_refuses_a_bad_url_and_holds_what_it_cannot_send() {
    use webgpu_guard::telemetry::outbox::ExportConfig;
    use webgpu_guard::web::HttpSink;
    for (url, why) in [
        ("http://", "not a URL"),
        ("ftp://example.com/v1/logs", "the scheme is ftp:"),
    ] {
        let refused = HttpSink::new(url, "test").unwrap_err();
        assert!(refused.contains(url) && refused.contains(why), "{refused}");
    }
    // Port 9 of loopback: fetch refuses it (a "bad port") or nothing listens.
    let config = ExportConfig {
        interval_ms: 50,
        retry_cap_ms: 100,
        ..ExportConfig::default()
    };
    let sink = HttpSink::with_config("http://127.0.0.1:9/v1/logs", "test", config).unwrap();
    let net = FaultSink::new(Rc::new(Cell::new(0)));
    net.set_sink(Box::new(sink.clone()));
    for i in 0..30 {
        net.report_ref(
            &Fault::new(FaultKind::Validation, format!("bad {i}")).on_object("vertices"),
        );
    }
    wait_until("two failed requests", || sink.stats().failed_requests >= 2).await;
    let stats = sink.stats();
    assert_eq!(stats.counted, 30, "{stats:?}");
    assert_eq!(stats.pending + stats.in_flight, 30, "{stats:?}");
    assert_eq!((stats.dropped, stats.delivered), (0, 0), "{stats:?}");
    let failure = stats.last_failure.unwrap_or_default();
    assert!(failure.starts_with("no answer"), "{failure}");
    assert_eq!(net.stats().sink_failures, 0);
}

/// A sink replaced while errors wait in it sends them at once, in page-hide
/// requests (what it cannot send when nothing else holds it is counted by
/// the fault sink: `Outbox::give_up`, tested on the host).
#[wasm_bindgen_test]
async fn a_replaced_http_sink_sends_what_waits_or_counts_it_dropped() {
    use webgpu_guard::telemetry::outbox::ExportConfig;
    use webgpu_guard::telemetry::MemorySink;
    use webgpu_guard::web::HttpSink;
    // A minute between requests: after the first, errors wait.
    let config = || ExportConfig {
        interval_ms: 60_000,
        ..ExportConfig::default()
    };
    let report = |net: &FaultSink| {
        for i in 0..5 {
            net.report_ref(
                &Fault::new(FaultKind::Validation, format!("bad {i}"))
                    .on_object(&format!("waiting-{i}")),
            );
        }
    };
    // Held by the test too: replaced, it sends what waits now.
    let sink = HttpSink::with_config("http://127.0.0.1:9/v1/logs", "test", config()).unwrap();
    let net = FaultSink::new(Rc::new(Cell::new(0)));
    net.set_sink(Box::new(sink.clone()));
    report(&net);
    wait_until("errors waiting", || sink.stats().pending >= 4).await;
    let waiting = sink.stats().pending;
    net.set_sink(Box::new(MemorySink::default()));
    let stats = sink.stats();
    assert_eq!(stats.pending, 0, "{stats:?}");
    assert_eq!(stats.beaconed, waiting, "{stats:?}");
    assert_eq!(net.stats().telemetry_dropped, 0);
}

const FILL_WGSL: &str = "
@vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
  let corners = array(vec2f(-1.0, -1.0), vec2f(3.0, -1.0), vec2f(-1.0, 3.0));
  return vec4f(corners[i], 0.0, 1.0);
}
@fragment fn fs() -> @location(0) vec4f { return vec4f(0.0, 1.0, 0.0, 1.0); }
";

/// A 4x4 RGBA8 target, its pixels read back through a buffer.
async fn fill_pipeline(
    d: &GuardedDevice,
) -> webgpu_guard::web::Tracked<web_sys::GpuRenderPipeline> {
    let shader = d
        .create_shader_module("fill", FILL_WGSL, &[])
        .await
        .unwrap();
    let vertex = web_sys::GpuVertexState::new(&shader.module);
    vertex.set_entry_point("vs");
    let target = web_sys::GpuColorTargetState::new(GpuTextureFormat::Rgba8unorm);
    let fragment =
        web_sys::GpuFragmentState::new(&shader.module, &[webgpu_guard::web::nullable(&target)]);
    fragment.set_entry_point("fs");
    let desc = web_sys::GpuRenderPipelineDescriptor::new_with_gpu_auto_layout_mode(
        web_sys::GpuAutoLayoutMode::Auto,
        &vertex,
    );
    desc.set_fragment(&fragment);
    d.start_render_pipeline("fill", &desc)
        .finish()
        .await
        .unwrap()
}

fn texel_copy(texture: &web_sys::GpuTexture) -> web_sys::GpuTexelCopyTextureInfo {
    web_sys::GpuTexelCopyTextureInfo::new(texture)
}

fn extent(width: u32, height: u32) -> web_sys::GpuExtent3dDict {
    let size = web_sys::GpuExtent3dDict::new(width);
    size.set_height(height);
    size
}

/// Every pixel of a 4x4 RGBA8 texture, read back (rows padded to 256 bytes).
async fn read_pixels(d: &GuardedDevice, texture: &web_sys::GpuTexture) -> Vec<[u8; 4]> {
    let readback = d
        .create_buffer(
            "pixels-readback",
            256 * 4,
            BufferUsages::MAP_READ | BufferUsages::COPY_DST,
        )
        .unwrap();
    let encoder = d.create_command_encoder("read-pixels").unwrap();
    let layout = web_sys::GpuTexelCopyBufferInfo::new(&readback);
    layout.set_bytes_per_row(256);
    encoder
        .copy_texture_to_buffer(&texel_copy(texture), &layout, &extent(4, 4))
        .unwrap();
    d.submit(&[encoder.finish().unwrap()]).unwrap();
    let bytes = d.read_buffer(&readback, 0, 256 * 4).await.unwrap();
    (0..16)
        .map(|i| {
            let at = (i / 4) * 256 + (i % 4) * 4;
            [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]
        })
        .collect()
}

/// `writeTexture`, a render bundle replayed under a scissor rectangle, debug
/// groups, `copyTextureToBuffer` and a mapped readback, through the guard:
/// the picture is exactly what they describe, and no scope is left open.
#[wasm_bindgen_test]
async fn textures_bundles_scissor_and_readback_work_through_the_guard() {
    let (d, net, _) = device_with_net(raw_device().await);
    let texture = d
        .create_texture(&TextureSpec::d2(
            "target-4x4",
            GpuTextureFormat::Rgba8unorm,
            4,
            4,
            TextureUsages::RENDER_ATTACHMENT | TextureUsages::COPY_SRC | TextureUsages::COPY_DST,
        ))
        .unwrap();
    // Blue everywhere, from CPU bytes.
    let blue: Vec<u8> = (0..16).flat_map(|_| [0u8, 0, 255, 255]).collect();
    let layout = web_sys::GpuTexelCopyBufferLayout::new();
    layout.set_bytes_per_row(16);
    d.write_texture(&texel_copy(&texture), &blue, &layout, &extent(4, 4))
        .unwrap();
    assert!(read_pixels(&d, &texture)
        .await
        .iter()
        .all(|p| *p == [0, 0, 255, 255]));

    // Green through a bundle, in the top-left 2x2 only.
    let pipeline = fill_pipeline(&d).await;
    let format = js_sys::JsString::from("rgba8unorm");
    let bundle_desc =
        web_sys::GpuRenderBundleEncoderDescriptor::new(&[webgpu_guard::web::nullable(&format)]);
    let bundle = d
        .create_render_bundle_encoder("fill-bundle", &bundle_desc)
        .unwrap();
    bundle.push_debug_group("fill").unwrap();
    bundle.set_pipeline(&pipeline).unwrap();
    bundle.draw(3, 1, 0, 0).unwrap();
    bundle.pop_debug_group().unwrap();
    let bundle = bundle.finish().unwrap();
    assert_eq!(bundle.ledger_label(), "fill-bundle");
    let counted = d.ledger().report();
    assert_eq!(
        counted
            .kind(webgpu_guard::ledger::ObjectKind::RenderBundle)
            .objects,
        1
    );
    let view = texture.create_view().unwrap();
    let color = web_sys::GpuRenderPassColorAttachment::new_with_gpu_texture_view(
        web_sys::GpuLoadOp::Load,
        web_sys::GpuStoreOp::Store,
        &view,
    );
    let encoder = d.create_command_encoder("scissored").unwrap();
    encoder.push_debug_group("frame").unwrap();
    let pass = encoder
        .begin_render_pass(&web_sys::GpuRenderPassDescriptor::new(&[
            webgpu_guard::web::nullable(&color),
        ]))
        .unwrap();
    pass.set_scissor_rect(0, 0, 2, 2).unwrap();
    pass.insert_debug_marker("bundle").unwrap();
    pass.execute_bundles(&[&bundle]).unwrap();
    pass.end().unwrap();
    encoder.pop_debug_group().unwrap();
    d.submit(&[encoder.finish().unwrap()]).unwrap();
    let pixels = read_pixels(&d, &texture).await;
    for (i, pixel) in pixels.iter().enumerate() {
        let inside = i % 4 < 2 && i / 4 < 2;
        let expected = if inside {
            [0, 255, 0, 255]
        } else {
            [0, 0, 255, 255]
        };
        assert_eq!(*pixel, expected, "pixel {i}");
    }
    assert_eq!(net.stats().validation, 0, "{:?}", net.recent_lines());
    assert_stack_balanced(&d).await;
}

/// A bad call through the new wrappers is an `Err` naming the call and the
/// object, never a throw through WebAssembly: a scissor rectangle with a
/// non-finite blend constant, a debug group popped that was never pushed.
#[wasm_bindgen_test]
async fn a_malformed_command_is_an_err_naming_the_call() {
    let d = device().await;
    let encoder = d.create_command_encoder("malformed").unwrap();
    let texture = d
        .create_texture(&TextureSpec::d2(
            "malformed-target",
            GpuTextureFormat::Rgba8unorm,
            4,
            4,
            TextureUsages::RENDER_ATTACHMENT,
        ))
        .unwrap();
    let view = texture.create_view().unwrap();
    let color = web_sys::GpuRenderPassColorAttachment::new_with_gpu_texture_view(
        web_sys::GpuLoadOp::Clear,
        web_sys::GpuStoreOp::Store,
        &view,
    );
    let pass = encoder
        .begin_render_pass(&web_sys::GpuRenderPassDescriptor::new(&[
            webgpu_guard::web::nullable(&color),
        ]))
        .unwrap();
    // A blend constant of NaN is a TypeError in WebIDL (a `double`, not
    // `unrestricted double`): thrown synchronously.
    let fault = pass
        .set_blend_constant([f64::NAN, 0.0, 0.0, 1.0])
        .unwrap_err();
    assert_eq!(fault.kind, FaultKind::Exception, "{fault}");
    assert!(fault.message.starts_with("setBlendConstant: "), "{fault}");
    assert_eq!(fault.origin.object.as_deref(), Some("malformed"));
    // The caller's line, not the library's.
    let site = fault.origin.call_site.expect("a call site");
    assert!(
        site.file.ends_with("web.rs") && site.file.starts_with("tests"),
        "{site:?}"
    );
    pass.end().unwrap();
    assert_stack_balanced(&d).await;
}

/// Readback across loss: a map pending when its device is destroyed, a map on
/// a device already lost, and a map whose buffer is destroyed first end in an
/// `Err` naming the buffer, and nothing is left unhandled.
#[wasm_bindgen_test]
async fn a_readback_across_a_loss_ends_in_an_err_naming_the_buffer() {
    use webgpu_guard::usage::MapModes;
    let d = device().await;
    let watch = d.watch_lost(|_, _| {});
    let data: Vec<u8> = (0..64).collect();
    let source = d
        .create_buffer_init("readback-source", BufferUsages::COPY_SRC, &data)
        .unwrap();
    let readback = d
        .create_buffer(
            "readback-target",
            64,
            BufferUsages::MAP_READ | BufferUsages::COPY_DST,
        )
        .unwrap();
    let encoder = d.create_command_encoder("readback").unwrap();
    encoder
        .copy_buffer_to_buffer(&source, 0, &readback, 0, 64)
        .unwrap();
    d.submit(&[encoder.finish().unwrap()]).unwrap();
    assert_eq!(d.read_buffer(&readback, 0, 64).await.unwrap(), data);

    // The buffer destroyed while its map is pending.
    let doomed = d
        .create_buffer("readback-doomed", 64, BufferUsages::MAP_READ)
        .unwrap();
    let pending = started(d.map_async(&doomed, MapModes::READ, 0, None));
    doomed.destroy();
    let fault = pending.await.unwrap_err();
    assert!(fault.to_string().contains("\"readback-doomed\""), "{fault}");

    // The device destroyed while a map is pending.
    let pending = started(d.read_buffer(&readback, 0, 64));
    d.raw().destroy();
    let fault = pending.await.unwrap_err();
    assert!(fault.to_string().contains("\"readback-target\""), "{fault}");
    wait_until("the loss is seen", || d.is_lost()).await;
    // A map on a device known to be lost.
    let fault = d.read_buffer(&readback, 0, 64).await.unwrap_err();
    assert_eq!(fault.kind, FaultKind::DeviceLost, "{fault}");
    assert!(fault.to_string().contains("\"readback-target\""), "{fault}");
    drop(watch);
}

// ---------------------------------------------------------------- wrong shapes

/// Polls `future` once, so that its work starts, and hands it back to be
/// awaited (or dropped) later.
fn started<F: std::future::Future>(future: F) -> std::pin::Pin<Box<F>> {
    let mut future = Box::pin(future);
    let _ = future
        .as_mut()
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()));
    future
}

/// `buffer.mapState`, read as a plain property.
fn map_state(buffer: &web_sys::GpuBuffer) -> String {
    webgpu_guard::web::js::text_field(buffer, "mapState")
}

type ShapeOp = fn(&GuardedDevice) -> Result<(), Fault>;

/// Every guarded method that takes a WebGPU object or a descriptor holding
/// one, given a plain object in its place (an application's `unchecked_into`).
fn wrong_shape_calls() -> Vec<(&'static str, ShapeOp)> {
    use web_sys::{
        GpuCopyExternalImageDestInfo, GpuCopyExternalImageSourceInfo, GpuExtent3dDict,
        GpuTexelCopyBufferInfo, GpuTexelCopyBufferLayout, GpuTexelCopyTextureInfo,
    };
    fn texture_info() -> GpuTexelCopyTextureInfo {
        GpuTexelCopyTextureInfo::new(&not_a())
    }
    fn extent() -> GpuExtent3dDict {
        GpuExtent3dDict::new(1)
    }
    vec![
        ("writeBuffer", |d| d.write_buffer(&not_a(), 0, &[0; 4])),
        ("writeTexture", |d| {
            d.write_texture(
                &texture_info(),
                &[0; 4],
                &GpuTexelCopyBufferLayout::new(),
                &extent(),
            )
        }),
        ("copyExternalImageToTexture", |d| {
            d.copy_external_image_to_texture(
                &GpuCopyExternalImageSourceInfo::new_with_html_canvas_element(&not_a()),
                &GpuCopyExternalImageDestInfo::new(&not_a()),
                &extent(),
            )
        }),
        ("getMappedRange", |d| {
            d.get_mapped_range(&not_a(), 0, None).map(drop)
        }),
        ("unmap", |d| d.unmap(&not_a())),
        ("clearBuffer", |d| {
            d.create_command_encoder("shape")?.clear_buffer(&not_a())
        }),
        ("copyBufferToBuffer", |d| {
            d.create_command_encoder("shape")?
                .copy_buffer_to_buffer(&not_a(), 0, &not_a(), 0, 4)
        }),
        ("copyBufferToTexture", |d| {
            d.create_command_encoder("shape")?.copy_buffer_to_texture(
                &GpuTexelCopyBufferInfo::new(&not_a()),
                &texture_info(),
                &extent(),
            )
        }),
        ("copyTextureToBuffer", |d| {
            d.create_command_encoder("shape")?.copy_texture_to_buffer(
                &texture_info(),
                &GpuTexelCopyBufferInfo::new(&not_a()),
                &extent(),
            )
        }),
        ("copyTextureToTexture", |d| {
            d.create_command_encoder("shape")?.copy_texture_to_texture(
                &texture_info(),
                &texture_info(),
                &extent(),
            )
        }),
        ("resolveQuerySet", |d| {
            d.create_command_encoder("shape")?
                .resolve_query_set(&not_a(), 0, 1, &not_a(), 0)
        }),
        ("drawIndirect", |d| {
            render_pass(d)?.draw_indirect(&not_a(), 0)
        }),
        ("executeBundles", |d| {
            render_pass(d)?.execute_bundles(&[&not_a()])
        }),
        ("dispatchWorkgroupsIndirect", |d| {
            d.create_command_encoder("shape")?
                .begin_compute_pass()?
                .dispatch_workgroups_indirect(&not_a(), 0)
        }),
    ]
}

/// Every guarded method, given a value of the wrong shape, returns `Err`
/// naming the call: nothing throws through WebAssembly (not even its own error
/// path, which reads the object's label), and no scope is left open.
#[wasm_bindgen_test]
async fn every_guarded_method_given_a_value_of_the_wrong_shape_returns_err() {
    use webgpu_guard::usage::MapModes;
    let d = device().await;
    for (name, op) in wrong_shape_calls() {
        let mut result = None;
        let thrown = webgpu_guard::web::crash::trampoline(&mut || result = Some(op(&d)));
        assert!(thrown.is_ok(), "{name} threw through WebAssembly");
        let fault = result.expect(name).expect_err(name);
        assert!(fault.message.contains(name), "{name}: {fault}");
    }
    // The reads, polled through the trampoline.
    let map =
        webgpu_guard::web::crash::Trampolined::new(d.map_async(&not_a(), MapModes::READ, 0, None))
            .await;
    assert!(map.expect("mapAsync threw").is_err());
    let read = webgpu_guard::web::crash::Trampolined::new(d.read_buffer(&not_a(), 0, 4)).await;
    assert!(read.expect("a read threw").is_err());
    assert_stack_balanced(&d).await;
}

/// A readback does nothing until polled, and one dropped mid-flight (a
/// `select!`, a cancelled task, a `?` before it was spawned) leaves its buffer
/// unmapped: the next read of it, and a copy into it, work.
#[wasm_bindgen_test]
async fn a_readback_dropped_mid_flight_leaves_its_buffer_usable() {
    let (d, net, _) = device_with_net(raw_device().await);
    let data: Vec<u8> = (0..64).collect();
    let source = d
        .create_buffer_init("dropped-read-source", BufferUsages::COPY_SRC, &data)
        .unwrap();
    let readback = d
        .create_buffer(
            "dropped-read-target",
            64,
            BufferUsages::MAP_READ | BufferUsages::COPY_DST,
        )
        .unwrap();
    let copy = || {
        let encoder = d.create_command_encoder("dropped-read-copy").unwrap();
        encoder
            .copy_buffer_to_buffer(&source, 0, &readback, 0, 64)
            .unwrap();
        d.submit(&[encoder.finish().unwrap()]).unwrap();
    };
    copy();
    // Made and never polled: nothing starts.
    let unpolled = d.read_buffer(&readback, 0, 64);
    assert_eq!(map_state(&readback), "unmapped");
    drop(unpolled);
    // Started, then dropped before it completes.
    let in_flight = started(d.read_buffer(&readback, 0, 64));
    assert_eq!(map_state(&readback), "pending");
    drop(in_flight);
    assert_eq!(map_state(&readback), "unmapped");
    // The same buffer copied into and read again.
    copy();
    assert_eq!(d.read_buffer(&readback, 0, 64).await.unwrap(), data);
    flush(&d).await;
    settle().await;
    assert_eq!(net.stats().validation, 0, "{:?}", net.groups());
}

// ---------------------------------------------------------------- the culprit

/// A compute bind group layout with one storage buffer of at least 16 bytes.
fn reduce_layout(d: &GuardedDevice) -> webgpu_guard::web::Tracked<web_sys::GpuBindGroupLayout> {
    let buffer = web_sys::GpuBufferBindingLayout::new();
    buffer.set_type(web_sys::GpuBufferBindingType::Storage);
    buffer.set_min_binding_size(16);
    let entry =
        web_sys::GpuBindGroupLayoutEntry::new(0, webgpu_guard::usage::ShaderStages::COMPUTE.bits());
    entry.set_buffer(&buffer);
    d.create_bind_group_layout(
        "reduce-layout",
        &web_sys::GpuBindGroupLayoutDescriptor::new(&[entry.into()]),
    )
    .unwrap()
}

/// A newcomer's mistake: a bind group that binds an 8-byte buffer where its
/// layout asks for 16 bytes at least. At every level and on every engine the
/// fault never names the buffer (its creation was valid): it names the bind
/// group where the engine's message says so, the call that made it where the
/// level records calls, and otherwise says which of the phase's calls could
/// have failed, or that the per-call level names it.
#[wasm_bindgen_test]
async fn a_bind_group_s_mistake_is_never_pinned_on_the_buffer_it_binds() {
    for level in DiagnosticsLevel::ALL {
        let (d, net, _) = device_with_net(raw_device().await);
        d.set_level(level);
        let layout = reduce_layout(&d);
        let mut group_line = 0;
        let result = d
            .phase("reduce", || {
                let totals = d.create_buffer("totals", 8, BufferUsages::STORAGE)?;
                group_line = line!() + 1;
                let group = d.create_bind_group_with(
                    "reduce-group",
                    &layout,
                    &[(0, webgpu_guard::web::Binding::Buffer(&totals))],
                )?;
                Ok((totals, group))
            })
            .await;
        let name = level.as_str();
        flush(&d).await;
        settle().await;
        let groups = net.groups();
        assert!(
            groups.iter().all(|g| g.label != "totals"),
            "{name}: telemetry grouped it under the buffer: {groups:?}"
        );
        if level == DiagnosticsLevel::Off {
            // No scope: the uncaptured error, grouped by what the engine names.
            assert!(result.is_ok(), "{name}");
            continue;
        }
        let fault = result.expect_err(name);
        assert_ne!(
            fault.origin.object.as_deref(),
            Some("totals"),
            "{name}: {fault}"
        );
        let text = fault.to_string();
        let named = fault.origin.object.as_deref() == Some("reduce-group");
        if level == DiagnosticsLevel::PerCall || (named && level == DiagnosticsLevel::Attributed) {
            assert!(named, "{name}: {fault}");
            assert_eq!(
                fault.origin.call_site.map(|s| s.line),
                Some(group_line),
                "{name}: {fault}"
            );
        } else if engine_quotes_labels() {
            assert!(named, "{name}: {fault}");
        } else {
            assert_eq!(fault.origin.call_site, None, "{name}: {fault}");
            assert!(text.contains("per-call"), "{name}: {fault}");
            if level == DiagnosticsLevel::Attributed {
                assert!(
                    text.contains("\"totals\"") && text.contains("\"reduce-group\""),
                    "{name}: the calls that could have failed: {fault}"
                );
            }
        }
    }
}

/// The same rule for a pipeline (an entry point its valid shader module lacks)
/// and a texture view (more mip levels than its valid texture has): the fault
/// names the pipeline or the view where the engine's message says so (Dawn),
/// never the module or the texture it was given; where the message does not
/// say (wgpu), it says that the per-call level names the call.
#[wasm_bindgen_test]
async fn a_pipeline_s_or_a_view_s_mistake_is_never_pinned_on_what_it_was_given() {
    let d = device().await;
    let module = d
        .create_shader_module("kernels", "@compute @workgroup_size(1) fn main() {}", &[])
        .await
        .unwrap();
    let texture = d
        .create_texture(&TextureSpec::d2(
            "one-mip",
            GpuTextureFormat::Rgba8unorm,
            4,
            4,
            TextureUsages::TEXTURE_BINDING,
        ))
        .unwrap();
    let cases: [(&str, &str, Box<dyn Fn()>); 2] = [
        ("reduce-pipeline", "kernels", {
            let (d, module) = (d.clone(), module.module.clone());
            Box::new(move || {
                let stage = web_sys::GpuProgrammableStage::new(&module);
                stage.set_entry_point("nope");
                let desc = web_sys::GpuComputePipelineDescriptor::new_with_gpu_auto_layout_mode(
                    web_sys::GpuAutoLayoutMode::Auto,
                    &stage,
                );
                desc.set_label("reduce-pipeline");
                let _ = d.raw().create_compute_pipeline(&desc);
            })
        }),
        ("too-many-mips", "one-mip", {
            let texture: web_sys::GpuTexture = (*texture).clone();
            Box::new(move || {
                let desc = web_sys::GpuTextureViewDescriptor::new();
                desc.set_label("too-many-mips");
                desc.set_mip_level_count(5);
                let _ = texture.create_view_with_descriptor(&desc);
            })
        }),
    ];
    for (created, given, make) in cases {
        let fault = d
            .phase("mistakes", || {
                make();
                Ok(())
            })
            .await
            .unwrap_err();
        assert_ne!(fault.origin.object.as_deref(), Some(given), "{fault}");
        if engine_quotes_labels() {
            assert_eq!(fault.origin.object.as_deref(), Some(created), "{fault}");
        } else {
            assert_eq!(fault.origin.object, None, "{fault}");
            assert!(fault.to_string().contains("per-call"), "{fault}");
        }
    }
}
