//! [`GpuSnapshot`]: state that builds up on the GPU (a simulation stepped
//! every frame) cannot be recomputed by `build` after a loss. A snapshot reads
//! a buffer back every N frames; `build` on the next device starts from the
//! last whole copy. The bookkeeping (which read is current, which answer
//! becomes the snapshot, a read from a lost device discarded) is the core's
//! `SnapshotState`, as in webgpu-guard.

use std::sync::{Arc, Mutex};

use webgpu_guard_core::snapshot_state::SnapshotState;

/// A copy read back: its bytes and the frame it was taken at.
pub use webgpu_guard_core::snapshot_state::Snapshot;

use crate::app::Frame;
use crate::gpu::Gpu;

/// A buffer's contents read back every `every_frames` frames; see the module.
#[derive(Clone, Debug)]
pub struct GpuSnapshot {
    label: String,
    every_frames: u64,
    state: Arc<Mutex<SnapshotState>>,
}

impl GpuSnapshot {
    /// A snapshot called `label` (its staging buffers' label), read every
    /// `every_frames` frames.
    pub fn new(label: &str, every_frames: u64) -> Self {
        GpuSnapshot {
            label: label.to_string(),
            every_frames,
            state: Arc::default(),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut SnapshotState) -> T) -> T {
        let mut state = match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut state)
    }

    /// The last whole copy, for `build` on `gpu`'s new device (a read still
    /// in flight on an older device will not become the snapshot).
    pub fn restore(&self, gpu: &Gpu) -> Option<Snapshot> {
        self.with(|s| s.restore(gpu.generation))
    }

    /// The last whole copy.
    pub fn latest(&self) -> Option<Snapshot> {
        self.with(|s| s.latest().cloned())
    }

    /// Copies taken whole so far.
    pub fn taken(&self) -> u64 {
        self.with(|s| s.taken())
    }

    /// Whether a capture is due at this frame (none in flight, and
    /// `every_frames` since the last).
    pub fn due(&self, gpu: &Gpu, frame: &Frame) -> bool {
        self.with(|s| s.due(gpu.generation, frame.number, self.every_frames))
    }

    /// Call after the frame's `submit`: when a capture is due, copies
    /// `buffer` (whole; it needs `COPY_SRC`) into a staging buffer, submits
    /// the copy and maps it; the bytes become the snapshot when the map
    /// completes, unless the device was replaced meanwhile. Returns whether a
    /// capture started.
    pub fn capture(&self, gpu: &Gpu, buffer: &wgpu::Buffer, frame: &Frame) -> bool {
        if !self.due(gpu, frame) {
            return false;
        }
        let size = buffer.size();
        let staging = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(&self.label),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some(&self.label),
            });
        encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size);
        gpu.queue.submit([encoder.finish()]);
        let read = self.with(|s| s.begin(gpu.generation, frame.number, None));
        let state = self.state.clone();
        let mapped = staging.clone();
        staging
            .slice(..)
            .map_async(wgpu::MapMode::Read, move |result| {
                let bytes = result.ok().and_then(|()| {
                    let bytes = mapped
                        .slice(..)
                        .get_mapped_range()
                        .ok()
                        .map(|view| view.to_vec());
                    mapped.unmap();
                    bytes
                });
                let mut state = match state.lock() {
                    Ok(state) => state,
                    Err(poisoned) => poisoned.into_inner(),
                };
                state.finish(read, bytes);
            });
        true
    }
}
