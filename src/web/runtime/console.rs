//! The console functions of a page: `matarGPU()`, `gpuStop()`, `gpuStart()` and
//! `gpuStatus()` on `window`, for people and for end-to-end tests. They hold the
//! runtime: a stopped runtime whose application dropped every handle (as the
//! README's `main` does) still answers, and `gpuStart()` starts it again. One
//! runtime of a page owns them: a second one's `expose_console` is refused,
//! and says so.

use wasm_bindgen::prelude::*;

use super::{App, Runtime};
use crate::web::console_functions::{claim, expose_for_good};

fn install<A: App>(name: &str, runtime: &Runtime<A>, f: fn(&Runtime<A>) -> JsValue) {
    let runtime = runtime.clone();
    // The function, and the runtime it holds, stay on `window` for the life of
    // the page.
    expose_for_good(name, move || f(&runtime));
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
        if !claim(me, self.faults()) {
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
        expose_for_good("gpuStatus", move || {
            let object = runtime.status().to_js();
            // The page's own code: through the trampoline, so that a throw
            // leaves the library's answer whole.
            let _ = crate::web::crash::trampoline(&mut || add(&runtime, &object));
            object.into()
        });
    }
}
