//! What the desktop and browser tests share: drawing a frame, a texture
//! descriptor, and scenarios written once for both platforms.
#![allow(dead_code)] // Each test binary uses its own part.

use webgpu_guard_wgpu::{Fault, FaultKind, Frame, Gpu};

/// Clears the frame to `colour`.
pub fn clear(gpu: &Gpu, frame: &Frame, colour: wgpu::Color) {
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some("clear"),
        color_attachments: &[Some(wgpu::RenderPassColorAttachment {
            view: &frame.view,
            depth_slice: None,
            resolve_target: None,
            ops: wgpu::Operations {
                load: wgpu::LoadOp::Clear(colour),
                store: wgpu::StoreOp::Store,
            },
        })],
        ..Default::default()
    });
    gpu.queue.submit([encoder.finish()]);
}

/// A texture of `side` x `side` texels, labelled `label`.
pub fn square(label: &'static str, side: u32) -> wgpu::TextureDescriptor<'static> {
    wgpu::TextureDescriptor {
        label: Some(label),
        size: wgpu::Extent3d {
            width: side,
            height: side,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8Unorm,
        usage: wgpu::TextureUsages::TEXTURE_BINDING,
        view_formats: &[],
    }
}

/// A missed expectation, as the fault a build's work returns (a panic would
/// be a trap in the browser, seen only as a build that never ends).
fn missed(what: &str) -> Fault {
    Fault::new(FaultKind::Exception, format!("missed: {what}"))
}

/// On a device destroyed meanwhile: the liveness probe, a phase, an inner
/// phase an outer one ended first, then the ladder, whose answer is returned
/// (`Err` with "no size fits" when none of it read silence as success).
pub async fn phases_and_the_ladder_on_a_destroyed_device(gpu: &Gpu) -> Result<(), Fault> {
    if !gpu.confirm_alive().await {
        return Err(missed("a live device read as lost"));
    }
    gpu.device.destroy();
    if gpu.confirm_alive().await {
        return Err(missed("a destroyed device read as alive"));
    }
    let phase = gpu.phase("after the loss");
    let _buffer = gpu.create_buffer(&wgpu::BufferDescriptor {
        label: Some("on-a-dead-device"),
        size: 16,
        usage: wgpu::BufferUsages::UNIFORM,
        mapped_at_creation: false,
    });
    match phase.end().await {
        Err(fault)
            if fault.kind == FaultKind::DeviceLost
                && fault.origin.phase.as_deref() == Some("after the loss") => {}
        other => return Err(missed(&format!("a phase on a lost device: {other:?}"))),
    }
    let outer = gpu.phase("outer");
    let inner = gpu.phase("inner");
    if outer.end().await.is_ok() {
        return Err(missed("an outer phase on a lost device succeeded"));
    }
    match inner.end().await {
        Err(fault) if fault.kind == FaultKind::DeviceLost => {}
        other => {
            return Err(missed(&format!(
                "an inner phase on a lost device: {other:?}"
            )))
        }
    }
    gpu.create_texture_fitting(&[square("doomed", 64)])
        .await
        .map(|_| ())
}
