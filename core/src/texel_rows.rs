//! Rows of texels between a texture and a buffer. A copy from a texture into a
//! buffer needs each row's byte count padded to 256 (WebGPU's `bytesPerRow`
//! alignment); `writeTexture` takes rows as they are. A snapshot of a texture
//! reads padded rows back, keeps them tight, and writes them back tight.

/// WebGPU's alignment of `bytesPerRow` in a copy between a texture and a buffer.
pub const BYTES_PER_ROW_ALIGNMENT: u32 = 256;

/// The rows of a 2D region: `width` x `height` texels of `bytes_per_texel`
/// bytes each (4 for `rgba8unorm` or `r32float`, 8 for `rgba16float`, 16 for
/// `rgba32float`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TexelRows {
    /// Texels in a row.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// Bytes of one texel.
    pub bytes_per_texel: u32,
}

impl TexelRows {
    /// The rows of a `width` x `height` region of `bytes_per_texel`-byte
    /// texels; `Err` saying why when a size is zero or a row's padded byte
    /// count does not fit in `u32`.
    pub fn new(width: u32, height: u32, bytes_per_texel: u32) -> Result<Self, String> {
        if width == 0 || height == 0 || bytes_per_texel == 0 {
            return Err(format!(
                "a {width} x {height} region of {bytes_per_texel}-byte texels is empty"
            ));
        }
        let rows = TexelRows {
            width,
            height,
            bytes_per_texel,
        };
        let fits = u32::try_from(rows.padded_row_u64()).is_ok();
        if !fits {
            return Err(format!(
                "a row of {width} {bytes_per_texel}-byte texels is too long"
            ));
        }
        Ok(rows)
    }

    fn padded_row_u64(&self) -> u64 {
        let tight = u64::from(self.width) * u64::from(self.bytes_per_texel);
        let align = u64::from(BYTES_PER_ROW_ALIGNMENT);
        tight.div_ceil(align) * align
    }

    /// Bytes of one row as the texels are.
    pub fn tight_row(&self) -> u32 {
        self.width * self.bytes_per_texel
    }

    /// Bytes of one row in a copy into a buffer (padded to 256).
    pub fn padded_row(&self) -> u32 {
        self.padded_row_u64() as u32
    }

    /// Bytes of every row, tight.
    pub fn tight_len(&self) -> u64 {
        u64::from(self.tight_row()) * u64::from(self.height)
    }

    /// Bytes of the buffer a copy of every row needs (the last row padded
    /// too).
    pub fn padded_len(&self) -> u64 {
        u64::from(self.padded_row()) * u64::from(self.height)
    }

    /// The tight rows of `padded` (rows `padded_row()` bytes apart); `None`
    /// when it is too short.
    pub fn strip(&self, padded: &[u8]) -> Option<Vec<u8>> {
        let (tight, pitch) = (self.tight_row() as usize, self.padded_row() as usize);
        if (padded.len() as u64) < self.padded_len() {
            return None;
        }
        let mut out = Vec::with_capacity(self.tight_len() as usize);
        for row in padded.chunks(pitch).take(self.height as usize) {
            out.extend_from_slice(&row[..tight]);
        }
        Some(out)
    }

    /// `tight` with each row padded to `padded_row()` bytes (zeros); `None`
    /// when it is not `tight_len()` bytes.
    pub fn pad(&self, tight: &[u8]) -> Option<Vec<u8>> {
        if tight.len() as u64 != self.tight_len() {
            return None;
        }
        let (row, pitch) = (self.tight_row() as usize, self.padded_row() as usize);
        let mut out = vec![0; self.padded_len() as usize];
        for (from, to) in tight.chunks(row).zip(out.chunks_mut(pitch)) {
            to[..row].copy_from_slice(from);
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_padded_to_256_and_stripped_back() {
        let rows = TexelRows::new(70, 3, 4).unwrap();
        assert_eq!((rows.tight_row(), rows.padded_row()), (280, 512));
        assert_eq!((rows.tight_len(), rows.padded_len()), (840, 1536));
        let tight: Vec<u8> = (0..840).map(|i| (i % 251) as u8).collect();
        let padded = rows.pad(&tight).unwrap();
        assert_eq!(padded.len(), 1536);
        assert_eq!(&padded[512..512 + 280], &tight[280..560]);
        assert!(padded[280..512].iter().all(|b| *b == 0));
        assert_eq!(rows.strip(&padded).unwrap(), tight);
        assert_eq!(rows.strip(&padded[..1000]), None);
        assert_eq!(rows.pad(&tight[1..]), None);
    }

    #[test]
    fn a_row_already_aligned_is_not_padded() {
        let rows = TexelRows::new(64, 2, 4).unwrap();
        assert_eq!(rows.padded_row(), 256);
        let tight = vec![7; 512];
        assert_eq!(rows.pad(&tight).unwrap(), tight);
    }

    #[test]
    fn empty_or_overlong_regions_are_refused_with_the_reason() {
        assert!(TexelRows::new(0, 1, 4).unwrap_err().contains("empty"));
        assert!(TexelRows::new(u32::MAX, 1, 16)
            .unwrap_err()
            .contains("too long"));
    }
}
