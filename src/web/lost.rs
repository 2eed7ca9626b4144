//! Watches `device.lost`, which resolves (never rejects) when the device dies.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};

use wasm_bindgen::{JsCast, JsValue};
use web_sys::GpuDevice;

use crate::held::Held;
use crate::supervisor::LossReason;
use crate::web::js::text_field;

type OnLost = Box<dyn FnOnce(LossReason, String)>;

/// What a watcher shares with its task: the callback while armed, and the
/// task's waker, woken when the watcher is dropped so that the task ends.
#[derive(Default)]
struct Armed {
    on_lost: Option<OnLost>,
    waker: Option<Waker>,
}

thread_local! {
    /// Watch tasks alive now.
    static WATCHING: Cell<usize> = const { Cell::new(0) };
}

/// `lost` watches whose task is alive now (for tests: a retired device's task
/// ends when its watcher is dropped, even where its `lost` never resolves).
#[doc(hidden)]
pub fn watching() -> usize {
    WATCHING.with(Cell::get)
}

/// Keeps a `lost` watcher armed; dropping it disarms it, lets go of the
/// callback (and so of whatever the callback holds) and ends its task: on
/// some engines a retired device's `lost` never resolves, and nothing may wait
/// on it for the life of the page.
#[must_use = "the watcher is disarmed when dropped"]
pub struct LostWatch {
    armed: Rc<Held<Armed>>,
}

impl std::fmt::Debug for LostWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let armed = self.armed.with(|a| a.on_lost.is_some()).unwrap_or(true);
        f.debug_struct("LostWatch").field("armed", &armed).finish()
    }
}

impl LostWatch {
    /// Keeps the watcher armed for the life of the page.
    pub fn forget(self) {
        std::mem::forget(self);
    }
}

impl Drop for LostWatch {
    fn drop(&mut self) {
        // Taken out of its cell: what the callback holds may be anything.
        let taken = self
            .armed
            .with(|a| (a.on_lost.take(), a.waker.take()))
            .unwrap_or((None, None));
        let (on_lost, waker) = taken;
        drop(on_lost);
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// The `lost` promise, until it resolves or the watcher is dropped (`None`).
struct UntilDisarmed {
    lost: crate::web::wait::Settled,
    armed: Weak<Held<Armed>>,
}

impl Future for UntilDisarmed {
    type Output = Option<Result<JsValue, JsValue>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(armed) = self.armed.upgrade() else {
            return Poll::Ready(None);
        };
        let still = armed
            .with(|a| {
                if a.on_lost.is_some() {
                    a.waker = Some(cx.waker().clone());
                }
                a.on_lost.is_some()
            })
            .unwrap_or(false);
        if !still {
            return Poll::Ready(None);
        }
        Pin::new(&mut self.lost).poll(cx).map(Some)
    }
}

/// Calls `on_lost(reason, message)` once when `device` is lost, unless the returned
/// guard was dropped first. The watcher holds the `lost` promise only, never the
/// device.
pub fn watch_lost(
    device: &GpuDevice,
    on_lost: impl FnOnce(LossReason, String) + 'static,
) -> LostWatch {
    let armed = Rc::new(Held::new(Armed {
        on_lost: Some(Box::new(on_lost)),
        waker: None,
    }));
    let lost: js_sys::Promise = device.lost().unchecked_into();
    let until = UntilDisarmed {
        lost: crate::web::wait::settled(&lost),
        armed: Rc::downgrade(&armed),
    };
    let weak = Rc::downgrade(&armed);
    WATCHING.with(|n| n.set(n.get() + 1));
    wasm_bindgen_futures::spawn_local(async move {
        let outcome = until.await;
        WATCHING.with(|n| n.set(n.get().saturating_sub(1)));
        let (reason, message) = match outcome {
            None => return,
            Some(Ok(info)) => (
                LossReason::parse(&text_field(&info, "reason")),
                text_field(&info, "message"),
            ),
            Some(Err(e)) => (LossReason::Unknown, crate::web::js::describe(&e)),
        };
        let callback = weak
            .upgrade()
            .and_then(|armed| armed.with(|a| a.on_lost.take()).flatten());
        if let Some(on_lost) = callback {
            on_lost(reason, message);
        }
    });
    LostWatch { armed }
}
