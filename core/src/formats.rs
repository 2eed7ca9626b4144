//! Byte sizes of GPU resources: texture formats (block sizes), mip chains, array
//! layers and sample counts.

/// The block footprint of a texture format: `(block width, block height, bytes per block)`.
/// `None` for a format this table does not know.
pub fn block_info(format: &str) -> Option<(u32, u32, u32)> {
    let bytes = match format {
        "r8unorm" | "r8snorm" | "r8uint" | "r8sint" | "stencil8" => 1,
        "r16uint" | "r16sint" | "r16float" | "r16unorm" | "r16snorm" | "rg8unorm" | "rg8snorm"
        | "rg8uint" | "rg8sint" | "depth16unorm" => 2,
        "r32uint"
        | "r32sint"
        | "r32float"
        | "rg16uint"
        | "rg16sint"
        | "rg16float"
        | "rg16unorm"
        | "rg16snorm"
        | "rgba8unorm"
        | "rgba8unorm-srgb"
        | "rgba8snorm"
        | "rgba8uint"
        | "rgba8sint"
        | "bgra8unorm"
        | "bgra8unorm-srgb"
        | "rgb9e5ufloat"
        | "rgb10a2uint"
        | "rgb10a2unorm"
        | "rg11b10ufloat"
        | "depth24plus"
        | "depth24plus-stencil8"
        | "depth32float" => 4,
        "depth32float-stencil8" => 5,
        "rg32uint" | "rg32sint" | "rg32float" | "rgba16uint" | "rgba16sint" | "rgba16float"
        | "rgba16unorm" | "rgba16snorm" => 8,
        "rgba32uint" | "rgba32sint" | "rgba32float" => 16,
        f if f.starts_with("bc1-") || f.starts_with("bc4-") => return Some((4, 4, 8)),
        f if f.starts_with("bc") => return Some((4, 4, 16)),
        f if f.starts_with("etc2-rgb8") || f.starts_with("eac-r11") => return Some((4, 4, 8)),
        f if f.starts_with("etc2-rgba8") || f.starts_with("eac-rg11") => return Some((4, 4, 16)),
        f if f.starts_with("astc-") => {
            let dims = f.trim_start_matches("astc-").split('-').next()?;
            let (w, h) = dims.split_once('x')?;
            return Some((w.parse().ok()?, h.parse().ok()?, 16));
        }
        _ => return None,
    };
    Some((1, 1, bytes))
}

/// The shape of a texture, for byte accounting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextureShape {
    /// Width in texels.
    pub width: u32,
    /// Height in texels.
    pub height: u32,
    /// Array layers (2D) or depth (3D).
    pub depth_or_layers: u32,
    /// Mip levels.
    pub mip_levels: u32,
    /// Samples per texel.
    pub sample_count: u32,
    /// Whether the third dimension is depth (3D texture) rather than layers.
    pub is_3d: bool,
}

/// A device's limits on a texture's size (WebGPU's `maxTextureDimension2D`,
/// `maxTextureDimension3D` and `maxTextureArrayLayers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextureSizeLimits {
    /// The largest side of a 2D texture (of a 1D one, its width).
    pub max_2d: u32,
    /// The largest side of a 3D texture.
    pub max_3d: u32,
    /// The most layers of a 2D texture.
    pub max_layers: u32,
}

impl TextureShape {
    /// Whether a device with `limits` refuses a texture of this size (for its
    /// size alone).
    pub fn beyond(&self, limits: &TextureSizeLimits) -> bool {
        let (side, depth) = if self.is_3d {
            (limits.max_3d, limits.max_3d)
        } else {
            (limits.max_2d, limits.max_layers)
        };
        self.width > side || self.height > side || self.depth_or_layers > depth
    }

    /// A single-level, single-sample 2D texture.
    pub fn d2(width: u32, height: u32) -> Self {
        TextureShape {
            width,
            height,
            depth_or_layers: 1,
            mip_levels: 1,
            sample_count: 1,
            is_3d: false,
        }
    }
}

/// Bytes a texture of `format` and `shape` occupies (saturating), or `None` when the
/// format is unknown.
pub fn texture_bytes(format: &str, shape: TextureShape) -> Option<u64> {
    let (bw, bh, bytes) = block_info(format)?;
    let mut total: u64 = 0;
    for level in 0..shape.mip_levels.max(1) {
        let w = (shape.width >> level).max(1);
        let h = (shape.height >> level).max(1);
        let d = if shape.is_3d {
            (shape.depth_or_layers >> level).max(1)
        } else {
            shape.depth_or_layers.max(1)
        };
        let blocks = u64::from(w.div_ceil(bw)) * u64::from(h.div_ceil(bh));
        total = total.saturating_add(
            blocks
                .saturating_mul(u64::from(bytes))
                .saturating_mul(u64::from(d)),
        );
    }
    Some(total.saturating_mul(u64::from(shape.sample_count.max(1))))
}

/// The number of mip levels of a full chain for a `width` x `height` texture.
pub fn full_mip_count(width: u32, height: u32) -> u32 {
    32 - width.max(height).max(1).leading_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth32float_shadow_map_sizes() {
        assert_eq!(
            texture_bytes("depth32float", TextureShape::d2(4096, 4096)),
            Some(64 * 1024 * 1024)
        );
        assert_eq!(
            texture_bytes("depth32float", TextureShape::d2(1024, 1024)),
            Some(4 * 1024 * 1024)
        );
    }

    #[test]
    fn mip_chains_layers_and_samples() {
        let mut shape = TextureShape::d2(256, 256);
        shape.mip_levels = full_mip_count(256, 256);
        assert_eq!(shape.mip_levels, 9);
        // 4 bytes * (65536 + 16384 + ... + 1) = 4 * 87381
        assert_eq!(texture_bytes("rgba8unorm", shape), Some(4 * 87381));
        let mut layered = TextureShape::d2(64, 32);
        layered.depth_or_layers = 6;
        layered.sample_count = 4;
        assert_eq!(
            texture_bytes("rgba16float", layered),
            Some(64 * 32 * 8 * 6 * 4)
        );
    }

    #[test]
    fn three_d_textures_halve_depth_per_level() {
        let shape = TextureShape {
            width: 8,
            height: 8,
            depth_or_layers: 8,
            mip_levels: 2,
            sample_count: 1,
            is_3d: true,
        };
        assert_eq!(texture_bytes("r8unorm", shape), Some(512 + 64));
    }

    #[test]
    fn compressed_formats_round_up_to_blocks() {
        assert_eq!(
            texture_bytes("bc1-rgba-unorm", TextureShape::d2(5, 5)),
            Some(4 * 8)
        );
        assert_eq!(
            texture_bytes("bc7-rgba-unorm", TextureShape::d2(4, 4)),
            Some(16)
        );
        assert_eq!(block_info("astc-10x6-unorm"), Some((10, 6, 16)));
        assert_eq!(
            texture_bytes("astc-10x6-unorm", TextureShape::d2(20, 7)),
            Some(2 * 2 * 16)
        );
        assert_eq!(
            texture_bytes("etc2-rgb8unorm", TextureShape::d2(8, 8)),
            Some(32)
        );
    }

    #[test]
    fn unknown_formats_and_huge_sizes() {
        assert_eq!(block_info("not-a-format"), None);
        let mut huge = TextureShape::d2(u32::MAX, u32::MAX);
        huge.depth_or_layers = u32::MAX;
        huge.sample_count = u32::MAX;
        assert_eq!(texture_bytes("rgba32float", huge), Some(u64::MAX));
        assert_eq!(full_mip_count(1, 1), 1);
        assert_eq!(full_mip_count(4096, 17), 13);
    }
}
