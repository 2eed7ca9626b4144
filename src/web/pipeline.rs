//! Pipelines created with the async variants; a rejected `GPUPipelineError`
//! becomes a fault naming the pipeline, never swallowed.

use std::marker::PhantomData;

use wasm_bindgen::{JsCast, JsValue};
use web_sys::{
    GpuComputePipeline, GpuComputePipelineDescriptor, GpuPipelineError, GpuRenderPipeline,
    GpuRenderPipelineDescriptor,
};

use crate::fault::{Fault, FaultKind};
use crate::web::alloc::{GpuResource, Tracked};
use crate::web::device::GuardedDevice;
use crate::web::js::{describe, enum_str};

/// A pipeline being compiled. Start several, then [`PendingPipeline::finish`] each:
/// they compile in parallel.
#[must_use = "a pipeline is only counted once finished"]
#[derive(Debug)]
pub struct PendingPipeline<T> {
    promise: js_sys::Promise,
    label: String,
    device: GuardedDevice,
    kind: PhantomData<T>,
}

fn pipeline_fault(label: &str, error: &JsValue) -> Fault {
    if let Some(pipeline_error) = error.dyn_ref::<GpuPipelineError>() {
        let message = js_sys::Reflect::get(pipeline_error, &"message".into())
            .ok()
            .and_then(|m| m.as_string())
            .unwrap_or_default();
        Fault::new(
            FaultKind::Pipeline,
            format!("{} ({})", message, enum_str(pipeline_error.reason())),
        )
        .on_object(label)
    } else {
        Fault::new(FaultKind::Pipeline, describe(error)).on_object(label)
    }
}

impl<T: GpuResource + JsCast> PendingPipeline<T> {
    /// Awaits the pipeline and counts it.
    pub async fn finish(self) -> Result<Tracked<T>, Fault> {
        match wasm_bindgen_futures::JsFuture::from(self.promise).await {
            Ok(value) => {
                let pipeline: T = value.unchecked_into();
                Ok(Tracked::register(
                    pipeline,
                    &self.label,
                    0,
                    self.device.ledger(),
                ))
            }
            Err(error) => Err(self.device.report(pipeline_fault(&self.label, &error))),
        }
    }
}

impl GuardedDevice {
    /// Starts `createRenderPipelineAsync` for a pipeline labelled `label`.
    pub fn start_render_pipeline(
        &self,
        label: &str,
        desc: &GpuRenderPipelineDescriptor,
    ) -> PendingPipeline<GpuRenderPipeline> {
        crate::web::text::set_label(desc, label);
        PendingPipeline {
            promise: self
                .raw()
                .create_render_pipeline_async(desc)
                .unchecked_into(),
            label: label.to_string(),
            device: self.clone(),
            kind: PhantomData,
        }
    }

    /// Starts `createComputePipelineAsync` for a pipeline labelled `label`.
    pub fn start_compute_pipeline(
        &self,
        label: &str,
        desc: &GpuComputePipelineDescriptor,
    ) -> PendingPipeline<GpuComputePipeline> {
        crate::web::text::set_label(desc, label);
        PendingPipeline {
            promise: self
                .raw()
                .create_compute_pipeline_async(desc)
                .unchecked_into(),
            label: label.to_string(),
            device: self.clone(),
            kind: PhantomData,
        }
    }

    /// Creates a render pipeline asynchronously.
    pub async fn create_render_pipeline(
        &self,
        label: &str,
        desc: &GpuRenderPipelineDescriptor,
    ) -> Result<Tracked<GpuRenderPipeline>, Fault> {
        self.start_render_pipeline(label, desc).finish().await
    }

    /// Creates a compute pipeline asynchronously.
    pub async fn create_compute_pipeline(
        &self,
        label: &str,
        desc: &GpuComputePipelineDescriptor,
    ) -> Result<Tracked<GpuComputePipeline>, Fault> {
        self.start_compute_pipeline(label, desc).finish().await
    }
}
