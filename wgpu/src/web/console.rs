//! The console: `matarGPU()`, `gpuStatus()`, `gpuStop()`, `gpuStart()` on
//! `window`, with webgpu-guard's meaning and keys.

use wasm_bindgen::prelude::*;
use webgpu_guard::web::console_functions::{claim, expose_for_good};

use webgpu_guard::web::DiagnosticsLevel;
use webgpu_guard_core::ledger::Tally;

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
    /// The object `gpuStatus()` returns: webgpu-guard's, key for key (written
    /// by webgpu-guard's [`webgpu_guard::web::runtime::Status::to_js`] from
    /// this status, so that a key of one front is a key of the other; `level`
    /// is `"phases"`, what this runtime scopes), and `firstFrameAtMs`,
    /// `lastRecoveryMs` and `lastRebuildMs` beside them (null until known).
    pub fn to_js(&self) -> js_sys::Object {
        let object = self.as_webgpu_guard_status().to_js();
        let set = |key: &str, value: Option<f64>| {
            let value = value.map_or(JsValue::NULL, JsValue::from);
            let _ = js_sys::Reflect::set(&object, &key.into(), &value);
        };
        set("firstFrameAtMs", self.first_frame_at_ms);
        set("lastRecoveryMs", self.last_recovery_ms);
        set("lastRebuildMs", self.last_rebuild_ms);
        object
    }

    /// This status in webgpu-guard's terms.
    fn as_webgpu_guard_status(&self) -> webgpu_guard::web::runtime::Status {
        let mut status = webgpu_guard::web::runtime::Status::default();
        status.state = self.state;
        status.generation = self.generation;
        status.recoveries = self.recoveries;
        status.frames = self.frames;
        status.last_loss = self.last_loss.clone();
        status.faults = self.faults;
        status.live = Tally {
            objects: self.live_objects,
            bytes: self.live_bytes,
        };
        status.peak.bytes = self.peak_bytes;
        status.adapter = self.adapter.clone();
        status.fallback = self.fallback.clone();
        status.level = DiagnosticsLevel::Phases;
        status.frame_ms = self.frame_ms;
        status.cold_start = self.cold_start;
        status.last_init = self.last_init;
        status.loop_alive = self.loop_alive;
        status.hidden = self.hidden;
        status.frames_thrown = self.frames_thrown;
        status.stalled = self.stalled;
        status.resizes = self.resizes;
        status.frames_from_timer = self.driven_by_timer;
        status.wasm_memory_bytes = webgpu_guard::web::runtime::status::wasm_memory_bytes();
        status.js_heap_bytes = webgpu_guard::web::runtime::status::js_heap_bytes();
        status.runtime_bugs = self.runtime_bugs;
        status
    }
}
