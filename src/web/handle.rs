//! [`DeviceHandle`]: the raw device with its lost flag and its context; all that
//! error scopes need, so that the scope layer depends on nothing above it.

use std::cell::Cell;
use std::rc::Rc;

use web_sys::GpuDevice;

use crate::web::context::GuardContext;

/// A `GPUDevice`, whether it is known to be lost, and the context it reports to.
/// Cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct DeviceHandle {
    raw: GpuDevice,
    lost: Rc<Cell<bool>>,
    injected_loss: Rc<Cell<bool>>,
    context: GuardContext,
}

impl DeviceHandle {
    /// Wraps `raw`, reporting to `context`.
    pub fn new(raw: GpuDevice, context: GuardContext) -> Self {
        DeviceHandle {
            raw,
            lost: Rc::new(Cell::new(false)),
            injected_loss: Rc::new(Cell::new(false)),
            context,
        }
    }

    /// The raw device.
    pub fn raw(&self) -> &GpuDevice {
        &self.raw
    }

    /// The shared context.
    pub fn context(&self) -> &GuardContext {
        &self.context
    }

    /// Whether the device is known to be lost.
    pub fn is_lost(&self) -> bool {
        self.lost.get()
    }

    /// Records that the device is lost.
    pub fn mark_lost(&self) {
        self.lost.set(true);
    }

    /// Records that the device's loss was injected (reported as a browser-caused
    /// loss, reason `unknown`).
    pub fn mark_injected_loss(&self) {
        self.injected_loss.set(true);
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

impl AsRef<DeviceHandle> for DeviceHandle {
    fn as_ref(&self) -> &DeviceHandle {
        self
    }
}
