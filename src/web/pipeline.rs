//! Pipelines created with the async variants; a rejected `GPUPipelineError`
//! becomes a fault naming the pipeline, never swallowed: a pipeline dropped
//! before it was finished (a `?` between two starts, a cancelled future) still
//! hands its rejection to the fault sink, and none is ever an unhandled
//! rejection.

use std::marker::PhantomData;

use wasm_bindgen::{JsCast, JsValue};
use web_sys::{
    GpuComputePipeline, GpuComputePipelineDescriptor, GpuPipelineError, GpuRenderPipeline,
    GpuRenderPipelineDescriptor,
};

use crate::fault::{Fault, FaultKind};
use crate::web::alloc::{GpuResource, Tracked};
use crate::web::device::GuardedDevice;
use crate::web::js::{describe, text_field};

/// A pipeline being compiled. Start several, then [`PendingPipeline::finish`] each:
/// they compile in parallel.
///
/// Dropped unfinished (a `?` between two starts, a future cancelled while it
/// finished one), it lets the creation settle on its own: a rejection still
/// reaches the fault sink, once, and never the page as an unhandled
/// rejection; a pipeline created meanwhile is let go.
#[must_use = "a pipeline is only counted once finished"]
#[derive(Debug)]
pub struct PendingPipeline<T> {
    promise: js_sys::Promise,
    /// Whether `finish` has read the promise's outcome (dropped before that, the
    /// creation is detached).
    settled: bool,
    label: String,
    device: GuardedDevice,
    kind: PhantomData<T>,
}

fn pipeline_fault(label: &str, error: &JsValue) -> Fault {
    if let Some(pipeline_error) = error.dyn_ref::<GpuPipelineError>() {
        Fault::new(
            FaultKind::Pipeline,
            format!(
                "{} ({})",
                text_field(pipeline_error, "message"),
                text_field(pipeline_error, "reason")
            ),
        )
        .on_object(label)
    } else {
        Fault::new(FaultKind::Pipeline, describe(error)).on_object(label)
    }
}

impl<T: GpuResource + JsCast> PendingPipeline<T> {
    /// Awaits the pipeline and counts it. A rejection is reported to the fault
    /// sink (once) and returned.
    pub async fn finish(mut self) -> Result<Tracked<T>, Fault> {
        // `self` stays in the future until the outcome is read: cancelled
        // before that, its `Drop` detaches the creation.
        let answer = crate::web::wait::settled(&self.promise).await;
        self.settled = true;
        match answer {
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

impl<T> Drop for PendingPipeline<T> {
    /// An unfinished pipeline is detached the way unawaited pops are
    /// ([`crate::web::scope::PendingPops::detach`]): its promise is observed now,
    /// and a rejection goes to the fault sink when it comes.
    fn drop(&mut self) {
        if std::mem::replace(&mut self.settled, true) {
            return;
        }
        let settling = crate::web::wait::settled(&self.promise);
        let label = std::mem::take(&mut self.label);
        crate::web::scope::detach_to(self.device.faults().clone(), async move {
            match settling.await {
                Ok(_) => Vec::new(),
                Err(error) => vec![pipeline_fault(&label, &error)],
            }
        });
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
            settled: false,
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
            settled: false,
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
