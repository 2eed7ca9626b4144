//! The allocator's ledger: live GPU objects and bytes, by kind and by label, with peaks.

use std::fmt;
use std::rc::Rc;

use crate::held::Held;

/// The kind of a GPU object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKind {
    /// `GPUBuffer`.
    Buffer,
    /// `GPUTexture`.
    Texture,
    /// `GPUSampler`.
    Sampler,
    /// `GPUBindGroup`.
    BindGroup,
    /// `GPUBindGroupLayout`.
    BindGroupLayout,
    /// `GPUPipelineLayout`.
    PipelineLayout,
    /// `GPURenderPipeline`.
    RenderPipeline,
    /// `GPUComputePipeline`.
    ComputePipeline,
    /// `GPUShaderModule`.
    ShaderModule,
    /// `GPUQuerySet`.
    QuerySet,
    /// `GPURenderBundle`.
    RenderBundle,
}

impl ObjectKind {
    /// A short name.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Buffer => "buffer",
            ObjectKind::Texture => "texture",
            ObjectKind::Sampler => "sampler",
            ObjectKind::BindGroup => "bind-group",
            ObjectKind::BindGroupLayout => "bind-group-layout",
            ObjectKind::PipelineLayout => "pipeline-layout",
            ObjectKind::RenderPipeline => "render-pipeline",
            ObjectKind::ComputePipeline => "compute-pipeline",
            ObjectKind::ShaderModule => "shader-module",
            ObjectKind::QuerySet => "query-set",
            ObjectKind::RenderBundle => "render-bundle",
        }
    }
}

/// A handle to one registered object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryId(u64);

#[derive(Clone, Debug)]
struct Entry {
    kind: ObjectKind,
    label: String,
    bytes: u64,
}

/// Live count and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Live objects.
    pub objects: u64,
    /// Live bytes.
    pub bytes: u64,
}

/// A snapshot of the ledger.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LedgerReport {
    /// Totals.
    pub live: Tally,
    /// Highest live objects and bytes seen (each on its own).
    pub peak: Tally,
    /// Objects created since the ledger began.
    pub created: u64,
    /// Objects released since the ledger began.
    pub released: u64,
    /// Live objects and bytes by kind, ordered by kind.
    pub by_kind: Vec<(ObjectKind, Tally)>,
    /// Live objects and bytes by label, ordered by label.
    pub by_label: Vec<(String, Tally)>,
}

impl LedgerReport {
    /// Live objects and bytes of one kind (zero when none is live).
    pub fn kind(&self, kind: ObjectKind) -> Tally {
        self.by_kind
            .binary_search_by_key(&kind, |(k, _)| *k)
            .map(|i| self.by_kind[i].1)
            .unwrap_or_default()
    }

    /// Live objects and bytes under one label, if any is live.
    pub fn label(&self, label: &str) -> Option<Tally> {
        self.by_label
            .binary_search_by(|(l, _)| l.as_str().cmp(label))
            .ok()
            .map(|i| self.by_label[i].1)
    }
}

impl fmt::Display for LedgerReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "live: {} objects, {} bytes (peak {} objects, {} bytes)",
            self.live.objects, self.live.bytes, self.peak.objects, self.peak.bytes
        )?;
        for (kind, tally) in &self.by_kind {
            writeln!(
                f,
                "  {:<18} {:>6} {:>12} B",
                kind.as_str(),
                tally.objects,
                tally.bytes
            )?;
        }
        for (label, tally) in &self.by_label {
            writeln!(f, "  \"{label}\": {} x, {} B", tally.objects, tally.bytes)?;
        }
        Ok(())
    }
}

/// Counts live GPU objects. Registering returns an id; releasing it twice is harmless.
#[derive(Debug, Default)]
pub struct Ledger {
    next: u64,
    /// Ordered by id (ids only grow, so registering appends).
    live: Vec<(EntryId, Entry)>,
    totals: Tally,
    peak: Tally,
    created: u64,
    released: u64,
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Self {
        Ledger::default()
    }

    /// Registers a live object.
    pub fn register(&mut self, kind: ObjectKind, label: &str, bytes: u64) -> EntryId {
        self.next += 1;
        let id = EntryId(self.next);
        self.live.push((
            id,
            Entry {
                kind,
                label: label.to_string(),
                bytes,
            },
        ));
        self.totals.objects += 1;
        self.totals.bytes = self.totals.bytes.saturating_add(bytes);
        self.peak.objects = self.peak.objects.max(self.totals.objects);
        self.peak.bytes = self.peak.bytes.max(self.totals.bytes);
        self.created += 1;
        id
    }

    /// Releases an object; returns whether it was live.
    pub fn release(&mut self, id: EntryId) -> bool {
        match self.find(id).map(|index| self.live.remove(index).1) {
            Some(entry) => {
                self.totals.objects -= 1;
                self.totals.bytes -= entry.bytes;
                self.released += 1;
                true
            }
            None => false,
        }
    }

    fn find(&self, id: EntryId) -> Option<usize> {
        self.live.binary_search_by_key(&id, |(live, _)| *live).ok()
    }

    /// Whether `id` is live.
    pub fn is_live(&self, id: EntryId) -> bool {
        self.find(id).is_some()
    }

    /// The label and kind of a live object.
    pub fn describe(&self, id: EntryId) -> Option<(ObjectKind, String)> {
        self.find(id)
            .map(|index| (self.live[index].1.kind, self.live[index].1.label.clone()))
    }

    /// Live totals.
    pub fn live(&self) -> Tally {
        self.totals
    }

    /// Highest live objects and bytes seen (each on its own).
    pub fn peak(&self) -> Tally {
        self.peak
    }

    /// The full report.
    pub fn report(&self) -> LedgerReport {
        // Kept ordered as they are built (no sort routine in the binary).
        let mut by_kind: Vec<(ObjectKind, Tally)> = Vec::new();
        let mut by_label: Vec<(String, Tally)> = Vec::new();
        for (_, entry) in &self.live {
            let k = match by_kind.binary_search_by_key(&entry.kind, |(k, _)| *k) {
                Ok(i) => i,
                Err(i) => {
                    by_kind.insert(i, (entry.kind, Tally::default()));
                    i
                }
            };
            by_kind[k].1.objects += 1;
            by_kind[k].1.bytes += entry.bytes;
            let l = match by_label.binary_search_by(|(l, _)| l.as_str().cmp(&entry.label)) {
                Ok(i) => i,
                Err(i) => {
                    by_label.insert(i, (entry.label.clone(), Tally::default()));
                    i
                }
            };
            by_label[l].1.objects += 1;
            by_label[l].1.bytes += entry.bytes;
        }
        LedgerReport {
            live: self.totals,
            peak: self.peak,
            created: self.created,
            released: self.released,
            by_kind,
            by_label,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_rise_and_fall_with_peaks_kept() {
        let mut l = Ledger::new();
        let a = l.register(ObjectKind::Buffer, "verts", 1024);
        let b = l.register(ObjectKind::Texture, "shadow", 4096);
        let c = l.register(ObjectKind::Buffer, "verts", 512);
        assert_eq!(
            l.live(),
            Tally {
                objects: 3,
                bytes: 5632
            }
        );
        assert!(l.release(b));
        assert!(!l.release(b), "double release is a no-op");
        let r = l.report();
        assert_eq!(
            r.live,
            Tally {
                objects: 2,
                bytes: 1536
            }
        );
        assert_eq!(
            r.peak,
            Tally {
                objects: 3,
                bytes: 5632
            }
        );
        assert_eq!(
            r.kind(ObjectKind::Buffer),
            Tally {
                objects: 2,
                bytes: 1536
            }
        );
        assert_eq!(r.label("verts").map(|t| t.objects), Some(2));
        assert_eq!(r.label("shadow"), None);
        assert_eq!(r.kind(ObjectKind::Texture), Tally::default());
        l.release(a);
        l.release(c);
        assert_eq!(l.live(), Tally::default());
        assert_eq!(l.report().created, 3);
        assert_eq!(l.report().released, 3);
    }

    #[test]
    fn report_prints_a_table() {
        let mut l = Ledger::new();
        l.register(ObjectKind::Sampler, "linear", 0);
        let text = l.report().to_string();
        assert!(text.contains("live: 1 objects, 0 bytes"));
        assert!(text.contains("sampler"));
        assert!(text.contains("\"linear\""));
    }
}

/// The ledger of a context, shared by every object it counts. Cheap to clone.
///
/// It lends the ledger to a closure only ([`SharedLedger::with`]): no borrow
/// of it can be held while objects are created or dropped (an application
/// holding one then would have trapped the module). A lend reached from inside
/// another (a closure that creates an object) does nothing and is recorded as
/// the caller's bug, never a panic.
#[derive(Clone, Default)]
pub struct SharedLedger(Rc<Held<Ledger>>);

impl fmt::Debug for SharedLedger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SharedLedger").field(&self.live()).finish()
    }
}

impl SharedLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        SharedLedger::default()
    }

    /// Lends the ledger to `f`; `None` when it is lent already (`f` called from
    /// inside another lend).
    #[track_caller]
    pub fn with<R>(&self, f: impl FnOnce(&Ledger) -> R) -> Option<R> {
        self.0.with(|ledger| f(ledger))
    }

    /// Live totals (zero while lent).
    pub fn live(&self) -> Tally {
        self.with(Ledger::live).unwrap_or_default()
    }

    /// Peak totals (zero while lent).
    pub fn peak(&self) -> Tally {
        self.with(Ledger::peak).unwrap_or_default()
    }

    /// The full report (empty while lent).
    pub fn report(&self) -> LedgerReport {
        self.with(Ledger::report).unwrap_or_default()
    }

    /// Registers a live object (`None` while lent: not counted, the bug
    /// recorded).
    #[track_caller]
    pub fn register(&self, kind: ObjectKind, label: &str, bytes: u64) -> Option<EntryId> {
        self.0.with(|ledger| ledger.register(kind, label, bytes))
    }

    /// Releases an object; whether it was live.
    #[track_caller]
    pub fn release(&self, id: EntryId) -> bool {
        self.0.with(|ledger| ledger.release(id)).unwrap_or(false)
    }
}
