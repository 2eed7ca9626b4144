//! The animation-frame loop: one `requestAnimationFrame` callback at a time,
//! cancelled on stop and on `Drop`, so that no callback is left calling a dead
//! device or a freed closure.

use std::cell::{Cell, RefCell};

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

type FrameCallback = Closure<dyn FnMut(f64)>;

/// The loop's handle and callback.
pub(crate) struct FrameLoop {
    handle: Cell<Option<i32>>,
    callback: RefCell<Option<FrameCallback>>,
}

impl FrameLoop {
    pub(crate) fn new() -> Self {
        FrameLoop {
            handle: Cell::new(None),
            callback: RefCell::new(None),
        }
    }

    /// Sets the callback every frame calls (kept for the life of the loop).
    pub(crate) fn set_callback(&self, callback: Closure<dyn FnMut(f64)>) {
        if let Ok(mut slot) = self.callback.try_borrow_mut() {
            *slot = Some(callback);
        }
    }

    /// Requests the next animation frame unless one is pending.
    pub(crate) fn request(&self) {
        if self.handle.get().is_some() {
            return;
        }
        let (Some(window), Ok(callback)) = (web_sys::window(), self.callback.try_borrow()) else {
            return;
        };
        if let Some(callback) = callback.as_ref() {
            if let Ok(handle) = window.request_animation_frame(callback.as_ref().unchecked_ref()) {
                self.handle.set(Some(handle));
            }
        }
    }

    /// Called first thing in the callback: the pending request was consumed.
    pub(crate) fn fired(&self) {
        self.handle.set(None);
    }

    /// Cancels the pending animation frame, if any.
    pub(crate) fn cancel(&self) {
        if let (Some(handle), Some(window)) = (self.handle.take(), web_sys::window()) {
            let _ = window.cancel_animation_frame(handle);
        }
    }

    /// Whether an animation frame is scheduled.
    pub(crate) fn pending(&self) -> bool {
        self.handle.get().is_some()
    }
}

impl Drop for FrameLoop {
    fn drop(&mut self) {
        self.cancel();
    }
}
