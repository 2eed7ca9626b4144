//! Classifies a `GPUError` by its class (`instanceof`), never by message text.

use wasm_bindgen::JsCast;
use web_sys::{GpuError, GpuOutOfMemoryError, GpuValidationError};

use crate::fault::{Fault, FaultKind};

/// The kind of a `GPUError`: `GPUInternalError` and any subclass a future
/// implementation adds count as internal.
pub fn classify(error: &GpuError) -> FaultKind {
    if error.is_instance_of::<GpuValidationError>() {
        FaultKind::Validation
    } else if error.is_instance_of::<GpuOutOfMemoryError>() {
        FaultKind::OutOfMemory
    } else {
        FaultKind::Internal
    }
}

/// A [`Fault`] from a `GPUError`.
pub fn to_fault(error: &GpuError) -> Fault {
    Fault::new(classify(error), error.message())
}
