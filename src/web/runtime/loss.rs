//! Every way the runtime learns that a device is lost, and the one entry they
//! all go through.
//!
//! A device is found lost three ways: its `lost` promise resolves (armed before
//! the canvas is configured, since a device can arrive lost), a probe (an
//! awaited scope, or the check a frozen picture asks for) finds its scopes
//! answering null, or an injection says so. Each calls [`Inner::device_lost`],
//! which writes the note, starts the recovery's clock (the timings measure
//! from it) and tells the supervisor; the supervisor decides, and the driver
//! tears the generation down (`teardown`). The device's own flags (lost,
//! injected, let go) live in [`crate::web::handle::DeviceHandle`].

use std::rc::{Rc, Weak};

use super::{App, Inner};
use crate::supervisor::{Event, LossReason};
use crate::web::device::GuardedDevice;
use crate::web::js::now_ms;
use crate::web::lost::LostWatch;

/// How a loss was found, for the note it writes.
pub(super) enum Found {
    /// The device's `lost` promise resolved, with its message.
    Watcher(String),
    /// A probe found the device's scopes answering null.
    Probe,
    /// An injection (`gpuInject`, the soak).
    #[cfg(feature = "fault-injection")]
    Injected,
}

impl<A: App> Inner<A> {
    /// Device `generation` is lost: noted and timed if it is still the
    /// runtime's (a device the runtime let go, stopped or superseded, is not
    /// news), and handed to the supervisor, which ignores a stale one.
    pub(super) fn device_lost(this: &Rc<Self>, generation: u64, reason: LossReason, how: Found) {
        let message = match how {
            Found::Watcher(message) => message,
            Found::Probe => "found lost by a probe (the browser said nothing yet)".into(),
            #[cfg(feature = "fault-injection")]
            Found::Injected => "injected loss".into(),
        };
        if this.driver.owns_generation(generation) {
            this.session.faults().note(&format!(
                "device {generation} lost (reason {}): {message}",
                reason.as_str()
            ));
            this.timings.triggered_now();
        }
        Inner::dispatch(
            this,
            Event::Lost {
                generation,
                reason,
                message,
                at_ms: now_ms() as u64,
            },
        );
    }

    /// Arms both watchers of device `generation`: its `lost` promise, and
    /// the hook a probe runs when it finds the device lost (on some engines
    /// `lost` resolves late, or not at all). Neither holds the device or the
    /// runtime: a retired device whose `lost` never resolves (Gecko, where
    /// `destroy()` is not called) is left to the garbage collector.
    pub(super) fn watch_loss(
        this: &Rc<Self>,
        device: &GuardedDevice,
        generation: u64,
    ) -> LostWatch {
        let weak: Weak<Self> = Rc::downgrade(this);
        let watch = device.watch_lost(move |reason, message| {
            if let Some(runtime) = weak.upgrade() {
                Inner::device_lost(&runtime, generation, reason, Found::Watcher(message));
            }
        });
        let weak: Weak<Self> = Rc::downgrade(this);
        let handle: &crate::web::handle::DeviceHandle = device.as_ref();
        handle.on_found_lost(move |reason| {
            if let Some(runtime) = weak.upgrade() {
                Inner::device_lost(&runtime, generation, reason, Found::Probe);
            }
        });
        watch
    }

    /// Asks the GPU process whether the live device `generation` is alive; a
    /// lost one is handled as a loss (on some engines `lost` resolves late).
    pub(super) fn probe_live(this: &Rc<Self>, generation: u64) {
        let Some(live) = this.slot.live() else {
            return;
        };
        if live.gpu.generation != generation || !this.driver.owns_generation(generation) {
            return;
        }
        let device = live.gpu.device.clone();
        drop(live);
        let weak = Rc::downgrade(this);
        wasm_bindgen_futures::spawn_local(async move {
            // The probe's scopes run the found-lost hook first, if the device
            // was not marked lost yet; said again, a loss is stale and ignored.
            if device.confirm_alive().await {
                return;
            }
            if let Some(runtime) = weak.upgrade() {
                let handle: &crate::web::handle::DeviceHandle = device.as_ref();
                let reason = handle.known_reason(LossReason::Unknown);
                Inner::device_lost(&runtime, generation, reason, Found::Probe);
            }
        });
    }
}
