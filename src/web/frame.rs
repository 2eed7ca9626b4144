//! Frame scopes: one scope set spanning `queue.submit`, never awaited in the frame.

use crate::fault::Origin;
use crate::web::abandon::Registration;
use crate::web::device::GuardedDevice;
use crate::web::scope::{Filter, ScopeSet};

/// The scopes of one frame, spanning `queue.submit` (a command buffer is validated
/// when it is submitted). Popped when dropped, without awaiting: what they caught
/// reaches the fault sink a frame or two later, tagged with the frame number.
///
/// Not every frame is scoped: [`crate::frame_sampling::FrameSampling`] decides
/// (one in 32 by default, every frame after the fault sink caught an error, every frame at
/// the per-call level). An error in an unscoped frame reaches the fault sink, tagged with
/// the frame during which it arrived.
///
/// ```no_run
/// # fn demo(device: &webgpu_guard::web::GuardedDevice, commands: web_sys::GpuCommandBuffer)
/// #     -> Result<(), webgpu_guard::Fault> {
/// let scope = device.begin_frame(42);
/// device.submit(&[commands])?; // validated here, inside the scope
/// scope.end(); // pops without awaiting
/// # Ok(()) }
/// ```
#[must_use = "a frame scope pops when dropped: keep it until after queue.submit"]
#[derive(Debug)]
pub struct FrameScope {
    device: GuardedDevice,
    frame: u64,
    scopes: Option<ScopeSet>,
    /// Leaving the frame, left to the trampoline when a throw abandons this
    /// scope (its set registers its own pops).
    registration: Registration,
}

impl GuardedDevice {
    /// Makes `frame` the context's current frame and, if the sampling picks it,
    /// opens its scopes (every filter, in one call; never with
    /// [`crate::web::DiagnosticsLevel::Off`]).
    pub fn begin_frame(&self, frame: u64) -> FrameScope {
        let context = self.session();
        context.set_frame(frame);
        self.enter_frame();
        let scopes = context.frame_is_scoped(frame).then(|| {
            ScopeSet::push(self, &Filter::ALL).tagged(Origin {
                frame: Some(frame),
                ..Origin::default()
            })
        });
        let device = self.clone();
        let registration = Registration::new(Box::new(move || device.leave_frame()));
        FrameScope {
            device: self.clone(),
            frame,
            scopes,
            registration,
        }
    }
}

impl FrameScope {
    /// The frame number.
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Whether this frame has scopes (see [`crate::frame_sampling::FrameSampling`]).
    pub fn is_scoped(&self) -> bool {
        self.scopes.is_some()
    }

    /// Ends the frame: pops (after `queue.submit`) without awaiting.
    pub fn end(self) {}
}

impl Drop for FrameScope {
    fn drop(&mut self) {
        if let Some(scopes) = self.scopes.take() {
            scopes.end_reported(self.frame as f64, &self.device.frame_reporter());
        }
        if self.registration.release() {
            self.device.leave_frame();
        }
    }
}
