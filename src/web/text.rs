//! Short strings into JavaScript without `TextDecoder`.
//!
//! wasm-bindgen hands every `&str` to JavaScript through a fresh typed-array view
//! and `TextDecoder.decode`, which costs 1-3 µs for a short string in Chromium and
//! Firefox: more than creating the buffer the label names. Every object this
//! library creates carries a label, so labels go through [`set_label`] and the
//! allocator's own creation calls instead: JavaScript reads the bytes from the
//! module's memory and builds an ASCII string in a loop (anything else, or a long
//! string, still goes through `TextDecoder`).

use std::cell::Cell;

use wasm_bindgen::prelude::*;

#[wasm_bindgen(module = "/src/web/calls.js")]
extern "C" {
    fn guard_text_memory(memory: JsValue);
    fn guard_set_label(target: &JsValue, ptr: u32, len: u32);
}

thread_local! {
    static MEMORY_GIVEN: Cell<bool> = const { Cell::new(false) };
}

/// The module's memory is handed to the JavaScript side once.
fn ensure_memory() {
    MEMORY_GIVEN.with(|given| {
        if !given.get() {
            guard_text_memory(wasm_bindgen::memory());
            given.set(true);
        }
    });
}

/// `text` as the (pointer, length) pair the creation calls of this crate read
/// it from; valid until `text` is dropped or moved, and only for a JavaScript call
/// that does not call back into WebAssembly before reading it.
pub(crate) fn raw_text(text: &str) -> (u32, u32) {
    ensure_memory();
    (text.as_ptr() as u32, text.len() as u32)
}

/// Sets `target.label = label` (a descriptor, or any object), without
/// `TextDecoder` for a short ASCII label.
pub fn set_label(target: &JsValue, label: &str) {
    let (ptr, len) = raw_text(label);
    guard_set_label(target, ptr, len);
}
