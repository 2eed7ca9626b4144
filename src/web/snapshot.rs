//! State that builds up on the GPU (a simulation stepped by a compute pass, an
//! accumulation buffer) and must survive a loss. The contract "`build`
//! recomputes GPU-only data" does not cover it: nothing on the CPU can
//! recompute it. A [`GpuSnapshot`] reads such a buffer, or a texture
//! ([`GpuSnapshot::capture_texture`]: the rows padded to 256 bytes in the copy,
//! kept tight, written back by [`GpuSnapshot::restore_texture`]), back every N
//! frames in a submit of its own and keeps the last bytes that arrived whole,
//! in the application's state (which a loss keeps); `build` starts the new
//! device's buffer or texture from them. [`GpuSnapshot::due`] tells a frame
//! that a capture is due, for one that must prepare its source first.
//!
//! A read that a loss interrupts ends in an `Err` (the readback contract of
//! [`GuardedDevice::read_buffer`](crate::web::GuardedDevice::read_buffer)) and
//! leaves the last snapshot as it was: a loss costs at most the frames since it,
//! and [`Snapshot::frame`] says which frame the state is from.
//!
//! ```no_run
//! use webgpu_guard::prelude::*;
//!
//! const SIZE: u64 = 1024;
//!
//! /// Kept across losses, the snapshot with it.
//! struct Simulation {
//!     snapshot: GpuSnapshot,
//! }
//!
//! struct Resources {
//!     state: Tracked<web_sys::GpuBuffer>,
//! }
//!
//! impl App for Simulation {
//!     type Resources = Resources;
//!
//!     async fn build(&self, gpu: &GpuContext) -> Result<Resources, Fault> {
//!         // The new device starts from the last snapshot, if any.
//!         let start = self
//!             .snapshot
//!             .restore(gpu)
//!             .map(|s| s.bytes)
//!             .unwrap_or_else(|| vec![0; SIZE as usize]);
//!         let usage = BufferUsages::STORAGE | BufferUsages::COPY_SRC;
//!         let state = gpu.device.create_buffer_init("state", usage, &start)?;
//!         Ok(Resources { state })
//!     }
//!
//!     fn frame(&self, gpu: &GpuContext, r: &Resources, info: &FrameInfo) -> Result<(), Fault> {
//!         // ... step the simulation and submit ...
//!         // After the frame's submit: every 30 frames, read the state back.
//!         self.snapshot.capture(gpu, info.number, &r.state, SIZE)?;
//!         Ok(())
//!     }
//! }
//!
//! let simulation = Simulation { snapshot: GpuSnapshot::new("state", 30) };
//! # let _ = simulation;
//! ```

use std::rc::Rc;

use wasm_bindgen::JsValue;
use web_sys::{
    GpuBuffer, GpuExtent3dDict, GpuTexelCopyBufferInfo, GpuTexelCopyBufferLayout,
    GpuTexelCopyTextureInfo, GpuTexture,
};

use crate::fault::{Fault, FaultKind};
use crate::held::Held;
use crate::usage::{BufferUsages, TextureUsages};
use crate::web::encoder::CommandEncoder;
use crate::web::init::GpuContext;
use crate::web::js::label_of;
use crate::web::scope::{Filter, ScopeSet};

pub use crate::texel_rows::TexelRows;

pub use crate::snapshot_state::Snapshot;
use crate::snapshot_state::SnapshotState;

/// Reads a buffer or a texture back every N frames and keeps the last whole
/// copy. Cheap to clone (clones share the snapshot).
#[derive(Clone, Debug)]
pub struct GpuSnapshot {
    label: String,
    every_frames: u64,
    state: Rc<Held<SnapshotState>>,
}

impl GpuSnapshot {
    /// A snapshot labelled `label` (its staging buffers too), taken every
    /// `every_frames` frames (at least 1).
    pub fn new(label: &str, every_frames: u64) -> Self {
        GpuSnapshot {
            label: label.to_string(),
            every_frames: every_frames.max(1),
            state: Rc::new(Held::default()),
        }
    }

    /// The last snapshot that arrived whole, for `build` to start the new
    /// device `gpu` from. From now on, a read still in flight on an older
    /// device is discarded when it completes: the new device goes on from what
    /// this returned, not from what a torn-down device answered late.
    pub fn restore(&self, gpu: &GpuContext) -> Option<Snapshot> {
        self.state.with(|s| s.restore(gpu.generation)).flatten()
    }

    /// The last snapshot that arrived whole, if any.
    pub fn latest(&self) -> Option<Snapshot> {
        self.state.with(|s| s.latest().cloned()).flatten()
    }

    /// Snapshots taken whole so far.
    pub fn taken(&self) -> u64 {
        self.state.with(|s| s.taken()).unwrap_or(0)
    }

    /// Captures that did not become a snapshot: a loss interrupted the read, or
    /// the GPU refused the copy.
    pub fn interrupted(&self) -> u64 {
        self.state.with(|s| s.interrupted()).unwrap_or(0)
    }

    /// Whether a read is in flight.
    pub fn reading(&self) -> bool {
        self.state.with(|s| s.reading()).unwrap_or(false)
    }

    /// Whether a capture is due at `frame` on `gpu`'s device: `every_frames`
    /// frames have passed since the last one and no read of this device is in
    /// flight. [`Self::capture`] asks the same itself; a frame that does extra
    /// work for a capture (a copy into the snapshot's source) asks first.
    pub fn due(&self, gpu: &GpuContext, frame: u64) -> bool {
        self.state
            .with(|s| s.due(gpu.generation, frame, self.every_frames))
            .unwrap_or(false)
    }

    /// Call after the frame's submit. When `every_frames` frames have passed
    /// since the last capture and no read is in flight, copies the first `size`
    /// bytes of `source` (a buffer with `COPY_SRC` usage) into a staging buffer
    /// in a submit of its own (so it sees the frame's work) and reads them back;
    /// they become [`Self::latest`] once they arrive whole. Returns whether a
    /// capture started. The staging buffer is labelled and counted while the
    /// read is in flight, then destroyed.
    #[track_caller]
    pub fn capture(
        &self,
        gpu: &GpuContext,
        frame: u64,
        source: &GpuBuffer,
        size: u64,
    ) -> Result<bool, Fault> {
        if !self.due(gpu, frame) {
            return Ok(false);
        }
        self.capture_now(gpu, frame, source, size)
    }

    /// As [`Self::capture`], now, whatever the count (an application about to
    /// pause, or that must not lose the frames since the last one); still not
    /// while a read is in flight.
    #[track_caller]
    pub fn capture_now(
        &self,
        gpu: &GpuContext,
        frame: u64,
        source: &GpuBuffer,
        size: u64,
    ) -> Result<bool, Fault> {
        let (usage, bytes) = (
            number(source, "usage") as u32,
            number(source, "size") as u64,
        );
        let usage = BufferUsages::from_bits(usage);
        if bytes < size || !usage.contains(BufferUsages::COPY_SRC) {
            return Err(self.refused(
                source,
                &format!(
                    "the buffer \"{}\" must have COPY_SRC usage and {size} bytes at least (it has {usage:?}, {bytes} bytes)",
                    label_of(source)
                ),
            ));
        }
        self.read_back(gpu, frame, size, None, |encoder, staging| {
            encoder.copy_buffer_to_buffer(source, 0, staging, 0, size)
        })
    }

    /// As [`Self::capture`], of a texture: the `rows` of its first mip level
    /// (layer 0, from texel 0, 0), for state kept in a texture (a simulation
    /// in storage textures). The rows are copied padded to 256 bytes, as a
    /// copy into a buffer needs, and kept tight: [`Snapshot::rows`] says their
    /// shape, and [`Self::restore_texture`] writes them back.
    #[track_caller]
    pub fn capture_texture(
        &self,
        gpu: &GpuContext,
        frame: u64,
        texture: &GpuTexture,
        rows: TexelRows,
    ) -> Result<bool, Fault> {
        if !self.due(gpu, frame) {
            return Ok(false);
        }
        self.capture_texture_now(gpu, frame, texture, rows)
    }

    /// As [`Self::capture_texture`], now, whatever the count; still not while
    /// a read is in flight.
    #[track_caller]
    pub fn capture_texture_now(
        &self,
        gpu: &GpuContext,
        frame: u64,
        texture: &GpuTexture,
        rows: TexelRows,
    ) -> Result<bool, Fault> {
        let usage = TextureUsages::from_bits(number(texture, "usage") as u32);
        let (width, height) = (number(texture, "width"), number(texture, "height"));
        if !usage.contains(TextureUsages::COPY_SRC)
            || f64::from(rows.width) > width
            || f64::from(rows.height) > height
        {
            return Err(self.refused(
                texture,
                &format!(
                    "the texture \"{}\" must have COPY_SRC usage and {} x {} texels at least (it has {usage:?}, {width} x {height})",
                    label_of(texture),
                    rows.width,
                    rows.height
                ),
            ));
        }
        self.read_back(
            gpu,
            frame,
            rows.padded_len(),
            Some(rows),
            |encoder, staging| {
                let layout = GpuTexelCopyBufferInfo::new(staging);
                layout.set_bytes_per_row(rows.padded_row());
                layout.set_rows_per_image(rows.height);
                encoder.copy_texture_to_buffer(
                    &GpuTexelCopyTextureInfo::new(texture),
                    &layout,
                    &extent_of(rows),
                )
            },
        )
    }

    /// For `build` on a new device: the last snapshot of a texture, written
    /// into `texture` (its rows tight, as `writeTexture` takes them), and
    /// returned; `Ok(None)` when there is none yet (the texture keeps what
    /// `build` put there). From now on a read of an older device is discarded
    /// (see [`Self::restore`]). `Err` when the snapshot is a buffer's, or the
    /// write is refused.
    #[track_caller]
    pub fn restore_texture(
        &self,
        gpu: &GpuContext,
        texture: &GpuTexture,
    ) -> Result<Option<Snapshot>, Fault> {
        let Some(snapshot) = self.restore(gpu) else {
            return Ok(None);
        };
        let Some(rows) = snapshot.rows else {
            return Err(self.refused(texture, "the last snapshot is a buffer's, not a texture's"));
        };
        let layout = GpuTexelCopyBufferLayout::new();
        layout.set_bytes_per_row(rows.tight_row());
        layout.set_rows_per_image(rows.height);
        gpu.device.write_texture(
            &GpuTexelCopyTextureInfo::new(texture),
            &snapshot.bytes,
            &layout,
            &extent_of(rows),
        )?;
        Ok(Some(snapshot))
    }

    /// The fault of a capture or a restore this snapshot refused, on `object`.
    fn refused(&self, object: &JsValue, why: &str) -> Fault {
        Fault::new(
            FaultKind::Exception,
            format!("snapshot \"{}\": {why}", self.label),
        )
        .on_object(label_of(object))
    }

    /// Copies `size` bytes into a staging buffer with `copy`, in a submit and
    /// a validation scope of their own, and reads them back (stripping the
    /// padding of `rows`); they become the snapshot once they arrive whole.
    fn read_back(
        &self,
        gpu: &GpuContext,
        frame: u64,
        size: u64,
        rows: Option<TexelRows>,
        copy: impl FnOnce(&CommandEncoder, &GpuBuffer) -> Result<(), Fault>,
    ) -> Result<bool, Fault> {
        // Read, then set once the copy is submitted: nothing is lent while
        // the device's calls (and the fault sink they may report to) run.
        if self.state.with(|s| s.free(gpu.generation)) != Some(true) {
            return Ok(false);
        }
        let device = &gpu.device;
        let label = format!("{}-snapshot", self.label);
        let staging = device.create_buffer(
            &label,
            size,
            BufferUsages::MAP_READ | BufferUsages::COPY_DST,
        )?;
        // The copy in a validation scope of its own: a copy the GPU refused
        // leaves zeros in the staging buffer, never read as the state.
        let scope = ScopeSet::push(device, &[Filter::Validation]);
        let copied = (|| {
            let encoder = device.create_command_encoder(&label)?;
            copy(&encoder, &staging)?;
            device.submit(&[encoder.finish()?])
        })();
        let checked = scope.close();
        copied?;
        let Some(started) = self.state.with(|s| s.begin(gpu.generation, frame, rows)) else {
            return Ok(false);
        };
        let read = device.read_buffer(&staging, 0, size);
        let shared = Rc::downgrade(&self.state);
        wasm_bindgen_futures::spawn_local(async move {
            let clean = checked.wait().await.is_clean();
            let outcome = read.await;
            // Destroyed and uncounted once read (or once the read failed).
            drop(staging);
            let Some(shared) = shared.upgrade() else {
                return;
            };
            let bytes = outcome.ok().filter(|_| clean).and_then(|bytes| match rows {
                Some(rows) => rows.strip(&bytes),
                None => Some(bytes),
            });
            // A read of a device torn down meanwhile is discarded (see
            // `SnapshotState`): `build` may have started from the last one.
            shared.with(|state| {
                state.finish(started, bytes);
            });
        });
        Ok(true)
    }
}

/// The copy size of `rows`: their width and height, one layer.
fn extent_of(rows: TexelRows) -> GpuExtent3dDict {
    let extent = GpuExtent3dDict::new(rows.width);
    extent.set_height(rows.height);
    extent
}

/// The number property `key` of `object`, read without trusting its type (its
/// own getters throw on a value of another shape): 0 when absent.
fn number(object: &JsValue, key: &str) -> f64 {
    js_sys::Reflect::get(object, &key.into())
        .ok()
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0)
}
