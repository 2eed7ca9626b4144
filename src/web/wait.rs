//! Awaiting a JavaScript promise with one callback for every promise.
//!
//! `wasm_bindgen_futures::JsFuture` makes two closures for each promise it
//! awaits (a JavaScript function each, registered for finalisation and dropped
//! again): a few microseconds in Chromium and over ten in Firefox, per await.
//! [`settled`] hands the promise to one callback made once per thread instead,
//! and keeps the outcome in a slot until the future takes it. The library's
//! awaits on the GPU process (scope pops, the liveness probe) go through it.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

#[wasm_bindgen(module = "/src/web/wait.js")]
extern "C" {
    fn guard_wait_init(callback: &js_sys::Function);
    fn guard_wait(promise: &js_sys::Promise, slot: u32);
}

/// One awaited promise: its outcome once settled, who to wake, and whether the
/// future was dropped before the promise settled.
#[derive(Default)]
struct Slot {
    outcome: Option<Result<JsValue, JsValue>>,
    waker: Option<Waker>,
    abandoned: bool,
}

/// Every awaited promise of this thread, and the slots free for reuse.
#[derive(Default)]
struct Slots {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

impl Slots {
    fn take_slot(&mut self) -> u32 {
        match self.free.pop() {
            Some(index) => index,
            None => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1) as u32
            }
        }
    }

    fn release(&mut self, index: u32) {
        if let Some(slot) = self.slots.get_mut(index as usize) {
            *slot = Slot::default();
            self.free.push(index);
        }
    }
}

thread_local! {
    static SLOTS: RefCell<Slots> = RefCell::new(Slots::default());
    /// The one callback every promise settles through, installed on first use.
    /// It lives as long as the module (it is never dropped).
    static INSTALLED: bool = {
        let callback = Closure::<dyn FnMut(u32, bool, JsValue)>::new(on_settled);
        guard_wait_init(callback.as_ref().unchecked_ref());
        callback.forget();
        true
    };
}

fn on_settled(index: u32, fulfilled: bool, value: JsValue) {
    let waker = SLOTS.with(|slots| {
        let mut slots = slots.borrow_mut();
        let abandoned = match slots.slots.get(index as usize) {
            Some(slot) => slot.abandoned,
            None => return None,
        };
        if abandoned {
            slots.release(index);
            return None;
        }
        let slot = &mut slots.slots[index as usize];
        slot.outcome = Some(if fulfilled { Ok(value) } else { Err(value) });
        slot.waker.take()
    });
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// A promise being awaited: resolves to `Ok(value)` or `Err(reason)`, like
/// `JsFuture`.
#[must_use = "a future does nothing unless awaited"]
#[derive(Debug)]
pub struct Settled {
    index: u32,
    done: bool,
}

/// Awaits `promise` through the thread's one settle callback.
pub fn settled(promise: &js_sys::Promise) -> Settled {
    INSTALLED.with(|_| ());
    let index = SLOTS.with(|slots| slots.borrow_mut().take_slot());
    guard_wait(promise, index);
    Settled { index, done: false }
}

impl Future for Settled {
    type Output = Result<JsValue, JsValue>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Polled again after it was ready: its slot may be another's by now.
        if self.done {
            return Poll::Pending;
        }
        let index = self.index;
        let outcome = SLOTS.with(|slots| {
            let mut slots = slots.borrow_mut();
            let slot = slots.slots.get_mut(index as usize)?;
            match slot.outcome.take() {
                Some(outcome) => {
                    slots.release(index);
                    Some(outcome)
                }
                None => {
                    match &slot.waker {
                        Some(waker) if waker.will_wake(cx.waker()) => {}
                        _ => slot.waker = Some(cx.waker().clone()),
                    }
                    None
                }
            }
        });
        match outcome {
            Some(outcome) => {
                self.done = true;
                Poll::Ready(outcome)
            }
            None => Poll::Pending,
        }
    }
}

impl Drop for Settled {
    /// A future dropped before its promise settled leaves the slot to be freed
    /// when it does; one dropped after leaves nothing behind.
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let index = self.index;
        SLOTS.with(|slots| {
            let mut slots = slots.borrow_mut();
            let settled = match slots.slots.get_mut(index as usize) {
                Some(slot) if slot.outcome.is_some() => true,
                Some(slot) => {
                    slot.abandoned = true;
                    slot.waker = None;
                    false
                }
                None => false,
            };
            if settled {
                slots.release(index);
            }
        });
    }
}
