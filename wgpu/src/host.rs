//! The seam between the platform-neutral driver and a platform: what the
//! browser (`web`) provides today, and a native window will provide through
//! the same trait. Everything here is asked for by the driver; a platform
//! never reaches into the driver's state, it only calls back the closures it
//! is handed.

use std::any::Any;
use std::future::Future;
use std::rc::Rc;

use webgpu_guard_core::fault::Fault;
use webgpu_guard_core::supervisor::{Fallback, LossReason};

use crate::gpu::Outlet;

/// A handle whose drop cancels what it stands for (a timer, a frame request,
/// a loss watch, a listener).
pub(crate) type Handle = Box<dyn Any>;

/// What a platform provides to the driver.
pub(crate) trait Host: 'static {
    /// Whether the platform has a GPU API at all (the browser's
    /// `navigator.gpu`): without it no adapter is "no WebGPU", not "no adapter".
    fn has_gpu_api(&self) -> bool;
    /// The adapter `device` came from, in words (for the status, the notes
    /// and telemetry).
    fn adapter_name(&self, adapter: &wgpu::Adapter, device: &wgpu::Device) -> String;
    /// The descriptor wgpu's instance is made with (its backends).
    fn instance_descriptor(&self) -> wgpu::InstanceDescriptor;
    /// A surface target for the drawing area, for a new surface; `None`
    /// where there is no window (headless): frames are drawn into an
    /// offscreen texture instead.
    fn surface_target(&self) -> Option<wgpu::SurfaceTarget<'static>>;
    /// The drawing area's size in pixels now (at least 1x1), each side at
    /// most `max_side` (the device's largest texture) where the platform can
    /// keep its shape doing so (the driver cuts what is left over).
    fn drawing_size(&self, max_side: u32) -> (u32, u32);
    /// Calls `on_frame(time_ms)` at the platform's next frame.
    fn request_frame(&self, on_frame: Box<dyn FnOnce(f64)>) -> Handle;
    /// Calls `fire` after `delay_ms`.
    fn timer(&self, delay_ms: u32, fire: Box<dyn FnOnce()>) -> Handle;
    /// Calls `on_change(hidden)` when the drawing area is hidden or shown.
    fn watch_visibility(&self, on_change: Box<dyn Fn(bool)>) -> Handle;
    /// Whether the drawing area is hidden now.
    fn hidden(&self) -> bool;
    /// Now, in milliseconds (monotonic).
    fn now_ms(&self) -> f64;
    /// Where faults and notes go, and the executor.
    fn outlet(&self) -> Rc<dyn Outlet>;
    /// Calls `on_lost` once when `device` is lost, unless the handle is
    /// dropped first (a device the runtime lets go is no news).
    fn watch_loss(
        &self,
        device: &wgpu::Device,
        on_lost: Box<dyn FnOnce(LossReason, String)>,
    ) -> Handle;
    /// Listens for `device`'s uncaptured errors (rate-limited, classified,
    /// sent to telemetry) until the handle is dropped.
    fn listen(&self, device: &wgpu::Device) -> Handle;
    /// Lets `device` go: destroyed where the platform allows it.
    fn let_go(&self, device: &wgpu::Device);
    /// The text a person is shown for `fallback` on this platform.
    fn fallback_message(&self, fallback: &Fallback) -> String;
    /// Shows `fallback` in place of the drawing area.
    fn show_fallback(&self, fallback: &Fallback);
    /// Removes a fallback shown before.
    fn hide_fallback(&self);
    /// Runs application code `f`: `Err` with what it threw or how it
    /// panicked (then [`Host::crashed`] may say so).
    fn call_app(&self, what: &str, f: &mut dyn FnMut()) -> Result<(), Fault>;
    /// Polls the application's `future` in the same way.
    fn guard_future<'a, T: 'a>(
        &self,
        what: &'static str,
        future: impl Future<Output = T> + 'a,
    ) -> impl Future<Output = Result<T, Fault>> + 'a;
    /// Whether application code panicked (or the program trapped): no code
    /// of the application's runs after it.
    fn crashed(&self) -> Option<String>;
    /// Calls `on_crash` when application code crashed where no call of the
    /// driver's ran it (a callback wgpu made during a poll of the
    /// platform's): the driver handles it as after its own calls.
    fn on_crash_elsewhere(&self, on_crash: Box<dyn Fn()>);
    /// Whether the runtime's own state is whole after a crash (a panic that
    /// unwound to the guard), so that the device can be let go; in the
    /// browser a trap can leave any borrow held, and nothing more is done.
    fn state_survives_a_crash(&self) -> bool;
    /// Runs `future` to completion on the platform's executor.
    fn spawn(&self, future: impl Future<Output = ()> + 'static);
}
