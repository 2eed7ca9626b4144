//! State that builds up on the GPU (a simulation stepped by a compute pass, an
//! accumulation buffer) and must survive a loss. The contract "`build`
//! recomputes GPU-only data" does not cover it: nothing on the CPU can
//! recompute it. A [`GpuSnapshot`] reads such a buffer back every N frames and
//! keeps the last bytes that arrived whole, in the application's state (which a
//! loss keeps); `build` starts the new device's buffer from them.
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

use web_sys::GpuBuffer;

use crate::fault::{Fault, FaultKind};
use crate::held::Held;
use crate::usage::BufferUsages;
use crate::web::init::GpuContext;
use crate::web::scope::{Filter, ScopeSet};

pub use crate::snapshot_state::Snapshot;
use crate::snapshot_state::SnapshotState;

/// Reads a buffer back every N frames and keeps the last whole copy. Cheap to
/// clone (clones share the snapshot).
#[derive(Clone, Debug)]
pub struct GpuSnapshot {
    label: String,
    every_frames: u64,
    state: Rc<Held<SnapshotState>>,
}

impl GpuSnapshot {
    /// A snapshot of a buffer labelled `label`, taken every `every_frames`
    /// frames (at least 1).
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
        let due = self
            .state
            .with(|s| s.due(gpu.generation, frame, self.every_frames))
            .unwrap_or(false);
        if !due {
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
        // Read, then set once the copy is submitted: nothing is lent while
        // the device's calls (and the fault sink they may report to) run.
        if self.state.with(|s| s.free(gpu.generation)) != Some(true) {
            return Ok(false);
        }
        let device = &gpu.device;
        // Read without trusting the value's type (its own getters throw on
        // a value of another shape): what is not a buffer fails the check.
        let number = |key: &str| {
            js_sys::Reflect::get(source, &key.into())
                .ok()
                .and_then(|v| v.as_f64())
                .unwrap_or(0.0)
        };
        let (source_usage, source_size) = (number("usage") as u32, number("size") as u64);
        let source_label = crate::web::js::label_of(source);
        let usage = BufferUsages::from_bits(source_usage);
        if source_size < size || !usage.contains(BufferUsages::COPY_SRC) {
            return Err(Fault::new(
                FaultKind::Exception,
                format!(
                    "snapshot \"{}\": the buffer \"{}\" must have COPY_SRC usage and {size} bytes at least (it has {usage:?}, {} bytes)",
                    self.label,
                    source_label, source_size
                ),
            )
            .on_object(source_label));
        }
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
            encoder.copy_buffer_to_buffer(source, 0, &staging, 0, size)?;
            device.submit(&[encoder.finish()?])
        })();
        let checked = scope.close();
        copied?;
        let Some(started) = self.state.with(|s| s.begin(gpu.generation, frame)) else {
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
            // A read of a device torn down meanwhile is discarded (see
            // `SnapshotState`): `build` may have started from the last one.
            shared.with(|state| {
                state.finish(started, outcome.ok().filter(|_| clean));
            });
        });
        Ok(true)
    }
}
