//! [`GpuSnapshot`]: state that builds up on the GPU (a simulation stepped
//! every frame, a picture painted stroke by stroke) cannot be recomputed by
//! `build` after a loss. A snapshot reads a buffer, or a texture's rows, back
//! every N frames; `build` on the next device starts from the last whole
//! copy. The bookkeeping (which read is current, which answer
//! becomes the snapshot, a read from a lost device discarded) is the core's
//! `SnapshotState`, as in webgpu-guard.

use std::sync::{Arc, Mutex};

use webgpu_guard_core::snapshot_state::{Read, SnapshotState};
/// The shape of a texture snapshot's rows ([`Snapshot::rows`]): tight and
/// padded row lengths, and the padding put in or taken out.
pub use webgpu_guard_core::texel_rows::TexelRows;

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
        f(&mut lock(&self.state))
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
        self.read_back(gpu, frame, size, None, |encoder, staging| {
            encoder.copy_buffer_to_buffer(buffer, 0, staging, 0, size);
        });
        true
    }

    /// As [`Self::capture`], of a 2D texture's first mip level and layer (it
    /// needs `COPY_SRC`, one sample, and a format whose blocks are one texel:
    /// not block-compressed, not depth or stencil). Its rows are copied padded to
    /// 256 bytes, as a copy into a buffer needs, and kept tight in the
    /// snapshot ([`Snapshot::rows`] says their shape). Returns whether a
    /// capture started (never for a format it cannot copy).
    pub fn capture_texture(&self, gpu: &Gpu, texture: &wgpu::Texture, frame: &Frame) -> bool {
        let Some(rows) = rows_of(texture) else {
            return false;
        };
        if !self.due(gpu, frame) {
            return false;
        }
        let size = rows.padded_len();
        self.read_back(gpu, frame, size, Some(rows), |encoder, staging| {
            encoder.copy_texture_to_buffer(
                texture.as_image_copy(),
                wgpu::TexelCopyBufferInfo {
                    buffer: staging,
                    layout: wgpu::TexelCopyBufferLayout {
                        offset: 0,
                        bytes_per_row: Some(rows.padded_row()),
                        rows_per_image: Some(rows.height),
                    },
                },
                extent_of(rows),
            );
        });
        true
    }

    /// Writes the last whole texture copy into `texture` on `gpu`'s new
    /// device (in `build`: the same size and format it was taken from);
    /// whether there was one of that shape to write. A texture made anew is
    /// clear: without a snapshot, what the frames drew into it starts over.
    pub fn restore_texture(&self, gpu: &Gpu, texture: &wgpu::Texture) -> bool {
        let (Some(snapshot), Some(shape)) = (self.restore(gpu), rows_of(texture)) else {
            return false;
        };
        if snapshot.rows != Some(shape) || snapshot.bytes.len() as u64 != shape.tight_len() {
            return false;
        }
        gpu.queue.write_texture(
            texture.as_image_copy(),
            &snapshot.bytes,
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(shape.tight_row()),
                rows_per_image: Some(shape.height),
            },
            extent_of(shape),
        );
        true
    }

    /// Copies into a new staging buffer of `size` bytes with `copy`, submits,
    /// maps it, and hands the bytes (rows made tight) to the bookkeeping.
    fn read_back(
        &self,
        gpu: &Gpu,
        frame: &Frame,
        size: u64,
        rows: Option<TexelRows>,
        copy: impl FnOnce(&mut wgpu::CommandEncoder, &wgpu::Buffer),
    ) {
        let staging = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(&self.label),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        // The copy in scopes of its own: a copy the GPU refused leaves zeros
        // in the staging buffer, never kept as the state.
        let scope = gpu.scopes().open(&gpu.device, &self.label);
        let mut encoder = gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some(&self.label),
            });
        copy(&mut encoder, &staging);
        gpu.queue.submit([encoder.finish()]);
        let checked = gpu.scopes().close(scope);
        let read = self.with(|s| s.begin(gpu.generation, frame.number, rows));
        // The bytes become the snapshot once both the map and the scopes
        // answered, in whichever order.
        let answers = Arc::new(Mutex::new(Answers {
            read,
            clean: None,
            bytes: None,
        }));
        let state = self.state.clone();
        let verdict = (answers.clone(), state.clone());
        gpu.check_later(checked, move |clean| {
            let (answers, state) = verdict;
            let mut answers = lock(&answers);
            answers.clean = Some(clean);
            answers.finish_into(&state);
        });
        let mapped = staging.clone();
        staging
            .slice(..)
            .map_async(wgpu::MapMode::Read, move |result| {
                // `destroy`, not `unmap`: an `unmap` of a buffer whose device
                // was destroyed meanwhile (a loss between the copy and this
                // answer) is a validation error of its own, and `destroy`
                // never is. In the browser a dropped buffer stays mapped
                // until it is collected: the staging memory goes now.
                let bytes = result.ok().and_then(|()| {
                    mapped
                        .slice(..)
                        .get_mapped_range()
                        .ok()
                        .map(|view| view.to_vec())
                });
                mapped.destroy();
                let bytes = match rows {
                    Some(rows) => bytes.and_then(|padded| rows.strip(&padded)),
                    None => bytes,
                };
                let mut answers = lock(&answers);
                answers.bytes = Some(bytes);
                answers.finish_into(&state);
            });
    }
}

/// One read's two answers: the scopes' around its copy, and the map's.
struct Answers {
    /// The read, as the bookkeeping began it.
    read: Read,
    /// Whether the copy's scopes caught nothing, once they answered.
    clean: Option<bool>,
    /// What the map read, once it answered.
    bytes: Option<Option<Vec<u8>>>,
}

impl Answers {
    /// Once both answered: the bytes become the snapshot if the copy was
    /// clean (the read ends, whole or not, either way).
    fn finish_into(&mut self, state: &Mutex<SnapshotState>) {
        let Some(clean) = self.clean else {
            return;
        };
        if let Some(bytes) = self.bytes.take() {
            lock(state).finish(self.read, bytes.filter(|_| clean));
        }
    }
}

/// `mutex`'s value, even after a panic poisoned it.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(value) => value,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// The rows of `texture`'s first mip level and layer, where its format's
/// blocks are one texel of a known size.
fn rows_of(texture: &wgpu::Texture) -> Option<TexelRows> {
    let format = texture.format();
    if format.block_dimensions() != (1, 1)
        || format.is_depth_stencil_format()
        || texture.sample_count() != 1
        || texture.dimension() != wgpu::TextureDimension::D2
    {
        return None;
    }
    let bytes_per_texel = format.block_copy_size(None)?;
    TexelRows::new(texture.width(), texture.height(), bytes_per_texel).ok()
}

/// The extent of `rows`, one layer deep.
fn extent_of(rows: TexelRows) -> wgpu::Extent3d {
    wgpu::Extent3d {
        width: rows.width,
        height: rows.height,
        depth_or_array_layers: 1,
    }
}
