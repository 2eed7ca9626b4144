//! [`Gpu`]: what `build` and `frame` draw with. wgpu's adapter, device and
//! queue as they are, plus what the guard adds: phases, labelled and counted
//! creations ([`Tracked`]), shader diagnostics with carets, and the way to the
//! runtime's rate-limited fault log.

use std::cell::Cell;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::rc::Rc;

use webgpu_guard_core::fault::{CallSite, Fault, FaultKind};
use webgpu_guard_core::formats::{TextureShape, TextureSizeLimits};
use webgpu_guard_core::ladder::does_not_fit;
use webgpu_guard_core::ledger::{EntryId, LedgerReport, ObjectKind, SharedLedger};
use webgpu_guard_core::shader_diag::{MessageType, ShaderDiagnostics};
use wgpu::util::DeviceExt;

use crate::compilation::{message_in_utf16, ByteSpan};
use crate::scopes::{ClosedSet, Phase, ScopeStack};

/// Where faults go and how later work runs: the runtime's, per platform.
pub(crate) trait Outlet {
    /// Reports `fault` once through the rate-limited fault log: nothing of
    /// it that was reported already (only related faults attached since).
    fn report(&self, fault: &Fault);
    /// Reports `fault`, its line written whatever the rate limit says (a
    /// fallback's).
    fn report_final(&self, fault: Fault);
    /// Writes an informational line.
    fn note(&self, text: &str);
    /// Writes an informational line whatever the rate limit says (a
    /// fallback's with no fault of its own).
    fn note_final(&self, text: &str);
    /// Writes a warning (counted in the fault sink's `warnings`).
    fn warn(&self, text: &str);
    /// Runs `future` to completion on the platform's executor.
    fn spawn(&self, future: Pin<Box<dyn Future<Output = ()>>>);
    /// The frame number uncaptured errors are tagged with from now on.
    fn set_frame(&self, frame: u64);
    /// Tells telemetry which adapter the errors come from now.
    fn set_adapter(&self, adapter: &str);
}

/// One device generation's GPU, as `build` and `frame` see it.
pub struct Gpu {
    /// The adapter this device came from (a new one for every device).
    pub adapter: wgpu::Adapter,
    /// The device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// The surface's format, as configured.
    pub format: wgpu::TextureFormat,
    /// Which device this is (1 for the first).
    pub generation: u64,
    size: Cell<(u32, u32)>,
    scopes: ScopeStack,
    ledger: SharedLedger,
    outlet: Rc<dyn Outlet>,
    let_go: Rc<Cell<bool>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("generation", &self.generation)
            .field("size", &self.size.get())
            .finish_non_exhaustive()
    }
}

/// What a [`Gpu`] is made of, as an init attempt gathered it.
pub(crate) struct GpuParts {
    pub(crate) adapter: wgpu::Adapter,
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) format: wgpu::TextureFormat,
    pub(crate) generation: u64,
    pub(crate) size: (u32, u32),
    pub(crate) ledger: SharedLedger,
    pub(crate) outlet: Rc<dyn Outlet>,
    pub(crate) let_go: Rc<Cell<bool>>,
}

impl Gpu {
    pub(crate) fn new(parts: GpuParts) -> Self {
        Gpu {
            adapter: parts.adapter,
            device: parts.device,
            queue: parts.queue,
            format: parts.format,
            generation: parts.generation,
            size: Cell::new(parts.size),
            scopes: ScopeStack::default(),
            ledger: parts.ledger,
            outlet: parts.outlet,
            let_go: parts.let_go,
        }
    }

    /// Set when the runtime lets this device go (a stop, a newer attempt, a
    /// teardown): what its scopes and phases say from then on is not reported.
    pub(crate) fn let_go_flag(&self) -> &Cell<bool> {
        &self.let_go
    }

    /// The drawing buffer's size, as the surface is configured.
    pub fn size(&self) -> (u32, u32) {
        self.size.get()
    }

    pub(crate) fn set_size(&self, size: (u32, u32)) {
        self.size.set(size);
    }

    /// Starts a phase named `name`: its own validation, out-of-memory and
    /// internal scopes until [`Phase::end`].
    pub fn phase(&self, name: &str) -> Phase<'_> {
        Phase::new(self, name)
    }

    /// Whether the device is alive, known for certain: a validation error
    /// provoked in a scope of its own (a sampler no implementation accepts)
    /// comes back from a live device only; a lost device's scopes answer
    /// nothing.
    pub async fn confirm_alive(&self) -> bool {
        let probe = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        drop(self.device.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("webgpu-guard liveness probe"),
            lod_min_clamp: -31337.0,
            ..Default::default()
        }));
        probe.pop().await.is_some()
    }

    /// Live objects and bytes made through this runtime's `create_*`, by kind
    /// and label (across devices: a lost device's objects are released with
    /// the resources that held them).
    pub fn ledger(&self) -> LedgerReport {
        self.ledger.report()
    }

    /// Reports `fault` through the runtime's fault log (rate-limited, counted,
    /// sent to telemetry) unless it was reported already, and returns it
    /// marked reported: returned as `Err` too (`return Err(gpu.report(f))`),
    /// it is not reported again.
    pub fn report(&self, fault: Fault) -> Fault {
        // A device the runtime let go (stopped, superseded) says nothing new:
        // its scopes answer nothing and its phases end `DeviceLost`.
        self.report_seen(fault, self.held())
    }

    /// Whether the runtime still holds this device (it has not let it go).
    pub(crate) fn held(&self) -> bool {
        !self.let_go.get()
    }

    /// Reports `fault`, caught by scopes closed when the device was `held`
    /// or not: what a device still held caught is news even when the runtime
    /// let it go before the answer came (a stop, a loss handled meanwhile),
    /// but a device found lost after it was let go is the runtime's doing.
    pub(crate) fn report_seen(&self, fault: Fault, held: bool) -> Fault {
        let news = held && (fault.kind != FaultKind::DeviceLost || self.held());
        if news {
            self.outlet.report(&fault);
        }
        fault.mark_reported()
    }

    /// A labelled, counted buffer. Its label is what faults and the ledger
    /// call it (`"unlabelled"` when the descriptor has none).
    #[track_caller]
    pub fn create_buffer(&self, desc: &wgpu::BufferDescriptor<'_>) -> Tracked<wgpu::Buffer> {
        let label = desc.label.unwrap_or("unlabelled");
        self.track(
            ObjectKind::Buffer,
            label,
            desc.size,
            CallSite::here(),
            || self.device.create_buffer(desc),
        )
    }

    /// A labelled, counted buffer filled with `contents`.
    #[track_caller]
    pub fn create_buffer_init(
        &self,
        desc: &wgpu::util::BufferInitDescriptor<'_>,
    ) -> Tracked<wgpu::Buffer> {
        let label = desc.label.unwrap_or("unlabelled");
        let bytes = desc.contents.len() as u64;
        self.track(ObjectKind::Buffer, label, bytes, CallSite::here(), || {
            self.device.create_buffer_init(desc)
        })
    }

    /// A labelled, counted texture (its bytes: every mip level, times its
    /// sample count).
    #[track_caller]
    pub fn create_texture(&self, desc: &wgpu::TextureDescriptor<'_>) -> Tracked<wgpu::Texture> {
        let label = desc.label.unwrap_or("unlabelled");
        self.track(
            ObjectKind::Texture,
            label,
            texture_bytes(desc),
            CallSite::here(),
            || self.device.create_texture(desc),
        )
    }

    /// Compiles WGSL `source` labelled `label` inside its own phase, and reads
    /// the compiler's messages: errors and warnings come as
    /// `label:line:col`, the source line and a caret under the span (right
    /// under wide characters too). Warnings are written to the fault log;
    /// errors are the `Err`.
    #[track_caller]
    pub fn create_shader_module(
        &self,
        label: &str,
        source: &str,
    ) -> impl Future<Output = Result<wgpu::ShaderModule, Fault>> + '_ {
        let site = CallSite::here();
        let label = label.to_string();
        let source = source.to_string();
        async move {
            let phase = self.phase(&format!("shader {label}"));
            self.scopes.record_call(&label, site);
            let module = self
                .device
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(&label),
                    source: wgpu::ShaderSource::Wgsl(source.as_str().into()),
                });
            let info = module.get_compilation_info().await;
            // Not reported here: a compile error's own fault (below) carries
            // what the scopes caught beside it, reported once with it.
            let held = self.held();
            let caught = phase.conclude().await;
            let messages = info
                .messages
                .iter()
                .map(|m| {
                    let kind = match m.message_type {
                        wgpu::CompilationMessageType::Error => MessageType::Error,
                        wgpu::CompilationMessageType::Warning => MessageType::Warning,
                        wgpu::CompilationMessageType::Info => MessageType::Info,
                    };
                    let span = m.location.map(|l| ByteSpan {
                        line_number: l.line_number,
                        offset: l.offset,
                        length: l.length,
                    });
                    message_in_utf16(&source, kind, &m.message, span)
                })
                .collect();
            let diagnostics = ShaderDiagnostics::new(&label, &source, messages);
            if diagnostics.has_errors() {
                return Err(self.report_seen(
                    Fault::new(FaultKind::Validation, diagnostics.to_string())
                        .in_phase(format!("shader {label}"))
                        .on_object(label)
                        .at(site)
                        .with_caught_beside(caught.err()),
                    held,
                ));
            }
            if !diagnostics.is_empty() {
                self.outlet.warn(&diagnostics.to_string());
            }
            caught
                .map(|()| module)
                .map_err(|fault| self.report_seen(fault, held))
        }
    }

    /// The out-of-memory ladder: tries `candidates` in order (largest first),
    /// each inside its own phase, and keeps the first that the device accepts;
    /// one that does not fit (out of memory, or beyond the device's limits)
    /// is written as a warning and the next is tried. `Err` naming every size
    /// tried when none fits (out of memory: it may fit on a fresh device);
    /// any other failure (a wrong usage or format, a lost device) ends the
    /// ladder at once with its own fault, which no smaller size would mend.
    #[track_caller]
    pub fn create_texture_fitting<'a>(
        &'a self,
        candidates: &'a [wgpu::TextureDescriptor<'a>],
    ) -> impl Future<Output = Result<Fitted, Fault>> + 'a {
        let site = CallSite::here();
        async move {
            let mut failures = Vec::new();
            let device_limits = self.device.limits();
            for (index, desc) in candidates.iter().enumerate() {
                let label = desc.label.unwrap_or("unlabelled");
                let phase = self.phase(&format!("ladder {label}"));
                let texture = self.track(
                    ObjectKind::Texture,
                    label,
                    texture_bytes(desc),
                    site,
                    || self.device.create_texture(desc),
                );
                // A size that does not fit is a warning, not an error: only
                // the ladder's own `Err` is reported.
                let held = self.held();
                match phase.conclude().await {
                    Ok(()) => {
                        return Ok(Fitted {
                            texture,
                            chosen: index,
                            failures,
                        })
                    }
                    Err(fault)
                        if !does_not_fit(
                            fault.kind,
                            &shape_of(desc),
                            &size_limits(&device_limits, desc.dimension),
                        ) =>
                    {
                        // A mistake (or a lost device): no smaller size mends it.
                        drop(texture);
                        return Err(self.report_seen(fault, held));
                    }
                    Err(fault) => {
                        drop(texture);
                        self.outlet.warn(&format!(
                            "\"{label}\" {}x{} does not fit, trying the next size: {}",
                            desc.size.width, desc.size.height, fault.message
                        ));
                        failures.push((index, fault));
                    }
                }
            }
            let tried: Vec<String> = failures
                .iter()
                .map(|(i, f)| {
                    let size = candidates[*i].size;
                    format!("{}x{} ({})", size.width, size.height, f.kind)
                })
                .collect();
            let label = candidates
                .first()
                .and_then(|d| d.label)
                .unwrap_or("unlabelled");
            Err(self.report(
                Fault::new(
                    FaultKind::OutOfMemory,
                    format!("no size fits: tried {}", tried.join(", ")),
                )
                .in_phase(format!("ladder {label}"))
                .on_object(label)
                .at(site)
                .with_related(failures.into_iter().map(|(_, f)| f).collect()),
            ))
        }
    }

    /// Makes an object with `create`, labelled and counted under `kind`.
    fn track<T>(
        &self,
        kind: ObjectKind,
        label: &str,
        bytes: u64,
        site: CallSite,
        create: impl FnOnce() -> T,
    ) -> Tracked<T> {
        self.scopes.record_call(label, site);
        let object = create();
        let id = self.ledger.register(kind, label, bytes);
        Tracked {
            object,
            ledger: self.ledger.clone(),
            id,
        }
    }

    pub(crate) fn scopes(&self) -> &ScopeStack {
        &self.scopes
    }

    /// Reports what `set` catches, when the device answers.
    pub(crate) fn report_later(&self, set: ClosedSet) {
        self.report_later_tagged(set, |fault| fault);
    }

    /// Reports what `sets` catch, when the device answers, then tells
    /// `then` whether they caught nothing (a copy the GPU refused is no
    /// state to keep).
    pub(crate) fn check_later(&self, sets: Vec<ClosedSet>, then: impl FnOnce(bool) + 'static) {
        let held = self.held();
        let outlet = self.outlet.clone();
        self.outlet.spawn(Box::pin(async move {
            let mut clean = true;
            for set in sets {
                for fault in set.faults().await {
                    clean = false;
                    if held {
                        outlet.report(&fault);
                    }
                }
            }
            then(clean);
        }));
    }

    /// As `report_later`, each fault passed through `tag` first.
    pub(crate) fn report_later_tagged(
        &self,
        set: ClosedSet,
        tag: impl Fn(Fault) -> Fault + 'static,
    ) {
        // Judged now, as the set closes: what it caught while the device was
        // held is news whenever the answer comes.
        if !self.held() {
            return;
        }
        let outlet = self.outlet.clone();
        self.outlet.spawn(Box::pin(async move {
            for fault in set.faults().await {
                outlet.report(&tag(fault));
            }
        }));
    }
}

/// What [`Gpu::create_texture_fitting`] obtained, and what it gave up on the way.
#[derive(Debug)]
pub struct Fitted {
    /// The texture that fitted.
    pub texture: Tracked<wgpu::Texture>,
    /// Which candidate it is (0: the first, the size wanted).
    pub chosen: usize,
    /// The candidates that did not fit, with their faults.
    pub failures: Vec<(usize, Fault)>,
}

impl Fitted {
    /// Whether a smaller candidate than the first was used.
    pub fn degraded(&self) -> bool {
        self.chosen > 0
    }
}

/// The device's limits on the size of a texture of `dimension`, as the
/// ladder judges them (a 1D texture's width against the 1D limit).
fn size_limits(limits: &wgpu::Limits, dimension: wgpu::TextureDimension) -> TextureSizeLimits {
    TextureSizeLimits {
        max_2d: match dimension {
            wgpu::TextureDimension::D1 => limits.max_texture_dimension_1d,
            _ => limits.max_texture_dimension_2d,
        },
        max_3d: limits.max_texture_dimension_3d,
        max_layers: limits.max_texture_array_layers,
    }
}

/// A texture's size, as the ladder judges it against the device's limits.
fn shape_of(desc: &wgpu::TextureDescriptor<'_>) -> TextureShape {
    TextureShape {
        width: desc.size.width,
        height: desc.size.height,
        depth_or_layers: desc.size.depth_or_array_layers,
        mip_levels: desc.mip_level_count,
        sample_count: desc.sample_count,
        is_3d: desc.dimension == wgpu::TextureDimension::D3,
    }
}

/// The bytes a texture occupies: each mip level's footprint times its samples.
fn texture_bytes(desc: &wgpu::TextureDescriptor<'_>) -> u64 {
    (0..desc.mip_level_count)
        .filter_map(|level| desc.mip_level_size(level))
        .map(|extent| desc.format.theoretical_memory_footprint(extent))
        .sum::<u64>()
        * u64::from(desc.sample_count.max(1))
}

/// A wgpu object made through [`Gpu`]: counted in the ledger while it lives.
/// Derefs to the object; dropping it takes it off the ledger (wgpu releases
/// the object itself when its last handle goes).
pub struct Tracked<T> {
    object: T,
    ledger: SharedLedger,
    id: Option<EntryId>,
}

impl<T> Deref for Tracked<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.object
    }
}

impl<T> Drop for Tracked<T> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.ledger.release(id);
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Tracked<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracked")
            .field("object", &self.object)
            .finish_non_exhaustive()
    }
}
