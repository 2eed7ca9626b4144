//! The desktop's [`Runtime`]: an [`App`] in a winit window (or headless,
//! drawing offscreen), through wgpu's native backends (Vulkan, Metal, DX12).
//!
//! The same `App` runs in the browser and here. A loss is found by wgpu's
//! device-lost callback, during the poll the loop makes at every turn, and by
//! the surface; the device is made again with backoff, `build` runs again,
//! and the picture after is the picture before. A panic in `build`, `frame`
//! or `resize` unwinds to the runtime: reported once, it ends in the
//! `crashed` fallback (the window's title says why), never in a half-built
//! state that draws again.

mod faults;
mod host;
mod http_sink;
pub(crate) mod panics;
mod scheduler;
mod window;

use std::rc::Rc;
use std::time::{Duration, Instant};

use webgpu_guard_core::supervisor::RecoveryAnswer;
use webgpu_guard_core::texel_rows::TexelRows;

use crate::app::App;
use crate::driver::Driver;
use crate::gpu::Gpu;
use crate::runtime::{RuntimeOptions, Status};
use host::NativeHost;

pub use faults::{FaultSink, LineWriter, INBOX_LIVE};
pub use http_sink::HttpSink;
pub use window::WindowOptions;
/// The winit this runtime's windows are made with (for [`WindowOptions::attributes`]).
pub use winit;

/// How often a headless runtime draws, at most, unless told otherwise (60
/// frames a second).
const HEADLESS_FRAME: Duration = Duration::from_micros(16_667);

/// Runs an [`App`] on a desktop GPU: brings a device up, draws frames, and
/// after a loss makes a new adapter and device and builds again. Cheap to
/// clone (a handle); everything stops when the last clone is dropped.
pub struct Runtime<A: App> {
    driver: Rc<Driver<A, NativeHost>>,
    /// Headless: the least time between two frames.
    frame_interval: Rc<std::cell::Cell<Duration>>,
    _last_handle: Rc<LastHandle<A>>,
}

impl<A: App> Clone for Runtime<A> {
    fn clone(&self) -> Self {
        Runtime {
            driver: self.driver.clone(),
            frame_interval: self.frame_interval.clone(),
            _last_handle: self._last_handle.clone(),
        }
    }
}

/// Shared by every handle: the last one's drop stops the runtime and
/// empties its loop (the tasks under way hold the driver, and would keep it,
/// its device and its sinks alive for good).
struct LastHandle<A: App> {
    driver: std::rc::Weak<Driver<A, NativeHost>>,
}

impl<A: App> Drop for LastHandle<A> {
    fn drop(&mut self) {
        if let Some(driver) = self.driver.upgrade() {
            driver.stop();
            driver.host.scheduler.clear();
        }
    }
}

impl<A: App> std::fmt::Debug for Runtime<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("state", &self.driver.state())
            .finish_non_exhaustive()
    }
}

/// A picture read back from a headless runtime: RGBA, 8 bits a channel
/// (sRGB), rows top to bottom, no padding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 4` bytes.
    pub rgba: Vec<u8>,
}

impl Image {
    /// How many pixels differ from `other` (all of them when the sizes differ).
    pub fn differing_pixels(&self, other: &Image) -> usize {
        if (self.width, self.height) != (other.width, other.height) {
            return (self.width * self.height).max(other.width * other.height) as usize;
        }
        self.rgba
            .chunks_exact(4)
            .zip(other.rgba.chunks_exact(4))
            .filter(|(a, b)| a != b)
            .count()
    }
}

impl<A: App> Runtime<A> {
    fn with_host(app: A, host: NativeHost, options: RuntimeOptions) -> Self {
        let driver = Driver::new(Rc::new(app), host, options.driver_options());
        Runtime {
            _last_handle: Rc::new(LastHandle {
                driver: Rc::downgrade(&driver),
            }),
            driver,
            frame_interval: Rc::new(std::cell::Cell::new(HEADLESS_FRAME)),
        }
    }

    /// A runtime for `app` with no window: frames are drawn into an offscreen
    /// texture of `width` x `height`, `Rgba8UnormSrgb` (what `Gpu::format`
    /// and `Frame::format` say; [`Runtime::capture`] reads it back), and
    /// the loop turns when [`Runtime::run_until`] runs it. For tests, servers
    /// and tools. Nothing happens until [`Runtime::start`].
    pub fn headless(app: A, width: u32, height: u32, options: RuntimeOptions) -> Self {
        Self::with_host(app, NativeHost::new((width, height), false), options)
    }

    /// A runtime for `app` in a window, shown by [`Runtime::run`].
    pub fn windowed(app: A, options: RuntimeOptions) -> Self {
        Self::with_host(app, NativeHost::new((1, 1), true), options)
    }

    /// Starts (or starts again after `stop()` or a fallback). After a panic
    /// in application code nothing starts again: the `crashed` fallback stays.
    /// A windowed runtime starts when its window is made ([`Runtime::run`]):
    /// before, this does nothing.
    pub fn start(&self) {
        let host = &self.driver.host;
        if host.windowed && host.window.borrow().is_none() {
            return;
        }
        self.driver.start();
    }

    /// Stops on purpose: releases every GPU object and the device, no restart.
    pub fn stop(&self) {
        self.driver.stop();
    }

    /// The full recovery path, as a real loss would take it (the browser's
    /// `matarGPU()`): the resources released, the device let go, a new
    /// adapter and device built. Returns what it does.
    pub fn force_recovery(&self) -> RecoveryAnswer {
        let answer = self.driver.force_recovery();
        self.faults()
            .note(&format!("force_recovery(): {}", answer.message()));
        answer
    }

    /// Fault injection: destroys the running device with `Device::destroy()`,
    /// marked as injected, so that its loss arrives as a real one does
    /// (through wgpu's callback, during a poll) and is recovered from, where
    /// the application's own `destroy()` is not. `false` when no device runs
    /// or it is in use (called from inside a frame).
    pub fn inject_loss(&self) -> bool {
        let host = &self.driver.host;
        let marked = self
            .driver
            .with_live(|gpu, _| {
                let marked = host.mark_injected(&gpu.device);
                if marked {
                    gpu.device.destroy();
                }
                marked
            })
            .unwrap_or(false);
        if marked {
            self.faults()
                .note("inject_loss(): the device is destroyed, as a lost one");
            // Seen now, not at the next turn: no frame is drawn on it.
            host.scheduler.poll_now();
        }
        marked
    }

    /// The application.
    pub fn app(&self) -> &Rc<A> {
        &self.driver.app
    }

    /// The fault sink: every fault, note and warning goes there (standard
    /// error, the counters, the telemetry sink: `faults().set_sink(...)`).
    pub fn faults(&self) -> &FaultSink {
        &self.driver.host.outlet.faults
    }

    /// Lends the running device's [`Gpu`] and the resources to `f`; `None`
    /// when no device runs or they are in use (called from inside a frame).
    pub fn with_live<R>(&self, f: impl FnOnce(&Gpu, &mut A::Resources) -> R) -> Option<R> {
        self.driver.with_live(f)
    }

    /// Where the runtime stands.
    pub fn status(&self) -> Status {
        self.driver.status(&self.faults().stats())
    }

    /// Headless: the loop, turned until `done` holds (`true`) or `timeout`
    /// passes (`false`). Frames come at most 60 a second (see
    /// [`Runtime::set_frame_interval`]); between turns the
    /// thread sleeps until the next timer, frame or poll.
    pub fn run_until(&self, mut done: impl FnMut(&Self) -> bool, timeout: Duration) -> bool {
        let scheduler = self.driver.host.scheduler.clone();
        let deadline = Instant::now() + timeout;
        let mut next_frame = Instant::now();
        loop {
            scheduler.turn();
            if done(self) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            if scheduler.frame_wanted() && now >= next_frame {
                next_frame = now + self.frame_interval.get();
                scheduler.fire_frames();
                continue;
            }
            let mut wake = deadline.min(now + Duration::from_millis(5));
            if scheduler.frame_wanted() {
                wake = wake.min(next_frame);
            }
            if let Some(timer) = scheduler.next_timer() {
                wake = wake.min(timer);
            }
            if scheduler.tasks_waiting() {
                wake = wake.min(now + Duration::from_millis(1));
            }
            std::thread::sleep(wake.saturating_duration_since(now));
        }
    }

    /// Headless: the least time between two frames (1/60 s unless set; zero:
    /// a frame at every turn of the loop, for offline rendering and benches).
    pub fn set_frame_interval(&self, interval: Duration) {
        self.frame_interval.set(interval);
    }

    /// Headless: the drawing size becomes `width` x `height` (the next frame
    /// resizes the offscreen target and calls `resize`).
    pub fn set_size(&self, width: u32, height: u32) {
        self.driver
            .host
            .headless_size
            .set((width.max(1), height.max(1)));
    }

    /// Headless: the last frame's picture, read back (waiting for the GPU);
    /// `None` when no device runs or the runtime has a window.
    pub fn capture(&self) -> Option<Image> {
        let (gpu, texture) = self.driver.offscreen()?;
        read_back(&self.driver.host, &gpu, &texture)
    }
}

/// `texture` (RGBA8) copied to a buffer, mapped and unpadded (the core's
/// `TexelRows`, as the texture snapshot's).
/// The submit and the wait run the application's callbacks that completed
/// meanwhile: under the host's guard, as every poll the runtime makes.
fn read_back(host: &NativeHost, gpu: &Gpu, texture: &wgpu::Texture) -> Option<Image> {
    let (width, height) = (texture.width(), texture.height());
    let rows = TexelRows::new(width, height, 4).ok()?;
    let buffer = gpu.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("capture"),
        size: rows.padded_len(),
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    encoder.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &buffer,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(rows.padded_row()),
                rows_per_image: Some(height),
            },
        },
        texture.size(),
    );
    host.running_callbacks(|| gpu.queue.submit([encoder.finish()]))?;
    let answer = std::sync::Arc::new(std::sync::Mutex::new(None));
    let written = answer.clone();
    buffer
        .slice(..)
        .map_async(wgpu::MapMode::Read, move |result| {
            if let Ok(mut slot) = written.lock() {
                *slot = Some(result.is_ok());
            }
        });
    host.running_callbacks(|| gpu.device.poll(wgpu::PollType::wait_indefinitely()))?
        .ok()?;
    if answer.lock().ok().and_then(|a| *a) != Some(true) {
        return None;
    }
    let data = buffer.slice(..).get_mapped_range().ok()?;
    let rgba = rows.strip(&data);
    drop(data);
    buffer.unmap();
    let rgba = rgba?;
    Some(Image {
        width,
        height,
        rgba,
    })
}
