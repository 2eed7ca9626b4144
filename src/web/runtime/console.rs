//! The console functions of a page: `matarGPU()`, `gpuStop()`, `gpuStart()` and
//! `gpuStatus()` on `window`, for people and for end-to-end tests. They hold the
//! runtime: a stopped runtime whose application dropped every handle (as the
//! README's `main` does) still answers, and `gpuStart()` starts it again. One
//! runtime of a page owns them: a second one's `expose_console` is refused,
//! and says so.

use std::cell::Cell;

use wasm_bindgen::prelude::*;

use super::{App, Runtime};
use crate::fault::{Fault, FaultKind};

thread_local! {
    /// Which runtime of this page exposed the console functions (its address;
    /// 0: none).
    static EXPOSED: Cell<usize> = const { Cell::new(0) };
}

fn expose(name: &str, f: &JsValue) {
    if let Some(window) = web_sys::window() {
        let _ = js_sys::Reflect::set(&window, &name.into(), f);
    }
}

fn install<A: App>(name: &str, runtime: &Runtime<A>, f: fn(&Runtime<A>) -> JsValue) {
    let runtime = runtime.clone();
    let closure = Closure::<dyn Fn() -> JsValue>::new(move || f(&runtime));
    expose(name, closure.as_ref());
    // The function, and the runtime it holds, stay on `window` for the life of
    // the page.
    closure.forget();
}

impl<A: App> Runtime<A> {
    /// Puts `matarGPU()` (the full recovery path, as a real loss), `gpuStop()`,
    /// `gpuStart()` and `gpuStatus()` on `window`. `gpuStatus()` returns
    /// [`Status::to_js`](super::Status::to_js)'s object: `state`,
    /// `generation`, `recoveries`, `frames`, `liveObjects`, `liveBytes`,
    /// `errors` (`validation`, `outOfMemory`, `internal`, `other`), `logged`,
    /// `suppressed`, `lastLoss` (`reason`, `message`, `requested`) or null,
    /// `fallback` (its code) and `fallbackMessage` or null, `loopAlive`,
    /// `stalled`, `framesFromTimer`, `resizes`, `wasmMemoryBytes`,
    /// `jsHeapBytes` (null where the engine does not tell), `runtimeBugs` and
    /// the rest that function lists. They keep the runtime alive for the life of the page, so that
    /// `gpuStop()` then `gpuStart()` works whoever holds a handle. Once per
    /// page: a second runtime's call leaves the first's functions in place and
    /// reports an exception on its own fault sink.
    pub fn expose_console(&self) {
        self.expose_console_with(|_, _| {});
    }

    /// [`Self::expose_console`], with `gpuStatus()` passing its object to
    /// `add` before returning it, for the page's own keys (its scene, its
    /// snapshot's state): `add(&runtime, &object)`.
    pub fn expose_console_with(&self, add: impl Fn(&Runtime<A>, &js_sys::Object) + 'static) {
        let me = std::rc::Rc::as_ptr(&self.inner) as *const () as usize;
        let owner = EXPOSED.with(|exposed| {
            let owner = exposed.get();
            if owner == 0 {
                exposed.set(me);
            }
            owner
        });
        if owner == me {
            return;
        }
        if owner != 0 {
            self.faults().report_ref(&Fault::new(
                FaultKind::Exception,
                "expose_console: window.matarGPU, gpuStop, gpuStart and gpuStatus already \
                 belong to another runtime of this page; they were left as they are",
            ));
            return;
        }
        // Returns what it did, in words (also written on the console).
        install("matarGPU", self, |r| r.force_recovery().message().into());
        install("gpuStop", self, |r| {
            r.stop();
            JsValue::TRUE
        });
        install("gpuStart", self, |r| {
            r.start();
            JsValue::TRUE
        });
        let runtime = self.clone();
        let status = Closure::<dyn Fn() -> JsValue>::new(move || {
            let object = runtime.status().to_js();
            // The page's own code: through the trampoline, so that a throw
            // leaves the library's answer whole.
            let _ = crate::web::crash::trampoline(&mut || add(&runtime, &object));
            object.into()
        });
        expose("gpuStatus", status.as_ref());
        status.forget();
    }
}
