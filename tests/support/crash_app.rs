//! The application of the crash tests (each crash test is a binary of its own:
//! a panic poisons the whole module, as it would a page).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::JsCast;
use webgpu_guard::fault::Fault;
use webgpu_guard::usage::BufferUsages;

use webgpu_guard::web::runtime::RuntimeOptions;
use webgpu_guard::web::{App, FrameInfo, GpuContext, Runtime, Tracked};

#[path = "intervals.rs"]
#[allow(dead_code)] // not every crash binary uses it
mod intervals;
use intervals::live_intervals;

/// Panics in frame `panic_in_frame` (0: never) or in its build.
#[derive(Default)]
pub struct CrashApp {
    pub frames: Cell<u64>,
    pub builds: Cell<u64>,
    pub panic_in_frame: Cell<u64>,
    pub panic_in_build: Cell<bool>,
    /// The resources panic when they are dropped.
    pub panic_on_drop: Rc<Cell<bool>>,
    /// Held while the frame runs: a panic leaves it borrowed for good.
    pub state: RefCell<u64>,
}

pub struct CrashResources {
    _buffer: Tracked<web_sys::GpuBuffer>,
    panic_on_drop: Rc<Cell<bool>>,
}

impl Drop for CrashResources {
    fn drop(&mut self) {
        if self.panic_on_drop.get() {
            panic!("the application panicked dropping its resources");
        }
    }
}

impl App for CrashApp {
    type Resources = CrashResources;

    async fn build(&self, gpu: &GpuContext) -> Result<CrashResources, Fault> {
        self.builds.set(self.builds.get() + 1);
        let d = &gpu.device;
        let buffer = d
            .phase("crash-app", || {
                d.create_buffer("crash-app-buffer", 256, BufferUsages::UNIFORM)
            })
            .await?;
        if self.panic_in_build.get() {
            let _held = self.state.borrow_mut();
            panic!("the application panicked in its build");
        }
        Ok(CrashResources {
            _buffer: buffer,
            panic_on_drop: self.panic_on_drop.clone(),
        })
    }

    fn frame(&self, _: &GpuContext, _: &CrashResources, info: &FrameInfo) -> Result<(), Fault> {
        let mut held = self.state.borrow_mut();
        *held += 1;
        self.frames.set(self.frames.get() + 1);
        if info.number == self.panic_in_frame.get() {
            panic!("the application panicked in frame {}", info.number);
        }
        Ok(())
    }
}

pub fn runtime() -> Runtime<CrashApp> {
    let document = web_sys::window().unwrap().document().unwrap();
    let canvas: web_sys::HtmlCanvasElement =
        document.create_element("canvas").unwrap().unchecked_into();
    canvas.set_width(64);
    canvas.set_height(64);
    document.body().unwrap().append_child(&canvas).unwrap();
    Runtime::new(CrashApp::default(), canvas, RuntimeOptions::default())
}

/// Waits `ms` on a plain JavaScript timer.
pub async fn sleep(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let _ = web_sys::window()
            .unwrap()
            .set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

pub async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        sleep(30).await;
    }
    panic!("timed out waiting for {what}");
}

/// Records the fallbacks shown.
pub fn record_fallbacks(r: &Runtime<CrashApp>) -> Rc<RefCell<Vec<String>>> {
    let shown: Rc<RefCell<Vec<String>>> = Rc::default();
    let s = shown.clone();
    r.on_fallback(move |f| {
        s.borrow_mut()
            .push(format!("{}: {}", f.code(), f.message()))
    });
    shown
}

/// Checks what every crash test checks once the crash is handled: the
/// `crashed` fallback shown once, reported once, no frame drawn any more, and
/// every later call refused (a refused start sets no clock).
#[allow(dead_code)] // not every crash binary uses it
pub async fn assert_crashed_for_good(r: &Runtime<CrashApp>, shown: &Rc<RefCell<Vec<String>>>) {
    wait_until("the crashed fallback", || !shown.borrow().is_empty()).await;
    let status = r.status();
    assert_eq!(status.state.as_str(), "crashed", "{status:?}");
    assert!(!status.loop_alive, "{status:?}");
    // The crashed application's objects are leaked, not dropped (their `Drop`
    // cannot be trusted): the ledger still counts them, but the device is gone.
    assert!(status.last_loss.is_none(), "{status:?}");
    let frames = r.app().frames.get();
    let crash_lines = || {
        r.faults()
            .recent_lines()
            .iter()
            .filter(|l| l.contains("crashed"))
            .count()
    };
    assert_eq!(crash_lines(), 1, "{:?}", r.faults().recent_lines());
    // Every later entry refuses: no restart, no recovery, no frame, no clock.
    let intervals = live_intervals();
    let before = intervals.size();
    r.start();
    r.force_recovery();
    sleep(500).await;
    assert_eq!(
        intervals.size(),
        before,
        "a start after the crash set a clock"
    );
    assert_eq!(r.app().frames.get(), frames, "a frame ran after the crash");
    assert_eq!(r.status().state.as_str(), "crashed");
    assert_eq!(r.status().generation, status.generation, "a new device");
    let shown = shown.borrow();
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(shown[0].starts_with("crashed: "), "{shown:?}");
    assert!(shown[0].contains("panicked"), "{shown:?}");
    assert_eq!(crash_lines(), 1, "{:?}", r.faults().recent_lines());
}
