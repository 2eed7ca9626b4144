//! Panics and traps. With `panic = "abort"` a Rust panic is a WebAssembly trap:
//! the frames it abandons never drop, so `RefCell`s stay borrowed and guards stay
//! armed. After one, nothing about the module's state can be trusted: the
//! runtime stops for good, every later entry refuses, and the fallback says the
//! application crashed.
//!
//! Application code (a frame, a `build` future, a fallback hook, a `Drop` of the
//! application's resources) runs through [`trampoline`] or [`Trampolined`], a
//! JavaScript trampoline: a JavaScript exception thrown through WebAssembly and a
//! trap both stop there, and the library code around it goes on (or stops, after
//! a trap). A panic is also noticed by a panic hook, installed once by
//! [`install_panic_hook`], which keeps the hook that was there before.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;
use std::task::{Context as TaskContext, Poll};

use wasm_bindgen::prelude::*;

use crate::web::abandon::Context;

#[wasm_bindgen(module = "/src/web/crash.js")]
extern "C" {
    fn guard_call(f: &mut dyn FnMut()) -> JsValue;
    fn is_trap(e: &JsValue) -> bool;
}

static CRASHED: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

thread_local! {
    static MESSAGE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Whether the module panicked or trapped: nothing may run application code,
/// or trust the library's state, any more.
pub fn crashed() -> bool {
    CRASHED.load(Ordering::Relaxed)
}

/// What the panic or the trap said, if the module crashed.
pub fn crash_message() -> Option<String> {
    if !crashed() {
        return None;
    }
    MESSAGE
        .try_with(|m| m.try_borrow().ok().and_then(|m| m.clone()))
        .ok()
        .flatten()
        .or_else(|| Some("a WebAssembly trap".into()))
}

fn record(message: String) {
    if CRASHED.swap(true, Ordering::Relaxed) {
        return;
    }
    // A trap may have struck inside a lend: what `held` counts is no longer
    // true, and nothing more is checked.
    crate::held::stop_checking();
    let _ = MESSAGE.try_with(|m| {
        if let Ok(mut slot) = m.try_borrow_mut() {
            *slot = Some(message);
        }
    });
}

/// Installs, once, a panic hook that records the panic (then calls the hook that
/// was installed before it). Install yours first: a hook set after this one
/// replaces it, and then only the trap itself is noticed.
pub fn install_panic_hook() {
    // A panic that trapped earlier, before the hook was installed, leaves the
    // thread panicking for good: the hook cannot be changed any more (trying
    // would trap again), and the module cannot be trusted either.
    if std::thread::panicking() {
        record("panicked before the runtime started".into());
        return;
    }
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            record(format!("panicked: {info}"));
            previous(info);
        }));
    });
}

/// The fault of application code that threw `thrown` through WebAssembly:
/// of kind exception, `what` then what was thrown (`"the frame threw: ..."`).
pub(crate) fn thrown_fault(what: &str, thrown: &JsValue) -> crate::fault::Fault {
    crate::fault::Fault::new(
        crate::fault::FaultKind::Exception,
        format!("{what}: {}", crate::web::js::describe(thrown)),
    )
}

/// Runs `f` through the trampoline. `Err` carries what it threw (a JavaScript
/// exception, or a trap, in which case [`crashed`] is now true).
///
/// The door to code the library does not own: it checks that none of the
/// runtime's state is lent meanwhile (a bug recorded with the caller's place
/// otherwise, see `crate::held`).
#[track_caller]
pub fn trampoline(f: &mut dyn FnMut()) -> Result<(), JsValue> {
    call_in(&Context::new(), f)
}

/// Runs `f` through the trampoline in `context`. After a JavaScript exception
/// (not a trap: then nothing can be trusted), what the guards made in the
/// context left undone is undone first (see [`crate::web::abandon`]).
#[track_caller]
fn call_in(context: &Context, f: &mut dyn FnMut()) -> Result<(), JsValue> {
    crate::held::foreign();
    let running = context.enter();
    let thrown = guard_call(&mut || f());
    drop(running);
    if thrown.is_undefined() {
        return Ok(());
    }
    if is_trap(&thrown) {
        record(crate::web::js::describe(&thrown));
    }
    if !crashed() {
        context.abandon();
    }
    Err(thrown)
}

/// Drops `value` through the trampoline (an application's `Drop` may throw or
/// panic); after a crash it is leaked instead, since its state cannot be trusted.
#[track_caller]
pub fn drop_in_trampoline<T>(value: T) -> Result<(), JsValue> {
    if crashed() {
        std::mem::forget(value);
        return Ok(());
    }
    let mut slot = Some(value);
    trampoline(&mut || drop(slot.take()))
}

/// A future polled through the trampoline: resolves to `Err(thrown)` when a poll
/// throws or traps, and the inner future, whose state a throw left half-updated,
/// is leaked rather than polled or dropped again.
pub struct Trampolined<F> {
    inner: Option<Pin<Box<F>>>,
    /// Every poll's: a guard the future holds across an await is undone when
    /// a later poll throws.
    context: Context,
}

impl<F> std::fmt::Debug for Trampolined<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trampolined")
            .field("done", &self.inner.is_none())
            .finish()
    }
}

impl<F: Future> Trampolined<F> {
    /// Wraps `future`.
    pub fn new(future: F) -> Self {
        Trampolined {
            inner: Some(Box::pin(future)),
            context: Context::new(),
        }
    }
}

impl<F: Future> Future for Trampolined<F> {
    type Output = Result<F::Output, JsValue>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Pending;
        };
        let mut polled = Poll::Pending;
        let called = call_in(&this.context, &mut || polled = inner.as_mut().poll(cx));
        match called {
            Ok(()) => {
                if polled.is_ready() {
                    this.inner = None;
                }
                polled.map(Ok)
            }
            Err(thrown) => {
                if let Some(abandoned) = this.inner.take() {
                    std::mem::forget(abandoned);
                }
                Poll::Ready(Err(thrown))
            }
        }
    }
}
