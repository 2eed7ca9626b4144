//! A panic in the `Drop` of the application's resources during a recovery
//! (`matarGPU()`): the init attempt the recovery started must not spin waiting
//! for a word the crashed runtime will never give. The page's own timers keep
//! firing, the `crashed` fallback is shown once, and no attempt starts after
//! the crash. A binary of its own: the panic poisons the module.
#![cfg(target_arch = "wasm32")]

use std::cell::Cell;
use std::rc::Rc;

use wasm_bindgen_test::*;

#[path = "support/crash_app.rs"]
mod crash_app;
use crash_app::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn a_panic_in_drop_during_a_recovery_leaves_the_page_s_timers_running() {
    let r = runtime();
    let shown = record_fallbacks(&r);
    r.start();
    wait_until("the first frames", || r.app().frames.get() > 2).await;
    r.app().panic_on_drop.set(true);
    // Counts `requestAdapter` calls from now on: the crash in the teardown
    // must end the recovery's commands there (no attempt started after it).
    js_sys::eval(
        "window.__adapterCalls = 0; \
         const gpu = navigator.gpu, request = gpu.requestAdapter.bind(gpu); \
         gpu.requestAdapter = (...a) => { window.__adapterCalls++; return request(...a); };",
    )
    .expect("requestAdapter wrapped");
    r.force_recovery();
    // A timer set after the crash fires: nothing spins on the page's thread.
    let fired = Rc::new(Cell::new(false));
    let f = fired.clone();
    let timeout = gloo_timers::callback::Timeout::new(50, move || f.set(true));
    wait_until("the crashed fallback", || !shown.borrow().is_empty()).await;
    sleep(200).await;
    assert!(fired.get(), "a timer set after the crash never fired");
    let calls = js_sys::eval("window.__adapterCalls").expect("the count");
    assert_eq!(
        calls.as_f64(),
        Some(0.0),
        "an init attempt started after the crash"
    );
    drop(timeout);
    let status = r.status();
    assert_eq!(status.state.as_str(), "crashed", "{status:?}");
    assert!(!status.loop_alive, "{status:?}");
    {
        let shown = shown.borrow();
        assert_eq!(shown.len(), 1, "{shown:?}");
        assert!(shown[0].starts_with("crashed: "), "{shown:?}");
        assert!(shown[0].contains("panicked"), "{shown:?}");
    }
    // Nothing runs any more.
    let frames = r.app().frames.get();
    r.start();
    r.force_recovery();
    sleep(300).await;
    assert_eq!(r.app().frames.get(), frames, "a frame ran after the crash");
}
