//! The labelling, counting allocator: every GPU object goes through here, gets a
//! label, is counted in the ledger, and (with per-call diagnostics) gets its own
//! scopes and the Rust call site.

use std::ops::Deref;

use wasm_bindgen::prelude::*;
use web_sys::{
    GpuBindGroup, GpuBindGroupDescriptor, GpuBindGroupLayout, GpuBindGroupLayoutDescriptor,
    GpuBuffer, GpuComputePipeline, GpuDevice, GpuPipelineLayout, GpuPipelineLayoutDescriptor,
    GpuQuerySet, GpuQuerySetDescriptor, GpuRenderPipeline, GpuSampler, GpuSamplerDescriptor,
    GpuShaderModule, GpuTexture,
};

use crate::fault::{CallSite, Fault, FaultKind, Origin};
use crate::ledger::{EntryId, ObjectKind, SharedLedger};
use crate::usage::BufferUsages;
use crate::web::bindings::{try_create_bind_group, try_create_pipeline_layout, try_create_sampler};
use crate::web::device::GuardedDevice;
#[cfg(feature = "fault-injection")]
use crate::web::inject::BuildFault;
use crate::web::scope::{Filter, ScopeSet};
use crate::web::session::DiagnosticsLevel;
use crate::web::text::{raw_text, set_label};

// The descriptors the allocator owns are written in one JavaScript call per
// creation, as a hand-written page would write an object literal (web-sys would
// make one call per field); labels cross as in `text`.
#[wasm_bindgen(module = "/src/web/calls.js")]
extern "C" {
    #[wasm_bindgen(catch)]
    fn guard_create_buffer(
        device: &GpuDevice,
        label_ptr: u32,
        label_len: u32,
        size: f64,
        usage: u32,
    ) -> Result<GpuBuffer, JsValue>;
}

/// A GPU object the allocator can track.
pub trait GpuResource {
    /// Its kind in the ledger.
    const KIND: ObjectKind;
    /// Frees what can be freed eagerly (`destroy()` for buffers, textures, query sets).
    fn release(&self) {}
}

impl GpuResource for GpuBuffer {
    const KIND: ObjectKind = ObjectKind::Buffer;
    fn release(&self) {
        self.destroy();
    }
}
impl GpuResource for GpuTexture {
    const KIND: ObjectKind = ObjectKind::Texture;
    fn release(&self) {
        self.destroy();
    }
}
impl GpuResource for GpuQuerySet {
    const KIND: ObjectKind = ObjectKind::QuerySet;
    fn release(&self) {
        self.destroy();
    }
}
impl GpuResource for web_sys::GpuRenderBundle {
    const KIND: ObjectKind = ObjectKind::RenderBundle;
}
impl GpuResource for GpuSampler {
    const KIND: ObjectKind = ObjectKind::Sampler;
}
impl GpuResource for GpuBindGroup {
    const KIND: ObjectKind = ObjectKind::BindGroup;
}
impl GpuResource for GpuBindGroupLayout {
    const KIND: ObjectKind = ObjectKind::BindGroupLayout;
}
impl GpuResource for GpuPipelineLayout {
    const KIND: ObjectKind = ObjectKind::PipelineLayout;
}
impl GpuResource for GpuRenderPipeline {
    const KIND: ObjectKind = ObjectKind::RenderPipeline;
}
impl GpuResource for GpuComputePipeline {
    const KIND: ObjectKind = ObjectKind::ComputePipeline;
}
impl GpuResource for GpuShaderModule {
    const KIND: ObjectKind = ObjectKind::ShaderModule;
}

/// A GPU object counted in the ledger. Dropping it releases the entry and, for
/// buffers, textures and query sets, calls `destroy()`.
#[must_use = "a tracked object is released when dropped"]
pub struct Tracked<T: GpuResource> {
    object: T,
    label: String,
    bytes: u64,
    id: Option<EntryId>,
    ledger: SharedLedger,
}

impl<T: GpuResource> Tracked<T> {
    /// Registers `object` in `ledger`.
    pub fn register(object: T, label: &str, bytes: u64, ledger: SharedLedger) -> Self {
        let id = ledger.register(T::KIND, label, bytes);
        Tracked {
            object,
            label: label.to_string(),
            bytes,
            id,
            ledger,
        }
    }

    /// The label the ledger counts it under. (`label()` through `Deref` is
    /// web-sys's, read from the object: the same text unless something set it
    /// since.)
    pub fn ledger_label(&self) -> &str {
        &self.label
    }

    /// The bytes counted for it.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl<T: GpuResource> std::fmt::Debug for Tracked<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracked")
            .field("kind", &T::KIND)
            .field("label", &self.label)
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl<T: GpuResource> Deref for Tracked<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.object
    }
}

impl<T: GpuResource> Drop for Tracked<T> {
    fn drop(&mut self) {
        self.object.release();
        if let Some(id) = self.id {
            self.ledger.release(id);
        }
    }
}

/// Whether the allocator opens per-call scopes around a creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CallScopes {
    /// As the diagnostics level says.
    ByLevel,
    /// Never: the caller scopes this creation itself and needs its outcome (the
    /// out-of-memory ladder, shader creation). A per-call scope nested inside would
    /// catch the very error the caller waits for.
    CallerScoped,
}

impl GuardedDevice {
    /// The allocator's one entry point: checks the label, scopes the call when
    /// per-call diagnostics are on, creates (an exception thrown by `create` is a
    /// [`FaultKind::Exception`] fault naming the object and the call site), and
    /// counts.
    #[track_caller]
    pub fn track<T: GpuResource>(
        &self,
        label: &str,
        bytes: u64,
        create: impl FnOnce() -> Result<T, JsValue>,
    ) -> Result<Tracked<T>, Fault> {
        self.track_with(CallScopes::ByLevel, CallSite::here(), label, bytes, create)
    }

    pub(crate) fn track_with<T: GpuResource>(
        &self,
        scopes: CallScopes,
        site: CallSite,
        label: &str,
        bytes: u64,
        create: impl FnOnce() -> Result<T, JsValue>,
    ) -> Result<Tracked<T>, Fault> {
        // The typed part is only this: what is created, and its registration;
        // the rest is one function for every kind of object.
        let mut create = Some(create);
        let mut object = None;
        self.creation(T::KIND, scopes, site, label, &mut || {
            object = create.take().map(|create| create()).transpose()?;
            Ok(())
        })?;
        match object {
            Some(object) => Ok(Tracked::register(object, label, bytes, self.ledger())),
            None => Err(Fault::from(JsValue::UNDEFINED).on_object(label).at(site)),
        }
    }

    /// A creation of a `kind` object, of any type: the label checked, the
    /// call site recorded and the call scoped as the level says, `create` run
    /// through the trampoline; `Err` names the object and the call site.
    fn creation(
        &self,
        kind: ObjectKind,
        scopes: CallScopes,
        site: CallSite,
        label: &str,
        create: &mut dyn FnMut() -> Result<(), JsValue>,
    ) -> Result<(), Fault> {
        if label.trim().is_empty() {
            return Err(Fault::new(
                FaultKind::Exception,
                format!("a {} needs a label", kind.as_str()),
            )
            .at(site));
        }
        #[cfg(feature = "fault-injection")]
        if let Some(fault) = self.injected_fault(kind, label, site) {
            return Err(fault);
        }
        let level = self.level();
        if level == DiagnosticsLevel::Attributed && self.in_phase() {
            self.record_call_site(label, site);
        }
        let per_call =
            (level == DiagnosticsLevel::PerCall && scopes == CallScopes::ByLevel).then(|| {
                ScopeSet::push(self, &Filter::ALL).tagged(Origin {
                    object: Some(label.to_string()),
                    call_site: Some(site),
                    frame: self.current_frame(),
                    phase: None,
                })
            });
        // Through the trampoline: a `create` that throws through WebAssembly (a
        // raw binding that does not catch) still closes the scopes pushed for
        // it, and is this creation's `Err` naming the object.
        let mut outcome = Err(JsValue::UNDEFINED);
        let created = match crate::web::crash::trampoline(&mut || outcome = create()) {
            Ok(()) => outcome,
            Err(thrown) => Err(thrown),
        };
        if let Some(scopes) = per_call {
            let pops = scopes.close();
            if self.in_phase() {
                self.add_pending_call(pops);
            } else {
                pops.detach();
            }
        }
        created.map_err(|exception| Fault::from(exception).on_object(label).at(site))
    }

    /// The fault the armed injector makes this creation fail with, if any (a loss
    /// retires the device and lets the creation go on, as a real one would).
    #[cfg(feature = "fault-injection")]
    fn injected_fault(&self, kind: ObjectKind, label: &str, site: CallSite) -> Option<Fault> {
        let injector = self.session().injector();
        if !injector.is_armed() {
            return None;
        }
        match injector.on_creation() {
            Some(BuildFault::OutOfMemory(_)) => Some(
                Fault::new(
                    FaultKind::OutOfMemory,
                    format!("injected out-of-memory creating a {}", kind.as_str()),
                )
                .on_object(label)
                .at(site),
            ),
            Some(BuildFault::Throw(_)) => {
                let thrown = js_sys::Function::new_no_args(
                    "throw new TypeError('injected: the call threw')",
                )
                .call0(&JsValue::NULL)
                .err()
                .unwrap_or(JsValue::UNDEFINED);
                Some(Fault::from(thrown).on_object(label).at(site))
            }
            Some(BuildFault::Lose(_)) => {
                AsRef::<crate::web::handle::DeviceHandle>::as_ref(self).mark_injected_loss();
                self.retire();
                None
            }
            None => None,
        }
    }

    /// Creates a buffer of `size` bytes.
    #[track_caller]
    pub fn create_buffer(
        &self,
        label: &str,
        size: u64,
        usage: BufferUsages,
    ) -> Result<Tracked<GpuBuffer>, Fault> {
        self.track(label, size, || {
            let (label_ptr, label_len) = raw_text(label);
            guard_create_buffer(self.raw(), label_ptr, label_len, size as f64, usage.bits())
        })
    }

    /// Creates a buffer holding `data` (size rounded up to 4 bytes), with `BufferUsages::COPY_DST`
    /// added to `usage`.
    #[track_caller]
    pub fn create_buffer_init(
        &self,
        label: &str,
        usage: BufferUsages,
        data: &[u8],
    ) -> Result<Tracked<GpuBuffer>, Fault> {
        let site = CallSite::here();
        let size = (data.len() as u64).div_ceil(4) * 4;
        let mut padded = data.to_vec();
        padded.resize(size as usize, 0);
        // The write inside the creation: one per-call scope covers both.
        self.track_with(CallScopes::ByLevel, site, label, size.max(4), || {
            let (label_ptr, label_len) = raw_text(label);
            let buffer = guard_create_buffer(
                self.raw(),
                label_ptr,
                label_len,
                size.max(4) as f64,
                (usage | BufferUsages::COPY_DST).bits(),
            )?;
            self.queue()
                .write_buffer_with_u32_and_u8_slice(&buffer, 0, &padded)?;
            Ok(buffer)
        })
    }

    /// Creates a sampler.
    #[track_caller]
    pub fn create_sampler(
        &self,
        label: &str,
        desc: &GpuSamplerDescriptor,
    ) -> Result<Tracked<GpuSampler>, Fault> {
        set_label(desc, label);
        self.track(label, 0, || try_create_sampler(self.raw(), desc))
    }

    /// Creates a bind group layout.
    #[track_caller]
    pub fn create_bind_group_layout(
        &self,
        label: &str,
        desc: &GpuBindGroupLayoutDescriptor,
    ) -> Result<Tracked<GpuBindGroupLayout>, Fault> {
        set_label(desc, label);
        self.track(label, 0, || self.raw().create_bind_group_layout(desc))
    }

    /// Creates a bind group.
    #[track_caller]
    pub fn create_bind_group(
        &self,
        label: &str,
        desc: &GpuBindGroupDescriptor,
    ) -> Result<Tracked<GpuBindGroup>, Fault> {
        set_label(desc, label);
        self.track(label, 0, || try_create_bind_group(self.raw(), desc))
    }

    /// Creates a pipeline layout.
    #[track_caller]
    pub fn create_pipeline_layout(
        &self,
        label: &str,
        desc: &GpuPipelineLayoutDescriptor,
    ) -> Result<Tracked<GpuPipelineLayout>, Fault> {
        set_label(desc, label);
        self.track(label, 0, || try_create_pipeline_layout(self.raw(), desc))
    }

    /// Creates a query set (8 bytes per query).
    #[track_caller]
    pub fn create_query_set(
        &self,
        label: &str,
        desc: &GpuQuerySetDescriptor,
    ) -> Result<Tracked<GpuQuerySet>, Fault> {
        set_label(desc, label);
        let bytes = u64::from(desc.get_count()) * 8;
        self.track(label, bytes, || self.raw().create_query_set(desc))
    }
}
