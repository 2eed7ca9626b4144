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
use crate::web::runtime::status::Status;

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

/// `gpuStatus()`'s plain object.
pub(crate) fn status_object(s: &Status) -> JsValue {
    let o = js_sys::Object::new();
    let set = |target: &js_sys::Object, k: &str, v: JsValue| {
        let _ = js_sys::Reflect::set(target, &k.into(), &v);
    };
    set(&o, "state", s.state.as_str().into());
    set(&o, "generation", (s.generation as f64).into());
    set(&o, "recoveries", (s.recoveries as f64).into());
    set(&o, "frames", (s.frames as f64).into());
    set(&o, "liveObjects", (s.live.objects as f64).into());
    set(&o, "liveBytes", (s.live.bytes as f64).into());
    set(&o, "loopAlive", s.loop_alive.into());
    set(&o, "stalled", s.stalled.into());
    set(&o, "framesFromTimer", s.frames_from_timer.into());
    set(&o, "wasmMemoryBytes", (s.wasm_memory_bytes as f64).into());
    set(&o, "jsHeapBytes", s.js_heap_bytes.map(|b| b as f64).into());
    set(&o, "resizes", (s.resizes as f64).into());
    set(&o, "runtimeBugs", s.runtime_bugs.into());
    let errors = js_sys::Object::new();
    set(&errors, "validation", (s.net.validation as f64).into());
    set(&errors, "outOfMemory", (s.net.out_of_memory as f64).into());
    set(&errors, "internal", (s.net.internal as f64).into());
    set(&o, "errors", errors.into());
    set(&o, "logged", (s.net.logged as f64).into());
    set(&o, "suppressed", (s.net.suppressed as f64).into());
    let last_loss = match &s.last_loss {
        Some(loss) => {
            let l = js_sys::Object::new();
            set(&l, "reason", loss.reason.as_str().into());
            set(&l, "message", loss.message.as_str().into());
            l.into()
        }
        None => JsValue::NULL,
    };
    set(&o, "lastLoss", last_loss);
    let fallback = match &s.fallback {
        Some(f) => JsValue::from_str(&f.message()),
        None => JsValue::NULL,
    };
    set(&o, "fallback", fallback);
    o.into()
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
    /// `state`, `generation`, `recoveries`, `frames`, `liveObjects`,
    /// `liveBytes`, `errors` (`validation`, `outOfMemory`, `internal`),
    /// `logged`, `suppressed`, `lastLoss` (`reason`, `message`) or null,
    /// `fallback` (its code) or null, `loopAlive`, `stalled`,
    /// `framesFromTimer`, `resizes`, `wasmMemoryBytes` and `jsHeapBytes` (null
    /// where the engine does not tell). They keep the runtime alive for the life of the page, so that
    /// `gpuStop()` then `gpuStart()` works whoever holds a handle. Once per
    /// page: a second runtime's call leaves the first's functions in place and
    /// reports an exception on its own net.
    pub fn expose_console(&self) {
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
            self.net().report_ref(&Fault::new(
                FaultKind::Exception,
                "expose_console: window.matarGPU, gpuStop, gpuStart and gpuStatus already \
                 belong to another runtime of this page; they were left as they are",
            ));
            return;
        }
        install("matarGPU", self, |r| {
            r.force_recovery();
            JsValue::TRUE
        });
        install("gpuStop", self, |r| {
            r.stop();
            JsValue::TRUE
        });
        install("gpuStart", self, |r| {
            r.start();
            JsValue::TRUE
        });
        install("gpuStatus", self, |r| status_object(&r.status()));
    }
}
