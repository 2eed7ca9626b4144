//! Textures described in Rust and created in one JavaScript call
//! ([`TextureSpec`], [`GuardedDevice::create_texture`]): the format is a
//! web-sys `GpuTextureFormat`, so this part of the allocator comes with the
//! `web-sys-enums` feature.

use std::cell::RefCell;

use wasm_bindgen::convert::IntoWasmAbi;
use wasm_bindgen::prelude::*;
use web_sys::{GpuDevice, GpuTexture, GpuTextureFormat};

use crate::fault::Fault;
use crate::formats::{texture_bytes, TextureShape};
use crate::usage::TextureUsages;
use crate::web::alloc::Tracked;
use crate::web::device::GuardedDevice;
use crate::web::js::enum_str;
use crate::web::text::raw_text;

#[wasm_bindgen(module = "/src/web/calls.js")]
extern "C" {
    #[wasm_bindgen(catch)]
    #[allow(clippy::too_many_arguments)]
    fn guard_create_texture(
        device: &GpuDevice,
        label_ptr: u32,
        label_len: u32,
        format: GpuTextureFormat,
        width: u32,
        height: u32,
        layers: u32,
        mips: u32,
        samples: u32,
        usage: u32,
        is_3d: bool,
    ) -> Result<GpuTexture, JsValue>;
}

thread_local! {
    /// Texture format names by their index in the bindings, read from JavaScript
    /// once per format.
    static FORMAT_NAMES: RefCell<Vec<(u32, String)>> = const { RefCell::new(Vec::new()) };
}

/// The `GPUTextureFormat` string of `format`.
fn format_name(format: GpuTextureFormat) -> String {
    let index = format.into_abi();
    FORMAT_NAMES.with(|names| {
        if let Some((_, name)) = names.borrow().iter().find(|(i, _)| *i == index) {
            return name.clone();
        }
        let name = enum_str(format);
        names.borrow_mut().push((index, name.clone()));
        name
    })
}

/// A texture to create: everything the descriptor and the byte count need.
#[derive(Clone, Debug)]
pub struct TextureSpec {
    /// The label (required).
    pub label: String,
    /// The format.
    pub format: GpuTextureFormat,
    /// Width in texels.
    pub width: u32,
    /// Height in texels.
    pub height: u32,
    /// Array layers (2D) or depth (3D).
    pub depth_or_layers: u32,
    /// Mip levels.
    pub mip_levels: u32,
    /// Sample count.
    pub sample_count: u32,
    /// How the texture is used.
    pub usage: TextureUsages,
    /// Whether this is a 3D texture.
    pub is_3d: bool,
}

impl TextureSpec {
    /// A single-level 2D texture.
    pub fn d2(
        label: &str,
        format: GpuTextureFormat,
        width: u32,
        height: u32,
        usage: TextureUsages,
    ) -> Self {
        TextureSpec {
            label: label.to_string(),
            format,
            width,
            height,
            depth_or_layers: 1,
            mip_levels: 1,
            sample_count: 1,
            usage,
            is_3d: false,
        }
    }

    /// The bytes this texture occupies (0 for a format the table does not know).
    pub fn bytes(&self) -> u64 {
        texture_bytes(&format_name(self.format), self.shape()).unwrap_or(0)
    }

    /// Its size and levels.
    pub(crate) fn shape(&self) -> TextureShape {
        TextureShape {
            width: self.width,
            height: self.height,
            depth_or_layers: self.depth_or_layers,
            mip_levels: self.mip_levels,
            sample_count: self.sample_count,
            is_3d: self.is_3d,
        }
    }

    /// Creates the texture on `device` (one JavaScript call).
    pub(crate) fn create_on(&self, device: &GpuDevice) -> Result<GpuTexture, JsValue> {
        let (label_ptr, label_len) = raw_text(&self.label);
        guard_create_texture(
            device,
            label_ptr,
            label_len,
            self.format,
            self.width,
            self.height,
            self.depth_or_layers,
            self.mip_levels,
            self.sample_count,
            self.usage.bits(),
            self.is_3d,
        )
    }
}

impl GuardedDevice {
    /// Creates a texture.
    #[track_caller]
    pub fn create_texture(&self, spec: &TextureSpec) -> Result<Tracked<GpuTexture>, Fault> {
        self.track(&spec.label, spec.bytes(), || spec.create_on(self.raw()))
    }
}
