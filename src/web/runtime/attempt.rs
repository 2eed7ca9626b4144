//! One init attempt: `navigator.gpu` -> adapter -> device -> loss watcher and fault sink listener
//! (armed before the canvas is configured: a device can arrive already lost) ->
//! canvas -> the application's resources. Every step's failure is an
//! [`InitFailure`] naming the step; nothing throws through WebAssembly (the
//! application's `build` is polled through the crash trampoline). The attempt
//! takes no decision: it hands what it made (the device, then the built
//! resources) over with its event, and the driver adopts, runs or discards it
//! as the supervisor says. An attempt that was superseded or stopped meanwhile
//! hears "gone" and ends quietly.

use std::rc::{Rc, Weak};

use crate::fault::{Fault, FaultKind};
use crate::oneshot;
use crate::supervisor::{Event, InitFailure};
use crate::web::crash;
use crate::web::init::{self, GpuContext};
use crate::web::js::now_ms;

use super::slot::{Arrival, Handover};
use super::{App, Inner};
use crate::init_timings::AttemptSteps;

/// What a build's `Err` means for the next attempt: a fault that can pass on a
/// fresh device (out of memory, an internal error) is retried; a lost device
/// is a loss during init; anything else (a validation error, an exception) is
/// the application's own bug and fails the same way every time.
fn build_failure(fault: &Fault, alive: bool) -> InitFailure {
    let text = fault.to_string();
    if !alive || fault.kind == FaultKind::DeviceLost {
        return InitFailure::LostDuringInit(text);
    }
    match fault.kind {
        FaultKind::OutOfMemory | FaultKind::Internal => InitFailure::ResourcesMayPass(text),
        _ => InitFailure::Resources(text),
    }
}

impl<A: App> Inner<A> {
    /// Attempt `attempt` failed: said (only while it is still the one under
    /// way: a stopped or superseded attempt ends quietly) and reported.
    fn attempt_failed(this: &Rc<Self>, attempt: u64, failure: InitFailure) {
        if this.driver.attempt_owns(attempt) {
            this.session.faults().note(&format!(
                "init attempt {attempt} failed: {}",
                failure.describe()
            ));
        }
        Inner::dispatch(this, Event::InitFailed { attempt, failure });
    }

    /// One attempt. It holds the runtime only between its awaits: an attempt
    /// stuck in `requestAdapter`, `requestDevice` or the application's `build`
    /// keeps nothing of a runtime that was stopped and let go, and ends at its
    /// next step when the runtime is gone.
    pub(super) async fn run_attempt(weak: Weak<Self>, attempt: u64) {
        let Some(this) = weak.upgrade() else {
            return;
        };
        let t0 = now_ms();
        let recovery = this
            .driver
            .read(|s| s.bringing_up_a_recovery())
            .unwrap_or(false);
        let device_label = this.options.init.device_label.clone();
        let gpu_api = match init::navigator_gpu() {
            Ok(gpu) => gpu,
            Err(failure) => return Inner::attempt_failed(&this, attempt, failure),
        };
        drop(this);
        let adapter = init::request_adapter(&gpu_api).await;
        let Some(this) = weak.upgrade().filter(|_| !crash::crashed()) else {
            return;
        };
        let adapter = match adapter {
            Ok(adapter) => adapter,
            Err(failure) => return Inner::attempt_failed(&this, attempt, failure),
        };
        let adapter_name = init::adapter_name(&adapter);
        let t1 = now_ms();
        drop(this);
        let raw = init::request_device(&adapter, &device_label).await;
        // Gone, or crashed meanwhile: the device is nobody's.
        let Some(this) = weak.upgrade().filter(|_| !crash::crashed()) else {
            if let Ok(raw) = raw {
                crate::web::engine::let_device_go(&raw);
            }
            return;
        };
        let raw = match raw {
            Ok(device) => device,
            Err(failure) => return Inner::attempt_failed(&this, attempt, failure),
        };
        let t2 = now_ms();
        // The supervisor's word on this device comes on a one-shot: adopted
        // (as generation N), or gone (discarded, or the runtime dropped) when
        // the sender is dropped unsent. Awaited, never polled.
        let (decision, word) = oneshot::channel();
        Inner::dispatch_with(
            &this,
            Event::DeviceCreated { attempt },
            Handover::Device(Arrival::new(raw.clone(), decision)),
        );
        drop(this);
        let Some((device, generation)) = word.await else {
            // Stopped or superseded meanwhile: carry_out destroyed it.
            return;
        };
        let Some(this) = weak.upgrade() else {
            device.retire();
            return;
        };
        if !this.driver.attempt_owns(attempt) {
            // Stopped or superseded between the word and now: carry_out
            // destroyed the device already.
            return;
        }
        // Armed before the canvas is configured.
        let lost = Inner::watch_loss(&this, &device, generation);
        let listener = this.session.faults().install(&raw);
        Inner::size_for(&this, &raw);
        let (context, format) =
            match init::configure_canvas(&this.canvas, &gpu_api, &raw, &this.options.init) {
                Ok(pair) => pair,
                Err(failure) => return Inner::attempt_failed(&this, attempt, failure),
            };
        this.slot.owns_canvas(generation);
        this.slot.set_adapter(&adapter_name);
        this.session.faults().set_adapter(&adapter_name);
        let t3 = now_ms();
        let gpu = GpuContext {
            adapter_name,
            device: device.clone(),
            surface: context,
            #[cfg(feature = "web-sys-enums")]
            format,
            #[cfg(not(feature = "web-sys-enums"))]
            format_name: format,
            canvas: this.canvas.clone(),
            generation,
            _listener: listener,
            _lost_watch: lost,
        };
        // Through the trampoline: a `build` that throws through WebAssembly or
        // panics ends here instead of never returning. The runtime is not held
        // while it runs (the application is).
        let app = this.app.clone();
        drop(this);
        // Called inside the future, so that what `build` does before its
        // first await runs through the trampoline too.
        let built = crash::Trampolined::new(async { app.build(&gpu).await }).await;
        let t4 = now_ms();
        if crash::crashed() {
            std::mem::forget(gpu);
            std::mem::forget(built);
            if let Some(this) = weak.upgrade() {
                Inner::on_crash(&this);
            }
            return;
        }
        let built = match built {
            Ok(built) => built,
            Err(thrown) => Err(crash::thrown_fault(
                "the build threw (a raw web-sys call that does not catch?)",
                &thrown,
            )),
        };
        // Built (or failed) on a device that is still alive? A loss during build
        // may not have resolved `lost` yet: ask the GPU process.
        let alive = device.confirm_alive().await;
        let Some(this) = weak.upgrade() else {
            if let Ok(resources) = built {
                let _ = crash::drop_in_trampoline(resources);
            }
            gpu.release();
            return;
        };
        // Whatever a build armed for itself ends with it (not a newer
        // attempt's injection).
        #[cfg(feature = "fault-injection")]
        if this.driver.attempt_owns(attempt) {
            this.session.injector().disarm();
        }
        let resources = match built {
            Ok(resources) if alive => resources,
            Ok(resources) => {
                Inner::drop_resources(&this, resources);
                this.slot.release(&gpu);
                return Inner::attempt_failed(
                    &this,
                    attempt,
                    InitFailure::LostDuringInit(
                        "the device was lost while the resources were built".into(),
                    ),
                );
            }
            Err(fault) => {
                let failure = build_failure(&fault, alive);
                // Written once, here, while the attempt is the one under way;
                // a stopped or superseded attempt's failure is not news.
                if this.driver.attempt_owns(attempt) {
                    device.report(fault);
                }
                this.slot.release(&gpu);
                drop(gpu);
                return Inner::dispatch(&this, Event::InitFailed { attempt, failure });
            }
        };
        // Only the attempt under way's timings (a stale one's are not news).
        if this.driver.attempt_owns(attempt) {
            this.timings.init_done(
                AttemptSteps {
                    started: t0,
                    adapter: t1,
                    device: t2,
                    configured: t3,
                    built: t4,
                },
                recovery,
            );
        }
        // The driver runs it, or destroys it if the attempt was superseded.
        Inner::dispatch_with(
            &this,
            Event::InitSucceeded {
                attempt,
                generation,
            },
            Handover::Built(gpu, resources),
        );
    }
}
