//! The console: `matarGPU()`, `gpuStatus()`, `gpuStop()`, `gpuStart()` on
//! `window`, with webgpu-guard's meaning and keys.

use wasm_bindgen::prelude::*;
use webgpu_guard::web::console_functions::{claim, expose_for_good};

use super::{Runtime, Status};
use crate::app::App;

fn install<A: App>(name: &str, runtime: &Runtime<A>, f: fn(&Runtime<A>) -> JsValue) {
    let runtime = runtime.clone();
    // The function, and the runtime it holds, stay for the life of the page.
    expose_for_good(name, move || f(&runtime));
}

impl<A: App> Runtime<A> {
    /// Puts `matarGPU()` (the full recovery path, as a real loss; it returns,
    /// and writes, what it does), `gpuStop()`, `gpuStart()` and `gpuStatus()`
    /// ([`Status::to_js`]) on `window`. Once per page, whichever front a
    /// runtime is of: a second runtime's call leaves the first's in place and
    /// reports it.
    pub fn expose_console(&self) {
        let me = std::rc::Rc::as_ptr(&self.driver) as *const () as usize;
        if !claim(me, self.faults()) {
            return;
        }
        install("matarGPU", self, |r| {
            let answer = r.force_recovery().message();
            r.faults().note(&format!("matarGPU(): {answer}"));
            answer.into()
        });
        install("gpuStop", self, |r| {
            r.stop();
            JsValue::TRUE
        });
        install("gpuStart", self, |r| {
            r.start();
            JsValue::TRUE
        });
        install("gpuStatus", self, |r| r.status().to_js().into());
    }
}

impl Status {
    /// The object `gpuStatus()` returns: `state`, `generation`, `recoveries`,
    /// `frames`, `framesFromTimer`, `liveObjects`, `liveBytes`, `errors`
    /// (`validation`, `outOfMemory`, `internal`), `logged`, `suppressed`,
    /// `lastLoss` (`reason`, `message`, `requested`) or null, `fallback` (its
    /// code) and `fallbackMessage` or null, `firstFrameAtMs`,
    /// `lastRecoveryMs` and `lastRebuildMs` (null until known).
    pub fn to_js(&self) -> js_sys::Object {
        let object = js_sys::Object::new();
        let set = |target: &js_sys::Object, key: &str, value: JsValue| {
            let _ = js_sys::Reflect::set(target, &key.into(), &value);
        };
        let number = |n: u64| JsValue::from(n as f64);
        set(&object, "state", self.state.as_str().into());
        set(&object, "generation", number(self.generation));
        set(&object, "recoveries", number(self.recoveries));
        set(&object, "frames", number(self.frames));
        set(&object, "framesFromTimer", number(self.frames_from_timer));
        set(&object, "liveObjects", number(self.live_objects));
        set(&object, "liveBytes", number(self.live_bytes));
        let errors = js_sys::Object::new();
        set(&errors, "validation", number(self.validation));
        set(&errors, "outOfMemory", number(self.out_of_memory));
        set(&errors, "internal", number(self.internal));
        set(&object, "errors", errors.into());
        set(&object, "logged", number(self.logged));
        set(&object, "suppressed", number(self.suppressed));
        let last_loss = match &self.last_loss {
            Some(loss) => {
                let o = js_sys::Object::new();
                set(&o, "reason", loss.reason.as_str().into());
                set(&o, "message", loss.message.as_str().into());
                set(&o, "requested", loss.requested.into());
                o.into()
            }
            None => JsValue::NULL,
        };
        set(&object, "lastLoss", last_loss);
        let ms = |value: Option<f64>| value.map_or(JsValue::NULL, JsValue::from);
        set(&object, "firstFrameAtMs", ms(self.first_frame_at_ms));
        set(&object, "lastRecoveryMs", ms(self.last_recovery_ms));
        set(&object, "lastRebuildMs", ms(self.last_rebuild_ms));
        match &self.fallback {
            Some(fallback) => {
                set(&object, "fallback", fallback.code().into());
                set(&object, "fallbackMessage", fallback.message().into());
            }
            None => {
                set(&object, "fallback", JsValue::NULL);
                set(&object, "fallbackMessage", JsValue::NULL);
            }
        }
        object
    }
}
