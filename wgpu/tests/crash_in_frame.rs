//! A panic inside `App::frame` (a WebAssembly trap: wasm32 cannot unwind)
//! stops the wgpu runtime for good with the `crashed` fallback, shown in place
//! of the canvas and reported once; no frame runs after it, and no new device
//! is made. A binary of its own: the panic poisons the module.
#![cfg(target_arch = "wasm32")]

mod common;

use std::cell::Cell;

use common::clear;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use webgpu_guard_wgpu::{App, Fault, Frame, Gpu, Runtime, RuntimeOptions};

wasm_bindgen_test_configure!(run_in_browser);

struct Panicky {
    frames: Cell<u64>,
    panic_at: u64,
}

impl App for Panicky {
    type Resources = ();

    async fn build(&self, _: &Gpu) -> Result<(), Fault> {
        Ok(())
    }

    fn frame(&self, gpu: &Gpu, _: &mut (), frame: &Frame) -> Result<(), Fault> {
        self.frames.set(self.frames.get() + 1);
        if self.frames.get() == self.panic_at {
            panic!("the application's frame panicked on purpose");
        }
        clear(gpu, frame, wgpu::Color::GREEN);
        Ok(())
    }
}

/// Waits for `count` of the page's animation frames: time in which a runtime
/// that still ran would have drawn as many frames.
async fn animation_frames(count: u32) {
    for _ in 0..count {
        let next = js_sys::Promise::new(&mut |resolve, _| {
            let _ = web_sys::window().unwrap().request_animation_frame(&resolve);
        });
        wasm_bindgen_futures::JsFuture::from(next).await.unwrap();
    }
}

async fn pause(ms: u32) {
    gloo_timers::future::TimeoutFuture::new(ms).await;
}

#[wasm_bindgen_test]
async fn a_panic_in_a_frame_stops_the_runtime_for_good_with_the_crashed_fallback() {
    let document = web_sys::window().unwrap().document().unwrap();
    let canvas: web_sys::HtmlCanvasElement =
        document.create_element("canvas").unwrap().unchecked_into();
    canvas.set_width(64);
    canvas.set_height(64);
    document.body().unwrap().append_child(&canvas).unwrap();
    let app = Panicky {
        frames: Cell::new(0),
        panic_at: 5,
    };
    let runtime = Runtime::new(app, canvas.clone(), RuntimeOptions::default());
    runtime.start();
    for _ in 0..1500 {
        if runtime.status().fallback.is_some() {
            break;
        }
        pause(20).await;
    }
    let status = runtime.status();
    assert_eq!(
        status.fallback.as_ref().map(|f| f.code()),
        Some("crashed"),
        "{status:?}"
    );
    assert_eq!(status.state.as_str(), "crashed");
    // For good: no frame after the panic, no new device, even when asked.
    runtime.force_recovery();
    runtime.start();
    animation_frames(30).await;
    assert_eq!(runtime.app().frames.get(), 5);
    assert_eq!(runtime.status().generation, 1);
    // The fallback stands in place of the canvas and says why.
    let shown = document
        .query_selector(&format!(".{}", webgpu_guard_wgpu::web::FALLBACK_CLASS))
        .ok()
        .flatten()
        .and_then(|e| e.text_content())
        .unwrap_or_default();
    assert!(shown.contains("panicked"), "{shown:?}");
}
