//! What webgpu-guard-wgpu costs on the desktop, headless on the machine's
//! first Vulkan (or Metal, DX12) adapter: recovery time (an injected loss,
//! and a forced recovery, to the first frame on the new device) against the
//! rebuild itself, and the time of a frame with and without the guard (the
//! same drawing, the GPU waited for at the end of each frame in both).
//! `cargo run --release -p webgpu-guard-wgpu --example desktop-bench`;
//! `scripts/bench` runs it.

#[cfg(not(target_arch = "wasm32"))]
mod desktop {
    use std::cell::Cell;
    use std::future::Future;
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    use std::time::{Duration, Instant};

    use webgpu_guard_wgpu::{App, Fault, Frame, Gpu, Runtime, RuntimeOptions, Tracked};

    const SIDE: u32 = 512;
    const LOSSES: usize = 10;
    const FRAMES: u64 = 600;

    const SHADER: &str = "
@group(0) @binding(0) var<uniform> turn: vec4f;
@vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
  let corners = array(vec2f(0.0, 0.8), vec2f(-0.7, -0.6), vec2f(0.7, -0.6));
  let c = corners[i];
  let a = turn.x;
  return vec4f(c.x * cos(a) - c.y * sin(a), c.x * sin(a) + c.y * cos(a), 0.0, 1.0);
}
@fragment fn fs(@builtin(position) p: vec4f) -> @location(0) vec4f {
  return vec4f(p.x / 512.0, p.y / 512.0, 0.6, 1.0);
}
";

    /// A turning triangle; the angle is the state kept across losses.
    struct Scene {
        turn: Cell<f32>,
    }

    struct Drawn {
        pipeline: wgpu::RenderPipeline,
        uniforms: Tracked<wgpu::Buffer>,
        group: wgpu::BindGroup,
    }

    fn pipeline(device: &wgpu::Device, format: wgpu::TextureFormat) -> wgpu::RenderPipeline {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("scene"),
            source: wgpu::ShaderSource::Wgsl(SHADER.into()),
        });
        device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("scene"),
            layout: None,
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("fs"),
                compilation_options: Default::default(),
                targets: &[Some(format.into())],
            }),
            primitive: Default::default(),
            depth_stencil: None,
            multisample: Default::default(),
            multiview_mask: None,
            cache: None,
        })
    }

    fn group(
        device: &wgpu::Device,
        pipeline: &wgpu::RenderPipeline,
        buffer: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("scene"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: buffer.as_entire_binding(),
            }],
        })
    }

    /// One frame's work, the same with and without the guard: the angle
    /// written, the triangle drawn, the GPU waited for.
    fn draw(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        pipeline: &wgpu::RenderPipeline,
        uniforms: &wgpu::Buffer,
        group: &wgpu::BindGroup,
        view: &wgpu::TextureView,
        turn: f32,
    ) {
        let mut bytes = [0u8; 16];
        bytes[..4].copy_from_slice(&turn.to_le_bytes());
        queue.write_buffer(uniforms, 0, &bytes);
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("scene"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                        store: wgpu::StoreOp::Store,
                    },
                })],
                ..Default::default()
            });
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, group, &[]);
            pass.draw(0..3, 0..1);
        }
        queue.submit([encoder.finish()]);
        let _ = device.poll(wgpu::PollType::wait_indefinitely());
    }

    impl App for Scene {
        type Resources = Drawn;

        async fn build(&self, gpu: &Gpu) -> Result<Drawn, Fault> {
            let phase = gpu.phase("scene");
            let pipeline = pipeline(&gpu.device, gpu.format);
            let uniforms = gpu.create_buffer(&wgpu::BufferDescriptor {
                label: Some("turn"),
                size: 16,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let group = group(&gpu.device, &pipeline, &uniforms);
            phase.end().await?;
            Ok(Drawn {
                pipeline,
                uniforms,
                group,
            })
        }

        fn frame(&self, gpu: &Gpu, d: &mut Drawn, frame: &Frame) -> Result<(), Fault> {
            self.turn.set(self.turn.get() + 0.01);
            draw(
                &gpu.device,
                &gpu.queue,
                &d.pipeline,
                &d.uniforms,
                &d.group,
                &frame.view,
                self.turn.get(),
            );
            Ok(())
        }
    }

    fn median(mut values: Vec<f64>) -> f64 {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    }

    fn quiet(runtime: &Runtime<Scene>) {
        runtime.faults().set_writer(Some(Box::new(|_, _| {})));
    }

    /// Loss to first frame, and rebuild, in ms, for `LOSSES` losses made by `lose`.
    fn recoveries(lose: fn(&Runtime<Scene>)) -> (Vec<f64>, Vec<f64>) {
        let mut options = RuntimeOptions::default();
        options.supervisor.crash_loop_deaths = u32::MAX;
        let runtime = Runtime::headless(
            Scene {
                turn: Cell::new(0.0),
            },
            SIDE,
            SIDE,
            options,
        );
        quiet(&runtime);
        runtime.start();
        let ready = |r: &Runtime<Scene>| r.status().frames > 2;
        assert!(
            runtime.run_until(ready, Duration::from_secs(60)),
            "no frame"
        );
        let (mut recovery, mut rebuild) = (Vec::new(), Vec::new());
        for n in 0..LOSSES as u64 {
            let frames = runtime.status().frames;
            lose(&runtime);
            let back = |r: &Runtime<Scene>| {
                let s = r.status();
                s.generation == n + 2 && s.frames > frames
            };
            assert!(
                runtime.run_until(back, Duration::from_secs(60)),
                "no recovery: {:?}\n{:#?}",
                runtime.status(),
                runtime.faults().recent_lines()
            );
            let status = runtime.status();
            recovery.extend(status.last_recovery_ms);
            rebuild.extend(status.last_rebuild_ms);
        }
        (recovery, rebuild)
    }

    /// Milliseconds a frame, drawn by the runtime as fast as it can.
    fn guarded_frame_ms() -> f64 {
        let runtime = Runtime::headless(
            Scene {
                turn: Cell::new(0.0),
            },
            SIDE,
            SIDE,
            RuntimeOptions::default(),
        );
        quiet(&runtime);
        runtime.set_frame_interval(Duration::ZERO);
        runtime.start();
        assert!(runtime.run_until(|r| r.status().frames > 10, Duration::from_secs(60)));
        let start_frames = runtime.status().frames;
        let started = Instant::now();
        let done = |r: &Runtime<Scene>| r.status().frames >= start_frames + FRAMES;
        assert!(runtime.run_until(done, Duration::from_secs(600)));
        started.elapsed().as_secs_f64() * 1000.0 / FRAMES as f64
    }

    /// Runs `future`, which wgpu's native calls make ready at once or soon.
    fn block_on<F: Future>(future: F) -> F::Output {
        struct Unpark(std::thread::Thread);
        impl Wake for Unpark {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut context = Context::from_waker(&waker);
        let mut future = std::pin::pin!(future);
        loop {
            if let Poll::Ready(value) = future.as_mut().poll(&mut context) {
                return value;
            }
            std::thread::park();
        }
    }

    /// Milliseconds a frame, the same drawing in a plain wgpu loop.
    fn bare_frame_ms() -> f64 {
        let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
        descriptor.backends = wgpu::Backends::PRIMARY;
        let instance = wgpu::Instance::new(descriptor.with_env());
        let adapter = block_on(instance.request_adapter(&Default::default())).expect("an adapter");
        let (device, queue) =
            block_on(adapter.request_device(&Default::default())).expect("a device");
        let format = wgpu::TextureFormat::Rgba8UnormSrgb;
        let target = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("target"),
            size: wgpu::Extent3d {
                width: SIDE,
                height: SIDE,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        });
        let pipeline = pipeline(&device, format);
        let uniforms = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("turn"),
            size: 16,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let group = group(&device, &pipeline, &uniforms);
        let mut turn = 0.0;
        let mut frame = || {
            turn += 0.01;
            let view = target.create_view(&Default::default());
            draw(&device, &queue, &pipeline, &uniforms, &group, &view, turn);
        };
        for _ in 0..10 {
            frame();
        }
        let started = Instant::now();
        for _ in 0..FRAMES {
            frame();
        }
        started.elapsed().as_secs_f64() * 1000.0 / FRAMES as f64
    }

    pub fn run() {
        let (injected, injected_rebuild) = recoveries(|r| {
            r.inject_loss();
        });
        let (forced, forced_rebuild) = recoveries(|r| {
            r.force_recovery();
        });
        let line = |what: &str, recovery: Vec<f64>, rebuild: Vec<f64>| {
            let (recovery, rebuild) = (median(recovery), median(rebuild));
            println!(
                "  {what:<34} {recovery:>7.1} ms to the first frame, rebuild {rebuild:>7.1} ms (x{:.2})",
                recovery / rebuild
            );
        };
        println!("desktop (headless, {SIDE}x{SIDE}, medians of {LOSSES}):");
        line(
            "injected loss (Device::destroy)",
            injected,
            injected_rebuild,
        );
        line("forced recovery (matarGPU)", forced, forced_rebuild);
        let bare = bare_frame_ms();
        let guarded = guarded_frame_ms();
        println!(
            "  frame ({FRAMES} frames, GPU waited for): bare wgpu {:.3} ms, with the guard {:.3} ms (x{:.2})",
            bare,
            guarded,
            guarded / bare
        );
    }
}

fn main() {
    #[cfg(not(target_arch = "wasm32"))]
    desktop::run();
}
