//! The console functions of a page: `matarGPU()`, `gpuStop()`, `gpuStart()` and
//! `gpuStatus()` on `window`, for people and for end-to-end tests. They hold the
//! runtime weakly: a stopped runtime whose handles are gone answers `null`.

use wasm_bindgen::prelude::*;

use super::{App, Runtime, WeakRuntime};
use crate::web::runtime::status::Status;

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
    set(&o, "resizes", (s.resizes as f64).into());
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

fn install<A: App>(name: &str, weak: &WeakRuntime<A>, f: fn(&Runtime<A>) -> JsValue) {
    let weak = weak.clone();
    let closure = Closure::<dyn Fn() -> JsValue>::new(move || match weak.upgrade() {
        Some(runtime) => f(&runtime),
        None => JsValue::NULL,
    });
    expose(name, closure.as_ref());
    // The function stays on `window` for the life of the page.
    closure.forget();
}

impl<A: App> Runtime<A> {
    /// Puts `matarGPU()` (the full recovery path, as a real loss), `gpuStop()`,
    /// `gpuStart()` and `gpuStatus()` (state, generation, recoveries, frames,
    /// live objects and bytes, errors by kind, the last loss, the fallback) on
    /// `window`.
    pub fn expose_console(&self) {
        let weak = self.downgrade();
        install("matarGPU", &weak, |r| {
            r.force_recovery();
            JsValue::TRUE
        });
        install("gpuStop", &weak, |r| {
            r.stop();
            JsValue::TRUE
        });
        install("gpuStart", &weak, |r| {
            r.start();
            JsValue::TRUE
        });
        install("gpuStatus", &weak, |r| status_object(&r.status()));
    }
}
