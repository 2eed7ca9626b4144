//! Typed sets of WebGPU's usage flags: a buffer's usage, a texture's usage and
//! a binding's shader stages are three different sets, so a texture flag cannot
//! be passed where a buffer's usage goes (`GPUTextureUsage.COPY_SRC` is 0x01,
//! `GPUBufferUsage.COPY_SRC` 0x04). Combine with `|`; [`bits`](BufferUsages::bits)
//! gives the number WebGPU (and `web-sys`) takes.
//!
//! ```
//! use webgpu_guard_core::usage::{BufferUsages, TextureUsages};
//! let uniform = BufferUsages::UNIFORM | BufferUsages::COPY_DST;
//! assert_eq!(uniform.bits(), 0x48);
//! assert!(uniform.contains(BufferUsages::COPY_DST));
//! assert_eq!(TextureUsages::COPY_SRC.bits(), 0x01);
//! ```

use std::fmt;
use std::ops::{BitOr, BitOrAssign};

macro_rules! flag_set {
    ($(#[$doc:meta])* $name:ident, { $($(#[$fdoc:meta])* $flag:ident = $bit:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name(u32);

        impl $name {
            $($(#[$fdoc])* pub const $flag: $name = $name($bit);)*

            /// The empty set.
            pub const fn empty() -> Self {
                $name(0)
            }

            /// The flags as WebGPU numbers them.
            pub const fn bits(self) -> u32 {
                self.0
            }

            /// The set of WebGPU's number `bits` (as an object's `usage` reads).
            pub const fn from_bits(bits: u32) -> Self {
                $name(bits)
            }

            /// Whether every flag of `other` is in `self`.
            pub const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }

            const NAMES: &'static [(&'static str, u32)] = &[$((stringify!($flag), $bit),)*];
        }

        impl BitOr for $name {
            type Output = Self;
            fn bitor(self, other: Self) -> Self {
                $name(self.0 | other.0)
            }
        }

        impl BitOrAssign for $name {
            fn bitor_assign(&mut self, other: Self) {
                self.0 |= other.0;
            }
        }

        impl From<$name> for u32 {
            fn from(set: $name) -> u32 {
                set.0
            }
        }

        impl fmt::Debug for $name {
            #[doc = concat!("`", stringify!($name), "(A | B)`: the flags' names, unknown bits in hex.")]
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}(", stringify!($name))?;
                let mut rest = self.0;
                let mut first = true;
                for (name, bit) in $name::NAMES {
                    if rest & bit != 0 {
                        if !first {
                            f.write_str(" | ")?;
                        }
                        f.write_str(name)?;
                        rest &= !bit;
                        first = false;
                    }
                }
                if rest != 0 {
                    if !first {
                        f.write_str(" | ")?;
                    }
                    write!(f, "{rest:#x}")?;
                }
                f.write_str(")")
            }
        }
    };
}

flag_set!(
    /// `GPUBufferUsage` flags.
    BufferUsages, {
        /// `MAP_READ`.
        MAP_READ = 0x0001,
        /// `MAP_WRITE`.
        MAP_WRITE = 0x0002,
        /// `COPY_SRC`.
        COPY_SRC = 0x0004,
        /// `COPY_DST`.
        COPY_DST = 0x0008,
        /// `INDEX`.
        INDEX = 0x0010,
        /// `VERTEX`.
        VERTEX = 0x0020,
        /// `UNIFORM`.
        UNIFORM = 0x0040,
        /// `STORAGE`.
        STORAGE = 0x0080,
        /// `INDIRECT`.
        INDIRECT = 0x0100,
        /// `QUERY_RESOLVE`.
        QUERY_RESOLVE = 0x0200,
    }
);

flag_set!(
    /// `GPUTextureUsage` flags.
    TextureUsages, {
        /// `COPY_SRC`.
        COPY_SRC = 0x01,
        /// `COPY_DST`.
        COPY_DST = 0x02,
        /// `TEXTURE_BINDING`.
        TEXTURE_BINDING = 0x04,
        /// `STORAGE_BINDING`.
        STORAGE_BINDING = 0x08,
        /// `RENDER_ATTACHMENT`.
        RENDER_ATTACHMENT = 0x10,
    }
);

flag_set!(
    /// `GPUShaderStage` flags (a binding's visibility).
    ShaderStages, {
        /// `VERTEX`.
        VERTEX = 0x1,
        /// `FRAGMENT`.
        FRAGMENT = 0x2,
        /// `COMPUTE`.
        COMPUTE = 0x4,
    }
);

flag_set!(
    /// `GPUMapMode` flags (what `webgpu_guard::web::GuardedDevice::map_async` maps for).
    MapModes, {
        /// `READ`.
        READ = 0x1,
        /// `WRITE`.
        WRITE = 0x2,
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_combine_and_read_as_webgpu_numbers_them() {
        let mut usage = BufferUsages::STORAGE;
        usage |= BufferUsages::COPY_SRC;
        assert_eq!(usage.bits(), 0x84);
        assert_eq!(u32::from(usage), 0x84);
        assert!(usage.contains(BufferUsages::STORAGE));
        assert!(!usage.contains(BufferUsages::STORAGE | BufferUsages::MAP_READ));
        assert!(usage.contains(BufferUsages::empty()));
        assert_eq!(
            (TextureUsages::RENDER_ATTACHMENT | TextureUsages::TEXTURE_BINDING).bits(),
            0x14
        );
        assert_eq!((ShaderStages::VERTEX | ShaderStages::FRAGMENT).bits(), 0x3);
    }

    #[test]
    fn a_set_prints_its_flag_names() {
        assert_eq!(
            format!("{:?}", BufferUsages::UNIFORM | BufferUsages::COPY_DST),
            "BufferUsages(COPY_DST | UNIFORM)"
        );
        assert_eq!(format!("{:?}", TextureUsages::empty()), "TextureUsages()");
        assert_eq!(
            format!("{:?}", ShaderStages::COMPUTE),
            "ShaderStages(COMPUTE)"
        );
    }
}
