//! What an application writes: an [`App`], and the [`Frame`] it draws into.

use std::future::Future;

use crate::gpu::Gpu;
use crate::Fault;

/// The application a runtime drives. State that must survive a loss (camera,
/// scene, time, a simulation's last read-back copy) lives in `Self`; every GPU
/// object lives in [`App::Resources`], made by [`App::build`] on each new
/// device. After a loss the runtime drops the resources, makes a new adapter
/// and device, and calls `build` again: what `build` makes from `Self` is what
/// the next frame draws, so the picture after a loss is the picture before.
pub trait App: 'static {
    /// Every GPU object the application needs; dropped (and so released) on loss.
    type Resources: 'static;

    /// Builds the resources on a fresh device. Called on start and after each loss.
    ///
    /// An `Err` is reported once by the runtime (the console line, telemetry,
    /// `gpuStatus()`). A fault that can pass on a fresh device (out of memory,
    /// an internal error, the device lost meanwhile) is retried with backoff,
    /// up to the cap; any other (a validation error: a bug, which would fail
    /// the same way every time) ends in the `init-failed` fallback. Wrap the
    /// creations in [`Gpu::phase`] to turn wgpu's errors into such an `Err`.
    fn build(&self, gpu: &Gpu) -> impl Future<Output = Result<Self::Resources, Fault>>;

    /// Records and submits one frame into `frame.view` (the runtime acquires
    /// the surface texture before and presents it after). Sampled frames run
    /// inside error scopes that span your `submit`: a GPU error the frame
    /// causes is reported with the frame's number, never returned here. An
    /// `Err` is reported once and the loop goes on.
    ///
    /// Frames stop as soon as the runtime sees a loss: at once for one it
    /// injects or is asked for; for a real one when the platform says so (the
    /// browser's `lost` promise, wgpu's lost callback at the loop's next
    /// poll), so a frame may still run on a device already lost, where wgpu
    /// does nothing useful (and natively reports errors, counted like any).
    fn frame(&self, gpu: &Gpu, resources: &mut Self::Resources, frame: &Frame)
        -> Result<(), Fault>;

    /// The drawing buffer changed size (`frame.width`/`height` already say
    /// so): rebuild what depends on it (a depth texture). The surface is
    /// reconfigured by the runtime.
    fn resize(
        &self,
        gpu: &Gpu,
        resources: &mut Self::Resources,
        width: u32,
        height: u32,
    ) -> Result<(), Fault> {
        let _ = (gpu, resources, width, height);
        Ok(())
    }
}

/// One frame: the view of the surface texture to draw into, and when.
#[derive(Debug)]
pub struct Frame {
    /// The surface texture's view.
    pub view: wgpu::TextureView,
    /// The surface's format (as configured).
    pub format: wgpu::TextureFormat,
    /// Frames drawn on this runtime before this one (across devices).
    pub number: u64,
    /// The frame's time, in milliseconds (the page's clock).
    pub time_ms: f64,
    /// The drawing buffer's width.
    pub width: u32,
    /// The drawing buffer's height.
    pub height: u32,
}
