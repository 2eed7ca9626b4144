//! Small helpers for JavaScript values.

use wasm_bindgen::prelude::*;
use wasm_bindgen::{JsCast, JsValue};

/// The text of a thrown JavaScript value: `name: message` for errors, the string
/// itself for strings, else its string form. Never throws, whatever the value
/// (a revoked `Proxy`, getters or a `toString` that throw: what cannot be read
/// reads as `?` or says so).
pub fn describe(value: &JsValue) -> String {
    describe_value(value)
}

#[wasm_bindgen(module = "/src/web/crash.js")]
extern "C" {
    fn describe_value(e: &JsValue) -> String;
}

/// Makes `Fault::from(JsValue)` (and `?` on a web-sys call) describe what was
/// thrown as [`describe`] does (the conversion lives in the core crate).
pub(crate) fn install_describer() {
    webgpu_guard_core::js_value::set_describer(describe);
}

/// Wraps a value as the element type of web-sys's typed nullable sequences.
pub fn nullable<T: JsCast + Clone>(value: &T) -> js_sys::JsNullable<T> {
    value.clone().unchecked_into()
}

thread_local! {
    /// The global `performance` (a window's or a worker's), looked up once (one
    /// JavaScript call per reading instead of three: the error net reads the
    /// clock for every error). The uncaptured-error listener reads the same one.
    static PERFORMANCE: Option<web_sys::Performance> =
        js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("performance"))
            .ok()
            .filter(|p| p.is_object())
            .map(|p| p.unchecked_into());
}

/// `performance.now()`, or 0 where there is no `performance`.
pub fn now_ms() -> f64 {
    PERFORMANCE.with(|p| p.as_ref().map(|p| p.now()).unwrap_or(0.0))
}

/// The time in milliseconds since the Unix epoch that never goes back: the
/// page's time origin plus [`now_ms`] (a clock set back while the page runs
/// does not move it). `Date.now()` where there is no `performance`.
pub fn epoch_ms() -> f64 {
    PERFORMANCE.with(|p| match p.as_ref() {
        Some(p) => p.time_origin() + p.now(),
        None => js_sys::Date::now(),
    })
}

/// The string property `key` of `object`, or `""` (absent, not a string, or a
/// getter that throws). Read this way, a WebGPU enum such as a loss's `reason`
/// or a message's `type` is never converted into web-sys's enum first (whose
/// conversion of a value it does not know can only panic).
pub fn text_field(object: &JsValue, key: &str) -> String {
    js_sys::Reflect::get(object, &JsValue::from_str(key))
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_default()
}

/// The `label` of a WebGPU object, read without trusting its type: `""` when it
/// has none, is not an object or its getter throws. web-sys's own `label()`,
/// called on a value of another shape (an application's `unchecked_into`),
/// throws through WebAssembly; error paths read labels this way (clippy.toml
/// refuses the others).
pub fn label_of(object: &JsValue) -> String {
    text_field(object, "label")
}

/// The label of the object in member `key` of `descriptor` (the `texture` of a
/// copy's destination), read as [`label_of`] reads one.
pub fn member_label(descriptor: &JsValue, key: &str) -> String {
    js_sys::Reflect::get(descriptor, &JsValue::from_str(key))
        .map(|object| label_of(&object))
        .unwrap_or_default()
}

/// The string form of a web-sys string enum.
pub fn enum_str<T: Into<JsValue>>(value: T) -> String {
    value.into().as_string().unwrap_or_default()
}
