//! What is known about the engine behind `navigator.gpu`, for the few places
//! where engines differ in ways the API cannot tell, and the one place that
//! decides whether a device may be destroyed. Imports nothing of the browser
//! layer but its bindings: every layer may ask it.

use crate::str_search::contains;

/// What is known about the engine behind `navigator.gpu`, for the few places
/// where engines differ in ways the API cannot tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// Firefox (wgpu).
    Gecko,
    /// Anything else (Chromium's Dawn, Safari's WebKit).
    Other,
}

impl Engine {
    /// The engine of this page, from `navigator.userAgent`.
    pub fn detect() -> Engine {
        let firefox = web_sys::window()
            .and_then(|w| w.navigator().user_agent().ok())
            .is_some_and(|ua| contains(&ua, "Firefox/"));
        if firefox {
            Engine::Gecko
        } else {
            Engine::Other
        }
    }

    /// Whether `device.destroy()` is safe for the page's other canvases. Measured
    /// on Firefox 153 (wgpu, headless): after one `destroy()`, the next device's
    /// canvas presents one frame and then `requestAnimationFrame` stops firing for
    /// the whole page. There the device is left to the garbage collector instead,
    /// once every object it owned is released.
    pub fn destroy_is_safe(self) -> bool {
        self != Engine::Gecko
    }
}

/// Lets a device the library owns go: destroyed where the engine allows it
/// ([`Engine::destroy_is_safe`]), else left to the garbage collector. The one
/// place the library decides whether a device may be destroyed (clippy.toml
/// refuses `GpuDevice::destroy` elsewhere); never throws.
pub(crate) fn let_device_go(device: &web_sys::GpuDevice) {
    if Engine::detect().destroy_is_safe() {
        let _ = crate::web::bindings::try_destroy_device(device);
    }
}
