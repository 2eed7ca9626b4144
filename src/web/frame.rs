//! Frame scopes: one scope set spanning `queue.submit`, never awaited in the frame.

use crate::fault::Origin;
use crate::web::context::DiagnosticsLevel;
use crate::web::device::GuardedDevice;
use crate::web::scope::{Filter, ScopeSet};

/// The scopes of one frame, spanning `queue.submit` (a command buffer is validated
/// when it is submitted). Popped when dropped, without awaiting: what they caught
/// reaches the fault sink a frame or two later, tagged with the frame number.
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
}

impl GuardedDevice {
    /// Opens the scopes of frame `frame` (every filter, in one call; none with
    /// [`DiagnosticsLevel::Off`]) and makes `frame` the context's current frame.
    pub fn begin_frame(&self, frame: u64) -> FrameScope {
        self.context().set_frame(frame);
        self.enter_frame();
        let scopes = (self.level() != DiagnosticsLevel::Off).then(|| {
            ScopeSet::push(self, &Filter::ALL).tagged(Origin {
                frame: Some(frame),
                ..Origin::default()
            })
        });
        FrameScope {
            device: self.clone(),
            frame,
            scopes,
        }
    }
}

impl FrameScope {
    /// The frame number.
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Ends the frame: pops (after `queue.submit`) without awaiting.
    pub fn end(self) {}
}

impl Drop for FrameScope {
    fn drop(&mut self) {
        if let Some(scopes) = self.scopes.take() {
            scopes.end_reported(self.frame as f64, &self.device.frame_reporter());
        }
        self.device.leave_frame();
    }
}
