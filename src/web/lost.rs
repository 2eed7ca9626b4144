//! Watches `device.lost`, which resolves (never rejects) when the device dies.

use std::cell::Cell;
use std::rc::Rc;

use web_sys::GpuDevice;

use crate::supervisor::LossReason;
use crate::web::js::enum_str;

/// Keeps a `lost` watcher armed; dropping it disarms the callback (the promise
/// itself cannot be unsubscribed from).
#[must_use = "the watcher is disarmed when dropped"]
#[derive(Debug)]
pub struct LostWatch {
    armed: Rc<Cell<bool>>,
}

impl LostWatch {
    /// Keeps the watcher armed for the life of the page.
    pub fn forget(self) {
        std::mem::forget(self);
    }
}

impl Drop for LostWatch {
    fn drop(&mut self) {
        self.armed.set(false);
    }
}

/// Calls `on_lost(reason, message)` once when `device` is lost, unless the returned
/// guard was dropped first.
pub fn watch_lost(
    device: &GpuDevice,
    on_lost: impl FnOnce(LossReason, String) + 'static,
) -> LostWatch {
    let armed = Rc::new(Cell::new(true));
    let still_armed = armed.clone();
    let lost = device.lost();
    wasm_bindgen_futures::spawn_local(async move {
        let (reason, message) = match lost.await {
            Ok(info) => (LossReason::parse(&enum_str(info.reason())), info.message()),
            Err(e) => (LossReason::Unknown, crate::web::js::describe(&e)),
        };
        if still_armed.get() {
            on_lost(reason, message);
        }
    });
    LostWatch { armed }
}
