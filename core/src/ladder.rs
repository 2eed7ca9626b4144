//! The out-of-memory ladder's one judgement, the same on both fronts: which
//! failure of a candidate means "too big, try the next size". Out of memory,
//! or a validation error of a size beyond the device's limits, does; any
//! other failure (a wrong usage or format, a lost device, an exception) is a
//! mistake no smaller size mends, and ends the ladder with that fault.

use crate::fault::FaultKind;
use crate::formats::{TextureShape, TextureSizeLimits};

/// Whether a candidate of `shape` that failed with a fault of `kind` merely
/// does not fit on a device with `limits`.
pub fn does_not_fit(kind: FaultKind, shape: &TextureShape, limits: &TextureSizeLimits) -> bool {
    match kind {
        FaultKind::OutOfMemory => true,
        FaultKind::Validation => shape.beyond(limits),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: TextureSizeLimits = TextureSizeLimits {
        max_2d: 8192,
        max_3d: 2048,
        max_layers: 256,
    };

    #[test]
    fn out_of_memory_and_a_size_beyond_the_limits_do_not_fit() {
        let fits = TextureShape::d2(8192, 8192);
        let too_wide = TextureShape::d2(8193, 16);
        assert!(does_not_fit(FaultKind::OutOfMemory, &fits, &LIMITS));
        assert!(does_not_fit(FaultKind::Validation, &too_wide, &LIMITS));
        let layers = TextureShape {
            depth_or_layers: 257,
            ..TextureShape::d2(16, 16)
        };
        assert!(does_not_fit(FaultKind::Validation, &layers, &LIMITS));
        let deep = TextureShape {
            depth_or_layers: 2049,
            is_3d: true,
            ..TextureShape::d2(16, 16)
        };
        assert!(does_not_fit(FaultKind::Validation, &deep, &LIMITS));
    }

    #[test]
    fn a_mistake_within_the_limits_or_a_loss_ends_the_ladder() {
        let fits = TextureShape::d2(4096, 4096);
        assert!(!does_not_fit(FaultKind::Validation, &fits, &LIMITS));
        let cube = TextureShape {
            depth_or_layers: 2048,
            is_3d: true,
            ..TextureShape::d2(2048, 2048)
        };
        assert!(!does_not_fit(FaultKind::Validation, &cube, &LIMITS));
        let too_wide = TextureShape::d2(9000, 16);
        for kind in [
            FaultKind::DeviceLost,
            FaultKind::Exception,
            FaultKind::Internal,
        ] {
            assert!(!does_not_fit(kind, &too_wide, &LIMITS), "{kind}");
        }
    }
}
