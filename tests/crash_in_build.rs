//! A panic inside the application's `build` stops the runtime for good with the
//! `crashed` fallback, reported once, instead of leaving it `starting` until a
//! deadline. A binary of its own: the panic poisons the module.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::*;

#[path = "support/crash_app.rs"]
mod crash_app;
use crash_app::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn a_panic_in_build_stops_the_runtime_for_good_with_the_crashed_fallback() {
    let r = runtime();
    let shown = record_fallbacks(&r);
    r.app().panic_in_build.set(true);
    r.start();
    assert_crashed_for_good(&r, &shown).await;
    assert_eq!(r.app().frames.get(), 0);
    assert_eq!(r.app().builds.get(), 1);
}
