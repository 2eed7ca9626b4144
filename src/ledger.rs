//! The allocator's ledger: live GPU objects and bytes, by kind and by label, with peaks.

use std::collections::BTreeMap;
use std::fmt;

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
    /// Live objects and bytes by kind.
    pub by_kind: BTreeMap<ObjectKind, Tally>,
    /// Live objects and bytes by label.
    pub by_label: BTreeMap<String, Tally>,
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
    live: BTreeMap<EntryId, Entry>,
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
        self.live.insert(
            id,
            Entry {
                kind,
                label: label.to_string(),
                bytes,
            },
        );
        self.totals.objects += 1;
        self.totals.bytes = self.totals.bytes.saturating_add(bytes);
        self.peak.objects = self.peak.objects.max(self.totals.objects);
        self.peak.bytes = self.peak.bytes.max(self.totals.bytes);
        self.created += 1;
        id
    }

    /// Releases an object; returns whether it was live.
    pub fn release(&mut self, id: EntryId) -> bool {
        match self.live.remove(&id) {
            Some(entry) => {
                self.totals.objects -= 1;
                self.totals.bytes -= entry.bytes;
                self.released += 1;
                true
            }
            None => false,
        }
    }

    /// Whether `id` is live.
    pub fn is_live(&self, id: EntryId) -> bool {
        self.live.contains_key(&id)
    }

    /// The label and kind of a live object.
    pub fn describe(&self, id: EntryId) -> Option<(ObjectKind, String)> {
        self.live.get(&id).map(|e| (e.kind, e.label.clone()))
    }

    /// Live totals.
    pub fn live(&self) -> Tally {
        self.totals
    }

    /// The full report.
    pub fn report(&self) -> LedgerReport {
        let mut by_kind: BTreeMap<ObjectKind, Tally> = BTreeMap::new();
        let mut by_label: BTreeMap<String, Tally> = BTreeMap::new();
        for entry in self.live.values() {
            let k = by_kind.entry(entry.kind).or_default();
            k.objects += 1;
            k.bytes += entry.bytes;
            let l = by_label.entry(entry.label.clone()).or_default();
            l.objects += 1;
            l.bytes += entry.bytes;
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
            r.by_kind[&ObjectKind::Buffer],
            Tally {
                objects: 2,
                bytes: 1536
            }
        );
        assert_eq!(r.by_label["verts"].objects, 2);
        assert!(!r.by_label.contains_key("shadow"));
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
