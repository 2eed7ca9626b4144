//! A panic inside `App::frame` (a WebAssembly trap, with `panic = "abort"` or
//! not: wasm32 cannot unwind) stops the runtime for good with the `crashed`
//! fallback, reported once. A binary of its own: the panic poisons the module.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::*;

#[path = "support/crash_app.rs"]
mod crash_app;
use crash_app::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn a_panic_in_a_frame_stops_the_runtime_for_good_with_the_crashed_fallback() {
    let r = runtime();
    let shown = record_fallbacks(&r);
    r.app().panic_in_frame.set(5);
    r.start();
    assert_crashed_for_good(&r, &shown).await;
    assert_eq!(r.app().frames.get(), 5);
    assert_eq!(r.status().generation, 1);
}
