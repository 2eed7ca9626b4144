//! webgpu-guard-wgpu in a real browser (headless Chromium on SwiftShader,
//! headless Firefox on lavapipe), through its public API only: a runtime on a
//! canvas of the test page, with applications made to fail on purpose.
#![cfg(target_arch = "wasm32")]

mod common;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use common::{clear, square};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use webgpu_guard_wgpu::{App, Fault, FaultKind, Frame, Gpu, Runtime, RuntimeOptions};

wasm_bindgen_test_configure!(run_in_browser);

/// A fresh canvas in the test page.
fn canvas() -> web_sys::HtmlCanvasElement {
    let document = web_sys::window().unwrap().document().unwrap();
    let canvas: web_sys::HtmlCanvasElement =
        document.create_element("canvas").unwrap().unchecked_into();
    canvas.set_width(64);
    canvas.set_height(64);
    document.body().unwrap().append_child(&canvas).unwrap();
    canvas
}

/// Waits (20 ms at a time, 30 s at most) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..1500 {
        if done() {
            return;
        }
        gloo_timers::future::TimeoutFuture::new(20).await;
    }
    panic!("timed out waiting for {what}");
}

/// What each build's work returned.
type Outcomes = Rc<RefCell<Vec<Result<(), Fault>>>>;

/// An application whose `build` runs `work` and keeps what it returns.
struct Probe<W> {
    work: W,
    seen: Outcomes,
    builds: Rc<Cell<u32>>,
    throw_at_frame: Option<u64>,
}

impl<W> App for Probe<W>
where
    W: AsyncFn(&Gpu) -> Result<(), Fault> + 'static,
{
    type Resources = ();

    async fn build(&self, gpu: &Gpu) -> Result<(), Fault> {
        self.builds.set(self.builds.get() + 1);
        let outcome = (self.work)(gpu).await;
        self.seen.borrow_mut().push(outcome);
        Ok(())
    }

    fn frame(&self, gpu: &Gpu, _: &mut (), frame: &Frame) -> Result<(), Fault> {
        if Some(frame.number) == self.throw_at_frame {
            throw_through_wasm();
        }
        clear(gpu, frame, wgpu::Color::BLUE);
        Ok(())
    }
}

#[wasm_bindgen::prelude::wasm_bindgen(
    inline_js = "export function throw_through_wasm() { throw new Error('thrown through the frame'); }"
)]
extern "C" {
    fn throw_through_wasm();
}

fn probe<W>(work: W) -> (Runtime<Probe<W>>, Outcomes)
where
    W: AsyncFn(&Gpu) -> Result<(), Fault> + 'static,
{
    let seen = Rc::new(RefCell::new(Vec::new()));
    let app = Probe {
        work,
        seen: seen.clone(),
        builds: Rc::new(Cell::new(0)),
        throw_at_frame: None,
    };
    let runtime = Runtime::new(app, canvas(), RuntimeOptions::default());
    (runtime, seen)
}

#[wasm_bindgen_test]
async fn a_phase_names_the_buffer_whose_creation_failed() {
    let (runtime, seen) = probe(async |gpu: &Gpu| {
        let phase = gpu.phase("upload");
        // A mappable buffer may not be a storage buffer.
        let _wrong = gpu.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wrong-usages"),
            size: 16,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        phase.end().await
    });
    runtime.start();
    until("the build", || !seen.borrow().is_empty()).await;
    let fault = seen.borrow()[0]
        .clone()
        .expect_err("the phase caught nothing");
    assert_eq!(fault.kind, FaultKind::Validation, "{fault}");
    assert_eq!(fault.origin.phase.as_deref(), Some("upload"), "{fault}");
    // Dawn names the buffer in its message; wgpu (Firefox) does not, and the
    // fault lists the phase's labelled calls instead.
    let named = fault.object_label().as_deref() == Some("wrong-usages");
    let suspected = fault
        .suspects
        .as_ref()
        .is_some_and(|calls| calls.iter().any(|(label, _)| label == "wrong-usages"));
    assert!(named || suspected, "{fault:?}");
    runtime.stop();
}

#[wasm_bindgen_test]
async fn phases_ended_out_of_order_never_unbalance_the_scopes() {
    let (runtime, seen) = probe(async |gpu: &Gpu| {
        let outer = gpu.phase("outer");
        let inner = gpu.phase("inner");
        // wgpu would panic on the outer pop before the inner one: the outer
        // phase ends the inner one first.
        outer.end().await?;
        drop(inner);
        // The stack is balanced: a new phase catches its own error.
        let phase = gpu.phase("after");
        let _wrong = gpu.create_buffer(&wgpu::BufferDescriptor {
            label: Some("after-wrong"),
            size: 16,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        phase.end().await
    });
    runtime.start();
    until("the build", || !seen.borrow().is_empty()).await;
    let fault = seen.borrow()[0]
        .clone()
        .expect_err("the last phase caught nothing");
    assert_eq!(fault.origin.phase.as_deref(), Some("after"), "{fault}");
    runtime.stop();
}

#[wasm_bindgen_test]
async fn a_shader_error_has_its_place_and_a_caret_under_wide_characters() {
    let (runtime, seen) = probe(async |gpu: &Gpu| {
        // Wide characters before the mistake on its own line: wgpu counts
        // bytes, the caret counts columns.
        let source = "// 中文の注釈\n@fragment fn fs() -> @location(0) vec4f {\n  return /* 中文 */ vec4f(oops);\n}\n";
        gpu.create_shader_module("bad-shader", source)
            .await
            .map(|_| ())
    });
    runtime.start();
    until("the build", || !seen.borrow().is_empty()).await;
    let fault = seen.borrow()[0].clone().expect_err("the shader compiled");
    let text = fault.message.clone();
    assert!(text.contains("bad-shader:3:"), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let source_line = lines
        .iter()
        .position(|l| l.contains("vec4f(oops);"))
        .unwrap_or_else(|| panic!("no source line in {text}"));
    let caret_line = lines[source_line + 1];
    let caret = caret_line
        .find('^')
        .unwrap_or_else(|| panic!("no caret in {text}"));
    // In display columns: each of the two wide characters takes two.
    let line = lines[source_line];
    let token = line[..line.find("oops").unwrap()].chars().count() + 2;
    assert_eq!(caret, token, "{text}");
    runtime.stop();
}

#[wasm_bindgen_test]
async fn a_forced_loss_is_recovered_on_a_new_device_and_builds_again() {
    let (runtime, _seen) = probe(async |_: &Gpu| Ok(()));
    runtime.start();
    until("frames on device 1", || {
        let s = runtime.status();
        s.generation == 1 && s.frames > 2
    })
    .await;
    let frames = runtime.status().frames;
    runtime.force_recovery();
    until("frames on device 2", || {
        let s = runtime.status();
        s.generation == 2 && s.recoveries == 1 && s.frames > frames + 2
    })
    .await;
    assert_eq!(runtime.app().builds.get(), 2);
    runtime.stop();
}

#[wasm_bindgen_test]
async fn a_frame_that_throws_is_reported_and_the_loop_goes_on() {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let app = Probe {
        work: async |_: &Gpu| Ok(()),
        seen,
        builds: Rc::new(Cell::new(0)),
        throw_at_frame: Some(3),
    };
    let runtime = Runtime::new(app, canvas(), RuntimeOptions::default());
    runtime.start();
    until("frames after the throw", || runtime.status().frames > 8).await;
    let lines = runtime.faults().recent_lines().join("\n");
    assert!(lines.contains("thrown through the frame"), "{lines}");
    assert_eq!(runtime.status().generation, 1);
    runtime.stop();
}

#[wasm_bindgen_test]
async fn the_ladder_degrades_to_a_size_that_fits_and_names_every_size_when_none_does() {
    let (runtime, seen) = probe(async |gpu: &Gpu| {
        let too_big = gpu.device.limits().max_texture_dimension_2d + 1;
        let fitted = gpu
            .create_texture_fitting(&[square("shadow", too_big), square("shadow", 256)])
            .await?;
        assert_eq!(fitted.chosen, 1);
        assert!(fitted.degraded());
        assert_eq!(fitted.texture.width(), 256);
        assert_eq!(gpu.ledger().label("shadow").map(|t| t.objects), Some(1));
        let none = gpu
            .create_texture_fitting(&[square("huge", too_big), square("huge", too_big + 1)])
            .await
            .expect_err("a texture beyond the limits fitted");
        assert!(none.message.contains("no size fits"), "{none}");
        assert_eq!(none.related.len(), 2, "{none:?}");
        Ok(())
    });
    runtime.start();
    until("the build", || !seen.borrow().is_empty()).await;
    seen.borrow()[0].clone().expect("the ladder");
    runtime.stop();
}

#[wasm_bindgen_test]
async fn a_storm_of_uncaptured_errors_is_counted_and_written_five_lines_a_second() {
    let (runtime, seen) = probe(async |gpu: &Gpu| {
        // Outside any scope: 300 uncaptured validation errors at once, each
        // worded apart (Firefox reports an identical message once).
        let too_big = gpu.device.limits().max_texture_dimension_2d + 1;
        for n in 0..300 {
            let _ = gpu.device.create_texture(&square("storm", too_big + n));
        }
        Ok(())
    });
    let started = js_sys::Date::now();
    runtime.start();
    until("the build", || !seen.borrow().is_empty()).await;
    until("300 errors counted", || {
        runtime.status().faults.validation >= 300
    })
    .await;
    let status = runtime.status();
    let seconds = ((js_sys::Date::now() - started) / 1000.0).ceil() as u64;
    // 5 lines a second and one cut-off line, besides the runtime's few notes
    // (the device running): never a line per error.
    assert!(
        status.faults.logged <= 6 * seconds + 4,
        "{seconds} s: {status:?}"
    );
    runtime.stop();
}

#[wasm_bindgen_test]
async fn with_live_may_stop_the_runtime_from_inside_its_closure() {
    let (runtime, _seen) = probe(async |_: &Gpu| Ok(()));
    runtime.start();
    until("frames", || runtime.status().frames > 2).await;
    let handle = runtime.clone();
    // The stop waits for the closure to return (it holds the resources).
    let answered = runtime.with_live(move |_, _| {
        handle.stop();
        7
    });
    assert_eq!(answered, Some(7));
    until("stopped", || runtime.status().state.as_str() == "stopped").await;
}

/// Opens a phase in frame 3 and throws before ending it; makes an error
/// outside any phase in frame 6.
struct Abandons {
    frames: Cell<u64>,
}

impl App for Abandons {
    type Resources = ();

    async fn build(&self, _: &Gpu) -> Result<(), Fault> {
        Ok(())
    }

    fn frame(&self, gpu: &Gpu, _: &mut (), frame: &Frame) -> Result<(), Fault> {
        let n = self.frames.get() + 1;
        self.frames.set(n);
        if n == 3 {
            let _phase = gpu.phase("abandoned");
            throw_through_wasm();
        }
        if n == 6 {
            let too_big = gpu.device.limits().max_texture_dimension_2d + 1;
            let _ = gpu
                .device
                .create_texture(&square("after-the-throw", too_big));
        }
        clear(gpu, frame, wgpu::Color::BLUE);
        Ok(())
    }
}

#[wasm_bindgen_test]
async fn a_phase_a_throw_abandoned_is_closed_with_the_frame_that_opened_it() {
    let app = Abandons {
        frames: Cell::new(0),
    };
    let options = RuntimeOptions {
        // Frames 1 to 31 unscoped: only the abandoned phase could catch
        // frame 6's error.
        frame_scope_every: 32,
        ..RuntimeOptions::default()
    };
    let runtime = Runtime::new(app, canvas(), options);
    runtime.start();
    // The error of frame 6 reaches the uncaptured-error listener: no scope
    // of the abandoned phase is left to swallow it.
    until("frame 6's error, uncaptured", || {
        runtime
            .faults()
            .recent_lines()
            .join("\n")
            .contains("after-the-throw")
            || runtime.status().faults.validation >= 1 && runtime.app().frames.get() > 8
    })
    .await;
    assert!(runtime.status().faults.validation >= 1);
    // And the device goes without wgpu's out-of-order panic.
    runtime.stop();
    until("stopped", || runtime.status().state.as_str() == "stopped").await;
}

/// Keeps what telemetry receives: events, and counts held back.
#[derive(Clone, Default)]
struct Recorded(Rc<RefCell<Vec<(String, u64)>>>);

impl webgpu_guard_wgpu::telemetry::TelemetrySink for Recorded {
    fn send(&self, event: &webgpu_guard_wgpu::telemetry::TelemetryEvent) -> Result<(), String> {
        self.0.borrow_mut().push((event.label.clone(), 1));
        Ok(())
    }

    fn held_back(&self, held: &webgpu_guard_wgpu::telemetry::HeldBack<'_>) -> Result<(), String> {
        self.0
            .borrow_mut()
            .push((held.label.to_string(), held.count));
        Ok(())
    }
}

#[wasm_bindgen_test]
async fn telemetry_counts_every_error_of_a_storm_by_its_sanitised_label() {
    let (runtime, seen) = probe(async |gpu: &Gpu| {
        let too_big = gpu.device.limits().max_texture_dimension_2d + 1;
        for n in 0..300 {
            let _ = gpu
                .device
                .create_texture(&square("player-alice", too_big + n));
        }
        Ok(())
    });
    let recorded = Recorded::default();
    runtime
        .faults()
        .set_sanitizer(Some(Box::new(|text: &str| text.replace("alice", "[name]"))));
    runtime.faults().set_sink(Box::new(recorded.clone()));
    runtime.start();
    until("the build", || !seen.borrow().is_empty()).await;
    let counted = || -> u64 {
        runtime.faults().drain_held();
        recorded.0.borrow().iter().map(|(_, n)| n).sum()
    };
    until("300 errors in telemetry", || counted() >= 300).await;
    assert_eq!(counted(), 300);
    let labels: Vec<String> = recorded.0.borrow().iter().map(|(l, _)| l.clone()).collect();
    assert!(labels.iter().all(|l| !l.contains("alice")), "{labels:?}");
    // Dawn quotes the label in its messages; wgpu (Firefox) does not, and
    // its errors group as unlabelled.
    assert!(
        labels
            .iter()
            .all(|l| l == "player-[name]" || l == "(unlabelled)"),
        "{labels:?}"
    );
    runtime.stop();
}

/// Records the size of each frame and each resize it was told of.
#[derive(Default)]
struct Sized {
    frame_size: Cell<(u32, u32)>,
    resizes: RefCell<Vec<(u32, u32)>>,
}

impl App for Sized {
    type Resources = ();

    async fn build(&self, _: &Gpu) -> Result<(), Fault> {
        Ok(())
    }

    fn frame(&self, gpu: &Gpu, _: &mut (), frame: &Frame) -> Result<(), Fault> {
        self.frame_size.set((frame.width, frame.height));
        clear(gpu, frame, wgpu::Color::BLUE);
        Ok(())
    }

    fn resize(&self, _: &Gpu, _: &mut (), width: u32, height: u32) -> Result<(), Fault> {
        self.resizes.borrow_mut().push((width, height));
        Ok(())
    }
}

#[wasm_bindgen_test]
async fn the_drawing_buffer_follows_the_canvas_s_displayed_size() {
    let canvas = canvas();
    let ratio = web_sys::window().unwrap().device_pixel_ratio();
    let device_pixels = |css: f64| (css * ratio).round() as u32;
    let style = canvas.style();
    style.set_property("width", "100px").unwrap();
    style.set_property("height", "50px").unwrap();
    let runtime = Runtime::new(Sized::default(), canvas.clone(), RuntimeOptions::default());
    runtime.start();
    let wanted = (device_pixels(100.0), device_pixels(50.0));
    until("frames at the displayed size", || {
        runtime.app().frame_size.get() == wanted
    })
    .await;
    assert_eq!((canvas.width(), canvas.height()), wanted);
    style.set_property("width", "120px").unwrap();
    style.set_property("height", "40px").unwrap();
    let wanted = (device_pixels(120.0), device_pixels(40.0));
    until("frames at the new displayed size", || {
        runtime.app().frame_size.get() == wanted
    })
    .await;
    assert_eq!(runtime.app().resizes.borrow().last(), Some(&wanted));
    assert_eq!((canvas.width(), canvas.height()), wanted);
    runtime.stop();
}

/// A lost device's scopes answer null: a phase is not read as success on it,
/// and the ladder chooses no size.
#[wasm_bindgen_test]
async fn on_a_destroyed_device_a_phase_and_the_ladder_do_not_read_silence_as_success() {
    let (runtime, seen) = probe(common::phases_and_the_ladder_on_a_destroyed_device);
    runtime.start();
    until("the build", || !seen.borrow().is_empty()).await;
    let fault = seen.borrow()[0]
        .clone()
        .expect_err("the ladder chose a size on a lost device");
    // A lost device ends the ladder at once (no smaller size would fit).
    assert_eq!(fault.kind, FaultKind::DeviceLost, "{fault}");
    runtime.stop();
}

/// Fails its first `failures` builds with a bug (final: the fallback).
struct FailsFirst {
    failures: Cell<u32>,
}

impl App for FailsFirst {
    type Resources = ();

    async fn build(&self, _: &Gpu) -> Result<(), Fault> {
        if self.failures.get() > 0 {
            self.failures.set(self.failures.get() - 1);
            return Err(Fault::new(FaultKind::Validation, "a bug in build"));
        }
        Ok(())
    }

    fn frame(&self, gpu: &Gpu, _: &mut (), frame: &Frame) -> Result<(), Fault> {
        clear(gpu, frame, wgpu::Color::BLUE);
        Ok(())
    }
}

/// How many fallback views the page shows.
fn fallback_views() -> u32 {
    let document = web_sys::window().unwrap().document().unwrap();
    document
        .query_selector_all(".webgpu-guard-fallback")
        .unwrap()
        .length()
}

/// `matarGPU()` after a fallback starts over; the device that comes up is
/// seen: the canvas shown again and no fallback left, however many
/// fallbacks came before it.
#[wasm_bindgen_test]
async fn a_recovery_asked_for_after_two_fallbacks_shows_the_canvas_again() {
    let canvas = canvas();
    let before = fallback_views();
    let app = FailsFirst {
        failures: Cell::new(2),
    };
    let runtime = Runtime::new(app, canvas.clone(), RuntimeOptions::default());
    runtime.start();
    until("the first fallback", || runtime.status().fallback.is_some()).await;
    assert_eq!(
        canvas.style().get_property_value("display").unwrap(),
        "none"
    );
    runtime.force_recovery();
    until("the second fallback", || {
        runtime.app().failures.get() == 0 && runtime.status().fallback.is_some()
    })
    .await;
    assert_eq!(fallback_views(), before + 1, "two fallback views at once");
    runtime.force_recovery();
    until("frames after the fallbacks", || {
        let s = runtime.status();
        s.fallback.is_none() && s.frames > 2
    })
    .await;
    assert_eq!(
        fallback_views(),
        before,
        "a fallback left over a running device"
    );
    assert_ne!(
        canvas.style().get_property_value("display").unwrap(),
        "none"
    );
    runtime.stop();
}

/// A canvas sized by its attributes alone, with a border under
/// `box-sizing: border-box` (the global reset of Tailwind and Bootstrap):
/// pinning its size keeps its content box, and so its drawing buffer.
#[wasm_bindgen_test]
async fn a_border_box_canvas_sized_by_its_attributes_keeps_its_size() {
    let canvas = canvas();
    let style = canvas.style();
    style.set_property("box-sizing", "border-box").unwrap();
    style.set_property("border", "5px solid black").unwrap();
    style.set_property("padding", "3px").unwrap();
    let ratio = web_sys::window().unwrap().device_pixel_ratio();
    let wanted = ((64.0 * ratio).round() as u32, (64.0 * ratio).round() as u32);
    let runtime = Runtime::new(Sized::default(), canvas.clone(), RuntimeOptions::default());
    runtime.start();
    until("frames", || runtime.status().frames > 10).await;
    let frames = runtime.status().frames;
    until("more frames", || runtime.status().frames > frames + 10).await;
    assert_eq!(runtime.app().frame_size.get(), wanted);
    assert_eq!(canvas.client_width(), 64 + 2 * 3, "the content box shrank");
    runtime.stop();
}

/// The keys of `object`, sorted.
fn keys(object: &wasm_bindgen::JsValue) -> Vec<String> {
    let mut keys: Vec<String> = js_sys::Object::keys(object.unchecked_ref::<js_sys::Object>())
        .iter()
        .filter_map(|key| key.as_string())
        .collect();
    keys.sort();
    keys
}

/// What `object` holds under `key`.
fn get(object: &wasm_bindgen::JsValue, key: &str) -> wasm_bindgen::JsValue {
    js_sys::Reflect::get(object, &key.into()).unwrap()
}

/// `gpuStatus()`'s object has every key of webgpu-guard's, the nested
/// objects' included, with their meaning: a script written against either
/// front reads the other.
#[wasm_bindgen_test]
async fn the_status_object_has_webgpu_guard_s_keys_and_says_what_runs() {
    let (runtime, _seen) = probe(async |_: &Gpu| Ok(()));
    runtime.start();
    until("frames and their time", || {
        let s = runtime.status();
        s.frames > 2 && s.frame_ms > 0.0 && s.cold_start.is_some()
    })
    .await;
    let ours: wasm_bindgen::JsValue = runtime.status().to_js().into();
    let mut reference = webgpu_guard::web::runtime::Status::default();
    reference.cold_start = Some(Default::default());
    let theirs: wasm_bindgen::JsValue = reference.to_js().into();
    let ours_keys = keys(&ours);
    for key in keys(&theirs) {
        assert!(
            ours_keys.contains(&key),
            "`{key}` missing from {ours_keys:?}"
        );
    }
    for nested in ["errors", "coldStart"] {
        assert_eq!(
            keys(&get(&ours, nested)),
            keys(&get(&theirs, nested)),
            "{nested}"
        );
    }
    assert_eq!(
        keys(&get(&ours, "lastInit")),
        keys(&get(&theirs, "coldStart"))
    );
    // In the browser's words (its `adapterInfo`), as webgpu-guard says them.
    let adapter = get(&ours, "adapter").as_string().unwrap_or_default();
    assert!(
        adapter.contains(" / ") || adapter.contains("exposes no vendor details"),
        "{adapter}"
    );
    assert_eq!(get(&ours, "level").as_string().as_deref(), Some("phases"));
    assert_eq!(
        get(&ours, "frameClock").as_string().as_deref(),
        Some("animation-frame")
    );
    assert_eq!(get(&ours, "framesFromTimer").as_bool(), Some(false));
    assert_eq!(get(&ours, "loopAlive").as_bool(), Some(true));
    assert_eq!(get(&ours, "stalled").as_bool(), Some(false));
    assert!(get(&ours, "wasmMemoryBytes").as_f64().unwrap_or(0.0) > 0.0);
    let first_frame = get(&get(&ours, "coldStart"), "firstFrameAtMs").as_f64();
    assert!(first_frame.unwrap_or(0.0) > 0.0, "{first_frame:?}");
    assert_eq!(get(&ours, "firstFrameAtMs").as_f64(), first_frame);
    runtime.stop();
}
