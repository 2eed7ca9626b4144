//! One init attempt: `navigator.gpu` -> adapter -> device -> loss watcher and net
//! (armed before the canvas is configured: a device can arrive already lost) ->
//! canvas -> the application's resources. Every step's failure is an
//! [`InitFailure`] naming the step; nothing throws through WebAssembly (the
//! application's `build` is polled through the crash trampoline). The attempt
//! takes no decision: it parks what it made (the device, then the built
//! resources) and reports; `carry_out` adopts, runs or discards what was parked,
//! as the supervisor says. An attempt that was superseded or stopped meanwhile
//! finds its device gone and ends quietly.

use std::rc::{Rc, Weak};

use wasm_bindgen::JsValue;

use crate::fault::{Fault, FaultKind};
use crate::supervisor::{Event, InitFailure};
use crate::web::crash;
use crate::web::device::GuardedDevice;
use crate::web::init::{self, GpuContext};
use crate::web::js::now_ms;

use super::{App, Arrival, Built, InitTimings, Inner};

/// What became of the device an attempt parked.
enum Verdict {
    Adopted(GuardedDevice, u64),
    Gone,
    Pending,
}

/// Lets the other queued work run once (a resolved promise's reaction).
async fn yield_now() {
    let _ =
        wasm_bindgen_futures::JsFuture::from(js_sys::Promise::resolve(&JsValue::UNDEFINED)).await;
}

impl<A: App> Inner<A> {
    fn verdict(this: &Rc<Self>, attempt: u64) -> Verdict {
        let parked = this
            .arrivals
            .try_borrow()
            .map(|a| a.iter().any(|a| a.attempt == attempt))
            .unwrap_or(false);
        if parked {
            return Verdict::Pending;
        }
        match this.initializing.try_borrow().ok().and_then(|slot| {
            slot.as_ref()
                .filter(|i| this.attempt_owns(attempt, i.generation))
                .map(|i| (i.device.clone(), i.generation))
        }) {
            Some((device, generation)) => Verdict::Adopted(device, generation),
            None => Verdict::Gone,
        }
    }

    /// Whether `attempt` is still the one under way, on `generation`.
    fn attempt_owns(&self, attempt: u64, _generation: u64) -> bool {
        self.supervisor
            .try_borrow()
            .map(|s| s.attempt_in_flight() == Some(attempt))
            .unwrap_or(false)
    }

    pub(super) async fn run_attempt(this: &Rc<Self>, attempt: u64) {
        let t0 = now_ms();
        let wait_ms = t0 - this.trigger_ms.get();
        let recovery = this
            .supervisor
            .try_borrow()
            .map(|s| s.generation() > 0)
            .unwrap_or(false);
        let fail = |failure: InitFailure| {
            this.context.net().note(&format!(
                "init attempt {attempt} failed: {}",
                failure.describe()
            ));
            Inner::dispatch(this, Event::InitFailed { attempt, failure });
        };
        let gpu_api = match init::navigator_gpu() {
            Ok(gpu) => gpu,
            Err(failure) => return fail(failure),
        };
        let adapter = match init::request_adapter(&gpu_api).await {
            Ok(adapter) => adapter,
            Err(failure) => return fail(failure),
        };
        let adapter_name = init::adapter_name(&adapter);
        let t1 = now_ms();
        let raw = match init::request_device(&adapter, &this.options.init.device_label).await {
            Ok(device) => device,
            Err(failure) => return fail(failure),
        };
        let t2 = now_ms();
        if let Ok(mut arrivals) = this.arrivals.try_borrow_mut() {
            arrivals.push(Arrival {
                attempt,
                raw: raw.clone(),
            });
        }
        Inner::dispatch(this, Event::DeviceCreated { attempt });
        let (device, generation) = loop {
            match Inner::verdict(this, attempt) {
                Verdict::Adopted(device, generation) => break (device, generation),
                // Stopped or superseded while the device was requested:
                // carry_out destroyed it.
                Verdict::Gone => return,
                // The event waits behind another being handled.
                Verdict::Pending => yield_now().await,
            }
        };
        // Armed before the canvas is configured. It holds neither the device
        // nor the runtime: a retired device whose `lost` never resolves (Gecko,
        // where `destroy()` is not called) is left to the garbage collector.
        let weak: Weak<Self> = Rc::downgrade(this);
        let lost = device.watch_lost(move |reason, message| {
            if let Some(runtime) = weak.upgrade() {
                runtime.context.net().note(&format!(
                    "device {generation} lost (reason {}): {message}",
                    reason.as_str()
                ));
                runtime.trigger_ms.set(now_ms());
                Inner::dispatch(
                    &runtime,
                    Event::Lost {
                        generation,
                        reason,
                        at_ms: now_ms() as u64,
                    },
                );
            }
        });
        // A probe that finds the device lost tells the supervisor now: on some
        // engines `lost` resolves late, or not at all.
        let weak_runtime: Weak<Self> = Rc::downgrade(this);
        let handle: &crate::web::handle::DeviceHandle = device.as_ref();
        handle.on_found_lost(move || {
            if let Some(runtime) = weak_runtime.upgrade() {
                runtime
                    .context
                    .net()
                    .note(&format!("device {generation} found lost by a probe"));
                Inner::dispatch(
                    &runtime,
                    Event::Lost {
                        generation,
                        reason: crate::supervisor::LossReason::Unknown,
                        at_ms: now_ms() as u64,
                    },
                );
            }
        });
        let net = this.context.net().install(&raw);
        Inner::size_for(this, &raw);
        let (context, format) = match init::configure_canvas(
            &this.canvas,
            &gpu_api,
            &raw,
            this.options.init.alpha_mode,
        ) {
            Ok(pair) => pair,
            Err(failure) => return fail(failure),
        };
        this.canvas_owner.set(Some(generation));
        if let Ok(mut slot) = this.adapter.try_borrow_mut() {
            *slot = adapter_name.clone();
        }
        let t3 = now_ms();
        let gpu = GpuContext {
            adapter_name,
            device: device.clone(),
            context,
            format,
            canvas: this.canvas.clone(),
            generation,
            _listener: net,
            _lost_watch: lost,
        };
        // Through the trampoline: a `build` that throws through WebAssembly or
        // panics ends here instead of never returning.
        let built = crash::Catching::new(this.app.build(&gpu)).await;
        let t4 = now_ms();
        // Whatever a build armed for itself ends with it.
        #[cfg(feature = "fault-injection")]
        this.context.injector().disarm();
        if crash::crashed() {
            std::mem::forget(gpu);
            return Inner::on_crash(this);
        }
        let built = match built {
            Ok(built) => built,
            Err(thrown) => Err(Fault::new(
                FaultKind::Exception,
                format!(
                    "the build threw (a raw web-sys call that does not catch?): {}",
                    crate::web::js::describe(&thrown)
                ),
            )),
        };
        // Built (or failed) on a device that is still alive? A loss during build
        // may not have resolved `lost` yet: ask the GPU process.
        let alive = device.confirm_alive().await;
        let resources = match built {
            Ok(resources) if alive => resources,
            Ok(resources) => {
                Inner::drop_resources(this, resources);
                Inner::release(this, &gpu);
                return fail(InitFailure::LostDuringInit(
                    "the device was lost while the resources were built".into(),
                ));
            }
            Err(fault) => {
                let fault = if this.attempt_owns(attempt, generation) {
                    device.report(fault)
                } else {
                    fault
                };
                Inner::release(this, &gpu);
                drop(gpu);
                return fail(if alive {
                    InitFailure::Resources(fault.to_string())
                } else {
                    InitFailure::LostDuringInit(fault.to_string())
                });
            }
        };
        this.pending_timing.set(Some((
            InitTimings {
                wait_ms,
                adapter_ms: t1 - t0,
                device_ms: t2 - t1,
                configure_ms: t3 - t2,
                resources_ms: t4 - t3,
                to_first_frame_ms: 0.0,
                to_picture_ms: 0.0,
                first_frame_at_ms: 0.0,
                recovery,
            },
            t0,
        )));
        if let Ok(mut slot) = this.built.try_borrow_mut() {
            *slot = Some(Built {
                generation,
                gpu,
                resources,
            });
        }
        // carry_out runs it, or destroys it if the attempt was superseded.
        Inner::dispatch(
            this,
            Event::InitSucceeded {
                attempt,
                generation,
            },
        );
    }
}
