//! The page's intervals, for tests that check what a runtime leaves ticking.

use wasm_bindgen::JsCast;

/// The page's intervals still set: `window.setInterval` and `clearInterval`
/// wrapped (once, for the rest of the page) so that the ids set and not
/// cleared are known.
pub fn live_intervals() -> js_sys::Set {
    js_sys::Function::new_no_args(
        "if (!window.__liveIntervals) {
           const live = new Set();
           const set = window.setInterval.bind(window);
           const clear = window.clearInterval.bind(window);
           window.setInterval = (...args) => { const id = set(...args); live.add(id); return id; };
           window.clearInterval = (id) => { live.delete(id); clear(id); };
           window.__liveIntervals = live;
         }
         return window.__liveIntervals;",
    )
    .call0(&wasm_bindgen::JsValue::NULL)
    .unwrap()
    .unchecked_into()
}
