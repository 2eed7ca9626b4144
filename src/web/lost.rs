//! Watches `device.lost`, which resolves (never rejects) when the device dies.

use std::rc::Rc;

use wasm_bindgen::JsCast;
use web_sys::GpuDevice;

use crate::held::Held;
use crate::supervisor::LossReason;
use crate::web::js::text_field;

type OnLost = Box<dyn FnOnce(LossReason, String)>;

/// Keeps a `lost` watcher armed; dropping it disarms it and lets go of the
/// callback, and so of whatever the callback holds (the promise itself cannot be
/// unsubscribed from, and on some engines a retired device's `lost` never
/// resolves: nothing of the device may wait on it).
#[must_use = "the watcher is disarmed when dropped"]
pub struct LostWatch {
    callback: Rc<Held<Option<OnLost>>>,
}

impl std::fmt::Debug for LostWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let armed = self.callback.with(|c| c.is_some()).unwrap_or(true);
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
        // Dropped out of its cell: what it holds may be anything.
        let callback = self.callback.take();
        drop(callback);
    }
}

/// Calls `on_lost(reason, message)` once when `device` is lost, unless the returned
/// guard was dropped first. The watcher holds the `lost` promise only, never the
/// device.
pub fn watch_lost(
    device: &GpuDevice,
    on_lost: impl FnOnce(LossReason, String) + 'static,
) -> LostWatch {
    let callback: Rc<Held<Option<OnLost>>> = Rc::new(Held::new(Some(Box::new(on_lost))));
    let armed = Rc::downgrade(&callback);
    // Awaited as a plain promise: one kind of future for every promise the
    // library awaits (a typed one would add its own closure to the wasm).
    let lost: js_sys::Promise = device.lost().unchecked_into();
    wasm_bindgen_futures::spawn_local(async move {
        let (reason, message) = match lost.await {
            Ok(info) => (
                LossReason::parse(&text_field(&info, "reason")),
                text_field(&info, "message"),
            ),
            Err(e) => (LossReason::Unknown, crate::web::js::describe(&e)),
        };
        let callback = armed.upgrade().and_then(|slot| slot.take().flatten());
        if let Some(on_lost) = callback {
            on_lost(reason, message);
        }
    });
    LostWatch { callback }
}
