//! An event listener that removes itself on `Drop`, in the manner of gloo's
//! `EventListener`: every listener the library or an application adds through it
//! is removed exactly once, on every path, and [`EventListener::forget`] is the
//! one explicit way to keep one for the life of the page.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::EventTarget;

/// A listener added to a target; removed from it when dropped.
pub struct EventListener {
    target: EventTarget,
    event: &'static str,
    function: js_sys::Function,
    /// The Rust closure behind `function`, if it was made from one.
    _closure: Option<Closure<dyn FnMut(web_sys::Event)>>,
}

impl std::fmt::Debug for EventListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventListener")
            .field("event", &self.event)
            .finish_non_exhaustive()
    }
}

impl EventListener {
    /// Adds `callback` for `event` on `target`. A target that refuses the
    /// listener (it throws) leaves a guard that removes nothing harmful.
    pub fn new(
        target: &EventTarget,
        event: &'static str,
        callback: impl FnMut(web_sys::Event) + 'static,
    ) -> Self {
        let closure = Closure::<dyn FnMut(web_sys::Event)>::new(callback);
        let function: js_sys::Function =
            closure.as_ref().unchecked_ref::<js_sys::Function>().clone();
        let _ = target.add_event_listener_with_callback(event, &function);
        EventListener {
            target: target.clone(),
            event,
            function,
            _closure: Some(closure),
        }
    }

    /// Adds a listener made in JavaScript (`function`) for `event` on `target`;
    /// `Err` with what the target threw if it refused it.
    pub fn with_function(
        target: &EventTarget,
        event: &'static str,
        function: js_sys::Function,
    ) -> Result<Self, JsValue> {
        target.add_event_listener_with_callback(event, &function)?;
        Ok(EventListener {
            target: target.clone(),
            event,
            function,
            _closure: None,
        })
    }

    /// Keeps the listener for the life of the page (it is never removed).
    pub fn forget(self) {
        std::mem::forget(self);
    }
}

impl Drop for EventListener {
    fn drop(&mut self) {
        let _ = self
            .target
            .remove_event_listener_with_callback(self.event, &self.function);
    }
}
