//! Awaiting a JavaScript promise with one callback for every promise.
//!
//! `wasm_bindgen_futures::JsFuture` makes two closures for each promise it
//! awaits (a JavaScript function each, registered for finalisation and dropped
//! again): a few microseconds in Chromium and over ten in Firefox, per await.
//! [`settled`] hands the promise to one callback made once per thread instead,
//! and keeps the outcome in a slot until the future takes it. The library's
//! awaits on the GPU process (scope pops, the liveness probe, `lost`) go
//! through it.
//!
//! A future dropped before its promise settles frees its slot at once: a
//! promise that never settles (a retired device's `lost` on Gecko) holds no
//! slot. Each hand-out of a slot has its own ticket, so that a promise
//! settling after its future was dropped finds its ticket gone and is ignored.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

#[wasm_bindgen(module = "/src/web/wait.js")]
extern "C" {
    fn guard_wait_init(callback: &js_sys::Function);
    fn guard_wait(promise: &js_sys::Promise, slot: u32, ticket: u32);
}

/// One awaited promise: the ticket of its hand-out, its outcome once settled
/// and who to wake.
#[derive(Default)]
struct Slot {
    ticket: u32,
    in_use: bool,
    outcome: Option<Result<JsValue, JsValue>>,
    waker: Option<Waker>,
}

/// Every awaited promise of this thread, and the slots free for reuse.
#[derive(Default)]
struct Slots {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

impl Slots {
    /// A slot for a new promise, with the ticket of this hand-out.
    fn take_slot(&mut self) -> (u32, u32) {
        let index = match self.free.pop() {
            Some(index) => index,
            None => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.ticket = slot.ticket.wrapping_add(1);
        slot.in_use = true;
        (index, slot.ticket)
    }

    fn release(&mut self, index: u32) {
        if let Some(slot) = self.slots.get_mut(index as usize) {
            if !slot.in_use {
                return;
            }
            slot.in_use = false;
            slot.outcome = None;
            slot.waker = None;
            self.free.push(index);
        }
    }

    /// The slot of hand-out `ticket`, while it is in use.
    fn in_use(&mut self, index: u32, ticket: u32) -> Option<&mut Slot> {
        self.slots
            .get_mut(index as usize)
            .filter(|slot| slot.in_use && slot.ticket == ticket)
    }
}

/// Slots held now by futures whose promise has not been taken (for tests:
/// bounded by the awaits in progress, whatever was abandoned).
#[doc(hidden)]
pub fn slots_in_use() -> usize {
    SLOTS
        .try_with(|slots| slots.try_borrow().map(|s| s.slots.len() - s.free.len()))
        .ok()
        .and_then(Result::ok)
        .unwrap_or(0)
}

thread_local! {
    static SLOTS: RefCell<Slots> = RefCell::new(Slots::default());
    /// The one callback every promise settles through, installed on first use.
    /// It lives as long as the module (it is never dropped).
    static INSTALLED: bool = {
        let callback = Closure::<dyn FnMut(u32, u32, bool, JsValue)>::new(on_settled);
        guard_wait_init(callback.as_ref().unchecked_ref());
        callback.forget();
        true
    };
}

fn on_settled(index: u32, ticket: u32, fulfilled: bool, value: JsValue) {
    let waker = SLOTS.with(|slots| {
        let mut slots = slots.borrow_mut();
        // Its future was dropped first: the slot is free, or another's.
        let slot = slots.in_use(index, ticket)?;
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
    ticket: u32,
    done: bool,
}

/// Awaits `promise` through the thread's one settle callback.
pub fn settled(promise: &js_sys::Promise) -> Settled {
    INSTALLED.with(|_| ());
    let (index, ticket) = SLOTS.with(|slots| slots.borrow_mut().take_slot());
    guard_wait(promise, index, ticket);
    Settled {
        index,
        ticket,
        done: false,
    }
}

impl Future for Settled {
    type Output = Result<JsValue, JsValue>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Polled again after it was ready: its slot may be another's by now.
        if self.done {
            return Poll::Pending;
        }
        let (index, ticket) = (self.index, self.ticket);
        let outcome = SLOTS.with(|slots| {
            let mut slots = slots.borrow_mut();
            let slot = slots.in_use(index, ticket)?;
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
    /// A future dropped before its promise settled frees its slot now: the
    /// promise, if it ever settles, finds its ticket gone.
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let (index, ticket) = (self.index, self.ticket);
        let _ = SLOTS.try_with(|slots| {
            if let Ok(mut slots) = slots.try_borrow_mut() {
                if slots.in_use(index, ticket).is_some() {
                    slots.release(index);
                }
            }
        });
    }
}
