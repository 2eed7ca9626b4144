//! Fault injection into a running application, behind the `fault-injection`
//! feature (on by default): [`Runtime::inject`] and [`Runtime::stop_storm`]. An
//! application built without the feature has no way to inject a fault through
//! the library, and these hooks cost nothing.

#[cfg(feature = "fault-injection")]
mod enabled {
    use std::cell::Cell;
    use std::rc::Rc;

    use super::super::loss::Found;
    use super::super::{App, Inner, Runtime};
    use crate::chaos::Injection;
    use crate::web::init::GpuContext;
    use crate::web::inject::BuildFault;
    use crate::web::js::now_ms;

    thread_local! {
        static STORM_OFFSET: Cell<u32> = const { Cell::new(0) };
    }

    impl<A: App> Runtime<A> {
        /// Injects `injection` (see [`crate::chaos`]): losses are reported as the
        /// browser's (reason `unknown`) and take the same path as a real one; faults
        /// armed for the next build start that build with a loss. Errs, changing
        /// nothing, when there is no running device to inject into.
        ///
        /// On Firefox a loss is simulated without `destroy()` (which stalls the page's
        /// presentation there, see [`crate::web::engine::Engine::destroy_is_safe`]).
        pub fn inject(&self, injection: Injection) -> Result<(), String> {
            let inner = &self.inner;
            let live = inner
                .slot
                .live()
                .ok_or_else(|| "no running device to inject into".to_string())?;
            let injector = inner.session.injector();
            match injection {
                Injection::LoseNow => Inner::inject_loss(inner, &live.gpu),
                Injection::LoseAfterFrames(n) => injector.lose_after(n),
                Injection::LoseDuringRebuild(n) => {
                    injector.arm(BuildFault::Lose(n));
                    Inner::inject_loss(inner, &live.gpu);
                }
                Injection::OutOfMemoryInRebuild(n) => {
                    injector.arm(BuildFault::OutOfMemory(n));
                    Inner::inject_loss(inner, &live.gpu);
                }
                Injection::ThrowInRebuild(n) => {
                    injector.arm(BuildFault::Throw(n));
                    Inner::inject_loss(inner, &live.gpu);
                }
                // At most `MAX_STORM_PER_SECOND` whatever the caller asked (a
                // storm of billions a second would freeze the tab); the length
                // is left as asked: `u32::MAX` means until `stop_storm`.
                Injection::Storm { per_second, for_ms } => Inner::start_storm(
                    inner,
                    &live.gpu.device,
                    per_second.clamp(1, crate::chaos::MAX_STORM_PER_SECOND),
                    for_ms,
                ),
                Injection::BadShader => {
                    let device = live.gpu.device.clone();
                    wasm_bindgen_futures::spawn_local(async move {
                        let broken =
                            "@fragment\nfn main() -> @location(0) vec4f {\n  return vec4f(1.0) +;\n}\n";
                        let _ = device
                            .create_shader_module("injected-bad-shader", broken, &[])
                            .await;
                    });
                }
                Injection::Uncaptured => {
                    let desc = web_sys::GpuBufferDescriptor::new(4, 0x3);
                    desc.set_label("injected-invalid-buffer");
                    if let Ok(buffer) = live.gpu.device.raw().create_buffer(&desc) {
                        buffer.destroy();
                    }
                }
            }
            // The last reference after an injected loss tore the device down:
            // the resources' `Drop` runs through the trampoline.
            Inner::drop_resources(inner, live);
            Ok(())
        }

        /// Stops an injected storm.
        pub fn stop_storm(&self) {
            self.inner.session.injector().stop_storm();
        }
    }

    impl<A: App> Inner<A> {
        /// Counts a frame towards a loss due after some frames; when it is due,
        /// injects it and returns true (the frame is not drawn).
        pub(crate) fn injected_loss_due(this: &Rc<Self>, gpu: &GpuContext) -> bool {
            let due = this.session.injector().loss_due();
            if due {
                Inner::inject_loss(this, gpu);
            }
            due
        }

        /// Cancels everything injections left armed or pending.
        pub(crate) fn clear_injections(&self) {
            self.session.injector().clear();
        }

        /// Cancels what was injected on a device being torn down: a loss due
        /// after some frames and a storm (whose timer would go on writing to
        /// the retired device, and keep it).
        pub(crate) fn cancel_pending_loss(&self) {
            self.session.injector().cancel_pending_loss();
            self.session.injector().stop_storm();
        }

        fn inject_loss(this: &Rc<Self>, gpu: &GpuContext) {
            let handle: &crate::web::handle::DeviceHandle = gpu.device.as_ref();
            handle.mark_injected_loss();
            gpu.device.mark_lost();
            Inner::device_lost(
                this,
                gpu.generation,
                crate::supervisor::LossReason::Unknown,
                Found::Injected,
            );
        }

        /// Uncaptured errors at `per_second`, each with its own message, for `for_ms`.
        fn start_storm(
            this: &Rc<Self>,
            device: &crate::web::GuardedDevice,
            per_second: u32,
            for_ms: u32,
        ) {
            let desc = web_sys::GpuBufferDescriptor::new(64 * 1024, 0x8);
            desc.set_label("injected-storm-target");
            let Ok(target) = device.raw().create_buffer(&desc) else {
                return;
            };
            let raw = device.raw().clone();
            let started = now_ms();
            let weak = Rc::downgrade(this);
            let per_tick = per_second.div_ceil(20).max(1);
            let interval = gloo_timers::callback::Interval::new(50, move || {
                let Some(runtime) = weak.upgrade() else {
                    return;
                };
                if now_ms() - started > f64::from(for_ms) {
                    runtime.session.injector().storm_ended();
                    target.destroy();
                    return;
                }
                for _ in 0..per_tick {
                    let n = STORM_OFFSET.with(|c| c.replace(c.get().wrapping_add(1)) % 16_000);
                    let _ =
                        raw.queue()
                            .write_buffer_with_u32_and_u8_slice(&target, 4 * n + 1, &[0; 4]);
                }
            });
            this.session.injector().set_storm(interval);
        }
    }
}

#[cfg(not(feature = "fault-injection"))]
mod disabled {
    use std::rc::Rc;

    use super::super::{App, Inner};
    use crate::web::init::GpuContext;

    /// Without the feature nothing is ever armed or pending.
    impl<A: App> Inner<A> {
        pub(crate) fn injected_loss_due(_this: &Rc<Self>, _gpu: &GpuContext) -> bool {
            false
        }

        pub(crate) fn clear_injections(&self) {}

        pub(crate) fn cancel_pending_loss(&self) {}
    }
}
