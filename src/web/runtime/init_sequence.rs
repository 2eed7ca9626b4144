//! One init attempt: `navigator.gpu` -> adapter -> device -> loss watcher and net
//! (armed before the canvas is configured: a device can arrive already lost) ->
//! canvas -> the application's resources. Every step's failure is an
//! [`InitFailure`] naming the step; nothing throws through WebAssembly. Each step
//! reports to the supervisor and goes on only as it says: an attempt that was
//! superseded or stopped meanwhile destroys its device and reports nothing.

use std::rc::{Rc, Weak};

use crate::supervisor::{Command, Event, InitFailure};
use crate::web::device::GuardedDevice;
use crate::web::init::{self, Gpu};
use crate::web::js::now_ms;
use crate::web::lost::watch_lost;

use super::{App, InitTimings, Initializing, Inner, Live};

impl<A: App> Inner<A> {
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
        let commands = Inner::dispatch(this, Event::DeviceCreated { attempt });
        let Some(generation) = commands.iter().find_map(|c| match c {
            Command::Adopt { generation } => Some(*generation),
            _ => None,
        }) else {
            // Stopped or superseded while the device was requested.
            GuardedDevice::with_context(raw, this.context.clone()).retire();
            return;
        };
        let device = GuardedDevice::with_context(raw.clone(), this.context.clone());
        if let Ok(mut slot) = this.initializing.try_borrow_mut() {
            *slot = Some(Initializing {
                generation,
                device: device.clone(),
            });
        }
        // Armed before the canvas is configured.
        let weak: Weak<Self> = Rc::downgrade(this);
        let watched = device.clone();
        let lost = watch_lost(&raw, move |reason, message| {
            watched.mark_lost();
            let handle: &crate::web::handle::DeviceHandle = watched.as_ref();
            let reason = if handle.injected_loss() {
                crate::supervisor::LossReason::Unknown
            } else {
                reason
            };
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
        let net = this.context.net().install(&raw);
        let (context, format) = match init::configure_canvas(
            &this.canvas,
            &gpu_api,
            &raw,
            this.options.init.alpha_mode,
        ) {
            Ok(pair) => pair,
            Err(failure) => {
                device.retire();
                return fail(failure);
            }
        };
        this.canvas_owner.set(Some(generation));
        if let Ok(mut slot) = this.adapter.try_borrow_mut() {
            *slot = adapter_name.clone();
        }
        let t3 = now_ms();
        let gpu = Gpu {
            adapter_name,
            device: device.clone(),
            context,
            format,
            canvas: this.canvas.clone(),
            generation,
            listener: net,
            lost_watch: lost,
        };
        let built = this.app.build(&gpu).await;
        let t4 = now_ms();
        // Whatever a build armed for itself ends with it.
        #[cfg(feature = "fault-injection")]
        this.context.injector().disarm();
        let current = |runtime: &Rc<Self>| {
            runtime
                .supervisor
                .try_borrow()
                .map(|s| s.attempt_in_flight() == Some(attempt))
                .unwrap_or(false)
        };
        // Built on a device that is still alive? A loss during build may not have
        // resolved `lost` yet: ask the GPU process.
        let built = match built {
            Ok(_) if !device.confirm_alive().await => Err(crate::fault::Fault::new(
                crate::fault::FaultKind::DeviceLost,
                "the device was lost while the resources were built",
            )),
            other => other,
        };
        let resources = match built {
            Ok(resources) => resources,
            Err(_) if !current(this) => {
                // Stopped or superseded meanwhile: go quietly.
                Inner::release(this, &gpu);
                return;
            }
            Err(fault) => {
                let lost = device.is_lost();
                let fault = device.report(fault);
                Inner::release(this, &gpu);
                drop(gpu);
                return fail(if lost {
                    InitFailure::LostDuringInit(fault.to_string())
                } else {
                    InitFailure::Resources(fault.to_string())
                });
            }
        };
        let commands = Inner::dispatch(
            this,
            Event::InitSucceeded {
                attempt,
                generation,
            },
        );
        if let Ok(mut slot) = this.initializing.try_borrow_mut() {
            if slot.as_ref().is_some_and(|i| i.generation == generation) {
                slot.take();
            }
        }
        if !commands.contains(&Command::Run { generation }) {
            drop(resources);
            Inner::release(this, &gpu);
            return;
        }
        let live = Rc::new(Live {
            gpu,
            resources,
            frames: std::cell::Cell::new(0),
        });
        if let Ok(mut slot) = this.live.try_borrow_mut() {
            *slot = Some(live);
        }
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
        this.context.net().note(&format!(
            "device generation {generation} running ({})",
            this.adapter
                .try_borrow()
                .map(|a| a.clone())
                .unwrap_or_default()
        ));
        Inner::start_loop(this);
    }
}
