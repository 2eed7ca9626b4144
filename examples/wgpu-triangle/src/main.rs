//! A triangle that survives the loss of its GPU device, drawn with wgpu: one
//! source for the browser (`trunk serve`) and the desktop (`cargo run`).
use webgpu_guard_wgpu::{App, Fault, Frame, Gpu, Runtime, RuntimeOptions};

const SHADER: &str = "
@vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
  let corners = array(vec2f(0.0, 0.7), vec2f(-0.7, -0.6), vec2f(0.7, -0.6));
  return vec4f(corners[i], 0.0, 1.0);
}
@fragment fn fs() -> @location(0) vec4f {
  return vec4f(1.0, 0.55, 0.1, 1.0);
}
";

/// Application state: kept when the device is lost (this one has none).
struct Hello;

/// Every GPU object: built again on each new device.
struct Resources {
    pipeline: wgpu::RenderPipeline,
}

impl App for Hello {
    type Resources = Resources;

    async fn build(&self, gpu: &Gpu) -> Result<Resources, Fault> {
        let shader = gpu.create_shader_module("triangle", SHADER).await?;
        let phase = gpu.phase("pipeline");
        let pipeline = gpu
            .device
            .create_render_pipeline(&wgpu::RenderPipelineDescriptor {
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
                    targets: &[Some(gpu.format.into())],
                }),
                primitive: Default::default(),
                depth_stencil: None,
                multisample: Default::default(),
                multiview_mask: None,
                cache: None,
            });
        phase.end().await?;
        Ok(Resources { pipeline })
    }

    fn frame(&self, gpu: &Gpu, r: &mut Resources, frame: &Frame) -> Result<(), Fault> {
        let mut encoder = gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("frame"),
            });
        {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("triangle"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: &frame.view,
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
            pass.set_pipeline(&r.pipeline);
            pass.draw(0..3, 0..1);
        }
        gpu.queue.submit([encoder.finish()]);
        Ok(())
    }
}

/// In the browser: on the page's canvas.
#[cfg(target_arch = "wasm32")]
fn main() {
    let mut options = RuntimeOptions::default();
    // `?crashwindow=0`: no crash-loop rule (the end-to-end tests crash the
    // GPU process on purpose, ten times in a row).
    let search = web_sys::window().and_then(|w| w.location().search().ok());
    if search.is_some_and(|s| s.contains("crashwindow=0")) {
        options.supervisor.crash_loop_deaths = u32::MAX;
    }
    match Runtime::on_canvas_id(Hello, "canvas", options) {
        Ok(runtime) => {
            // matarGPU(), gpuStatus(), gpuStop() and gpuStart() in the console.
            runtime.expose_console();
            // The runtime keeps itself alive until gpuStop().
            runtime.start();
        }
        Err(fault) => webgpu_guard_wgpu::web::log::error(&fault.to_string()),
    }
}

/// On the desktop: in a window. F8 loses the device (as a driver reset
/// would), F9 forces a recovery (`matarGPU()`), F10 writes the status.
#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let runtime = Runtime::windowed(Hello, RuntimeOptions::default());
    let window = webgpu_guard_wgpu::WindowOptions::new("hello, webgpu-guard-wgpu", 480, 360);
    if let Err(fault) = runtime.run(window) {
        eprintln!("{fault}");
        std::process::exit(1);
    }
}
