//! The page's console functions (`matarGPU()`, `gpuStop()`, `gpuStart()`,
//! `gpuStatus()`): which runtime of the page owns them (one, whichever front
//! it belongs to: webgpu-guard's or webgpu-guard-wgpu's), and putting a
//! function on `window` for the life of the page.

use std::cell::Cell;

use wasm_bindgen::prelude::*;

use crate::fault::{Fault, FaultKind};
use crate::web::faults::FaultSink;

thread_local! {
    /// Which runtime of this page owns the console functions (its address;
    /// 0: none).
    static OWNER: Cell<usize> = const { Cell::new(0) };
}

/// Whether the runtime at address `owner` may put the console functions on
/// `window` now: `true` the first time on the page; `false` when it did
/// already (nothing to do) or another runtime owns them (reported to
/// `faults`: the other's are left in place).
pub fn claim(owner: usize, faults: &FaultSink) -> bool {
    let before = OWNER.with(|current| {
        let before = current.get();
        if before == 0 {
            current.set(owner);
        }
        before
    });
    if before != 0 && before != owner {
        faults.report_ref(&Fault::new(
            FaultKind::Exception,
            "expose_console: window.matarGPU, gpuStop, gpuStart and gpuStatus already \
             belong to another runtime of this page; they were left as they are",
        ));
    }
    before == 0
}

/// Puts `f` on `window` as `name`, for the life of the page (with what it
/// holds).
pub fn expose_for_good(name: &str, f: impl Fn() -> JsValue + 'static) {
    let closure = Closure::<dyn Fn() -> JsValue>::new(f);
    if let Some(window) = web_sys::window() {
        let _ = js_sys::Reflect::set(&window, &name.into(), closure.as_ref());
    }
    closure.forget();
}
