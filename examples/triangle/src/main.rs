//! A bare WebGPU triangle straight on web-sys, with no guards: the size baseline
//! the benchmark compares the demo against (built the same way, by trunk).

#[cfg(target_arch = "wasm32")]
fn main() {
    wasm_bindgen_futures::spawn_local(async {
        if let Err(e) = run().await {
            web_sys::console::error_1(&e);
        }
    });
}

#[cfg(target_arch = "wasm32")]
async fn run() -> Result<(), wasm_bindgen::JsValue> {
    use wasm_bindgen::JsCast;
    use web_sys::*;
    const WGSL: &str = "@vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {\n  let p = array(vec2f(0.0, 0.5), vec2f(-0.5, -0.5), vec2f(0.5, -0.5));\n  return vec4f(p[i], 0.0, 1.0);\n}\n@fragment fn fs() -> @location(0) vec4f { return vec4f(1.0, 0.5, 0.2, 1.0); }\n";
    let window = window().ok_or("no window")?;
    let gpu = window.navigator().gpu();
    let adapter: GpuAdapter = wasm_bindgen_futures::JsFuture::from(
        gpu.request_adapter().unchecked_into::<js_sys::Promise>(),
    )
    .await?
    .dyn_into()?;
    let device: GpuDevice = wasm_bindgen_futures::JsFuture::from(
        adapter.request_device().unchecked_into::<js_sys::Promise>(),
    )
    .await?
    .dyn_into()?;
    let canvas: HtmlCanvasElement = window
        .document()
        .ok_or("no document")?
        .get_element_by_id("scene")
        .ok_or("no canvas")?
        .dyn_into()?;
    let context: GpuCanvasContext = canvas
        .get_context("webgpu")?
        .ok_or("no context")?
        .dyn_into()?;
    let format = gpu.get_preferred_canvas_format();
    context.configure(&GpuCanvasConfiguration::new(&device, format))?;
    let module = device.create_shader_module(&GpuShaderModuleDescriptor::new(WGSL));
    let vertex = GpuVertexState::new(&module);
    vertex.set_entry_point("vs");
    let fragment = GpuFragmentState::new(
        &module,
        &[GpuColorTargetState::new(format).unchecked_into()],
    );
    fragment.set_entry_point("fs");
    let desc = GpuRenderPipelineDescriptor::new_with_gpu_auto_layout_mode(
        GpuAutoLayoutMode::Auto,
        &vertex,
    );
    desc.set_fragment(&fragment);
    let pipeline = device.create_render_pipeline(&desc)?;
    let view = context.get_current_texture()?.create_view()?;
    let encoder = device.create_command_encoder();
    let color = GpuRenderPassColorAttachment::new_with_gpu_texture_view(
        GpuLoadOp::Clear,
        GpuStoreOp::Store,
        &view,
    );
    let pass =
        encoder.begin_render_pass(&GpuRenderPassDescriptor::new(&[color.unchecked_into()]))?;
    pass.set_pipeline(&pipeline);
    pass.draw(3);
    pass.end();
    device.queue().submit(&[encoder.finish()]);
    Ok(())
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("The triangle runs in the browser (scripts/bench builds it).");
}
