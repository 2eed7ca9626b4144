//! The animation frame: the resize the canvas's size asks for, then the
//! application's frame inside its frame scope. A frame runs as a job of the
//! driver: whatever it asks for (`stop`, `force_recovery`, a rebuild after
//! failed resizes) is handled right after it, by the driver's loop.

use std::cell::Cell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::driver::Job;
use super::frame_loop::Source;
use super::slot::Live;
use super::{App, FrameInfo, Inner};
use crate::init_timings::smoothed;
use crate::supervisor::Event;
use crate::web::crash;
use crate::web::js::now_ms;

/// How many times in a row a failed `App::resize` is tried before the
/// resources are rebuilt on a new device.
const RESIZE_TRIES: u32 = 3;

/// What frames have done so far.
#[derive(Default)]
pub(super) struct FrameStats {
    count: Cell<u64>,
    thrown: Cell<u64>,
    smoothed_ms: Cell<f64>,
    total_ms: Cell<f64>,
    resizes: Cell<u64>,
    /// Resizes in a row whose `App::resize` returned `Err` (the drawing
    /// buffer has the new size, the resources may not): retried before the
    /// next frames, then rebuilt on a new device.
    failed_resizes: Cell<u32>,
}

impl FrameStats {
    pub(super) fn count(&self) -> u64 {
        self.count.get()
    }
    pub(super) fn thrown(&self) -> u64 {
        self.thrown.get()
    }
    pub(super) fn smoothed_ms(&self) -> f64 {
        self.smoothed_ms.get()
    }
    pub(super) fn total_ms(&self) -> f64 {
        self.total_ms.get()
    }
    pub(super) fn resizes(&self) -> u64 {
        self.resizes.get()
    }
    /// A new device's build saw the canvas's size: no resize is owed.
    pub(super) fn no_resize_owed(&self) {
        self.failed_resizes.set(0);
    }

    fn next_number(&self) -> u64 {
        let number = self.count.get() + 1;
        self.count.set(number);
        number
    }

    fn took(&self, elapsed: f64) {
        self.total_ms.set(self.total_ms.get() + elapsed);
        self.smoothed_ms
            .set(smoothed(self.smoothed_ms.get(), elapsed));
    }
}

impl<A: App> Inner<A> {
    /// Starts drawing on the live device: the callback is set and the first
    /// frame drawn now, not at the next animation frame (after a loss the
    /// picture is back up to one frame interval sooner). It requests the next.
    pub(super) fn start_loop(this: &Rc<Self>) {
        this.watchers.frame_ran();
        let weak = Rc::downgrade(this);
        this.frame_loop
            .set_callback(Closure::<dyn FnMut(f64)>::new(move |time: f64| {
                let Some(runtime) = weak.upgrade() else {
                    return;
                };
                if crash::crashed() {
                    return Inner::on_crash(&runtime);
                }
                let source = runtime.frame_loop.fired(time);
                if source == Source::Timer && runtime.frame_loop.waiting_for_gpu() {
                    // The GPU is still on the last timer frame: no more work
                    // queued behind it; the timer comes again. The page runs:
                    // a slow GPU is no stall of the browser.
                    runtime.watchers.frame_ran();
                    runtime.frame_loop.request();
                    return;
                }
                let time = match source {
                    Source::AnimationFrame => time,
                    Source::Timer => now_ms(),
                    Source::AnimationFrameBack => {
                        runtime
                            .session
                            .faults()
                            .note("animation frames came back: drawing from them again");
                        time
                    }
                };
                Inner::drive(&runtime, Job::Frame(time));
                if source == Source::Timer {
                    Inner::wait_for_the_gpu(&runtime);
                }
            }));
        // Queued behind the event that started the loop, as a frame job.
        Inner::drive(this, Job::Frame(now_ms()));
    }

    /// After a timer frame: the next one waits until the GPU has done the work
    /// submitted so far (`onSubmittedWorkDone`), so that frames from a timer
    /// never queue work faster than the GPU does it.
    fn wait_for_the_gpu(this: &Rc<Self>) {
        let Some(live) = this.slot.live() else {
            return;
        };
        let done =
            crate::web::commands::try_on_submitted_work_done(live.gpu.device.queue().as_ref());
        Inner::drop_resources(this, live);
        this.frame_loop.set_waiting_for_gpu(true);
        let weak = Rc::downgrade(this);
        wasm_bindgen_futures::spawn_local(async move {
            // Settled either way: a lost device's promise rejects.
            let _ = crate::web::wait::settled(&done).await;
            if let Some(runtime) = weak.upgrade() {
                runtime.frame_loop.set_waiting_for_gpu(false);
            }
        });
    }

    /// One frame, as a job of the driver.
    pub(super) fn draw_frame(this: &Rc<Self>, time: f64) {
        this.watchers.frame_ran();
        let Some(live) = this.slot.live() else {
            return;
        };
        let generation = live.gpu.generation;
        if !this.driver.may_draw(generation) {
            return;
        }
        if Inner::injected_loss_due(this, &live.gpu) {
            return;
        }
        // Requested before the frame runs: a frame that throws cannot stop the loop.
        this.frame_loop.request();
        let may_draw = Inner::follow_the_size(this, &live);
        if crash::crashed() {
            // The resize's state cannot be trusted: nothing more runs.
            std::mem::forget(live);
            return;
        }
        if !may_draw {
            // A rebuild was asked for: the driver runs it after this job.
            return Inner::drop_resources(this, live);
        }
        let number = this.frames.next_number();
        let info = FrameInfo {
            number,
            time_ms: time,
            generation,
        };
        let started = now_ms();
        let scope = live.gpu.device.begin_frame(number);
        // Through the trampoline: an exception thrown by a raw call in the
        // application's frame stops there. The resources are borrowed outside
        // it: a throw skips the destructors of the frames it crosses, and a
        // borrow taken inside would stay taken.
        let mut result = Ok(());
        let resources = live.resources.try_borrow();
        let thrown = crash::trampoline(&mut || {
            if let Ok(resources) = &resources {
                result = this.app.frame(&live.gpu, resources, &info);
            }
        });
        drop(resources);
        if crash::crashed() {
            // The frame's state cannot be trusted: its scopes and resources are
            // left as they are, and everything stops.
            std::mem::forget(scope);
            std::mem::forget(live);
            return;
        }
        // What the frame's code abandoned was popped by the trampoline: the
        // frame's own scopes are the top of the stack again.
        drop(scope);
        if let Err(thrown) = thrown {
            this.frames.thrown.set(this.frames.thrown.get() + 1);
            result = Err(crash::thrown_fault(
                "the frame threw (a raw web-sys call that does not catch?)",
                &thrown,
            ));
        }
        // A frame that ran long (a breakpoint, a long compile) is no stall:
        // the wait for the next one starts when it ends.
        this.watchers.frame_ran();
        this.frames.took(now_ms() - started);
        if let Err(fault) = result {
            let fault = if fault.origin.frame.is_none() {
                fault.in_frame(number)
            } else {
                fault
            };
            this.session.faults().report_ref(&fault);
        }
        let first = live.frames.get() == 0;
        live.frames.set(live.frames.get() + 1);
        if first {
            this.timings.first_frame();
            Inner::dispatch(
                this,
                Event::FirstFrame {
                    generation,
                    at_ms: now_ms() as u64,
                },
            );
        }
        // The last reference, when something the frame called tore it down.
        Inner::drop_resources(this, live);
    }

    /// Before a frame: if the canvas's displayed size changed (once, however
    /// many resize events came), resize the drawing buffer and let the
    /// application rebuild what depends on it, in a "resize" phase.
    ///
    /// A resize whose `App::resize` fails (the buffer has the new size, the
    /// resources perhaps the old) is owed: tried again before each of the next
    /// frames, and after [`RESIZE_TRIES`] failures in a row the resources are
    /// rebuilt on a new device, whose `build` sees the new size. Returns
    /// whether the frame may run (not when a rebuild was asked for).
    fn follow_the_size(this: &Rc<Self>, live: &Live<A::Resources>) -> bool {
        let stats = &this.frames;
        let owed = stats.failed_resizes.get() > 0;
        match this.watchers.wanted_size(&this.canvas, live.max_dimension) {
            Some((width, height)) => {
                this.canvas.set_width(width);
                this.canvas.set_height(height);
                stats.resizes.set(stats.resizes.get() + 1);
            }
            None if owed => {}
            None => return true,
        }
        // The application's own borrow (no frame of this device runs now),
        // taken outside the trampoline: a throw inside cannot leave it taken.
        let Ok(mut resources) = live.resources.try_borrow_mut() else {
            return true;
        };
        let resized = live.gpu.device.phase_now("resize", || {
            let mut resized = Ok(());
            let thrown =
                crash::trampoline(&mut || resized = this.app.resize(&live.gpu, &mut resources));
            match thrown {
                Ok(()) => resized,
                Err(thrown) => Err(crash::thrown_fault(
                    "the resize threw (a raw web-sys call that does not catch?)",
                    &thrown,
                )),
            }
        });
        drop(resources);
        if resized.is_ok() {
            stats.failed_resizes.set(0);
            return true;
        }
        let failed = stats.failed_resizes.get() + 1;
        if failed < RESIZE_TRIES {
            stats.failed_resizes.set(failed);
            return true;
        }
        stats.failed_resizes.set(0);
        this.session.faults().note(&format!(
            "the resize to {}x{} failed {failed} times in a row: rebuilding on a new device",
            this.canvas.width(),
            this.canvas.height()
        ));
        this.timings.triggered_now();
        Inner::dispatch(this, Event::RequestRecovery);
        false
    }
}
