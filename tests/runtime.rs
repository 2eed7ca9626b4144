//! Browser tests of the runtime against real WebGPU (headless Chromium,
//! SwiftShader): start, stop, recovery, re-entrant calls, hidden pages, a browser
//! without `adapter.info`, losses during init, dropping the runtime.
#![cfg(target_arch = "wasm32")]

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use gloo_timers::future::TimeoutFuture;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use webgpu_guard::fault::Fault;
use webgpu_guard::usage::{BufferUsages, TextureUsages};

use webgpu_guard::web::runtime::RuntimeOptions;
use webgpu_guard::web::{App, FrameInfo, GpuContext, Runtime, TextureSpec, Tracked};

#[path = "support/intervals.rs"]
mod intervals;
use intervals::live_intervals;

wasm_bindgen_test_configure!(run_in_browser);

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..150 {
        if done() {
            return;
        }
        TimeoutFuture::new(30).await;
    }
    panic!("timed out waiting for {what}");
}

type Hook = Box<dyn Fn(u64)>;

/// A minimal application: clears the canvas every frame and owns one buffer.
/// `on_frame` runs inside the frame; `destroy_in_build` destroys the device in
/// the next builds (a loss between requestDevice and the first frame).
#[derive(Default)]
struct ClearApp {
    frames: Cell<u64>,
    builds: Cell<u64>,
    destroy_in_build: Cell<u32>,
    throw_in_build: Cell<bool>,
    /// The next builds make a buffer with usages WebGPU refuses together.
    invalid_in_build: Cell<bool>,
    /// The next builds compile a shader with an error.
    bad_shader_in_build: Cell<bool>,
    /// The next resizes return `Err`.
    fail_resizes: Cell<u32>,
    /// The next builds wait this long before they make anything.
    slow_build_ms: Cell<u32>,
    /// The next builds never finish (a promise that never settles).
    hang_in_build: Cell<bool>,
    on_frame: RefCell<Option<Hook>>,
    throw_on_drop: Rc<Cell<bool>>,
    /// The next entry of application code named here (`"build"`, `"resize"`,
    /// `"drop"`) opens a scope set of its own and throws through WebAssembly
    /// inside it (see `abandon_a_set`).
    abandon_in: Rc<Cell<Option<&'static str>>>,
    /// The device the resources' `Drop` opens its set on, when not their own
    /// (whose errors a recovery retires with it).
    drop_on_device: RefCell<Option<webgpu_guard::web::GuardedDevice>>,
    /// Whether the resources hold a target the size of the drawing buffer.
    sized: Cell<bool>,
    /// The drawing-buffer size each build saw, and each resize.
    built_at: RefCell<Vec<(u32, u32)>>,
    resized_to: RefCell<Vec<(u64, u32, u32)>>,
}

struct ClearResources {
    _buffer: Tracked<web_sys::GpuBuffer>,
    throw_on_drop: Rc<Cell<bool>>,
    abandon_in: Rc<Cell<Option<&'static str>>>,
    device: webgpu_guard::web::GuardedDevice,
    target: Option<Tracked<web_sys::GpuTexture>>,
}

/// A depth target the size of the drawing buffer.
fn size_dependent_target(gpu: &GpuContext) -> Result<Tracked<web_sys::GpuTexture>, Fault> {
    let (width, height) = gpu.size();
    gpu.device.create_texture(&TextureSpec::d2(
        "size-dependent-depth",
        web_sys::GpuTextureFormat::Depth24plus,
        width,
        height,
        TextureUsages::RENDER_ATTACHMENT,
    ))
}

impl Drop for ClearResources {
    fn drop(&mut self) {
        if abandons_in(&self.abandon_in, "drop") {
            abandon_a_set(&self.device, "abandoned-in-drop");
        }
        if self.throw_on_drop.get() {
            throw_through_wasm();
        }
    }
}

/// A raw binding that does not catch, given a bad argument: the exception
/// crosses the WebAssembly frames and no destructor runs.
fn throw_through_wasm() {
    let raw: web_sys::GpuQueue = js_sys::Object::new().unchecked_into();
    raw.submit(&[]);
}

/// Whether `entry` is the one `abandon_in` names (then it is named no more).
fn abandons_in(abandon_in: &Cell<Option<&'static str>>, entry: &str) -> bool {
    if abandon_in.get() == Some(entry) {
        abandon_in.set(None);
        return true;
    }
    false
}

/// An invalid buffer (usages WebGPU refuses together) made by a raw call: a
/// validation error that only a scope, or the uncaptured-error net, sees.
fn raw_bad_buffer(device: &webgpu_guard::web::GuardedDevice, label: &str) {
    let desc = web_sys::GpuBufferDescriptor::new(
        16,
        (BufferUsages::MAP_READ | BufferUsages::MAP_WRITE).bits(),
    );
    desc.set_label(label);
    let _ = device.raw().create_buffer(&desc);
}

/// Opens the application's own validation scope on `device`, makes an error
/// named `label` inside it and throws through WebAssembly: the throw skips the
/// set's `Drop`. Only the trampoline that stops the throw can pop it; left
/// pushed, it would swallow every later error of the device.
fn abandon_a_set(device: &webgpu_guard::web::GuardedDevice, label: &str) {
    let _own = own_set(device, label);
    raw_bad_buffer(device, label);
    throw_through_wasm();
}

/// The application's own validation scope, its faults tagged with `label`
/// (Firefox's messages do not quote every label).
fn own_set(
    device: &webgpu_guard::web::GuardedDevice,
    label: &str,
) -> webgpu_guard::web::scope::ScopeSet {
    webgpu_guard::web::scope::ScopeSet::push(
        device,
        &[webgpu_guard::web::scope::Filter::Validation],
    )
    .tagged(webgpu_guard::fault::Origin {
        object: Some(label.to_string()),
        ..Default::default()
    })
}

/// The error caught by a set abandoned as `abandon_a_set` does reaches `r`'s
/// fault sink: the set was popped.
async fn assert_reported_by_the_abandoned_set(r: &Runtime<ClearApp>, label: &str) {
    wait_until(&format!("the error caught by the set {label}"), || {
        r.faults()
            .groups()
            .iter()
            .any(|g| g.label == label || g.first_message.contains(label))
    })
    .await;
}

impl App for ClearApp {
    type Resources = ClearResources;

    async fn build(&self, gpu: &GpuContext) -> Result<ClearResources, Fault> {
        self.builds.set(self.builds.get() + 1);
        let d = &gpu.device;
        if self.throw_in_build.get() {
            throw_through_wasm();
        }
        if abandons_in(&self.abandon_in, "build") {
            // Held across an await: the poll that throws is not the one that
            // opened it.
            let _own = own_set(d, "abandoned-in-build");
            raw_bad_buffer(d, "abandoned-in-build");
            // A turn of the microtask queue: the throw is in a later poll.
            let resolved = js_sys::Promise::resolve(&JsValue::NULL);
            let _ = wasm_bindgen_futures::JsFuture::from(resolved).await;
            throw_through_wasm();
        }
        if self.hang_in_build.get() {
            let never = js_sys::Promise::new(&mut |_, _| {});
            let _ = wasm_bindgen_futures::JsFuture::from(never).await;
        }
        if self.slow_build_ms.get() > 0 {
            TimeoutFuture::new(self.slow_build_ms.get()).await;
        }
        if self.bad_shader_in_build.get() {
            d.create_shader_module(
                "broken-shader",
                "@compute @workgroup_size(1)\nfn main() {\n    let x: f32 = ;\n}\n",
                &[],
            )
            .await?;
        }
        if self.invalid_in_build.get() {
            let _invalid = d
                .phase("clear-app-invalid", || {
                    d.create_buffer(
                        "clear-app-invalid-buffer",
                        256,
                        BufferUsages::MAP_READ | BufferUsages::STORAGE,
                    )
                })
                .await?;
        }
        let buffer = d
            .phase("clear-app", || {
                d.create_buffer("clear-app-buffer", 256, BufferUsages::UNIFORM)
            })
            .await?;
        if self.destroy_in_build.get() > 0 {
            self.destroy_in_build.set(self.destroy_in_build.get() - 1);
            d.destroy();
        }
        self.built_at.borrow_mut().push(gpu.size());
        let target = if self.sized.get() {
            Some(d.phase("targets", || size_dependent_target(gpu)).await?)
        } else {
            None
        };
        Ok(ClearResources {
            _buffer: buffer,
            throw_on_drop: self.throw_on_drop.clone(),
            abandon_in: self.abandon_in.clone(),
            device: self
                .drop_on_device
                .borrow()
                .clone()
                .unwrap_or_else(|| d.clone()),
            target,
        })
    }

    fn resize(&self, gpu: &GpuContext, r: &mut ClearResources) -> Result<(), Fault> {
        let (width, height) = gpu.size();
        self.resized_to
            .borrow_mut()
            .push((gpu.generation, width, height));
        if abandons_in(&self.abandon_in, "resize") {
            abandon_a_set(&gpu.device, "abandoned-in-resize");
        }
        if self.fail_resizes.get() > 0 {
            self.fail_resizes.set(self.fail_resizes.get() - 1);
            return Err(Fault::new(
                webgpu_guard::FaultKind::OutOfMemory,
                "the resize's target was refused",
            ));
        }
        if r.target.is_some() {
            r.target = Some(size_dependent_target(gpu)?);
        }
        Ok(())
    }

    fn frame(&self, gpu: &GpuContext, _: &ClearResources, info: &FrameInfo) -> Result<(), Fault> {
        self.frames.set(self.frames.get() + 1);
        if let Ok(hook) = self.on_frame.try_borrow() {
            if let Some(hook) = hook.as_ref() {
                hook(info.number);
            }
        }
        let view = gpu.surface.get_current_texture()?.create_view()?;
        let encoder = gpu.device.create_command_encoder("clear")?;
        let color = web_sys::GpuRenderPassColorAttachment::new_with_gpu_texture_view(
            web_sys::GpuLoadOp::Clear,
            web_sys::GpuStoreOp::Store,
            &view,
        );
        let desc =
            web_sys::GpuRenderPassDescriptor::new(&[webgpu_guard::web::js::nullable(&color)]);
        encoder.begin_render_pass(&desc)?.end()?;
        gpu.device.submit(&[encoder.finish()?])
    }
}

/// A stop is the application's own decision: nothing may report it as a fault.
fn assert_nothing_reported(r: &Runtime<ClearApp>) {
    let net = r.status().faults;
    let errors = net.validation + net.out_of_memory + net.internal + net.other;
    let lines = r.faults().recent_lines();
    assert_eq!(errors, 0, "faults reported: {lines:?}");
    assert!(
        lines
            .iter()
            .all(|l| !l.contains("giving up") && !l.contains("lost") && !l.contains("stalled")),
        "{lines:?}"
    );
}

fn runtime() -> Runtime<ClearApp> {
    runtime_with(RuntimeOptions::default())
}

fn runtime_with(options: RuntimeOptions) -> Runtime<ClearApp> {
    Runtime::new(ClearApp::default(), canvas_in_page(), options)
}

/// A 64x64 canvas appended to the page.
fn canvas_in_page() -> web_sys::HtmlCanvasElement {
    let document = web_sys::window().unwrap().document().unwrap();
    let canvas: web_sys::HtmlCanvasElement =
        document.create_element("canvas").unwrap().unchecked_into();
    canvas.set_width(64);
    canvas.set_height(64);
    document.body().unwrap().append_child(&canvas).unwrap();
    canvas
}

async fn wait_state(r: &Runtime<ClearApp>, state: &str, generation: u64) {
    let frames = r.app().frames.get();
    for _ in 0..150 {
        let s = r.status();
        if s.state.as_str() == state
            && s.generation == generation
            && (state != "running" || r.app().frames.get() > frames + 2)
        {
            return;
        }
        TimeoutFuture::new(30).await;
    }
    panic!(
        "timed out waiting for {state} at generation {generation}: {:?}, app frames {}",
        r.status(),
        r.app().frames.get()
    );
}

/// Counts uncaught errors and unhandled rejections on the page while alive.
struct PageErrors {
    count: Rc<Cell<u32>>,
    _listeners: Vec<Closure<dyn Fn(web_sys::Event)>>,
}

fn page_errors() -> PageErrors {
    let count = Rc::new(Cell::new(0));
    let window = web_sys::window().unwrap();
    let mut listeners = Vec::new();
    for kind in ["error", "unhandledrejection"] {
        let c = count.clone();
        let listener =
            Closure::<dyn Fn(web_sys::Event)>::new(move |_e: web_sys::Event| c.set(c.get() + 1));
        window
            .add_event_listener_with_callback(kind, listener.as_ref().unchecked_ref())
            .unwrap();
        listeners.push(listener);
    }
    PageErrors {
        count,
        _listeners: listeners,
    }
}

#[wasm_bindgen_test]
async fn the_application_stopping_does_not_restart() {
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    assert_eq!(r.status().live.objects, 1);
    r.stop();
    TimeoutFuture::new(800).await;
    let status = r.status();
    assert_eq!(status.state.as_str(), "stopped");
    assert_nothing_reported(&r);
    assert_eq!(status.generation, 1, "a device was created after the stop");
    assert!(!status.loop_alive, "the frame loop is still scheduled");
    assert_eq!(status.live.objects, 0, "GPU objects left after release");
    let loss = status.last_loss.expect("the stop is recorded");
    assert_eq!(loss.reason.as_str(), "destroyed");
    assert!(loss.requested);
    let frames = r.app().frames.get();
    TimeoutFuture::new(200).await;
    assert_eq!(
        r.app().frames.get(),
        frames,
        "frames drawn on a dead device"
    );
}

#[wasm_bindgen_test]
async fn start_is_idempotent() {
    let r = runtime();
    r.start();
    r.start();
    wait_state(&r, "running", 1).await;
    r.start();
    TimeoutFuture::new(300).await;
    assert_eq!(
        r.status().generation,
        1,
        "a second start made a second device"
    );
    assert_eq!(r.app().builds.get(), 1);
    r.stop();
}

#[wasm_bindgen_test]
async fn a_forced_recovery_starts_at_once_and_rebuilds_everything_once() {
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    let before = r.status().live;
    r.force_recovery();
    // Coalesced: the recovery under way absorbs these.
    r.force_recovery();
    r.force_recovery();
    wait_state(&r, "running", 2).await;
    TimeoutFuture::new(300).await;
    let status = r.status();
    assert_eq!(status.generation, 2);
    assert_eq!(status.recoveries, 1);
    assert_eq!(status.live, before, "counts back to the same baseline");
    let timings = status.last_init.unwrap();
    assert!(timings.recovery);
    assert!(
        timings.wait_ms < 50.0,
        "the attempt waited {} ms",
        timings.wait_ms
    );
    assert!(timings.to_picture_ms > 0.0);
    r.stop();
}

#[wasm_bindgen_test]
async fn stop_during_a_recovery_wins() {
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    r.force_recovery();
    r.stop();
    TimeoutFuture::new(800).await;
    let status = r.status();
    assert_eq!(status.state.as_str(), "stopped");
    assert_nothing_reported(&r);
    assert!(!status.loop_alive);
    assert_eq!(status.live.objects, 0, "{status:?}");
    let frames = r.app().frames.get();
    TimeoutFuture::new(200).await;
    assert_eq!(r.app().frames.get(), frames);
}

#[wasm_bindgen_test]
async fn calls_from_inside_a_frame_are_handled_after_it() {
    let r = runtime();
    let inner = r.clone();
    // What the frame sees right after each call: still running, on a live
    // device (a call handled at once would have torn it down mid-frame).
    let seen: Rc<RefCell<Vec<(u64, String, bool)>>> = Rc::default();
    let record = seen.clone();
    *r.app().on_frame.borrow_mut() = Some(Box::new(move |frame| {
        if frame == 5 {
            inner.force_recovery();
        }
        if frame == 15 {
            inner.stop();
        }
        if frame == 5 || frame == 15 {
            let state = inner.status().state.as_str().to_string();
            let live = inner.with_live(|_, _| ()).is_some();
            record.borrow_mut().push((frame, state, live));
        }
    }));
    let errors = page_errors();
    r.start();
    wait_until("the stop from frame 15", || {
        r.status().state.as_str() == "stopped"
    })
    .await;
    let status = r.status();
    assert_eq!(status.generation, 2);
    assert_eq!(status.recoveries, 1);
    assert_eq!(status.live.objects, 0);
    assert_eq!(errors.count.get(), 0);
    r.app().on_frame.borrow_mut().take();
    assert_eq!(
        *seen.borrow(),
        vec![
            (5, "running".to_string(), true),
            (15, "running".to_string(), true)
        ],
        "a call from inside a frame was handled before the frame returned"
    );
}

/// A device lost while `build` runs (an injected loss at the build's
/// first creation) is a loss during init: retried on a new device.
#[wasm_bindgen_test]
async fn a_loss_during_build_recovers() {
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    r.inject(webgpu_guard::chaos::Injection::LoseDuringRebuild(0))
        .expect("a running device");
    wait_state(&r, "running", 3).await;
    assert_eq!(r.app().builds.get(), 3);
    assert_eq!(
        r.status().live.objects,
        1,
        "the lost builds' objects were released"
    );
    r.stop();
}

/// The application's own `destroy()` in its `build` is no loss: no restart,
/// the unexpected-destroy fallback, as for a running device.
#[wasm_bindgen_test]
async fn the_application_s_own_destroy_in_build_is_not_recovered_from() {
    let r = runtime();
    r.app().destroy_in_build.set(1);
    r.start();
    for _ in 0..150 {
        if r.status().fallback.is_some() {
            break;
        }
        TimeoutFuture::new(30).await;
    }
    let status = r.status();
    assert_eq!(
        status.fallback.as_ref().map(|f| f.code()),
        Some("unexpected-destroy"),
        "{status:?}"
    );
    // Nothing more is tried.
    TimeoutFuture::new(600).await;
    assert_eq!(r.app().builds.get(), 1);
    assert_eq!(r.status().generation, 1);
    r.stop();
}

#[wasm_bindgen_test]
async fn a_browser_without_adapter_info_still_starts() {
    let hide = js_sys::Function::new_no_args(
        "const d = Object.getOwnPropertyDescriptor(GPUAdapter.prototype, 'info'); \
         delete GPUAdapter.prototype.info; return d;",
    );
    let descriptor = hide.call0(&JsValue::NULL).unwrap();
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    let adapter = r.status().adapter;
    js_sys::Function::new_with_args(
        "d",
        "Object.defineProperty(GPUAdapter.prototype, 'info', d);",
    )
    .call1(&JsValue::NULL, &descriptor)
    .unwrap();
    assert!(adapter.contains("adapter"), "{adapter}");
    r.stop();
}

/// While alive, every device made gets a `lost` promise that never resolves,
/// as on an engine whose retired device's `lost` resolves late or never (the
/// device itself is real); restored when dropped, whatever the test did.
struct LostHeldBack(JsValue);

impl LostHeldBack {
    fn new() -> Self {
        let original = js_sys::Function::new_no_args(
            "const original = GPUAdapter.prototype.requestDevice; \
             GPUAdapter.prototype.requestDevice = async function (d) { \
               const device = await original.call(this, d); \
               Object.defineProperty(device, 'lost', { value: new Promise(() => {}) }); \
               return device; }; \
             return original;",
        )
        .call0(&JsValue::NULL)
        .unwrap();
        LostHeldBack(original)
    }
}

impl Drop for LostHeldBack {
    fn drop(&mut self) {
        let _ = js_sys::Function::new_with_args(
            "original",
            "GPUAdapter.prototype.requestDevice = original;",
        )
        .call1(&JsValue::NULL, &self.0);
    }
}

fn now_ms() -> f64 {
    web_sys::window().unwrap().performance().unwrap().now()
}

/// A loss only a probe finds: recovered, and the recovery timed from when it
/// was found (the status's time to picture, not from the start).
#[wasm_bindgen_test]
async fn a_loss_only_a_probe_finds_is_recovered_and_timed_from_the_loss() {
    // The loss is made with `destroy()`, which on Firefox stops animation
    // frames for the whole page (see `Engine::destroy_is_safe`) and would break
    // every test after this one: there the test does not run.
    if !webgpu_guard::web::engine::Engine::detect().destroy_is_safe() {
        return;
    }
    let held_back = LostHeldBack::new();
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    // The start's trigger lies well before the loss.
    TimeoutFuture::new(400).await;
    let device = r
        .with_live(|gpu, _| gpu.device.clone())
        .expect("a live device");
    let lost_at = now_ms();
    // A loss the application did not cause: the raw device destroyed behind
    // the guard's back (the guard's `destroy()` is the application's own).
    #[allow(clippy::disallowed_methods)]
    device.raw().destroy();
    assert!(!device.confirm_alive().await, "the probe finds it lost");
    // The recovery's first frame (animation frames may then stall on this
    // engine, and come from a timer: not what is tested here).
    wait_until("the recovery's first frame", || {
        let s = r.status();
        s.generation == 2 && s.last_init.is_some_and(|t| t.recovery)
    })
    .await;
    drop(held_back);
    let status = r.status();
    let timings = status.last_init.expect("the recovery's timings");
    assert!(timings.recovery, "{timings:?}");
    // The moment the time to picture counts from: the loss, not the start.
    // (A thousandth of a millisecond for the subtraction's rounding.)
    let trigger_at = timings.first_frame_at_ms - timings.to_picture_ms;
    assert!(
        trigger_at + 0.001 >= lost_at,
        "timed from {trigger_at} ms, before the loss at {lost_at} ms: {timings:?}"
    );
    assert_eq!(status.recoveries, 1, "{status:?}");
    r.stop();
}

/// The page's visibility, overridden for the test (a headless page cannot be
/// hidden for real): `document.visibilityState` and a `visibilitychange` event.
fn set_page_hidden(hidden: bool) {
    js_sys::Function::new_with_args(
        "hidden",
        "if (hidden) { Object.defineProperty(document, 'visibilityState', { get: () => 'hidden', configurable: true }); } \
         else { delete document.visibilityState; } \
         document.dispatchEvent(new Event('visibilitychange'));",
    )
    .call1(&JsValue::NULL, &hidden.into())
    .unwrap();
}

#[wasm_bindgen_test]
async fn a_loss_while_hidden_waits_for_the_page_to_show() {
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    set_page_hidden(true);
    r.force_recovery();
    TimeoutFuture::new(600).await;
    let status = r.status();
    set_page_hidden(false);
    assert_eq!(status.state.as_str(), "lost", "{status:?}");
    assert_eq!(status.generation, 1, "a device was requested while hidden");
    wait_state(&r, "running", 2).await;
    r.stop();
}

#[wasm_bindgen_test]
async fn a_runtime_started_and_dropped_as_a_newcomer_s_main_does_keeps_running() {
    let errors = page_errors();
    // What a `main` does: build, start, return. Only the application is kept,
    // to watch its frames, and a weak handle, to stop it at the end.
    let (app, weak) = {
        let r = runtime();
        r.start();
        (r.app().clone(), r.downgrade())
    };
    wait_until("frames after the last handle was dropped", || {
        app.frames.get() > 30
    })
    .await;
    let r = weak
        .upgrade()
        .expect("a started runtime keeps itself alive");
    assert_eq!(r.status().state.as_str(), "running");
    assert!(r.status().loop_alive);
    r.stop();
    drop(r);
    TimeoutFuture::new(300).await;
    // Stopped, with no handle left: it is freed, and nothing of it runs.
    assert!(
        weak.upgrade().is_none(),
        "a stopped runtime outlived its handles"
    );
    let frames = app.frames.get();
    TimeoutFuture::new(300).await;
    assert_eq!(app.frames.get(), frames, "a frame ran after the stop");
    assert_eq!(errors.count.get(), 0, "a freed closure was called");
}

#[wasm_bindgen_test]
async fn dropping_a_stopped_runtime_cancels_its_animation_frame() {
    let errors = page_errors();
    let weak = {
        let r = runtime();
        r.start();
        wait_state(&r, "running", 1).await;
        r.stop();
        r.downgrade()
    };
    TimeoutFuture::new(300).await;
    assert!(weak.upgrade().is_none());
    assert_eq!(errors.count.get(), 0, "a freed closure was called");
}

#[wasm_bindgen_test]
async fn a_frame_that_throws_through_wasm_is_reported_and_its_scopes_popped() {
    let r = runtime();
    // Every frame scoped, so frame 4's scopes are open when it throws.
    r.set_frame_sampling(webgpu_guard::frame_sampling::FrameSampling::every(1));
    *r.app().on_frame.borrow_mut() = Some(Box::new(|frame| {
        if frame == 4 {
            throw_through_wasm();
        }
    }));
    r.start();
    wait_until("the thrown frame", || r.status().frames_thrown == 1).await;
    wait_until("more frames", || r.app().frames.get() > 10).await;
    let status = r.status();
    assert_eq!(status.state.as_str(), "running");
    assert!(status.faults.other >= 1, "{:?}", status.faults);
    assert_eq!(
        r.scope_stack_balanced().await,
        Some(true),
        "the thrown frame left scopes on the device's stack"
    );
    r.stop();
}

#[wasm_bindgen_test]
async fn a_build_that_throws_through_wasm_ends_in_a_fallback() {
    let r = runtime();
    r.app().throw_in_build.set(true);
    let shown: Rc<RefCell<Option<String>>> = Rc::default();
    let s = shown.clone();
    r.on_fallback(move |f| *s.borrow_mut() = Some(f.code().to_string()));
    r.start();
    wait_until("the fallback", || shown.borrow().is_some()).await;
    assert_eq!(shown.borrow().as_deref(), Some("init-failed"));
    let status = r.status();
    assert_eq!(status.state.as_str(), "failed");
    // Start again, without the throw: it runs.
    r.app().throw_in_build.set(false);
    r.start();
    wait_until("running again", || r.status().state.as_str() == "running").await;
    r.stop();
}

#[wasm_bindgen_test]
async fn a_fallback_hook_or_a_drop_that_throws_cannot_wedge_the_runtime() {
    let r = runtime();
    // A hook that throws through WebAssembly.
    let shown = Rc::new(Cell::new(0));
    let s = shown.clone();
    r.on_fallback(move |_| {
        s.set(s.get() + 1);
        throw_through_wasm();
    });
    r.app().throw_in_build.set(true);
    r.start();
    wait_until("the fallback", || shown.get() == 1).await;
    assert_eq!(r.status().state.as_str(), "failed");
    // The runtime still takes events: it starts again.
    r.app().throw_in_build.set(false);
    r.start();
    wait_state(&r, "running", 2).await;
    // Resources whose Drop throws: the recovery still happens, and then a stop.
    r.app().throw_on_drop.set(true);
    r.force_recovery();
    wait_state(&r, "running", 3).await;
    assert_eq!(r.status().recoveries, 1);
    r.stop();
    wait_until("stopped", || r.status().state.as_str() == "stopped").await;
    r.app().throw_on_drop.set(false);
    let thrown = r
        .faults()
        .recent_lines()
        .iter()
        .filter(|l| l.contains("threw"))
        .count();
    assert!(thrown >= 2, "{:?}", r.faults().recent_lines());
    // The build, the hook and the drop: each counted, whatever the console's
    // limit let through.
    let other = r.status().faults.other;
    assert!(other >= 3, "{other}: {:?}", r.faults().recent_lines());
}

/// Gives the canvas a displayed size, in CSS pixels.
fn display_at(r: &Runtime<ClearApp>, width: u32, height: u32) {
    let style = r.canvas().style();
    style.set_property("width", &format!("{width}px")).unwrap();
    style
        .set_property("height", &format!("{height}px"))
        .unwrap();
}

fn ratio() -> f64 {
    web_sys::window().unwrap().device_pixel_ratio()
}

fn buffer_of(r: &Runtime<ClearApp>) -> (u32, u32) {
    (r.canvas().width(), r.canvas().height())
}

#[wasm_bindgen_test]
async fn the_drawing_buffer_follows_the_displayed_size_with_one_rebuild_per_change() {
    let r = runtime();
    r.app().sized.set(true);
    display_at(&r, 200, 100);
    r.start();
    wait_state(&r, "running", 1).await;
    let scale = |v: u32| (f64::from(v) * ratio()).round() as u32;
    // Built at the displayed size: nothing to resize.
    assert_eq!(buffer_of(&r), (scale(200), scale(100)));
    assert_eq!(*r.app().built_at.borrow(), vec![(scale(200), scale(100))]);
    assert_eq!(r.status().resizes, 0);
    let baseline = r.status().live;
    // Many resizes before the next frame: one rebuild, at the last size.
    for step in 0..6 {
        display_at(&r, 300 + step * 10, 150 + step * 5);
    }
    wait_until("the new size", || buffer_of(&r) == (scale(350), scale(175))).await;
    TimeoutFuture::new(200).await;
    assert_eq!(
        *r.app().resized_to.borrow(),
        vec![(1, scale(350), scale(175))],
        "one rebuild for one change"
    );
    // Several sizes and back: the size-dependent target follows, nothing leaks.
    for (width, height) in [(120, 90), (640, 360), (200, 100)] {
        display_at(&r, width, height);
        wait_until("the size", || {
            buffer_of(&r) == (scale(width), scale(height))
        })
        .await;
    }
    TimeoutFuture::new(100).await;
    assert_eq!(r.app().resized_to.borrow().len(), 4);
    let status = r.status();
    assert_eq!(status.live.objects, baseline.objects, "{status:?}");
    assert_eq!(status.live.bytes, baseline.bytes, "{status:?}");
    assert_eq!(
        status.faults.validation + status.faults.out_of_memory,
        0,
        "{:?}",
        r.faults().recent_lines()
    );
    assert_eq!(status.state.as_str(), "running");
    r.stop();
}

#[wasm_bindgen_test]
async fn the_drawing_buffer_is_clamped_to_the_device_limit() {
    let r = runtime();
    r.app().sized.set(true);
    display_at(&r, 64, 8);
    r.start();
    wait_state(&r, "running", 1).await;
    let limit = r
        .with_live(|gpu, _| gpu.device.raw().limits().max_texture_dimension_2d())
        .unwrap();
    display_at(&r, limit + 500, 8);
    wait_until("the clamped size", || buffer_of(&r).0 == limit).await;
    TimeoutFuture::new(100).await;
    assert_eq!(
        r.status().faults.validation,
        0,
        "{:?}",
        r.faults().recent_lines()
    );
    display_at(&r, 64, 64);
    wait_until("a small size again", || buffer_of(&r).0 < 200).await;
    r.stop();
}

#[wasm_bindgen_test]
async fn a_resize_during_a_recovery_is_applied_to_the_new_device_once() {
    let r = runtime();
    r.app().sized.set(true);
    display_at(&r, 200, 100);
    r.start();
    wait_state(&r, "running", 1).await;
    let scale = |v: u32| (f64::from(v) * ratio()).round() as u32;
    let baseline = r.status().live;
    r.force_recovery();
    display_at(&r, 260, 130);
    wait_state(&r, "running", 2).await;
    TimeoutFuture::new(200).await;
    assert_eq!(buffer_of(&r), (scale(260), scale(130)));
    // The new device was built at the new size; no resize ran on either
    // device (none on the dead one, none needed on the new one).
    assert_eq!(
        *r.app().built_at.borrow(),
        vec![(scale(200), scale(100)), (scale(260), scale(130))]
    );
    assert!(
        r.app()
            .resized_to
            .borrow()
            .iter()
            .all(|(generation, _, _)| *generation == 2),
        "{:?}",
        r.app().resized_to.borrow()
    );
    assert!(r.app().resized_to.borrow().len() <= 1);
    let status = r.status();
    assert_eq!(status.live.objects, baseline.objects, "{status:?}");
    assert_eq!(
        status.faults.validation,
        0,
        "{:?}",
        r.faults().recent_lines()
    );
    r.stop();
}

#[wasm_bindgen_test]
async fn a_fixed_canvas_keeps_its_size() {
    let r = runtime_with(RuntimeOptions {
        canvas_size: webgpu_guard::web::CanvasSize::Fixed,
        ..RuntimeOptions::default()
    });
    display_at(&r, 200, 100);
    r.start();
    wait_state(&r, "running", 1).await;
    TimeoutFuture::new(200).await;
    assert_eq!(buffer_of(&r), (64, 64));
    assert_eq!(r.status().resizes, 0);
    r.stop();
}

/// Swallows (or, with `false`, restores) `requestAnimationFrame`. A mock: page
/// code cannot make an engine stop delivering animation frames (Firefox does
/// so to a visible page after its GPU process died), so the requests are
/// dropped instead, as that engine drops them. Restoring delivers the last
/// request swallowed, as the engine does when its frames come back.
fn swallow_animation_frames(swallow: bool) {
    let script = if swallow {
        "window.__realRaf = window.__realRaf || window.requestAnimationFrame; \
         window.requestAnimationFrame = (f) => { window.__swallowed = f; return 424242; };"
    } else {
        "if (window.__realRaf) window.requestAnimationFrame = window.__realRaf; \
         const f = window.__swallowed; window.__swallowed = null; \
         if (f) window.requestAnimationFrame(f);"
    };
    js_sys::Function::new_no_args(script)
        .call0(&JsValue::NULL)
        .unwrap();
}

/// A running runtime whose stall limit is 300 ms.
async fn running_with_a_short_stall_limit() -> Runtime<ClearApp> {
    let r = runtime_with(RuntimeOptions {
        supervisor: webgpu_guard::supervisor::SupervisorOptions {
            stall_ms: 300,
            ..Default::default()
        },
        ..RuntimeOptions::default()
    });
    r.start();
    wait_state(&r, "running", 1).await;
    r
}

#[wasm_bindgen_test]
async fn a_frozen_picture_is_drawn_from_a_timer_on_the_same_device_until_animation_frames_come_back(
) {
    let r = running_with_a_short_stall_limit().await;
    let lines_with = |what: &str| {
        r.faults()
            .recent_lines()
            .iter()
            .filter(|l| l.contains("presentation stalled") && l.contains(what))
            .count()
    };
    swallow_animation_frames(true);
    // First the runtime asks for a frame again (swallowed too)...
    wait_until("the stall reported", || {
        lines_with("asking for a frame again") > 0
    })
    .await;
    assert!(r.status().stalled);
    // ...then, still frozen, it draws from a timer on the same device.
    wait_until("frames from the timer", || r.status().frames_from_timer).await;
    let frames = r.app().frames.get();
    TimeoutFuture::new(1500).await;
    let status = r.status();
    let drawn = r.app().frames.get() - frames;
    assert!(drawn > 20, "{drawn} frames from the timer in 1.5 s");
    assert_eq!(status.generation, 1, "a new device for a stall: {status:?}");
    assert_eq!(r.app().builds.get(), 1);
    assert!(!status.stalled, "{status:?}");
    assert!(status.fallback.is_none(), "{status:?}");
    assert_eq!(
        lines_with("asking for a frame again"),
        1,
        "{:?}",
        r.faults().recent_lines()
    );
    assert_eq!(
        lines_with("drawing from a timer"),
        1,
        "{:?}",
        r.faults().recent_lines()
    );
    assert_eq!(lines_with(""), 2, "{:?}", r.faults().recent_lines());
    // Animation frames come back: the timer stops.
    swallow_animation_frames(false);
    wait_until("animation frames again", || !r.status().frames_from_timer).await;
    let lines = r.faults().recent_lines().join("\n");
    assert!(lines.contains("animation frames came back"), "{lines}");
    let frames = r.app().frames.get();
    TimeoutFuture::new(300).await;
    assert!(r.app().frames.get() > frames + 3);
    assert_eq!(r.status().generation, 1);
    r.stop();
}

#[wasm_bindgen_test]
async fn one_long_frame_is_no_stall() {
    let r = running_with_a_short_stall_limit().await;
    let long = Rc::new(Cell::new(true));
    let once = long.clone();
    *r.app().on_frame.borrow_mut() = Some(Box::new(move |_| {
        if once.replace(false) {
            // A breakpoint, a long compile: the page's thread busy for 0.7 s, more than twice the stall limit.
            let until = js_sys::Date::now() + 700.0;
            while js_sys::Date::now() < until {}
        }
    }));
    wait_until("the long frame", || !long.get()).await;
    TimeoutFuture::new(1500).await;
    *r.app().on_frame.borrow_mut() = None;
    let lines = r.faults().recent_lines();
    assert!(
        lines.iter().all(|l| !l.contains("stalled")),
        "one long frame reported as a frozen picture: {lines:?}"
    );
    r.stop();
}

#[wasm_bindgen(inline_js = "
const registry = new FinalizationRegistry(() => { collected += 1; });
let collected = 0;
export function watch_collection(device) { registry.register(device, 0); }
export function devices_collected() { return collected; }
// Garbage enough to make the engine collect (no page can call gc()).
export function make_garbage() {
  let keep = 0;
  for (let i = 0; i < 40; i++) { const b = new ArrayBuffer(4 << 20); keep += b.byteLength; }
  for (let i = 0; i < 200000; i++) { const o = { i, s: 'x' + i }; keep += o.i & 1; }
  return keep;
}
")]
extern "C" {
    fn watch_collection(device: &JsValue);
    fn devices_collected() -> u32;
    fn make_garbage() -> f64;
}

#[wasm_bindgen_test]
async fn no_device_outlives_its_generation() {
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    const RECOVERIES: u64 = 20;
    for generation in 1..=RECOVERIES {
        let device: JsValue = r
            .with_live(|gpu, _| gpu.device.raw().clone().into())
            .expect("a running device");
        watch_collection(&device);
        drop(device);
        r.force_recovery();
        wait_state(&r, "running", generation + 1).await;
    }
    // Every retired device may be collected: the loss watcher, the fault sink and the
    // runtime hold none of them (on Gecko, where destroy() is not called, a
    // retired device's `lost` never resolves).
    let mut collected = 0;
    for _ in 0..60 {
        make_garbage();
        TimeoutFuture::new(100).await;
        collected = devices_collected();
        if u64::from(collected) >= RECOVERIES - 1 {
            break;
        }
    }
    assert!(
        u64::from(collected) >= RECOVERIES - 1,
        "{collected} of {RECOVERIES} retired devices collected"
    );
    r.stop();
}

#[wasm_bindgen_test]
async fn a_canvas_that_css_does_not_size_is_pinned_and_never_grows() {
    // Sized by its width and height attributes alone: laid out at its drawing
    // buffer's size, which following the display (times a ratio above 1) would
    // grow without end.
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    let style = r.canvas().style();
    assert_eq!(style.get_property_value("width").unwrap(), "64px");
    assert_eq!(style.get_property_value("height").unwrap(), "64px");
    TimeoutFuture::new(300).await;
    let scale = |v: u32| (f64::from(v) * ratio()).round() as u32;
    assert_eq!(buffer_of(&r), (scale(64), scale(64)));
    assert!(r.status().resizes <= 1, "{:?}", r.status());
    r.stop();
}

#[wasm_bindgen_test]
async fn a_frame_that_throws_leaves_nothing_borrowed_for_the_next_resize() {
    let r = runtime();
    r.app().sized.set(true);
    display_at(&r, 100, 50);
    *r.app().on_frame.borrow_mut() = Some(Box::new(|frame| {
        if frame == 4 {
            throw_through_wasm();
        }
    }));
    r.start();
    wait_until("the thrown frame", || r.status().frames_thrown == 1).await;
    // (The hook stays: the throw skipped the test application's own `Ref` of
    // it, as it skips every destructor of the frames it crosses.)
    display_at(&r, 150, 75);
    let scale = |v: u32| (f64::from(v) * ratio()).round() as u32;
    wait_until("the resize after the throw", || {
        r.app().resized_to.borrow().len() == 1
    })
    .await;
    assert_eq!(
        *r.app().resized_to.borrow(),
        vec![(1, scale(150), scale(75))]
    );
    assert_eq!(
        r.status().faults.validation,
        0,
        "{:?}",
        r.faults().recent_lines()
    );
    r.stop();
}

#[wasm_bindgen_test]
async fn a_with_live_closure_that_throws_leaves_nothing_borrowed_and_is_reported() {
    let r = runtime();
    r.app().sized.set(true);
    display_at(&r, 100, 50);
    r.start();
    wait_state(&r, "running", 1).await;
    // Called from JavaScript, as a page's button would: before, the throw
    // crossed `with_live` with the resources borrowed and reached the caller.
    let runtime = r.clone();
    let call = Closure::<dyn Fn() -> bool>::new(move || {
        runtime.with_live(|_, _| throw_through_wasm()).is_none()
    });
    let answered =
        js_sys::Function::new_with_args("f", "try { return f(); } catch (e) { return 'threw'; }")
            .call1(&JsValue::NULL, call.as_ref())
            .unwrap();
    assert_eq!(answered, JsValue::TRUE, "with_live let the throw through");
    let lines = r.faults().recent_lines();
    assert!(
        lines.iter().any(|l| l.contains("with_live threw")),
        "{lines:?}"
    );
    // The resources are not left borrowed: the next resize runs.
    display_at(&r, 150, 75);
    let scale = |v: u32| (f64::from(v) * ratio()).round() as u32;
    wait_until("the resize after the throw", || {
        r.app().resized_to.borrow().len() == 1
    })
    .await;
    assert_eq!(
        *r.app().resized_to.borrow(),
        vec![(1, scale(150), scale(75))]
    );
    r.stop();
}

#[wasm_bindgen_test]
async fn a_scope_set_a_throwing_frame_abandoned_is_popped_with_the_frame() {
    let r = runtime();
    // Every frame scoped: the frame's own set is under the application's.
    r.set_frame_sampling(webgpu_guard::frame_sampling::FrameSampling::every(1));
    r.start();
    wait_state(&r, "running", 1).await;
    let device = r
        .with_live(|gpu, _| gpu.device.clone())
        .expect("a live device");
    let target = r.status().frames + 3;
    let thrown = Cell::new(false);
    *r.app().on_frame.borrow_mut() = Some(Box::new(move |frame| {
        if frame >= target && !thrown.replace(true) {
            // The throw skips this set's `Drop`: before, the frame's pops took
            // its scope, and one of the frame's stayed pushed for good.
            let _own = webgpu_guard::web::scope::ScopeSet::push(
                &device,
                &[webgpu_guard::web::scope::Filter::Validation],
            );
            throw_through_wasm();
        }
    }));
    wait_until("the thrown frame", || r.status().frames_thrown == 1).await;
    TimeoutFuture::new(100).await;
    assert_eq!(
        r.scope_stack_balanced().await,
        Some(true),
        "a scope was left open"
    );
    r.stop();
}

#[wasm_bindgen_test]
async fn an_injected_storm_ends_with_its_device() {
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    r.inject(webgpu_guard::chaos::Injection::Storm {
        per_second: 20,
        for_ms: u32::MAX,
    })
    .expect("a storm");
    assert!(r.session().injector().storm_running());
    r.force_recovery();
    wait_state(&r, "running", 2).await;
    // Before, its timer went on writing to the retired device, and kept it.
    assert!(
        !r.session().injector().storm_running(),
        "the storm outlived its device"
    );
    r.stop();
}

/// Replaces the console's methods with ones that throw (a page's hook gone
/// wrong), or puts back the ones it replaced.
fn console_throws(throwing: bool) {
    js_sys::Function::new_with_args(
        "throwing",
        "if (throwing) { \
           window.__savedConsole = ['error', 'warn', 'info', 'debug'].map(k => [k, console[k]]); \
           for (const [k] of window.__savedConsole) console[k] = () => { throw new Error('a console hook ' + k); }; \
         } else { \
           for (const [k, f] of window.__savedConsole) console[k] = f; \
         }",
    )
    .call1(&JsValue::NULL, &throwing.into())
    .unwrap();
}

#[wasm_bindgen_test]
async fn a_console_that_throws_loses_its_lines_and_nothing_else() {
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    console_throws(true);
    *r.app().on_frame.borrow_mut() = Some(Box::new(|frame| {
        if frame % 5 == 0 {
            throw_through_wasm();
        }
    }));
    // Frames that throw are reported (a console line) while every console
    // method throws.
    wait_until("two thrown frames", || r.status().frames_thrown >= 2).await;
    console_throws(false);
    let thrown = r.status().frames_thrown;
    assert!(
        r.status().faults.other >= 2,
        "the thrown frames were not counted: {:?}",
        r.status().faults
    );
    // The runtime still hears its events (before: the loop stayed busy for
    // good, and `stop()` waited in its queue for ever).
    r.stop();
    wait_until("stopped", || r.status().state.as_str() == "stopped").await;
    assert!(r.status().frames_thrown >= thrown);
}

#[wasm_bindgen_test]
async fn an_attempt_stuck_in_build_keeps_nothing_of_a_stopped_runtime_alive() {
    let r = runtime();
    r.app().hang_in_build.set(true);
    r.start();
    wait_until("the build to start", || r.app().builds.get() == 1).await;
    let weak = r.downgrade();
    r.stop();
    drop(r);
    // The stopped runtime lets go of itself on the next turn.
    TimeoutFuture::new(100).await;
    assert!(
        weak.upgrade().is_none(),
        "the attempt stuck in build still holds the stopped runtime"
    );
}

#[wasm_bindgen_test]
async fn a_stop_during_build_writes_no_loss_and_no_failed_attempt() {
    let r = runtime();
    r.app().slow_build_ms.set(300);
    r.start();
    wait_until("the build to start", || r.app().builds.get() == 1).await;
    r.stop();
    // The build goes on, finds its device destroyed and ends.
    TimeoutFuture::new(800).await;
    assert_eq!(r.status().state.as_str(), "stopped");
    let lines = r.faults().recent_lines();
    assert!(
        lines
            .iter()
            .all(|l| !l.contains("lost") && !l.contains("init attempt")),
        "a stop is not a loss nor a failure: {lines:?}"
    );
    assert_nothing_reported(&r);
}

#[wasm_bindgen_test]
async fn an_out_of_memory_in_a_rebuild_is_retried_and_recovers() {
    use webgpu_guard::chaos::Injection;
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    r.inject(Injection::OutOfMemoryInRebuild(0)).unwrap();
    // Generation 2 runs out of memory in its build; 3, after a backoff, runs.
    wait_state(&r, "running", 3).await;
    let status = r.status();
    assert!(status.fallback.is_none(), "{status:?}");
    assert_eq!(
        status.faults.out_of_memory,
        1,
        "{:?}",
        r.faults().recent_lines()
    );
    let lines = r.faults().recent_lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("re-initialising the GPU in")),
        "{lines:?}"
    );
    r.stop();
}

#[wasm_bindgen_test]
async fn a_validation_error_in_the_application_s_build_ends_in_the_fallback_at_once() {
    let r = runtime();
    let shown: Rc<RefCell<Vec<String>>> = Rc::default();
    let s = shown.clone();
    r.on_fallback(move |f| s.borrow_mut().push(f.code().to_string()));
    r.start();
    wait_state(&r, "running", 1).await;
    r.app().invalid_in_build.set(true);
    r.force_recovery();
    wait_until("the fallback", || !shown.borrow().is_empty()).await;
    assert_eq!(*shown.borrow(), vec!["init-failed".to_string()]);
    assert_eq!(r.status().generation, 2, "retried: {:?}", r.status());
    // One fault, written once, classified as what it is: no device was lost.
    let net = r.status().faults;
    assert_eq!((net.validation, net.other), (1, 0), "{net:?}");
    let groups = r.faults().groups();
    assert!(
        groups
            .iter()
            .all(|g| g.kind == webgpu_guard::FaultKind::Validation),
        "{groups:?}"
    );
    let lines = r.faults().recent_lines();
    let naming = lines
        .iter()
        .filter(|l| l.contains("clear-app-invalid"))
        .count();
    assert_eq!(naming, 1, "{lines:?}");
    r.app().invalid_in_build.set(false);
    r.stop();
}

#[wasm_bindgen_test]
async fn an_init_deadline_of_u32_max_is_no_deadline() {
    let mut options = RuntimeOptions::default();
    options.supervisor.init_deadline_ms = u32::MAX;
    let r = runtime_with(options);
    r.start();
    wait_state(&r, "running", 1).await;
    TimeoutFuture::new(200).await;
    let lines = r.faults().recent_lines();
    assert!(
        lines.iter().all(|l| !l.contains("did not finish")),
        "{lines:?}"
    );
    assert_eq!(r.status().generation, 1, "{:?}", r.status());
    r.stop();
}

#[wasm_bindgen_test]
async fn a_telemetry_sink_that_throws_through_wasm_cannot_silence_the_net_or_wedge_the_runtime() {
    struct ThrowingSink;
    impl webgpu_guard::telemetry::TelemetrySink for ThrowingSink {
        fn send(&self, _: &webgpu_guard::telemetry::TelemetryEvent) -> Result<(), String> {
            throw_through_wasm();
            Ok(())
        }
    }
    let r = runtime();
    r.faults().set_sink(Box::new(ThrowingSink));
    r.start();
    wait_state(&r, "running", 1).await;
    // A fault the frame returns goes to the sink from inside the frame.
    let reported = Rc::new(Cell::new(false));
    let done = reported.clone();
    *r.app().on_frame.borrow_mut() = Some(Box::new(move |_| done.set(true)));
    let invalid = webgpu_guard::Fault::new(webgpu_guard::FaultKind::Validation, "seen by a sink");
    r.faults().report_ref(&invalid);
    r.faults().report_ref(&invalid.clone());
    wait_until("a frame", || reported.get()).await;
    let stats = r.status().faults;
    assert_eq!(stats.validation, 2, "{stats:?}");
    assert!(stats.sink_failures >= 1, "{stats:?}");
    // Nothing is wedged: a recovery and a stop are carried out.
    r.force_recovery();
    wait_state(&r, "running", 2).await;
    r.stop();
    assert_eq!(r.status().state.as_str(), "stopped");
}

/// A browser without WebGPU (a mock: page code cannot remove an engine's
/// WebGPU, so `navigator.gpu` is hidden), or, with `false`, WebGPU back.
fn hide_webgpu(hidden: bool) {
    let navigator = web_sys::window().unwrap().navigator();
    if hidden {
        let descriptor = js_sys::Object::new();
        js_sys::Reflect::set(&descriptor, &"value".into(), &JsValue::UNDEFINED).unwrap();
        js_sys::Reflect::set(&descriptor, &"configurable".into(), &true.into()).unwrap();
        js_sys::Object::define_property(&navigator, &"gpu".into(), &descriptor);
    } else {
        js_sys::Reflect::delete_property(&navigator, &"gpu".into()).unwrap();
    }
}

#[wasm_bindgen_test]
async fn without_a_hook_the_fallback_is_shown_in_the_page_in_place_of_the_canvas() {
    hide_webgpu(true);
    let r = runtime();
    r.start();
    wait_until("the fallback", || r.status().state.as_str() == "failed").await;
    hide_webgpu(false);
    let shown = r
        .canvas()
        .next_element_sibling()
        .expect("an element after the canvas");
    assert_eq!(
        shown.class_name(),
        webgpu_guard::web::runtime::FALLBACK_CLASS
    );
    let text = shown.text_content().unwrap_or_default();
    assert!(text.contains("does not support WebGPU"), "{text}");
    assert!(text.contains("Try a recent"), "says what to do: {text}");
    assert_eq!(
        r.canvas().style().get_property_value("display").unwrap(),
        "none"
    );
    // Started again: the message goes and the canvas comes back.
    r.start();
    wait_state(&r, "running", 1).await;
    assert!(
        shown.parent_node().is_none(),
        "the fallback is still in the page"
    );
    assert_eq!(
        r.canvas().style().get_property_value("display").unwrap(),
        ""
    );
    r.stop();
    // With a hook, the application shows it: nothing is added to the page.
    hide_webgpu(true);
    let r = runtime();
    let called = Rc::new(Cell::new(false));
    let c = called.clone();
    r.on_fallback(move |_| c.set(true));
    r.start();
    wait_until("the hook", || called.get()).await;
    hide_webgpu(false);
    assert!(r.canvas().next_element_sibling().is_none());
    r.stop();
}

#[wasm_bindgen_test]
async fn a_fallback_hook_that_starts_again_waits_its_backoff() {
    hide_webgpu(true);
    let r = runtime();
    let shown = Rc::new(Cell::new(0u32));
    let count = shown.clone();
    let weak = r.downgrade();
    r.on_fallback(move |_| {
        count.set(count.get() + 1);
        if let Some(r) = weak.upgrade() {
            r.start();
        }
    });
    r.start();
    // A plain timer: it fires only if the page is not spinning.
    TimeoutFuture::new(1500).await;
    let fallbacks = shown.get();
    r.stop();
    hide_webgpu(false);
    // 0, then 300 + 600 ms of backoff within 1.5 s: 2 or 3 fallbacks, not thousands.
    assert!(
        (2..=4).contains(&fallbacks),
        "{fallbacks} fallbacks in 1.5 s"
    );
}

/// Calls `window[name]()`.
fn call_window(name: &str) -> JsValue {
    let window = web_sys::window().unwrap();
    let f: js_sys::Function = js_sys::Reflect::get(&window, &name.into())
        .unwrap()
        .unchecked_into();
    f.call0(&JsValue::NULL).unwrap()
}

#[wasm_bindgen_test]
async fn the_console_stops_and_starts_a_runtime_whose_handles_are_gone_and_belongs_to_one() {
    let r = runtime();
    r.expose_console();
    r.start();
    wait_state(&r, "running", 1).await;
    let app = r.app().clone();
    // A second runtime of the page: refused, and said.
    let second = runtime();
    second.expose_console();
    assert_eq!(
        second.status().faults.other,
        1,
        "{:?}",
        second.faults().recent_lines()
    );
    drop(second);
    // As the README's `main`: every handle dropped.
    drop(r);
    call_window("gpuStop");
    TimeoutFuture::new(100).await;
    let status = call_window("gpuStatus");
    let state = js_sys::Reflect::get(&status, &"state".into()).unwrap();
    assert_eq!(state.as_string().as_deref(), Some("stopped"));
    let frames = app.frames.get();
    call_window("gpuStart");
    wait_until("frames after gpuStart()", || app.frames.get() > frames + 2).await;
    let status = call_window("gpuStatus");
    let state = js_sys::Reflect::get(&status, &"state".into()).unwrap();
    assert_eq!(state.as_string().as_deref(), Some("running"));
    call_window("gpuStop");
}

/// The ids in `now` that were not in `before`.
fn set_since(before: &[JsValue], now: &js_sys::Set) -> Vec<JsValue> {
    let mut added = Vec::new();
    now.for_each(&mut |id, _, _| {
        if !before.contains(&id) {
            added.push(id);
        }
    });
    added
}

/// A stopped runtime that something keeps alive (a handle, the console
/// functions) sets no clock: nothing of it runs until it starts again, and
/// then its clock is set again.
#[wasm_bindgen_test]
async fn a_stopped_runtime_kept_alive_keeps_no_clock_running() {
    let live = live_intervals();
    let before: Vec<JsValue> = live.keys().into_iter().map(|k| k.unwrap()).collect();
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    let clock = set_since(&before, &live);
    assert_eq!(clock.len(), 1, "one clock while running");
    r.stop();
    TimeoutFuture::new(100).await;
    assert!(!live.has(&clock[0]), "the clock runs for a stopped runtime");
    assert!(set_since(&before, &live).is_empty(), "an interval left set");
    r.start();
    wait_state(&r, "running", 2).await;
    assert_eq!(
        set_since(&before, &live).len(),
        1,
        "no clock after the restart"
    );
    r.stop();
    TimeoutFuture::new(100).await;
    assert!(set_since(&before, &live).is_empty(), "an interval left set");
}

#[wasm_bindgen_test]
async fn a_resize_that_fails_is_tried_again_then_rebuilt_on_a_new_device() {
    let r = runtime();
    r.app().sized.set(true);
    display_at(&r, 40, 30);
    r.start();
    wait_state(&r, "running", 1).await;
    let first = buffer_of(&r);
    // One failure: tried again before the next frame, on the same device.
    r.app().fail_resizes.set(1);
    display_at(&r, 48, 36);
    wait_until("the resize tried again", || {
        r.app().resized_to.borrow().len() >= 2
    })
    .await;
    let resized = r.app().resized_to.borrow().clone();
    let second = buffer_of(&r);
    assert_ne!(second, first);
    assert_eq!(resized, vec![(1, second.0, second.1); 2], "{resized:?}");
    assert_eq!(r.status().generation, 1);
    // Failures every time: after three, a rebuild whose build sees the size.
    r.app().fail_resizes.set(100);
    display_at(&r, 56, 42);
    wait_state(&r, "running", 2).await;
    let third = buffer_of(&r);
    assert_ne!(third, second);
    assert_eq!(r.app().built_at.borrow().last(), Some(&third));
    let tries = r
        .app()
        .resized_to
        .borrow()
        .iter()
        .filter(|(g, w, h)| (*g, *w, *h) == (1, third.0, third.1))
        .count();
    assert_eq!(tries, 3, "{:?}", r.app().resized_to.borrow());
    // Each failure was reported (the console's limit may have cut the rest).
    assert!(
        r.status().faults.out_of_memory >= 4,
        "{:?}",
        r.status().faults
    );
    r.app().fail_resizes.set(0);
    r.stop();
}

#[wasm_bindgen_test]
async fn a_canvas_hidden_or_not_in_the_document_at_start_is_pinned_once_shown() {
    for hidden in [true, false] {
        let document = web_sys::window().unwrap().document().unwrap();
        let canvas: web_sys::HtmlCanvasElement =
            document.create_element("canvas").unwrap().unchecked_into();
        canvas.set_width(64);
        canvas.set_height(64);
        if hidden {
            canvas.style().set_property("display", "none").unwrap();
            document.body().unwrap().append_child(&canvas).unwrap();
        }
        let r = Runtime::new(ClearApp::default(), canvas, RuntimeOptions::default());
        r.start();
        wait_state(&r, "running", 1).await;
        let style = r.canvas().style();
        assert_eq!(style.get_property_value("width").unwrap(), "");
        // Shown (or put in the document) later: judged then, and pinned.
        if hidden {
            style.remove_property("display").unwrap();
        } else {
            document.body().unwrap().append_child(r.canvas()).unwrap();
        }
        wait_until("the canvas pinned", || {
            style.get_property_value("width").unwrap() == "64px"
        })
        .await;
        assert_eq!(style.get_property_value("height").unwrap(), "64px");
        TimeoutFuture::new(300).await;
        let scale = |v: u32| (f64::from(v) * ratio()).round() as u32;
        assert_eq!(buffer_of(&r), (scale(64), scale(64)), "hidden {hidden}");
        r.stop();
    }
}

#[wasm_bindgen_test]
async fn the_status_reports_the_wasm_memory_and_the_js_heap_where_the_engine_tells() {
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    let status = r.status();
    assert!(status.wasm_memory_bytes >= 65_536, "{status:?}");
    assert_eq!(
        status.wasm_memory_bytes % 65_536,
        0,
        "whole pages: {status:?}"
    );
    let has_memory = js_sys::Function::new_no_args("return !!(performance && performance.memory)")
        .call0(&JsValue::NULL)
        .unwrap()
        .is_truthy();
    assert_eq!(status.js_heap_bytes.is_some(), has_memory, "{status:?}");
    assert!(status.js_heap_bytes.is_none_or(|b| b > 0), "{status:?}");
    r.stop();
}

/// Everywhere the runtime calls code it does not own (the application's
/// `build`, `frame`, `resize` and `Drop`, a fallback hook, a telemetry sink, a
/// sanitiser), that code calls back into the runtime: nothing of the runtime
/// may be lent meanwhile (`runtime_bugs` stays 0: the trampoline checks), and
/// every call answers.
#[wasm_bindgen_test]
async fn code_the_runtime_calls_can_call_back_into_it_from_everywhere() {
    use webgpu_guard::web::WeakRuntime;
    type Pokes = Rc<RefCell<Vec<&'static str>>>;
    /// Calls back into the runtime from `from`.
    fn poke(me: &RefCell<Option<WeakRuntime<Poking>>>, pokes: &Pokes, from: &'static str) {
        let Some(r) = me.borrow().as_ref().and_then(|w| w.upgrade()) else {
            return;
        };
        let status = r.status();
        let _ = r.with_live(|gpu, _| gpu.generation);
        r.set_level(status.level);
        let _ = r.faults().stats();
        r.faults().note(&format!("poked from {from}"));
        pokes.borrow_mut().push(from);
    }
    #[derive(Default)]
    struct Poking {
        me: Rc<RefCell<Option<WeakRuntime<Poking>>>>,
        pokes: Pokes,
        fail_build: Cell<bool>,
    }
    struct PokingResources {
        me: Rc<RefCell<Option<WeakRuntime<Poking>>>>,
        pokes: Pokes,
    }
    impl Drop for PokingResources {
        fn drop(&mut self) {
            poke(&self.me, &self.pokes, "drop");
        }
    }
    impl App for Poking {
        type Resources = PokingResources;
        async fn build(&self, gpu: &GpuContext) -> Result<PokingResources, Fault> {
            poke(&self.me, &self.pokes, "build");
            if self.fail_build.get() {
                let d = &gpu.device;
                let _never_made = d
                    .phase("poking-invalid", || {
                        d.create_buffer(
                            "poking-invalid-buffer",
                            256,
                            BufferUsages::MAP_READ | BufferUsages::STORAGE,
                        )
                    })
                    .await?;
            }
            Ok(PokingResources {
                me: self.me.clone(),
                pokes: self.pokes.clone(),
            })
        }
        fn resize(&self, _: &GpuContext, _: &mut PokingResources) -> Result<(), Fault> {
            poke(&self.me, &self.pokes, "resize");
            Ok(())
        }
        fn frame(&self, _: &GpuContext, _: &PokingResources, _: &FrameInfo) -> Result<(), Fault> {
            poke(&self.me, &self.pokes, "frame");
            Ok(())
        }
    }
    struct PokingSink(Rc<RefCell<Option<WeakRuntime<Poking>>>>, Pokes);
    impl webgpu_guard::telemetry::TelemetrySink for PokingSink {
        fn send(&self, _: &webgpu_guard::telemetry::TelemetryEvent) -> Result<(), String> {
            poke(&self.0, &self.1, "sink");
            Ok(())
        }
    }
    let r = Runtime::new(
        Poking::default(),
        canvas_in_page(),
        RuntimeOptions::default(),
    );
    *r.app().me.borrow_mut() = Some(r.downgrade());
    let pokes = r.app().pokes.clone();
    let (me, sink_pokes) = (r.app().me.clone(), pokes.clone());
    r.faults()
        .set_sink(Box::new(PokingSink(me.clone(), sink_pokes)));
    let (sanitiser_me, sanitiser_pokes) = (me.clone(), pokes.clone());
    r.faults().set_sanitizer(Some(Box::new(move |text: &str| {
        poke(&sanitiser_me, &sanitiser_pokes, "sanitiser");
        text.to_string()
    })));
    let (hook_me, hook_pokes) = (me.clone(), pokes.clone());
    r.on_fallback(move |_| poke(&hook_me, &hook_pokes, "hook"));
    r.start();
    let running = |generation: u64| {
        let r = r.clone();
        move || {
            let s = r.status();
            s.state.as_str() == "running" && s.generation == generation && s.frames > 2
        }
    };
    wait_until("running", running(1)).await;
    let style = r.canvas().style();
    style.set_property("width", "90px").unwrap();
    wait_until("a resize", || pokes.borrow().contains(&"resize")).await;
    r.force_recovery();
    wait_until("running again", running(2)).await;
    // The next build fails with a validation error: the fault goes to the
    // sink through the sanitiser, and the fallback to the hook.
    r.app().fail_build.set(true);
    r.force_recovery();
    wait_until("the fallback", || pokes.borrow().contains(&"hook")).await;
    let status = r.status();
    assert_eq!(status.state.as_str(), "failed", "{status:?}");
    for from in [
        "build",
        "frame",
        "resize",
        "drop",
        "sink",
        "sanitiser",
        "hook",
    ] {
        assert!(
            pokes.borrow().contains(&from),
            "no call back from {from}: {:?}",
            pokes.borrow()
        );
    }
    assert_eq!(
        status.runtime_bugs,
        0,
        "the runtime was lent while foreign code ran: {:?}",
        r.faults().recent_lines()
    );
    r.stop();
}

#[wasm_bindgen(inline_js = "export function throw_an_error_whose_message_throws() {
  class Nasty extends Error { get message() { throw this; } get name() { throw this; } }
  throw new Nasty();
}")]
extern "C" {
    /// Throws, through WebAssembly, an error whose `message` and `name`
    /// getters throw it again.
    fn throw_an_error_whose_message_throws();
}

/// A fallback hook that throws an error whose very description throws: the
/// runtime describes it without throwing, and is not left busy (a `start`
/// after it is carried out).
#[wasm_bindgen_test]
async fn a_hook_throwing_an_error_whose_message_throws_cannot_wedge_the_runtime() {
    let r = runtime();
    r.app().invalid_in_build.set(true);
    let hooked = Rc::new(Cell::new(0));
    let count = hooked.clone();
    r.on_fallback(move |_| {
        count.set(count.get() + 1);
        throw_an_error_whose_message_throws();
    });
    r.start();
    wait_until("the fallback hook", || hooked.get() == 1).await;
    let lines = r.faults().recent_lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("the fallback hook threw: ?: ?")),
        "{lines:?}"
    );
    // Not busy for ever: a start is handled (its backoff first), and runs.
    r.app().invalid_in_build.set(false);
    r.start();
    wait_state(&r, "running", 2).await;
    r.stop();
    assert_eq!(r.status().state.as_str(), "stopped");
}

/// A `with_live` closure that stops the runtime holds the last reference to
/// the resources: their `Drop` (which throws here) runs through the
/// trampoline, reported, not thrown at the caller.
#[wasm_bindgen_test]
async fn a_stop_from_with_live_drops_the_resources_through_the_trampoline() {
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    r.app().throw_on_drop.set(true);
    let stopper = r.clone();
    let answered = r.with_live(|gpu, _| {
        stopper.stop();
        gpu.generation
    });
    assert_eq!(answered, Some(1));
    assert_eq!(r.status().state.as_str(), "stopped");
    let lines = r.faults().recent_lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("dropping the application's resources threw")),
        "{lines:?}"
    );
}

/// A scope set a throw abandoned inside `with_live` is popped by its
/// trampoline: what it caught is reported and the stack is balanced.
#[wasm_bindgen_test]
async fn a_scope_set_a_throw_abandoned_in_with_live_is_popped() {
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    let answered = r.with_live(|gpu, _| abandon_a_set(&gpu.device, "abandoned-in-with-live"));
    assert!(answered.is_none());
    assert_reported_by_the_abandoned_set(&r, "abandoned-in-with-live").await;
    assert_eq!(r.scope_stack_balanced().await, Some(true));
    r.stop();
}

/// A `track` whose `create` opens a set and throws: its own trampoline pops it.
#[wasm_bindgen_test]
async fn a_scope_set_a_throw_abandoned_in_a_tracked_creation_is_popped() {
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    let created = r.with_live(|gpu, _| {
        gpu.device
            .track(
                "throws-in-create",
                16,
                || -> Result<web_sys::GpuBuffer, JsValue> {
                    abandon_a_set(&gpu.device, "abandoned-in-track");
                    Err(JsValue::NULL)
                },
            )
            .map(|_| ())
    });
    let fault = created.expect("with_live ran").unwrap_err();
    assert_eq!(fault.kind, webgpu_guard::FaultKind::Exception, "{fault}");
    assert_reported_by_the_abandoned_set(&r, "abandoned-in-track").await;
    assert_eq!(r.scope_stack_balanced().await, Some(true));
    r.stop();
}

/// A set `build` holds across an await, abandoned by a throw in a later poll:
/// the trampolined future's context pops it.
#[wasm_bindgen_test]
async fn a_scope_set_a_throwing_build_held_across_an_await_is_popped() {
    let r = runtime();
    r.app().abandon_in.set(Some("build"));
    r.start();
    assert_reported_by_the_abandoned_set(&r, "abandoned-in-build").await;
    wait_until("the fallback", || r.status().state.as_str() == "failed").await;
    // Started again, the build runs and the new device's stack is balanced.
    r.start();
    wait_state(&r, "running", 2).await;
    assert_eq!(r.scope_stack_balanced().await, Some(true));
    r.stop();
}

/// A resize that opens a set and throws.
#[wasm_bindgen_test]
async fn a_scope_set_a_throwing_resize_abandoned_is_popped() {
    let r = runtime();
    r.app().sized.set(true);
    display_at(&r, 100, 50);
    r.start();
    wait_state(&r, "running", 1).await;
    r.app().abandon_in.set(Some("resize"));
    display_at(&r, 120, 60);
    assert_reported_by_the_abandoned_set(&r, "abandoned-in-resize").await;
    assert_eq!(r.scope_stack_balanced().await, Some(true));
    r.stop();
}

/// The resources' `Drop` opens a set and throws (a recovery drops them); the
/// set is on another runtime's device, which stays alive to tell.
#[wasm_bindgen_test]
async fn a_scope_set_a_throwing_drop_abandoned_is_popped() {
    let running = runtime();
    running.start();
    wait_state(&running, "running", 1).await;
    let device = running
        .with_live(|gpu, _| gpu.device.clone())
        .expect("a live device");
    let r = runtime();
    *r.app().drop_on_device.borrow_mut() = Some(device);
    r.start();
    wait_state(&r, "running", 1).await;
    r.app().abandon_in.set(Some("drop"));
    r.force_recovery();
    assert_reported_by_the_abandoned_set(&running, "abandoned-in-drop").await;
    wait_state(&r, "running", 2).await;
    assert_eq!(running.scope_stack_balanced().await, Some(true));
    r.stop();
    running.stop();
}

/// A fallback hook that opens a set on another runtime's device and throws.
#[wasm_bindgen_test]
async fn a_scope_set_a_throwing_hook_abandoned_is_popped() {
    let running = runtime();
    running.start();
    wait_state(&running, "running", 1).await;
    let device = running
        .with_live(|gpu, _| gpu.device.clone())
        .expect("a live device");
    let failing = runtime();
    failing.app().invalid_in_build.set(true);
    failing.on_fallback(move |_| abandon_a_set(&device, "abandoned-in-a-hook"));
    failing.start();
    assert_reported_by_the_abandoned_set(&running, "abandoned-in-a-hook").await;
    assert_eq!(running.scope_stack_balanced().await, Some(true));
    running.stop();
    failing.stop();
}

#[wasm_bindgen(inline_js = "export function throw_a_revoked_proxy() {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  throw proxy;
}")]
extern "C" {
    /// Throws, through WebAssembly, a revoked `Proxy`: `instanceof` on it
    /// throws, and so does every other look at it.
    fn throw_a_revoked_proxy();
}

/// A frame that throws a value the trampoline cannot even look at: still
/// stopped there, classified as a throw (not a crash, not the driver), its
/// scopes popped and its borrow released; frames go on.
#[wasm_bindgen_test]
async fn a_frame_throwing_a_revoked_proxy_is_classified_as_a_throw() {
    let r = runtime();
    r.set_frame_sampling(webgpu_guard::frame_sampling::FrameSampling::every(1));
    r.start();
    wait_state(&r, "running", 1).await;
    let target = r.status().frames + 2;
    let thrown = Cell::new(false);
    *r.app().on_frame.borrow_mut() = Some(Box::new(move |frame| {
        if frame >= target && !thrown.replace(true) {
            throw_a_revoked_proxy();
        }
    }));
    wait_until("the thrown frame", || r.status().frames_thrown == 1).await;
    let lines = r.faults().recent_lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("the frame threw") && l.contains("cannot be read")),
        "{lines:?}"
    );
    let frames = r.app().frames.get();
    wait_until("frames after the throw", || {
        r.app().frames.get() > frames + 2
    })
    .await;
    assert_eq!(r.status().state.as_str(), "running");
    assert_eq!(r.scope_stack_balanced().await, Some(true));
    r.stop();
}

/// What lives per device generation is bounded: after 50 recoveries, the
/// `lost` watches alive and the wait slots held are those of the devices alive
/// now, not of every retired one (on Gecko a retired device's `lost` never
/// resolves, and its watch, and its slot, lived for the life of the page).
#[wasm_bindgen_test]
async fn nothing_grows_with_generations() {
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    let watching = webgpu_guard::web::lost::watching();
    let slots = webgpu_guard::web::wait::slots_in_use();
    for generation in 2..=51 {
        r.force_recovery();
        wait_until(&format!("generation {generation} running"), || {
            let s = r.status();
            s.state.as_str() == "running" && s.generation == generation
        })
        .await;
    }
    // Retired devices' tasks end a turn of the event loop after their watch.
    wait_until("the retired devices' watches to end", || {
        webgpu_guard::web::lost::watching() <= watching + 1
    })
    .await;
    let slots_now = webgpu_guard::web::wait::slots_in_use();
    assert!(
        slots_now <= slots + 4,
        "{slots} wait slots held before, {slots_now} after 50 recoveries"
    );
    r.stop();
}

#[wasm_bindgen(inline_js = "export function count_console_lines(counting) {
  if (counting) {
    window.__consoleLines = 0;
    window.__savedLines = ['log', 'error', 'warn', 'info', 'debug'].map(k => [k, console[k]]);
    for (const [k, f] of window.__savedLines) {
      console[k] = (...a) => { window.__consoleLines++; return f.apply(console, a); };
    }
  } else if (window.__savedLines) {
    for (const [k, f] of window.__savedLines) console[k] = f;
    window.__savedLines = null;
  }
  return window.__consoleLines;
}")]
extern "C" {
    /// Starts counting the console's lines (every level), or stops and puts
    /// its methods back; returns the lines counted so far.
    fn count_console_lines(counting: bool) -> u32;
}

/// One console line per fault by default: no telemetry copy on
/// `console.debug` (verbose level, shown by captures of the console).
#[wasm_bindgen_test]
async fn a_fault_writes_one_console_line_by_default() {
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    count_console_lines(true);
    r.faults().report_ref(&Fault::new(
        webgpu_guard::FaultKind::Validation,
        "one fault, one line",
    ));
    // Written in the report's own call, the telemetry's too.
    let lines = count_console_lines(false);
    assert_eq!(lines, 1, "{:?}", r.faults().recent_lines());
    r.stop();
}

/// The default fallback of a build that failed on a shader: the diagnostic's
/// source line and caret in a block that keeps its spaces, in a monospaced
/// font, so that the caret stands under its column; no words about a scene.
#[wasm_bindgen_test]
async fn the_fallback_keeps_a_shader_diagnostic_s_caret_under_its_column() {
    let r = runtime();
    r.app().bad_shader_in_build.set(true);
    r.start();
    wait_until("the fallback", || r.status().state.as_str() == "failed").await;
    let message = r.status().fallback.expect("a fallback").message();
    assert!(!message.contains("scene"), "{message}");
    let document = web_sys::window().unwrap().document().unwrap();
    let shown = document
        .query_selector(&format!(".{}", webgpu_guard::web::runtime::FALLBACK_CLASS))
        .unwrap()
        .expect("the fallback view");
    let block: web_sys::HtmlElement = shown
        .query_selector("pre")
        .unwrap()
        .expect("a block for the diagnostic")
        .unchecked_into();
    let text = block.text_content().unwrap_or_default();
    assert_eq!(
        Some(text.as_str()),
        message.split_once('\n').map(|(_, rest)| rest)
    );
    assert!(text.contains('^'), "{text}");
    let style = web_sys::window()
        .unwrap()
        .get_computed_style(&block)
        .unwrap()
        .unwrap();
    assert_eq!(style.get_property_value("white-space").unwrap(), "pre");
    assert!(
        style
            .get_property_value("font-family")
            .unwrap()
            .contains("monospace"),
        "{:?}",
        style.get_property_value("font-family")
    );
    r.stop();
    shown.remove();
}

/// After a loss, the rebuilt device draws from a timer until the first
/// animation frame (Firefox sends none after its GPU process crashed: here
/// animation frames are swallowed, a mock): frames come at once, with no stall
/// reported; when animation frames come back, the timer stops quietly.
#[wasm_bindgen_test]
async fn a_device_rebuilt_after_a_loss_draws_before_animation_frames_come_back() {
    let r = runtime();
    r.start();
    wait_state(&r, "running", 1).await;
    assert_eq!(r.status().frame_clock(), "animation-frame");
    swallow_animation_frames(true);
    r.inject(webgpu_guard::chaos::Injection::LoseNow)
        .expect("a loss");
    wait_until("the rebuilt device", || {
        let s = r.status();
        s.state.as_str() == "running" && s.generation == 2
    })
    .await;
    let frames = r.app().frames.get();
    wait_until("frames on the rebuilt device", || {
        r.app().frames.get() >= frames + 3
    })
    .await;
    let status = r.status();
    assert_eq!(status.frame_clock(), "timer", "{status:?}");
    assert!(
        !status.stalled,
        "the stall detector had to step in: {status:?}"
    );
    swallow_animation_frames(false);
    wait_until("animation frames again", || {
        r.status().frame_clock() == "animation-frame"
    })
    .await;
    let lines = r.faults().recent_lines();
    assert!(
        lines
            .iter()
            .all(|l| !l.contains("came back") && !l.contains("stalled")),
        "{lines:?}"
    );
    // A device the application asks for starts on animation frames alone.
    r.force_recovery();
    wait_state(&r, "running", 3).await;
    assert_eq!(r.status().frame_clock(), "animation-frame");
    r.stop();
}

/// State kept in a texture (70 texels a row: 280 bytes, padded to 512 in a
/// copy into a buffer), carried across a loss by a `GpuSnapshot` of the
/// texture: read back with its rows padded, kept tight, written back by
/// `restore_texture`.
struct TextureStateApp {
    snapshot: webgpu_guard::web::snapshot::GpuSnapshot,
}

struct TextureState {
    state: Tracked<web_sys::GpuTexture>,
}

const STATE_ROWS: (u32, u32, u32) = (70, 5, 4);

fn state_rows() -> webgpu_guard::texel_rows::TexelRows {
    let (w, h, b) = STATE_ROWS;
    webgpu_guard::texel_rows::TexelRows::new(w, h, b).unwrap()
}

/// A pattern of the state's bytes, different for each `seed`.
fn pattern(seed: u8) -> Vec<u8> {
    (0..state_rows().tight_len())
        .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed))
        .collect()
}

fn write_state(gpu: &GpuContext, texture: &web_sys::GpuTexture, bytes: &[u8]) -> Result<(), Fault> {
    let rows = state_rows();
    let layout = web_sys::GpuTexelCopyBufferLayout::new();
    layout.set_bytes_per_row(rows.tight_row());
    let extent = web_sys::GpuExtent3dDict::new(rows.width);
    extent.set_height(rows.height);
    gpu.device.write_texture(
        &web_sys::GpuTexelCopyTextureInfo::new(texture),
        bytes,
        &layout,
        &extent,
    )
}

impl App for TextureStateApp {
    type Resources = TextureState;

    async fn build(&self, gpu: &GpuContext) -> Result<TextureState, Fault> {
        let (w, h, _) = STATE_ROWS;
        let state = gpu.device.create_texture(&TextureSpec::d2(
            "state",
            web_sys::GpuTextureFormat::Rgba8unorm,
            w,
            h,
            TextureUsages::COPY_SRC | TextureUsages::COPY_DST | TextureUsages::TEXTURE_BINDING,
        ))?;
        if self.snapshot.restore_texture(gpu, &state)?.is_none() {
            write_state(gpu, &state, &pattern(1))?;
        }
        Ok(TextureState { state })
    }

    fn frame(&self, gpu: &GpuContext, r: &TextureState, info: &FrameInfo) -> Result<(), Fault> {
        self.snapshot
            .capture_texture(gpu, info.number, &r.state, state_rows())?;
        Ok(())
    }
}

/// The state texture's bytes, read back now (rows unpadded).
async fn read_state(r: &Runtime<TextureStateApp>) -> Vec<u8> {
    let read = r
        .with_live(|gpu, res| {
            let rows = state_rows();
            let staging = gpu
                .device
                .create_buffer(
                    "state-check",
                    rows.padded_len(),
                    BufferUsages::COPY_DST | BufferUsages::MAP_READ,
                )
                .unwrap();
            let encoder = gpu.device.create_command_encoder("state-check").unwrap();
            let layout = web_sys::GpuTexelCopyBufferInfo::new(&staging);
            layout.set_bytes_per_row(rows.padded_row());
            let extent = web_sys::GpuExtent3dDict::new(rows.width);
            extent.set_height(rows.height);
            encoder
                .copy_texture_to_buffer(
                    &web_sys::GpuTexelCopyTextureInfo::new(&res.state),
                    &layout,
                    &extent,
                )
                .unwrap();
            gpu.device.submit(&[encoder.finish().unwrap()]).unwrap();
            let read = gpu.device.read_buffer(&staging, 0, rows.padded_len());
            async move {
                let bytes = read.await.unwrap();
                drop(staging);
                bytes
            }
        })
        .expect("a live device");
    state_rows().strip(&read.await).unwrap()
}

#[wasm_bindgen_test]
async fn state_in_a_texture_survives_a_loss_through_a_snapshot_of_the_texture() {
    let app = TextureStateApp {
        snapshot: webgpu_guard::web::snapshot::GpuSnapshot::new("state", 3),
    };
    let snapshot = app.snapshot.clone();
    let r = Runtime::new(app, canvas_in_page(), RuntimeOptions::default());
    r.start();
    wait_until("a first snapshot", || snapshot.taken() >= 1).await;
    assert_eq!(snapshot.latest().unwrap().bytes, pattern(1));
    // The state moves on; a later snapshot catches it.
    let written_at = r.status().frames;
    r.with_live(|gpu, res| write_state(gpu, &res.state, &pattern(2)).unwrap())
        .unwrap();
    wait_until("a snapshot of the new state", || {
        snapshot.latest().is_some_and(|s| s.frame > written_at + 1)
    })
    .await;
    let latest = snapshot.latest().unwrap();
    assert_eq!(latest.bytes, pattern(2));
    assert_eq!(latest.rows, Some(state_rows()));
    assert_eq!(read_state(&r).await, pattern(2));
    // A loss: the new device starts from the snapshot, byte for byte.
    r.inject(webgpu_guard::chaos::Injection::LoseNow).unwrap();
    wait_until("the rebuilt device", || {
        let s = r.status();
        s.state.as_str() == "running" && s.generation == 2
    })
    .await;
    assert_eq!(read_state(&r).await, pattern(2));
    r.stop();
}

/// A build that reports a storm of faults, then fails.
struct StormThenFail;

impl App for StormThenFail {
    type Resources = ();

    async fn build(&self, gpu: &GpuContext) -> Result<(), Fault> {
        for i in 0..10 {
            gpu.device.faults().report_ref(&Fault::new(
                webgpu_guard::fault::FaultKind::Validation,
                format!("storm {i}"),
            ));
        }
        Err(Fault::new(
            webgpu_guard::fault::FaultKind::Validation,
            "the build gives up",
        ))
    }

    fn frame(&self, _: &GpuContext, _: &(), _: &FrameInfo) -> Result<(), Fault> {
        Ok(())
    }
}

/// The line of a runtime giving up is written whatever the rate limit says:
/// a storm before it cannot hide why the runtime stopped.
#[wasm_bindgen_test]
async fn the_fallback_line_is_written_after_a_storm() {
    let r = Runtime::new(StormThenFail, canvas_in_page(), RuntimeOptions::default());
    r.start();
    wait_until("the fallback", || r.status().fallback.is_some()).await;
    let lines = r.faults().recent_lines();
    assert!(lines.iter().any(|l| l.contains("giving up")), "{lines:#?}");
    let stats = r.status().faults;
    assert_eq!(stats.logged, lines.len() as u64, "{stats:?}");
    r.stop();
}
