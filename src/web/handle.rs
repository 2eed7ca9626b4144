//! [`DeviceHandle`]: the raw device with its lost flag and its context; all that
//! error scopes need, so that the scope layer depends on nothing above it.

use crate::held::Held;
use std::cell::Cell;
use std::rc::Rc;

use web_sys::GpuDevice;

use crate::supervisor::LossReason;
use crate::web::lost::{watch_lost, LostWatch};
use crate::web::session::Session;

/// What runs when a probe finds the device lost, with the reason it reads.
type FoundLostHook = Rc<dyn Fn(LossReason)>;

/// A `GPUDevice`, whether it is known to be lost, and the context it reports to.
/// Cheap to clone (shared).
#[derive(Clone)]
pub struct DeviceHandle {
    raw: GpuDevice,
    lost: Rc<Cell<bool>>,
    injected_loss: Rc<Cell<bool>>,
    /// Whether the application destroyed it through the guard
    /// ([`crate::web::GuardedDevice::destroy`]).
    destroyed_by_application: Rc<Cell<bool>>,
    /// Whether the runtime let this device go on purpose (stopped, superseded,
    /// torn down): what its work fails with afterwards is not news.
    let_go: Rc<Cell<bool>>,
    found_lost_hook: Rc<Held<Option<FoundLostHook>>>,
    context: Session,
}

impl std::fmt::Debug for DeviceHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceHandle")
            .field("lost", &self.lost.get())
            .field("injected_loss", &self.injected_loss.get())
            .finish_non_exhaustive()
    }
}

impl DeviceHandle {
    /// Wraps `raw`, reporting to `context`.
    pub fn new(raw: GpuDevice, context: Session) -> Self {
        DeviceHandle {
            raw,
            lost: Rc::new(Cell::new(false)),
            injected_loss: Rc::new(Cell::new(false)),
            destroyed_by_application: Rc::new(Cell::new(false)),
            let_go: Rc::new(Cell::new(false)),
            found_lost_hook: Rc::new(Held::default()),
            context,
        }
    }

    /// The raw device.
    pub fn raw(&self) -> &GpuDevice {
        &self.raw
    }

    /// The session this device shares (ledger, level, frame counter, fault sink).
    pub fn session(&self) -> &Session {
        &self.context
    }

    /// [`Self::session`]'s name before 0.2.0.
    #[deprecated(since = "0.2.0", note = "renamed `session`")]
    pub fn guard(&self) -> &Session {
        self.session()
    }

    /// Whether the device is known to be lost.
    pub fn is_lost(&self) -> bool {
        self.lost.get()
    }

    /// Records that the device was let go on purpose (see [`Self::was_let_go`]).
    pub(crate) fn mark_let_go(&self) {
        self.let_go.set(true);
    }

    /// Whether the device was let go on purpose (a stop, a superseded
    /// attempt): a phase that fails on it afterwards reports nothing.
    pub fn was_let_go(&self) -> bool {
        self.let_go.get()
    }

    /// Records that the application destroys the device (its own
    /// `destroy()`, through the guard).
    pub(crate) fn mark_destroyed_by_application(&self) {
        self.destroyed_by_application.set(true);
    }

    /// Why the device is lost, as far as the library knows it before the
    /// browser says: an injected loss reads as `unknown` (a loss the browser
    /// caused), the application's own `destroy()` as `destroyed`. A probe
    /// that finds the device lost before its `lost` promise resolves (Gecko)
    /// says this, so that the application's own destroy is never taken for a
    /// loss to recover from.
    pub(crate) fn known_reason(&self, told: LossReason) -> LossReason {
        known_reason(&self.injected_loss, &self.destroyed_by_application, told)
    }

    /// Records that the device is lost.
    pub(crate) fn mark_lost(&self) {
        self.lost.set(true);
    }

    /// A probe found the device lost: records it and, the first time, runs the
    /// hook set by [`Self::on_found_lost`] (the runtime's: it tells the
    /// supervisor at once).
    pub(crate) fn found_lost(&self) {
        if self.lost.replace(true) {
            return;
        }
        let hook = self.found_lost_hook.get().flatten();
        if let Some(hook) = hook {
            hook(self.known_reason(LossReason::Unknown));
        }
    }

    /// Sets what runs when a probe finds the device lost.
    pub(crate) fn on_found_lost(&self, hook: impl Fn(LossReason) + 'static) {
        self.found_lost_hook.replace(Some(Rc::new(hook)));
    }

    /// Records that the device's loss was injected (reported as a browser-caused
    /// loss, reason `unknown`).
    #[cfg(feature = "fault-injection")]
    pub(crate) fn mark_injected_loss(&self) {
        self.injected_loss.set(true);
    }

    /// Calls `on_lost(reason, message)` once when the device is lost, after
    /// marking it lost (the reason as [`Self::known_reason`] reads it). The
    /// watcher holds the lost flags only, never the device.
    pub(crate) fn watch_lost(
        &self,
        on_lost: impl FnOnce(LossReason, String) + 'static,
    ) -> LostWatch {
        let lost = self.lost.clone();
        let injected = self.injected_loss.clone();
        let destroyed = self.destroyed_by_application.clone();
        watch_lost(&self.raw, move |reason, message| {
            lost.set(true);
            on_lost(known_reason(&injected, &destroyed, reason), message)
        })
    }

    /// Whether `other` wraps the same device (the same handle, cloned).
    pub fn same_device(&self, other: &DeviceHandle) -> bool {
        Rc::ptr_eq(&self.lost, &other.lost)
    }

    /// Whether the device's loss was injected.
    pub fn injected_loss(&self) -> bool {
        self.injected_loss.get()
    }
}

/// See [`DeviceHandle::known_reason`].
fn known_reason(injected: &Cell<bool>, destroyed: &Cell<bool>, told: LossReason) -> LossReason {
    if injected.get() {
        LossReason::Unknown
    } else if destroyed.get() {
        LossReason::Destroyed
    } else {
        told
    }
}

impl AsRef<DeviceHandle> for DeviceHandle {
    fn as_ref(&self) -> &DeviceHandle {
        self
    }
}
