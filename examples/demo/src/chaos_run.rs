//! `gpuChaos(seed, count)`: a seeded random sequence of injected faults, run in
//! the page; after each, waits until the scene runs again (restarting after a
//! documented fallback) and checks that live objects and bytes are back at the
//! baseline and the error-scope stack is balanced. Resolves to a report.

use gloo_timers::future::TimeoutFuture;
use wasm_bindgen::JsValue;
use webgpu_guard::chaos::{ChaosPlan, Injection};
use webgpu_guard::supervisor::DeviceState;
use webgpu_guard::web::Runtime;

use crate::scene::DemoApp;

fn set(object: &js_sys::Object, key: &str, value: JsValue) {
    let _ = js_sys::Reflect::set(object, &key.into(), &value);
}

/// Waits until the scene runs on a device newer than `after` (when the fault
/// loses the device) with three new frames; restarts after a fallback. Returns
/// the fallback seen on the way, if any.
async fn settle(runtime: &Runtime<DemoApp>, after: Option<u64>) -> Result<Option<String>, String> {
    let mut fallback = None;
    for _ in 0..400 {
        let status = runtime.status();
        let new_enough = after.is_none_or(|g| status.generation > g);
        match status.state {
            DeviceState::Failed => {
                fallback = status.fallback.map(|f| f.code().to_string());
                crate::page::hide_fallback();
                runtime.start();
            }
            DeviceState::Running if new_enough => {
                let frames = status.frames;
                for _ in 0..100 {
                    TimeoutFuture::new(20).await;
                    if runtime.status().frames >= frames + 3 {
                        return Ok(fallback);
                    }
                }
            }
            _ => {}
        }
        TimeoutFuture::new(25).await;
    }
    Err(format!("never settled: {:?}", runtime.status().state))
}

/// Adds one to `object[key]`.
fn bump(object: &js_sys::Object, key: &str) {
    let now = js_sys::Reflect::get(object, &key.into())
        .ok()
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0);
    set(object, key, (now + 1.0).into());
}

/// Runs `count` injections drawn from `seed`; resolves to `{seed, steps, byKind,
/// fallbacks, failures}`.
pub async fn run(runtime: &Runtime<DemoApp>, seed: u64, count: u32) -> JsValue {
    let report = js_sys::Object::new();
    set(&report, "seed", (seed as f64).into());
    let failures = js_sys::Array::new();
    let kinds = js_sys::Object::new();
    let fell = js_sys::Object::new();
    if let Err(e) = settle(runtime, None).await {
        failures.push(&format!("before the first step: {e}").into());
    }
    let baseline = runtime.status().live;
    let mut plan = ChaosPlan::new(seed, 30);
    for step in 0..count {
        let injection = plan.next_injection();
        bump(&kinds, injection.kind());
        let generation = runtime.status().generation;
        let validation = runtime.faults().stats().validation;
        if let Err(e) = runtime.inject(injection) {
            failures.push(&format!("step {step} ({injection}): {e}").into());
            continue;
        }
        if let Injection::Storm { for_ms, .. } = injection {
            TimeoutFuture::new(for_ms + 100).await;
        }
        if injection == Injection::BadShader {
            // The module compiles asynchronously: done once its error is counted.
            for _ in 0..250 {
                if runtime.faults().stats().validation > validation {
                    break;
                }
                TimeoutFuture::new(20).await;
            }
        }
        let after = injection.loses_the_device().then_some(generation);
        match settle(runtime, after).await {
            Ok(Some(code)) => bump(&fell, &code),
            Ok(None) => {}
            Err(e) => {
                failures.push(&format!("step {step} ({injection}): {e}").into());
                continue;
            }
        }
        let live = runtime.status().live;
        if live != baseline {
            failures.push(
                &format!("step {step} ({injection}): live {live:?}, baseline {baseline:?}").into(),
            );
        }
        if runtime.scope_stack_balanced().await == Some(false) {
            failures.push(&format!("step {step} ({injection}): scope stack unbalanced").into());
        }
    }
    set(&report, "steps", count.into());
    set(&report, "byKind", kinds.into());
    set(&report, "fallbacks", fell.into());
    set(&report, "failures", failures.into());
    report.into()
}
