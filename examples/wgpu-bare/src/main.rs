//! examples/wgpu-triangle's picture with wgpu alone: no recovery, no
//! diagnostics. Only `scripts/bench` builds it, to weigh the guard.
use wasm_bindgen::JsCast;

const SHADER: &str = "
@vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
  let corners = array(vec2f(0.0, 0.7), vec2f(-0.7, -0.6), vec2f(0.7, -0.6));
  return vec4f(corners[i], 0.0, 1.0);
}
@fragment fn fs() -> @location(0) vec4f {
  return vec4f(1.0, 0.55, 0.1, 1.0);
}
";

fn main() {
    wasm_bindgen_futures::spawn_local(draw());
}

async fn draw() {
    let Some(canvas) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id("canvas"))
        .and_then(|e| e.dyn_into::<web_sys::HtmlCanvasElement>().ok())
    else {
        return;
    };
    let (width, height) = (canvas.width(), canvas.height());
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
    descriptor.backends = wgpu::Backends::BROWSER_WEBGPU;
    let instance = wgpu::Instance::new(descriptor);
    let Ok(surface) = instance.create_surface(wgpu::SurfaceTarget::Canvas(canvas)) else {
        return;
    };
    let Ok(adapter) = instance
        .request_adapter(&wgpu::RequestAdapterOptions {
            compatible_surface: Some(&surface),
            ..Default::default()
        })
        .await
    else {
        return;
    };
    let Ok((device, queue)) = adapter.request_device(&Default::default()).await else {
        return;
    };
    let Some(config) = surface.get_default_config(&adapter, width, height) else {
        return;
    };
    surface.configure(&device, &config);
    let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("triangle"),
        source: wgpu::ShaderSource::Wgsl(SHADER.into()),
    });
    let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some("triangle"),
        layout: None,
        vertex: wgpu::VertexState {
            module: &shader,
            entry_point: Some("vs"),
            compilation_options: Default::default(),
            buffers: &[],
        },
        fragment: Some(wgpu::FragmentState {
            module: &shader,
            entry_point: Some("fs"),
            compilation_options: Default::default(),
            targets: &[Some(config.format.into())],
        }),
        primitive: Default::default(),
        depth_stencil: None,
        multisample: Default::default(),
        multiview_mask: None,
        cache: None,
    });
    let wgpu::CurrentSurfaceTexture::Success(texture) = surface.get_current_texture() else {
        return;
    };
    let view = texture.texture.create_view(&Default::default());
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("triangle"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color {
                        r: 0.05,
                        g: 0.05,
                        b: 0.1,
                        a: 1.0,
                    }),
                    store: wgpu::StoreOp::Store,
                },
            })],
            ..Default::default()
        });
        pass.set_pipeline(&pipeline);
        pass.draw(0..3, 0..1);
    }
    queue.submit([encoder.finish()]);
    queue.present(texture);
    // For the bench: when the picture was up.
    if let Some(window) = web_sys::window() {
        let now = window.performance().map_or(f64::NAN, |p| p.now());
        let _ = js_sys::Reflect::set(&window, &"bareFirstFrameMs".into(), &now.into());
    }
    std::mem::forget((device, queue, surface, instance));
}
