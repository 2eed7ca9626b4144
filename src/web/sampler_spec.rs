//! Samplers described in Rust and created in one JavaScript call
//! ([`SamplerSpec`], [`GuardedDevice::create_sampler_with`]): its address
//! modes, filters and comparison are web-sys enums, so it comes with the
//! `web-sys-enums` feature.

use wasm_bindgen::prelude::*;
use web_sys::{
    GpuAddressMode, GpuCompareFunction, GpuDevice, GpuFilterMode, GpuMipmapFilterMode, GpuSampler,
};

use crate::fault::Fault;
use crate::web::alloc::Tracked;
use crate::web::device::GuardedDevice;
use crate::web::text::raw_text;

#[wasm_bindgen(module = "/src/web/calls.js")]
extern "C" {
    #[wasm_bindgen(catch)]
    #[allow(clippy::too_many_arguments)]
    fn guard_create_sampler(
        device: &GpuDevice,
        label_ptr: u32,
        label_len: u32,
        address_u: GpuAddressMode,
        address_v: GpuAddressMode,
        address_w: GpuAddressMode,
        mag: GpuFilterMode,
        min: GpuFilterMode,
        mipmap: GpuMipmapFilterMode,
        lod_min: f32,
        lod_max: f32,
        compare: Option<GpuCompareFunction>,
        anisotropy: u16,
    ) -> Result<GpuSampler, JsValue>;
}

/// A sampler to create. [`SamplerSpec::new`] holds WebGPU's defaults.
#[derive(Clone, Debug)]
pub struct SamplerSpec {
    /// The label (required).
    pub label: String,
    /// `addressModeU`, `addressModeV`, `addressModeW`.
    pub address_modes: [GpuAddressMode; 3],
    /// `magFilter`.
    pub mag_filter: GpuFilterMode,
    /// `minFilter`.
    pub min_filter: GpuFilterMode,
    /// `mipmapFilter`.
    pub mipmap_filter: GpuMipmapFilterMode,
    /// `lodMinClamp`.
    pub lod_min_clamp: f32,
    /// `lodMaxClamp`.
    pub lod_max_clamp: f32,
    /// `compare`: a comparison sampler when set.
    pub compare: Option<GpuCompareFunction>,
    /// `maxAnisotropy`.
    pub max_anisotropy: u16,
}

impl SamplerSpec {
    /// WebGPU's default sampler: clamp to edge, nearest filtering, no comparison.
    pub fn new(label: &str) -> Self {
        SamplerSpec {
            label: label.to_string(),
            address_modes: [GpuAddressMode::ClampToEdge; 3],
            mag_filter: GpuFilterMode::Nearest,
            min_filter: GpuFilterMode::Nearest,
            mipmap_filter: GpuMipmapFilterMode::Nearest,
            lod_min_clamp: 0.0,
            lod_max_clamp: 32.0,
            compare: None,
            max_anisotropy: 1,
        }
    }

    /// Linear magnification and minification.
    pub fn linear(mut self) -> Self {
        self.mag_filter = GpuFilterMode::Linear;
        self.min_filter = GpuFilterMode::Linear;
        self
    }

    /// A comparison sampler (shadow maps).
    pub fn comparing(mut self, compare: GpuCompareFunction) -> Self {
        self.compare = Some(compare);
        self
    }
}

impl GuardedDevice {
    /// Creates the sampler `spec` describes, in one JavaScript call.
    #[track_caller]
    pub fn create_sampler_with(&self, spec: &SamplerSpec) -> Result<Tracked<GpuSampler>, Fault> {
        self.track(&spec.label, 0, || {
            let (label_ptr, label_len) = raw_text(&spec.label);
            let [u, v, w] = spec.address_modes;
            guard_create_sampler(
                self.raw(),
                label_ptr,
                label_len,
                u,
                v,
                w,
                spec.mag_filter,
                spec.min_filter,
                spec.mipmap_filter,
                spec.lod_min_clamp,
                spec.lod_max_clamp,
                spec.compare,
                spec.max_anisotropy,
            )
        })
    }
}
