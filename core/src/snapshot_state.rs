//! The bookkeeping of a GPU snapshot, apart from the browser: which capture is
//! due, which read is the current one, and which answer becomes the snapshot.
//! The browser layer's `GpuSnapshot` holds one and does the GPU work.
//!
//! A read carries its number and the generation of its device. Only the read
//! started last on the newest device may become the snapshot: a read from a
//! device torn down meanwhile (Gecko never destroys it, and its read may be
//! answered late, or never) is discarded, and never keeps a capture on the new
//! device waiting.

use crate::texel_rows::TexelRows;

/// The bytes of one snapshot, the frame and the device generation they are from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The frame after whose submit the bytes were copied.
    pub frame: u64,
    /// The generation of the device they were read from.
    pub generation: u64,
    /// The bytes: a buffer's, or a texture's rows, tight.
    pub bytes: Vec<u8>,
    /// The shape of a texture's rows; `None` for a buffer's bytes.
    pub rows: Option<TexelRows>,
}

/// A read started by [`SnapshotState::begin`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Read {
    number: u64,
    frame: u64,
    generation: u64,
    rows: Option<TexelRows>,
}

/// What a snapshot knows between frames.
#[derive(Debug, Default)]
pub struct SnapshotState {
    latest: Option<Snapshot>,
    /// The read in flight on the newest device, if one is: its number.
    reading: Option<u64>,
    /// Reads started so far (the last one's number).
    reads: u64,
    /// The newest device generation seen.
    generation: u64,
    /// The frame of the last capture started.
    last_capture: Option<u64>,
    taken: u64,
    interrupted: u64,
}

impl SnapshotState {
    /// Device `generation` is in use: a newer one than seen so far makes the
    /// read in flight on the older one stale.
    fn see(&mut self, generation: u64) {
        if generation > self.generation {
            self.generation = generation;
            self.reading = None;
        }
    }

    /// Whether a capture may start on device `generation` now: no read of
    /// that device is in flight.
    pub fn free(&mut self, generation: u64) -> bool {
        self.see(generation);
        self.reading.is_none()
    }

    /// Whether a capture is due at `frame` on device `generation`, one every
    /// `every_frames` frames.
    pub fn due(&mut self, generation: u64, frame: u64, every_frames: u64) -> bool {
        self.free(generation)
            && self
                .last_capture
                .is_none_or(|last| frame >= last + every_frames.max(1))
    }

    /// A read of `frame`'s state (a texture's `rows`, or a buffer's bytes)
    /// starts on device `generation`.
    pub fn begin(&mut self, generation: u64, frame: u64, rows: Option<TexelRows>) -> Read {
        self.see(generation);
        self.reads += 1;
        self.reading = Some(self.reads);
        self.last_capture = Some(frame);
        Read {
            number: self.reads,
            frame,
            generation,
            rows,
        }
    }

    /// `read` ended with `bytes` (`None`: it failed, or the GPU refused the
    /// copy). They become the snapshot only if `read` is the current read of
    /// the newest device; otherwise they are discarded and counted as
    /// interrupted. Returns whether they became the snapshot.
    pub fn finish(&mut self, read: Read, bytes: Option<Vec<u8>>) -> bool {
        let current = self.reading == Some(read.number);
        if current {
            self.reading = None;
        }
        match bytes {
            Some(bytes) if current && read.generation >= self.generation => {
                self.latest = Some(Snapshot {
                    frame: read.frame,
                    generation: read.generation,
                    bytes,
                    rows: read.rows,
                });
                self.taken += 1;
                true
            }
            _ => {
                self.interrupted += 1;
                false
            }
        }
    }

    /// The snapshot a new device `generation` starts from: from now on a read
    /// of an older device is stale.
    pub fn restore(&mut self, generation: u64) -> Option<Snapshot> {
        self.see(generation);
        self.latest.clone()
    }

    /// The last snapshot that arrived whole.
    pub fn latest(&self) -> Option<&Snapshot> {
        self.latest.as_ref()
    }

    /// Snapshots taken whole.
    pub fn taken(&self) -> u64 {
        self.taken
    }

    /// Reads that did not become a snapshot.
    pub fn interrupted(&self) -> u64 {
        self.interrupted
    }

    /// Whether a read of the newest device is in flight.
    pub fn reading(&self) -> bool {
        self.reading.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_of_a_torn_down_device_answered_late_is_discarded() {
        let mut s = SnapshotState::default();
        let first = s.begin(1, 30, None);
        assert!(s.finish(first, Some(vec![1])));
        // A read in flight on device 1 when it is torn down.
        let late = s.begin(1, 60, None);
        // Device 2 is built from the snapshot of frame 30.
        assert_eq!(s.restore(2).map(|s| s.frame), Some(30));
        // Device 1's read answers now: discarded, the snapshot stays.
        assert!(!s.finish(late, Some(vec![2])));
        assert_eq!(s.latest().map(|s| (s.frame, s.generation)), Some((30, 1)));
        assert_eq!((s.taken(), s.interrupted()), (1, 1));
    }

    #[test]
    fn a_read_that_never_settles_does_not_block_the_new_device() {
        let mut s = SnapshotState::default();
        let _never = s.begin(1, 30, None);
        assert!(!s.due(1, 90, 30), "device 1's own read is in flight");
        // On device 2 a capture is due at once, without a restore.
        assert!(s.due(2, 90, 30));
        let read = s.begin(2, 90, None);
        assert!(s.finish(read, Some(vec![3])));
        assert_eq!(s.latest().map(|s| (s.frame, s.generation)), Some((90, 2)));
    }

    #[test]
    fn captures_are_spaced_and_failures_counted() {
        let mut s = SnapshotState::default();
        assert!(s.due(1, 0, 30));
        let read = s.begin(1, 0, None);
        assert!(!s.due(1, 40, 30), "in flight");
        assert!(!s.finish(read, None));
        assert!(!s.due(1, 29, 30));
        assert!(s.due(1, 30, 30));
        assert_eq!(s.interrupted(), 1);
    }
}
