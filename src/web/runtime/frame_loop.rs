//! The frame loop: one `requestAnimationFrame` callback at a time, cancelled on
//! stop and on `Drop`, so that no callback is left calling a dead device or a
//! freed closure. When the browser stops delivering animation frames to a
//! visible page (the supervisor's [`crate::supervisor::StallAction::DriveFromTimer`]),
//! frames also come from a timer, until an animation frame comes again.
//!
//! After a device rebuilt after a loss, frames come from a timer too from the
//! start, until the first animation frame (a bridge): Firefox delivers no
//! animation frame to the page after its GPU process crashed (not even to a
//! plain JavaScript loop), and the runtime, which knows a loss just happened,
//! does not wait for the stall detector, built for pages it knows nothing
//! about. Where animation frames go on (Chromium), the first one ends the
//! bridge a frame later, quietly.

use std::cell::Cell;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::held::Held;

type FrameCallback = Closure<dyn FnMut(f64)>;

/// What the callback receives from the timer in place of an animation
/// frame's timestamp.
pub(crate) const FROM_TIMER: f64 = -1.0;

/// About one frame at 60 Hz.
const TIMER_FRAME_MS: i32 = 16;

/// The loop's handles and callback.
pub(crate) struct FrameLoop {
    handle: Cell<Option<i32>>,
    timer: Cell<Option<i32>>,
    /// Whether frames come from the timer too.
    driven_by_timer: Cell<bool>,
    /// Whether the timer is only the bridge after a rebuild (its end is no news).
    bridging: Cell<bool>,
    /// Whether the GPU has yet to finish the last timer frame's work: timer
    /// frames wait for it (animation frames wait for the compositor; a timer
    /// does not, and would queue work faster than a busy GPU does it).
    waiting_for_gpu: Cell<bool>,
    callback: Held<Option<FrameCallback>>,
}

/// What delivered a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    AnimationFrame,
    Timer,
    /// An animation frame, the first after frames came from the timer.
    AnimationFrameBack,
}

impl FrameLoop {
    pub(crate) fn new() -> Self {
        FrameLoop {
            handle: Cell::new(None),
            timer: Cell::new(None),
            driven_by_timer: Cell::new(false),
            bridging: Cell::new(false),
            waiting_for_gpu: Cell::new(false),
            callback: Held::default(),
        }
    }

    /// Sets the callback every frame calls (kept for the life of the loop).
    pub(crate) fn set_callback(&self, callback: Closure<dyn FnMut(f64)>) {
        let previous = self.callback.replace(Some(callback));
        drop(previous);
    }

    /// Requests the next animation frame unless one is pending, and the next
    /// timer frame too while frames come from the timer.
    pub(crate) fn request(&self) {
        let Some(window) = web_sys::window() else {
            return;
        };
        let function = self.callback.with(|callback| {
            callback.as_ref().map(|c| {
                let function: &js_sys::Function = c.as_ref().unchecked_ref();
                function.clone()
            })
        });
        let Some(Some(function)) = function else {
            return;
        };
        let function = &function;
        if self.handle.get().is_none() {
            if let Ok(handle) = window.request_animation_frame(function) {
                self.handle.set(Some(handle));
            }
        }
        if self.driven_by_timer.get() && self.timer.get().is_none() {
            let arguments = js_sys::Array::of1(&FROM_TIMER.into());
            if let Ok(timer) = window.set_timeout_with_callback_and_timeout_and_arguments(
                function,
                TIMER_FRAME_MS,
                &arguments,
            ) {
                self.timer.set(Some(timer));
            }
        }
    }

    /// From now on, frames come from a timer as well, until an animation
    /// frame comes.
    pub(crate) fn drive_from_timer(&self) {
        self.driven_by_timer.set(true);
        self.bridging.set(false);
        self.request();
    }

    /// A device rebuilt after a loss starts: frames come from the timer as
    /// well until the first animation frame (see the module's documentation).
    pub(crate) fn bridge_after_a_rebuild(&self) {
        if !self.driven_by_timer.get() {
            self.bridging.set(true);
        }
        self.driven_by_timer.set(true);
        self.request();
    }

    /// Frames come from animation frames only again (a new device, a hidden
    /// page); a pending timer frame is cancelled.
    pub(crate) fn stop_driving(&self) {
        self.driven_by_timer.set(false);
        self.bridging.set(false);
        if let (Some(timer), Some(window)) = (self.timer.take(), web_sys::window()) {
            window.clear_timeout_with_handle(timer);
        }
    }

    /// Whether the GPU has yet to finish the last timer frame's work.
    pub(crate) fn waiting_for_gpu(&self) -> bool {
        self.waiting_for_gpu.get()
    }

    /// A timer frame's work was submitted (`true`), or the GPU finished it.
    pub(crate) fn set_waiting_for_gpu(&self, waiting: bool) {
        self.waiting_for_gpu.set(waiting);
    }

    /// Whether frames come from the timer too.
    pub(crate) fn driven_by_timer(&self) -> bool {
        self.driven_by_timer.get()
    }

    /// Called first thing in the callback with what it received: the request
    /// that fired was consumed. An animation frame ends the timer's frames.
    pub(crate) fn fired(&self, time: f64) -> Source {
        if time == FROM_TIMER {
            self.timer.set(None);
            return Source::Timer;
        }
        self.handle.set(None);
        if !self.driven_by_timer.get() {
            return Source::AnimationFrame;
        }
        let bridged = self.bridging.get();
        self.stop_driving();
        if bridged {
            Source::AnimationFrame
        } else {
            Source::AnimationFrameBack
        }
    }

    /// Cancels the pending frame requests, if any (frames still come from the
    /// timer at the next request, if they did).
    pub(crate) fn cancel(&self) {
        let Some(window) = web_sys::window() else {
            return;
        };
        if let Some(handle) = self.handle.take() {
            let _ = window.cancel_animation_frame(handle);
        }
        if let Some(timer) = self.timer.take() {
            window.clear_timeout_with_handle(timer);
        }
    }

    /// Whether a frame is requested.
    pub(crate) fn pending(&self) -> bool {
        self.handle.get().is_some() || self.timer.get().is_some()
    }
}

impl Drop for FrameLoop {
    fn drop(&mut self) {
        self.cancel();
    }
}
