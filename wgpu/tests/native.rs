//! webgpu-guard-wgpu on the desktop, through its public API only: headless
//! runtimes on a real Vulkan device (lavapipe, Mesa's software driver, where
//! no GPU is), drawing offscreen and read back, with applications made to
//! fail on purpose.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use common::{clear, square};
use webgpu_guard_wgpu::snapshot::TexelRows;
use webgpu_guard_wgpu::{
    App, DeviceState, Fault, FaultKind, Frame, Gpu, Runtime, RuntimeOptions, Status,
};

const SIDE: u32 = 64;

/// Turns `runtime`'s loop until `done` holds; fails the test after 60 s.
fn until<A: App>(runtime: &Runtime<A>, what: &str, done: impl FnMut(&Runtime<A>) -> bool) {
    assert!(
        runtime.run_until(done, Duration::from_secs(60)),
        "timed out waiting for {what}: {:?}",
        runtime.status()
    );
}

/// Turns `runtime`'s loop `count` times (each turn runs what is due and what
/// was woken): for what must not happen, a number of chances rather than a
/// stretch of time, which a busy machine may fill with no turn at all.
fn turns<A: App>(runtime: &Runtime<A>, count: u32) {
    let mut turned = 0;
    let done = runtime.run_until(
        |_| {
            turned += 1;
            turned >= count
        },
        Duration::from_secs(60),
    );
    assert!(done, "{count} turns took more than 60 s");
}

/// Options for tests that lose devices quickly on purpose: no crash-loop
/// rule (losses soon after a first frame are what these tests make).
fn losses_allowed() -> RuntimeOptions {
    let mut options = RuntimeOptions::default();
    options.supervisor.crash_loop_deaths = u32::MAX;
    options
}

const TRIANGLE_WGSL: &str = "
struct Paint { colour: vec4f, turn: vec4f }
@group(0) @binding(0) var<uniform> paint: Paint;

@vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
  let corners = array(vec2f(0.0, 0.8), vec2f(-0.7, -0.6), vec2f(0.7, -0.6));
  let c = corners[i];
  let a = paint.turn.x;
  return vec4f(c.x * cos(a) - c.y * sin(a), c.x * sin(a) + c.y * cos(a), 0.0, 1.0);
}

@fragment fn fs(@builtin(position) p: vec4f) -> @location(0) vec4f {
  return paint.colour * vec4f(p.x / 64.0, p.y / 64.0, 1.0, 1.0);
}
";

/// A triangle whose colour and angle are the application's state (kept
/// across losses); `build` fails as `fail_build` says.
struct Painter {
    colour: [f32; 4],
    turn: Cell<f32>,
    builds: Cell<u32>,
    /// Builds (counted from 1) that fail with this fault.
    fail_build: RefCell<Vec<(u32, FaultKind)>>,
    /// A frame number whose `frame` panics.
    panic_at_frame: Option<u64>,
    /// Where else a panic comes from.
    panic_in: Option<&'static str>,
    /// Calls of `frame`.
    frame_calls: Cell<u64>,
}

impl Painter {
    fn new() -> Self {
        Painter {
            colour: [0.9, 0.4, 0.1, 1.0],
            turn: Cell::new(0.3),
            builds: Cell::new(0),
            fail_build: RefCell::default(),
            panic_at_frame: None,
            panic_in: None,
            frame_calls: Cell::new(0),
        }
    }
}

struct Drawn {
    pipeline: wgpu::RenderPipeline,
    uniforms: webgpu_guard_wgpu::Tracked<wgpu::Buffer>,
    bind_group: wgpu::BindGroup,
}

impl App for Painter {
    type Resources = Drawn;

    async fn build(&self, gpu: &Gpu) -> Result<Drawn, Fault> {
        let build = self.builds.get() + 1;
        self.builds.set(build);
        if self.panic_in == Some("build") {
            // After an await, as a real build would.
            let _ = gpu.create_shader_module("triangle", TRIANGLE_WGSL).await;
            panic!("the build broke on purpose");
        }
        if let Some((_, kind)) = self.fail_build.borrow().iter().find(|(n, _)| *n == build) {
            return Err(Fault::new(
                *kind,
                format!("build {build} failed on purpose"),
            ));
        }
        let phase = gpu.phase("painter");
        let shader = gpu.create_shader_module("triangle", TRIANGLE_WGSL).await?;
        let uniforms = gpu.create_buffer(&wgpu::BufferDescriptor {
            label: Some("paint"),
            size: 32,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
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
        let bind_group = gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("paint"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: uniforms.as_entire_binding(),
            }],
        });
        phase.end().await?;
        Ok(Drawn {
            pipeline,
            uniforms,
            bind_group,
        })
    }

    fn frame(&self, gpu: &Gpu, drawn: &mut Drawn, frame: &Frame) -> Result<(), Fault> {
        self.frame_calls.set(self.frame_calls.get() + 1);
        if Some(frame.number) == self.panic_at_frame {
            panic!("the frame broke on purpose");
        }
        let mut paint = [0f32; 8];
        paint[..4].copy_from_slice(&self.colour);
        paint[4] = self.turn.get();
        let bytes: Vec<u8> = paint.iter().flat_map(|f| f.to_le_bytes()).collect();
        gpu.queue.write_buffer(&drawn.uniforms, 0, &bytes);
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
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
                            g: 0.1,
                            b: 0.2,
                            a: 1.0,
                        }),
                        store: wgpu::StoreOp::Store,
                    },
                })],
                ..Default::default()
            });
            pass.set_pipeline(&drawn.pipeline);
            pass.set_bind_group(0, &drawn.bind_group, &[]);
            pass.draw(0..3, 0..1);
        }
        gpu.queue.submit([encoder.finish()]);
        Ok(())
    }

    fn resize(&self, _: &Gpu, _: &mut Drawn, width: u32, _: u32) -> Result<(), Fault> {
        if self.panic_in == Some("resize") {
            panic!("the resize to {width} broke on purpose");
        }
        Ok(())
    }
}

fn running_on<A: App>(runtime: &Runtime<A>, generation: u64) -> impl FnMut(&Runtime<A>) -> bool {
    let mut frames_then = None;
    move |r| {
        let s = r.status();
        if s.state != DeviceState::Running || s.generation != generation {
            return false;
        }
        // Two frames drawn on this device: the capture is of its own picture.
        let since = *frames_then.get_or_insert(s.frames);
        let _ = runtime;
        s.frames >= since + 2
    }
}

#[test]
fn an_injected_loss_is_recovered_with_the_identical_picture_ten_times_in_a_row() {
    let runtime = Runtime::headless(Painter::new(), SIDE, SIDE, losses_allowed());
    runtime.start();
    until(&runtime, "device 1 drawing", running_on(&runtime, 1));
    let before = runtime.capture().expect("a picture");
    // The triangle is there: the picture is not one colour.
    assert!(before.rgba.chunks_exact(4).any(|p| p != &before.rgba[..4]));
    let live = runtime.status();
    for n in 1..=10u64 {
        assert!(runtime.inject_loss(), "loss {n}: no device to lose");
        until(
            &runtime,
            "the new device drawing",
            running_on(&runtime, n + 1),
        );
        let after = runtime.capture().expect("a picture");
        assert_eq!(
            before.differing_pixels(&after),
            0,
            "loss {n}: the picture differs"
        );
        let status = runtime.status();
        assert_eq!(status.recoveries, n);
        let loss = status.last_loss.clone().expect("a loss recorded");
        assert!(!loss.requested, "{loss:?}");
        assert!(loss.message.starts_with("injected"), "{loss:?}");
        assert_eq!(
            (status.live_objects, status.live_bytes),
            (live.live_objects, live.live_bytes)
        );
    }
    assert_eq!(runtime.app().builds.get(), 11);
    assert_eq!(runtime.status().faults.validation, 0);
    runtime.stop();
}

#[test]
fn the_application_s_own_destroy_is_not_recovered_from() {
    let runtime = Runtime::headless(Painter::new(), SIDE, SIDE, losses_allowed());
    runtime.start();
    until(&runtime, "device 1 drawing", running_on(&runtime, 1));
    runtime.with_live(|gpu, _| gpu.device.destroy());
    until(&runtime, "the fallback", |r| r.status().fallback.is_some());
    let status = runtime.status();
    assert_eq!(
        status.fallback.map(|f| f.code()),
        Some("unexpected-destroy")
    );
    assert_eq!(runtime.app().builds.get(), 1);
}

#[test]
fn a_rebuild_that_fails_in_a_way_that_may_pass_is_retried() {
    let painter = Painter::new();
    painter
        .fail_build
        .borrow_mut()
        .extend([(2, FaultKind::OutOfMemory), (3, FaultKind::Internal)]);
    let runtime = Runtime::headless(painter, SIDE, SIDE, losses_allowed());
    runtime.start();
    until(&runtime, "device 1 drawing", running_on(&runtime, 1));
    let before = runtime.capture().expect("a picture");
    runtime.force_recovery();
    until(&runtime, "a device drawing after two failed builds", |r| {
        r.app().builds.get() == 4 && r.status().state == DeviceState::Running
    });
    until(&runtime, "frames", |r| {
        r.capture().is_some() && r.status().frames > 4
    });
    let after = runtime.capture().expect("a picture");
    assert_eq!(before.differing_pixels(&after), 0);
    let lines = runtime.faults().recent_lines().join("\n");
    assert!(lines.contains("build 2 failed on purpose"), "{lines}");
    assert!(lines.contains("re-initialising the GPU in"), "{lines}");
    runtime.stop();
}

/// A first start whose build runs out of memory once (its device made, the
/// generation counted) and is retried is still the cold start: timed from
/// `start()`, no recovery.
#[test]
fn a_first_start_retried_after_a_failed_build_is_timed_as_the_cold_start() {
    let painter = Painter::new();
    painter
        .fail_build
        .borrow_mut()
        .push((1, FaultKind::OutOfMemory));
    let runtime = Runtime::headless(painter, SIDE, SIDE, losses_allowed());
    runtime.start();
    until(&runtime, "a device drawing after a failed build", |r| {
        r.app().builds.get() == 2 && r.status().frames > 0
    });
    let status = runtime.status();
    let cold = status.cold_start.expect("the cold start's timings");
    assert!(!cold.recovery, "{cold:?}");
    assert!(
        cold.wait_ms > 0.0,
        "the retry's backoff is the wait: {cold:?}"
    );
    assert_eq!((status.recoveries, status.last_recovery_ms), (0, None));
}

#[test]
fn a_build_that_fails_with_a_bug_ends_in_the_init_failed_fallback() {
    let painter = Painter::new();
    painter
        .fail_build
        .borrow_mut()
        .push((1, FaultKind::Validation));
    let runtime = Runtime::headless(painter, SIDE, SIDE, RuntimeOptions::default());
    runtime.start();
    until(&runtime, "the fallback", |r| r.status().fallback.is_some());
    assert_eq!(
        runtime.status().fallback.map(|f| f.code()),
        Some("init-failed")
    );
    assert_eq!(runtime.app().builds.get(), 1);
}

#[test]
fn devices_lost_soon_after_their_first_frame_end_in_the_crash_loop_fallback() {
    let runtime = Runtime::headless(Painter::new(), SIDE, SIDE, RuntimeOptions::default());
    runtime.start();
    let mut losses = 0;
    until(&runtime, "the crash-loop fallback", |r| {
        let status = r.status();
        if status.fallback.is_some() {
            return true;
        }
        if status.state == DeviceState::Running && status.frames > 0 && r.inject_loss() {
            losses += 1;
        }
        false
    });
    assert_eq!(
        runtime.status().fallback.map(|f| f.code()),
        Some("crash-loop"),
        "after {losses} losses"
    );
    // Nothing draws any more.
    let frames = runtime.status().frames;
    turns(&runtime, 40);
    assert_eq!(runtime.status().frames, frames);
}

#[test]
fn a_panic_in_frame_is_caught_reported_once_and_ends_in_the_crashed_fallback() {
    let mut painter = Painter::new();
    painter.panic_at_frame = Some(3);
    let runtime = Runtime::headless(painter, SIDE, SIDE, RuntimeOptions::default());
    runtime.start();
    until(&runtime, "the crashed fallback", |r| {
        r.status().fallback.is_some()
    });
    let status = runtime.status();
    assert_eq!(status.fallback.as_ref().map(|f| f.code()), Some("crashed"));
    // Frames 0, 1 and 2 drawn; frame 3 panicked and was not presented.
    assert_eq!(status.frames, 3, "{status:?}");
    assert_eq!(status.frames_thrown, 0, "a panic is a crash, not a throw");
    let lines = runtime.faults().recent_lines();
    let told = lines
        .iter()
        .filter(|l| l.contains("the frame panicked: the frame broke on purpose"))
        .count();
    assert_eq!(told, 1, "{lines:#?}");
    // No frame after it, and start() does not bring it back.
    runtime.start();
    turns(&runtime, 40);
    assert_eq!(runtime.status().frames, 3);
}

#[test]
fn a_panic_in_build_ends_in_the_crashed_fallback_with_no_frame_drawn() {
    let mut painter = Painter::new();
    painter.panic_in = Some("build");
    let runtime = Runtime::headless(painter, SIDE, SIDE, losses_allowed());
    runtime.start();
    until(&runtime, "the crashed fallback", |r| {
        r.status().fallback.is_some()
    });
    let status = runtime.status();
    assert_eq!(status.fallback.as_ref().map(|f| f.code()), Some("crashed"));
    assert_eq!(status.frames, 0, "{status:?}");
    let lines = runtime.faults().recent_lines().join("\n");
    assert_eq!(
        lines.matches("the build broke on purpose").count(),
        1,
        "{lines}"
    );
    assert!(lines.contains("Restart it to try again"), "{lines}");
    turns(&runtime, 40);
    assert_eq!(runtime.status().frames, 0);
    assert_eq!(runtime.app().builds.get(), 1);
}

#[test]
fn a_panic_in_resize_ends_in_the_crashed_fallback() {
    let mut painter = Painter::new();
    painter.panic_in = Some("resize");
    let runtime = Runtime::headless(painter, SIDE, SIDE, losses_allowed());
    runtime.start();
    until(&runtime, "device 1 drawing", running_on(&runtime, 1));
    let frames = runtime.status().frames;
    runtime.set_size(2 * SIDE, SIDE);
    until(&runtime, "the crashed fallback", |r| {
        r.status().fallback.is_some()
    });
    let status = runtime.status();
    assert_eq!(status.fallback.as_ref().map(|f| f.code()), Some("crashed"));
    // The frame whose resize panicked was not drawn, nor even begun.
    assert_eq!(status.frames, frames, "{status:?}");
    assert_eq!(runtime.app().frame_calls.get(), frames);
    let lines = runtime.faults().recent_lines().join("\n");
    assert!(
        lines.contains("the resize panicked: the resize to 128 broke"),
        "{lines}"
    );
}

#[test]
fn a_resize_reaches_the_application_and_the_offscreen_target() {
    let runtime = Runtime::headless(Painter::new(), SIDE, SIDE, losses_allowed());
    runtime.start();
    until(&runtime, "device 1 drawing", running_on(&runtime, 1));
    runtime.set_size(2 * SIDE, SIDE / 2);
    until(&runtime, "a frame at the new size", |r| {
        r.capture()
            .is_some_and(|image| (image.width, image.height) == (2 * SIDE, SIDE / 2))
    });
    assert_eq!(
        runtime.with_live(|gpu, _| gpu.size()),
        Some((2 * SIDE, SIDE / 2))
    );
}

/// The status carries what webgpu-guard's does: the adapter, the frame's time,
/// the loop, the resizes, each init's steps from its trigger to its first
/// frame (the cold start kept, a recovery's the last), and the last recovery's
/// length read from them.
#[test]
fn the_status_tells_the_adapter_the_frames_the_resizes_and_each_init_s_steps() {
    let runtime = Runtime::headless(Painter::new(), SIDE, SIDE, losses_allowed());
    runtime.start();
    until(&runtime, "device 1 drawing", running_on(&runtime, 1));
    until(&runtime, "the frame's time", |r| r.status().frame_ms > 0.0);
    let status = runtime.status();
    assert!(!status.adapter.is_empty(), "{status:?}");
    assert!(
        status.loop_alive && !status.stalled && !status.hidden,
        "{status:?}"
    );
    assert_eq!((status.frames_thrown, status.runtime_bugs), (0, 0));
    assert!(status.peak_bytes >= status.live_bytes && status.live_bytes > 0);
    let cold = status.cold_start.expect("the cold start's timings");
    assert!(!cold.recovery, "{cold:?}");
    assert_eq!(status.last_init, Some(cold));
    assert_eq!(status.first_frame_at_ms, Some(cold.first_frame_at_ms));
    let steps = cold.adapter_ms + cold.device_ms + cold.configure_ms + cold.resources_ms;
    assert!(
        [
            cold.wait_ms,
            cold.adapter_ms,
            cold.device_ms,
            cold.configure_ms,
            cold.resources_ms
        ]
        .iter()
        .all(|ms| *ms >= 0.0)
            && cold.to_first_frame_ms >= steps
            && cold.to_picture_ms >= cold.to_first_frame_ms,
        "{cold:?}"
    );
    assert_eq!(status.last_recovery_ms, None, "no recovery yet");

    runtime.set_size(2 * SIDE, SIDE / 2);
    until(&runtime, "the resize", |r| r.status().resizes == 1);
    assert!(runtime.inject_loss());
    until(&runtime, "device 2 drawing", running_on(&runtime, 2));
    let status = runtime.status();
    let last = status.last_init.expect("the recovery's timings");
    assert!(
        last.recovery && last.first_frame_at_ms > cold.first_frame_at_ms,
        "{last:?}"
    );
    assert_eq!(status.cold_start, Some(cold), "the cold start is kept");
    assert_eq!(status.last_recovery_ms, Some(last.to_picture_ms));
    assert_eq!(status.last_rebuild_ms, Some(last.to_first_frame_ms));
    assert_eq!(
        status.resizes, 1,
        "the new device was built at the new size"
    );
}

/// An application whose `build` runs `work` and keeps what it returns.
struct Probe<W> {
    work: W,
    seen: Rc<RefCell<Vec<Result<(), Fault>>>>,
}

impl<W> App for Probe<W>
where
    W: AsyncFn(&Gpu) -> Result<(), Fault> + 'static,
{
    type Resources = ();

    async fn build(&self, gpu: &Gpu) -> Result<(), Fault> {
        let outcome = (self.work)(gpu).await;
        self.seen.borrow_mut().push(outcome);
        Ok(())
    }

    fn frame(&self, gpu: &Gpu, _: &mut (), frame: &Frame) -> Result<(), Fault> {
        clear(gpu, frame, wgpu::Color::BLUE);
        Ok(())
    }
}

/// Runs `work` as a build; what it returned.
fn probe<W>(work: W) -> (Runtime<Probe<W>>, Result<(), Fault>)
where
    W: AsyncFn(&Gpu) -> Result<(), Fault> + 'static,
{
    let seen = Rc::new(RefCell::new(Vec::new()));
    let app = Probe {
        work,
        seen: seen.clone(),
    };
    let runtime = Runtime::headless(app, SIDE, SIDE, RuntimeOptions::default());
    runtime.start();
    until(&runtime, "the build", |_| !seen.borrow().is_empty());
    let outcome = seen.borrow()[0].clone();
    (runtime, outcome)
}

#[test]
fn a_phase_names_the_buffer_whose_creation_failed() {
    let (runtime, outcome) = probe(async |gpu: &Gpu| {
        let phase = gpu.phase("upload");
        // A mappable buffer may not be a storage buffer.
        let _wrong = gpu.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wrong-usages"),
            size: 16,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        phase.end().await
    });
    let fault = outcome.expect_err("the phase caught nothing");
    assert_eq!(fault.kind, FaultKind::Validation, "{fault}");
    assert_eq!(fault.origin.phase.as_deref(), Some("upload"), "{fault}");
    assert_eq!(
        fault.object_label().as_deref(),
        Some("wrong-usages"),
        "{fault:?}"
    );
    // Returned, and reported once: the application kept the `Err`, and the
    // log and the counters have it all the same.
    assert!(fault.is_reported());
    assert_eq!(runtime.status().faults.validation, 1);
    let lines = runtime.faults().recent_lines().join("\n");
    assert!(lines.contains("\"wrong-usages\""), "{lines}");
}

#[test]
fn phases_ended_out_of_order_never_unbalance_the_scopes() {
    let (_runtime, outcome) = probe(async |gpu: &Gpu| {
        let outer = gpu.phase("outer");
        let inner = gpu.phase("inner");
        // wgpu panics on the outer pop before the inner one: the outer
        // phase ends the inner one first.
        outer.end().await?;
        drop(inner);
        let phase = gpu.phase("after");
        let _wrong = gpu.create_buffer(&wgpu::BufferDescriptor {
            label: Some("after-wrong"),
            size: 16,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        phase.end().await
    });
    let fault = outcome.expect_err("the last phase caught nothing");
    assert_eq!(fault.origin.phase.as_deref(), Some("after"), "{fault}");
}

#[test]
fn a_shader_error_has_its_place_and_a_caret_under_wide_characters() {
    let (runtime, outcome) = probe(async |gpu: &Gpu| {
        let source = "// 中文の注釈\n@fragment fn fs() -> @location(0) vec4f {\n  return /* 中文 */ vec4f(oops);\n}\n";
        gpu.create_shader_module("bad-shader", source)
            .await
            .map(|_| ())
    });
    let fault = outcome.expect_err("the shader compiled");
    let text = fault.message.clone();
    assert!(text.contains("bad-shader:3:"), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let source_line = lines
        .iter()
        .position(|l| l.contains("vec4f(oops);"))
        .unwrap_or_else(|| panic!("no source line in {text}"));
    let caret = lines[source_line + 1]
        .find('^')
        .unwrap_or_else(|| panic!("no caret in {text}"));
    let line = lines[source_line];
    // In display columns: each of the two wide characters takes two.
    let token = line[..line.find("oops").unwrap()].chars().count() + 2;
    assert_eq!(caret, token, "{text}");
    // Reported once: the engine's own error goes with the diagnostics.
    assert!(fault.is_reported());
    let status = runtime.status();
    assert_eq!(
        status.faults.validation,
        1,
        "{:#?}",
        runtime.faults().recent_lines()
    );
}

#[test]
fn the_ladder_degrades_to_a_size_that_fits_and_names_every_size_when_none_does() {
    let (runtime, outcome) = probe(async |gpu: &Gpu| {
        let too_big = gpu.device.limits().max_texture_dimension_2d + 1;
        let fitted = gpu
            .create_texture_fitting(&[square("shadow", too_big), square("shadow", 256)])
            .await?;
        assert_eq!(fitted.chosen, 1);
        assert!(fitted.degraded());
        assert_eq!(fitted.texture.width(), 256);
        assert_eq!(gpu.ledger().label("shadow").map(|t| t.objects), Some(1));
        let none = gpu
            .create_texture_fitting(&[square("huge", too_big), square("huge", too_big + 1)])
            .await
            .expect_err("a texture beyond the limits fitted");
        assert!(none.message.contains("no size fits"), "{none}");
        assert_eq!(none.kind, FaultKind::OutOfMemory, "{none}");
        assert_eq!(none.related.len(), 2, "{none:?}");
        Ok(())
    });
    outcome.expect("the ladder");
    // Each size that did not fit is a warning.
    assert_eq!(runtime.status().faults.warnings, 3);
}

/// A candidate refused for a mistake (no usage at all) ends the ladder with
/// that fault: no smaller size would mend it, and a build that gives up with
/// it is a bug (init-failed), not an out-of-memory to retry.
#[test]
fn the_ladder_ends_at_a_mistake_instead_of_trying_smaller_sizes() {
    let (runtime, outcome) = probe(async |gpu: &Gpu| {
        let mut wrong = square("no-usage", 256);
        wrong.usage = wgpu::TextureUsages::empty();
        let mut smaller = square("no-usage", 128);
        smaller.usage = wgpu::TextureUsages::empty();
        gpu.create_texture_fitting(&[wrong, smaller]).await?;
        Ok(())
    });
    let fault = outcome.expect_err("a texture with no usage fitted");
    assert_eq!(fault.kind, FaultKind::Validation, "{fault}");
    assert!(fault.related.is_empty(), "{fault:?}");
    assert!(!fault.message.contains("no size fits"), "{fault}");
    let status = runtime.status();
    assert_eq!(status.faults.warnings, 0, "{status:?}");
    assert_eq!(status.faults.validation, 1, "{status:?}");
}

/// A lost device's scopes answer nothing: a phase, and the ladder's choice,
/// are not read as success on it.
#[test]
fn on_a_destroyed_device_a_phase_and_the_ladder_do_not_read_silence_as_success() {
    let (_runtime, outcome) = probe(common::phases_and_the_ladder_on_a_destroyed_device);
    let fault = outcome.expect_err("the ladder chose a size on a lost device");
    // A lost device ends the ladder at once (no smaller size would fit).
    assert_eq!(fault.kind, FaultKind::DeviceLost, "{fault}");
}

#[test]
fn a_storm_of_uncaptured_errors_is_counted_and_written_five_lines_a_second() {
    let started = std::time::Instant::now();
    let (runtime, _) = probe(async |gpu: &Gpu| {
        // Outside any scope: 300 uncaptured validation errors at once.
        let too_big = gpu.device.limits().max_texture_dimension_2d + 1;
        for n in 0..300 {
            let _ = gpu.device.create_texture(&square("storm", too_big + n));
        }
        Ok(())
    });
    until(&runtime, "300 errors counted", |r| {
        r.status().faults.validation >= 300
    });
    let status = runtime.status();
    let seconds = started.elapsed().as_secs_f64().ceil() as u64;
    // 5 lines a second and one cut-off line, besides the runtime's few
    // notes: never a line per error.
    assert!(
        status.faults.logged <= 6 * seconds + 4,
        "{seconds} s: {status:?}"
    );
    assert!(status.faults.suppressed >= 250, "{status:?}");
    let groups = runtime.faults().groups();
    let storm = groups
        .iter()
        .find(|g| g.label == "storm")
        .unwrap_or_else(|| panic!("no group for the storm: {groups:?}"));
    assert_eq!(storm.occurrences, 300, "{groups:?}");
}

/// A collector on a loopback port: every request's body, answered `status`.
fn collector(status: u16) -> (String, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!("http://{}/v1/logs", listener.local_addr().unwrap());
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let mut reader = BufReader::new(stream);
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(value) = lower.strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let answer =
                format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            let _ = reader.get_mut().write_all(answer.as_bytes());
            let _ = send.send(String::from_utf8_lossy(&body).into_owned());
        }
    });
    (url, receive)
}

/// An HTTP sink to `url` named `name`, sending every `interval_ms`.
fn http_sink(url: &str, name: &str, interval_ms: u32) -> webgpu_guard_wgpu::native::HttpSink {
    let config = webgpu_guard_wgpu::telemetry::outbox::ExportConfig {
        interval_ms,
        ..Default::default()
    };
    webgpu_guard_wgpu::native::HttpSink::with_config(url, name, config, Vec::new()).expect("a sink")
}

#[test]
fn telemetry_reaches_a_collector_grouped_by_kind_and_label_and_sanitised() {
    let (url, bodies) = collector(200);
    let sink = http_sink(&url, "native-test", 50);
    let seen = Rc::new(RefCell::new(Vec::new()));
    let app = Probe {
        work: async |gpu: &Gpu| {
            let too_big = gpu.device.limits().max_texture_dimension_2d + 1;
            for n in 0..200 {
                let _ = gpu
                    .device
                    .create_texture(&square("player-alice", too_big + n));
            }
            Ok(())
        },
        seen: seen.clone(),
    };
    let runtime = Runtime::headless(app, SIDE, SIDE, RuntimeOptions::default());
    runtime
        .faults()
        .set_sanitizer(Some(Box::new(|text: &str| text.replace("alice", "[name]"))));
    runtime.faults().set_sink(Box::new(sink.clone()));
    runtime.start();
    until(&runtime, "200 errors delivered", |r| {
        r.status().faults.validation >= 200 && sink.stats().delivered >= 200
    });
    let stats = sink.stats();
    assert_eq!((stats.counted, stats.dropped), (200, 0), "{stats:?}");
    let body: String = bodies.try_iter().collect::<Vec<_>>().join("\n");
    assert!(body.contains("native-test"), "{body}");
    assert!(body.contains("player-[name]"), "{body}");
    assert!(!body.contains("alice"), "{body}");
    assert!(body.contains("llvmpipe"), "the adapter is named: {body}");
}

#[test]
fn a_sink_dropped_with_errors_waiting_sends_them_before_its_thread_ends() {
    use webgpu_guard_wgpu::telemetry::TelemetrySink;
    let (url, bodies) = collector(200);
    // A minute between requests: after the first, errors wait.
    let sink = http_sink(&url, "closing", 60_000);
    let event = |label: &str| webgpu_guard_wgpu::telemetry::TelemetryEvent {
        kind: FaultKind::Validation,
        label: label.to_string(),
        phase: None,
        message: "bad".into(),
        frame: None,
        occurrences: 1,
    };
    sink.send(&event("first")).unwrap();
    let first = bodies
        .recv_timeout(Duration::from_secs(30))
        .expect("the first request");
    assert!(first.contains("first"), "{first}");
    sink.send(&event("waiting")).unwrap();
    assert_eq!(sink.stats().pending, 1);
    drop(sink);
    let last = bodies
        .recv_timeout(Duration::from_secs(30))
        .expect("the last request");
    assert!(last.contains("waiting"), "{last}");
}

/// Counts its drops.
struct Counted(Rc<Cell<u32>>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

/// An application whose `build` may panic before its first await (its
/// future made by a plain function) or after the attempt was abandoned, and
/// whose frame may hold a raw error scope of its own.
struct Edgy {
    panic_before_the_future: bool,
    /// `build` waits for this flag, then panics.
    released: Rc<Cell<bool>>,
    wait_then_panic: bool,
    building: Rc<Cell<bool>>,
    hold_a_raw_scope: bool,
    error_at_frame: Option<u64>,
    /// A storm of this many errors at frame 3, then a panic at frame 4.
    storm_then_panic: u32,
    /// `build` fails in a phase of its own.
    fail_in_phase: bool,
    drops: Rc<Cell<u32>>,
    app_drops: Rc<Cell<u32>>,
    /// `build` maps a buffer with a callback that panics, then waits for
    /// `released` and sets `continued`.
    build_waits_past_a_callback_crash: bool,
    continued: Rc<Cell<bool>>,
    /// `build` begins a phase, makes a mistake in it, waits for `released`,
    /// then ends the phase and keeps what it returned in `phase_ended`.
    phase_across_a_stop: bool,
    phase_ended: Rc<RefCell<Option<Result<(), Fault>>>>,
}

/// Maps a new buffer (returned) with a callback that panics, once a copy into it the
/// GPU has yet to run is done: wgpu runs the callback from a later poll (a
/// buffer no submission uses would be mapped, and called back, at once).
fn map_with_a_panicking_callback(gpu: &Gpu, text: &'static str) -> wgpu::Buffer {
    let descriptor = |label, usage| wgpu::BufferDescriptor {
        label: Some(label),
        size: 16,
        usage,
        mapped_at_creation: false,
    };
    let source = gpu
        .device
        .create_buffer(&descriptor("source", wgpu::BufferUsages::COPY_SRC));
    let mapped = gpu.device.create_buffer(&descriptor(
        "mapped",
        wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
    ));
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(&source, 0, &mapped, 0, 16);
    gpu.queue.submit([encoder.finish()]);
    mapped
        .slice(..)
        .map_async(wgpu::MapMode::Read, move |_| panic!("{text}"));
    // Kept: a buffer dropped while its map waits calls the callback at once.
    mapped
}

impl Edgy {
    fn new() -> Self {
        Edgy {
            panic_before_the_future: false,
            released: Rc::default(),
            wait_then_panic: false,
            building: Rc::default(),
            hold_a_raw_scope: false,
            error_at_frame: None,
            storm_then_panic: 0,
            fail_in_phase: false,
            drops: Rc::default(),
            app_drops: Rc::default(),
            build_waits_past_a_callback_crash: false,
            continued: Rc::default(),
            phase_across_a_stop: false,
            phase_ended: Rc::default(),
        }
    }
}

impl Drop for Edgy {
    fn drop(&mut self) {
        self.app_drops.set(self.app_drops.get() + 1);
    }
}

struct EdgyResources {
    _counted: Counted,
    raw_scope: Option<wgpu::ErrorScopeGuard>,
}

impl App for Edgy {
    type Resources = EdgyResources;

    fn build(&self, gpu: &Gpu) -> impl std::future::Future<Output = Result<EdgyResources, Fault>> {
        if self.panic_before_the_future {
            panic!("build broke before its future");
        }
        let fail_in_phase = self.fail_in_phase;
        let released = self.released.clone();
        let wait_then_panic = self.wait_then_panic;
        let building = self.building.clone();
        let drops = self.drops.clone();
        let waits_past_a_crash = self.build_waits_past_a_callback_crash;
        let continued = self.continued.clone();
        let phase_across_a_stop = self.phase_across_a_stop;
        let phase_ended = self.phase_ended.clone();
        async move {
            building.set(true);
            if phase_across_a_stop {
                let phase = gpu.phase("across-the-stop");
                let _wrong = gpu.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("made-before-the-stop"),
                    size: 16,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE,
                    mapped_at_creation: false,
                });
                std::future::poll_fn(|cx| {
                    if released.get() {
                        std::task::Poll::Ready(())
                    } else {
                        cx.waker().wake_by_ref();
                        std::task::Poll::Pending
                    }
                })
                .await;
                let ended = phase.end().await;
                *phase_ended.borrow_mut() = Some(ended.clone());
                ended?;
            }
            if waits_past_a_crash {
                let _mapped =
                    map_with_a_panicking_callback(gpu, "the callback broke while build waited");
                std::future::poll_fn(|cx| {
                    if released.get() {
                        std::task::Poll::Ready(())
                    } else {
                        cx.waker().wake_by_ref();
                        std::task::Poll::Pending
                    }
                })
                .await;
                continued.set(true);
            }
            if fail_in_phase {
                let phase = gpu.phase("bindings");
                let _wrong = gpu.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("bad-bindings"),
                    size: 16,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE,
                    mapped_at_creation: false,
                });
                phase.end().await?;
            }
            if wait_then_panic {
                std::future::poll_fn(|cx| {
                    if released.get() {
                        std::task::Poll::Ready(())
                    } else {
                        cx.waker().wake_by_ref();
                        std::task::Poll::Pending
                    }
                })
                .await;
                panic!("an abandoned build broke");
            }
            Ok(EdgyResources {
                _counted: Counted(drops),
                raw_scope: None,
            })
        }
    }

    fn frame(&self, gpu: &Gpu, r: &mut EdgyResources, frame: &Frame) -> Result<(), Fault> {
        if self.hold_a_raw_scope && r.raw_scope.is_none() {
            r.raw_scope = Some(gpu.device.push_error_scope(wgpu::ErrorFilter::Validation));
        }
        if self.storm_then_panic > 0 && frame.number == 3 {
            for _ in 0..self.storm_then_panic {
                let _ = gpu.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("storm"),
                    size: 16,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE,
                    mapped_at_creation: false,
                });
            }
        }
        if self.storm_then_panic > 0 && frame.number == 4 {
            panic!("the frame after the storm broke");
        }
        if Some(frame.number) == self.error_at_frame {
            // Outside any scope of the runtime's (frames are scoped one in 32).
            let _ = gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("late-mistake"),
                size: 16,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            });
        }
        clear(gpu, frame, wgpu::Color::GREEN);
        Ok(())
    }
}

fn crashed_with<A: App>(runtime: &Runtime<A>, text: &str) {
    until(runtime, "the crashed fallback", |r| {
        r.status().fallback.is_some()
    });
    let status = runtime.status();
    assert_eq!(
        status.fallback.as_ref().map(|f| f.code()),
        Some("crashed"),
        "{status:?}"
    );
    let lines = runtime.faults().recent_lines().join("\n");
    assert_eq!(lines.matches(text).count(), 1, "{lines}");
}

#[test]
fn a_panic_before_build_s_future_is_caught_like_any_other() {
    let mut edgy = Edgy::new();
    edgy.panic_before_the_future = true;
    let runtime = Runtime::headless(edgy, SIDE, SIDE, RuntimeOptions::default());
    runtime.start();
    crashed_with(&runtime, "build broke before its future");
    assert_eq!(runtime.status().frames, 0);
}

#[test]
fn after_a_crash_the_device_is_let_go_and_no_drop_of_the_application_s_runs() {
    let mut edgy = Edgy::new();
    edgy.hold_a_raw_scope = true;
    let drops = edgy.drops.clone();
    // Every frame scoped: the frame's scopes are closed while the
    // application holds a raw one pushed after them, which wgpu refuses.
    let options = RuntimeOptions {
        frame_scope_every: 1,
        ..RuntimeOptions::default()
    };
    let runtime = Runtime::headless(edgy, SIDE, SIDE, options);
    runtime.start();
    crashed_with(&runtime, "closing error scopes panicked");
    // The running device was let go: nothing is lent any more.
    assert!(runtime.with_live(|_, _| ()).is_none());
    drop(runtime);
    assert_eq!(drops.get(), 0, "the resources' Drop ran after the crash");
}

#[test]
fn a_panic_in_a_build_the_runtime_abandoned_is_still_reported_and_final() {
    let mut edgy = Edgy::new();
    edgy.wait_then_panic = true;
    let (released, building) = (edgy.released.clone(), edgy.building.clone());
    let runtime = Runtime::headless(edgy, SIDE, SIDE, RuntimeOptions::default());
    runtime.start();
    until(&runtime, "the build waiting", |_| building.get());
    runtime.stop();
    released.set(true);
    crashed_with(&runtime, "an abandoned build broke");
    runtime.start();
    turns(&runtime, 40);
    assert_eq!(runtime.status().generation, 1);
}

/// A build's phase that outlives its device (the runtime stopped, and let
/// the device go, while the build waited) ends with an `Err` the application
/// may handle, and reports nothing: no "device lost" for a device the runtime
/// itself let go, no validation error of a device that is gone.
#[test]
fn a_phase_ended_after_its_device_was_let_go_reports_nothing() {
    let mut edgy = Edgy::new();
    edgy.phase_across_a_stop = true;
    let (released, building, ended) = (
        edgy.released.clone(),
        edgy.building.clone(),
        edgy.phase_ended.clone(),
    );
    let runtime = Runtime::headless(edgy, SIDE, SIDE, RuntimeOptions::default());
    runtime.start();
    until(&runtime, "the build waiting", |_| building.get());
    runtime.stop();
    released.set(true);
    until(&runtime, "the phase ended", |_| ended.borrow().is_some());
    turns(&runtime, 20);
    let outcome = ended.borrow_mut().take();
    let fault = match outcome {
        Some(Err(fault)) => fault,
        other => panic!("the phase on a let-go device ended with {other:?}"),
    };
    assert!(fault.is_reported(), "{fault}");
    let status = runtime.status();
    let faults = &status.faults;
    assert_eq!(
        (faults.validation, faults.other, faults.logged),
        (0, 0, 0),
        "{status:?}\n{}",
        runtime.faults().recent_lines().join("\n")
    );
}

/// A callback of the application's that wgpu runs from the runtime's own
/// poll of the device (not from a call of the application's) panics while
/// `build` waits: the panic is caught there and ends in the crashed
/// fallback, and the waiting `build` never goes on.
#[test]
fn a_callback_that_panics_in_the_runtime_s_poll_is_a_crash_and_nothing_runs_after_it() {
    let mut edgy = Edgy::new();
    edgy.build_waits_past_a_callback_crash = true;
    let (released, continued) = (edgy.released.clone(), edgy.continued.clone());
    let drops = edgy.drops.clone();
    let runtime = Runtime::headless(edgy, SIDE, SIDE, RuntimeOptions::default());
    runtime.start();
    crashed_with(&runtime, "the callback broke while build waited");
    let lines = runtime.faults().recent_lines().join("\n");
    assert!(
        lines.contains("a callback the device's poll ran"),
        "{lines}"
    );
    released.set(true);
    turns(&runtime, 40);
    assert!(!continued.get(), "build went on after the crash");
    drop(runtime);
    assert_eq!(drops.get(), 0);
}

#[test]
fn an_uncaptured_error_is_tagged_with_the_frame_that_made_it() {
    let mut edgy = Edgy::new();
    edgy.error_at_frame = Some(5);
    let runtime = Runtime::headless(edgy, SIDE, SIDE, RuntimeOptions::default());
    runtime.start();
    until(&runtime, "the error", |r| r.status().faults.validation >= 1);
    let lines = runtime.faults().recent_lines().join("\n");
    assert!(lines.contains("at frame 5"), "{lines}");
}

#[test]
fn the_last_handle_s_drop_stops_everything_even_with_a_build_under_way() {
    let mut edgy = Edgy::new();
    edgy.wait_then_panic = true;
    let (building, app_drops) = (edgy.building.clone(), edgy.app_drops.clone());
    let runtime = Runtime::headless(edgy, SIDE, SIDE, RuntimeOptions::default());
    runtime.start();
    until(&runtime, "the build waiting", |_| building.get());
    drop(runtime);
    assert_eq!(
        app_drops.get(),
        1,
        "the application outlived its last handle"
    );
}

#[test]
fn flush_sends_what_waits_without_waiting_for_the_interval() {
    use webgpu_guard_wgpu::telemetry::TelemetrySink;
    let (url, bodies) = collector(200);
    let sink = http_sink(&url, "flushing", 60_000);
    let event = |label: &str| webgpu_guard_wgpu::telemetry::TelemetryEvent {
        kind: FaultKind::Validation,
        label: label.to_string(),
        phase: None,
        message: "bad".into(),
        frame: None,
        occurrences: 1,
    };
    sink.send(&event("first")).unwrap();
    bodies
        .recv_timeout(Duration::from_secs(30))
        .expect("the first request");
    sink.send(&event("second")).unwrap();
    assert!(sink.flush(Duration::from_secs(30)), "{:?}", sink.stats());
    let second = bodies
        .recv_timeout(Duration::from_secs(30))
        .expect("the flushed request");
    assert!(second.contains("second"), "{second}");
    // A collector that is gone: the flush ends at its first failure.
    let sink = http_sink("http://127.0.0.1:9/v1/logs", "gone", 60_000);
    sink.send(&event("lost")).unwrap();
    let started = std::time::Instant::now();
    assert!(!sink.flush(Duration::from_secs(30)));
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn the_crash_line_is_written_even_right_after_a_storm() {
    let mut edgy = Edgy::new();
    edgy.storm_then_panic = 500;
    let runtime = Runtime::headless(edgy, SIDE, SIDE, RuntimeOptions::default());
    runtime.start();
    until(&runtime, "the crashed fallback", |r| {
        r.status().fallback.is_some()
    });
    let lines = runtime.faults().recent_lines().join("\n");
    assert!(lines.contains("more than 5 errors in a second"), "{lines}");
    assert!(lines.contains("giving up: The application crashed (the frame panicked: the frame after the storm broke"), "{lines}");
}

#[test]
fn a_sampled_frame_s_error_names_its_object_and_frame_and_groups_by_the_object() {
    let mut edgy = Edgy::new();
    edgy.error_at_frame = Some(5);
    let options = RuntimeOptions {
        frame_scope_every: 1,
        ..RuntimeOptions::default()
    };
    let runtime = Runtime::headless(edgy, SIDE, SIDE, options);
    runtime.start();
    until(&runtime, "the error", |r| r.status().faults.validation >= 1);
    let lines = runtime.faults().recent_lines().join("\n");
    assert!(
        lines.contains("validation error in phase \"frame\" on \"late-mistake\" at frame 5"),
        "{lines}"
    );
    let groups = runtime.faults().groups();
    assert!(
        groups.iter().any(|g| g.label == "late-mistake"),
        "{groups:?}"
    );
}

#[test]
fn a_build_that_fails_in_its_own_phase_is_reported_with_that_phase() {
    let mut edgy = Edgy::new();
    edgy.fail_in_phase = true;
    let runtime = Runtime::headless(edgy, SIDE, SIDE, RuntimeOptions::default());
    runtime.start();
    until(&runtime, "the fallback", |r| r.status().fallback.is_some());
    let lines = runtime.faults().recent_lines().join("\n");
    assert!(
        lines.contains("validation error in phase \"bindings\" on \"bad-bindings\""),
        "{lines}"
    );
    // Reported by the phase's end, returned through `build`: counted once.
    assert_eq!(runtime.status().faults.validation, 1, "{lines}");
}

/// Clears the frame and reads a buffer, made with `usage`, back as its
/// snapshot says.
struct Snapshotting {
    snapshot: webgpu_guard_wgpu::snapshot::GpuSnapshot,
    usage: wgpu::BufferUsages,
}

impl App for Snapshotting {
    type Resources = wgpu::Buffer;

    async fn build(&self, gpu: &Gpu) -> Result<wgpu::Buffer, Fault> {
        Ok(gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("state"),
            size: 256,
            usage: self.usage,
            mapped_at_creation: false,
        }))
    }

    fn frame(&self, gpu: &Gpu, state: &mut wgpu::Buffer, frame: &Frame) -> Result<(), Fault> {
        clear(gpu, frame, wgpu::Color::RED);
        self.snapshot.capture(gpu, state, frame);
        Ok(())
    }
}

#[test]
fn no_frame_runs_on_a_device_destroyed_by_an_injected_loss() {
    let app = Snapshotting {
        snapshot: webgpu_guard_wgpu::snapshot::GpuSnapshot::new("snap", 1),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    };
    let runtime = Runtime::headless(app, SIDE, SIDE, losses_allowed());
    runtime.set_frame_interval(Duration::ZERO);
    runtime.start();
    for n in 1..=10u64 {
        until(&runtime, "frames", running_on(&runtime, n));
        assert!(runtime.inject_loss());
    }
    until(&runtime, "frames", running_on(&runtime, 11));
    let status = runtime.status();
    assert_eq!(
        status.faults.validation,
        0,
        "{:#?}\n{:#?}",
        runtime.faults().recent_lines(),
        runtime.faults().groups()
    );
}

#[test]
fn the_fault_sink_s_flush_sends_what_telemetry_holds_before_the_program_ends() {
    let (url, bodies) = collector(200);
    let sink = http_sink(&url, "at-exit", 60_000);
    let runtime = Runtime::headless(Edgy::new(), SIDE, SIDE, RuntimeOptions::default());
    let faults = runtime.faults();
    faults.set_sink(Box::new(sink.clone()));
    faults.report(&Fault::new(FaultKind::Validation, "first").on_object("first"));
    let first = bodies
        .recv_timeout(Duration::from_secs(30))
        .expect("the first request");
    assert!(first.contains("first"), "{first}");
    // The next request may go a minute later: this one waits.
    faults.report(&Fault::new(FaultKind::Validation, "last").on_object("the-last-words"));
    assert!(faults.flush(Duration::from_secs(30)), "{:?}", sink.stats());
    let last = bodies
        .recv_timeout(Duration::from_secs(30))
        .expect("the flushed request");
    assert!(last.contains("the-last-words"), "{last}");
}

/// A picture painted on the GPU only, stroke by stroke (one texel row a
/// frame, never cleared), into a texture whose rows need padding in a copy
/// (50 texels of 4 bytes: 200 of a 256-byte row); snapshotted every frame,
/// restored by `build` on each new device.
struct Painting {
    snapshot: webgpu_guard_wgpu::snapshot::GpuSnapshot,
    /// Rows painted so far (state on the CPU that a loss keeps).
    strokes: Cell<u32>,
}

const CANVAS: (u32, u32) = (50, 20);

impl App for Painting {
    type Resources = wgpu::Texture;

    async fn build(&self, gpu: &Gpu) -> Result<wgpu::Texture, Fault> {
        let texture = gpu.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("painting"),
            size: wgpu::Extent3d {
                width: CANVAS.0,
                height: CANVAS.1,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Rgba8Unorm,
            usage: wgpu::TextureUsages::COPY_SRC | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        });
        self.snapshot.restore_texture(gpu, &texture);
        Ok(texture)
    }

    fn frame(&self, gpu: &Gpu, texture: &mut wgpu::Texture, frame: &Frame) -> Result<(), Fault> {
        let row = self.strokes.get();
        if row < 8 {
            let stroke = (row as u8).wrapping_mul(37);
            let bytes: Vec<u8> = (0..CANVAS.0 * 4).map(|i| (i as u8) ^ stroke).collect();
            gpu.queue.write_texture(
                wgpu::TexelCopyTextureInfo {
                    texture,
                    mip_level: 0,
                    origin: wgpu::Origin3d { x: 0, y: row, z: 0 },
                    aspect: wgpu::TextureAspect::All,
                },
                &bytes,
                wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(CANVAS.0 * 4),
                    rows_per_image: Some(1),
                },
                wgpu::Extent3d {
                    width: CANVAS.0,
                    height: 1,
                    depth_or_array_layers: 1,
                },
            );
            self.strokes.set(row + 1);
        }
        clear(gpu, frame, wgpu::Color::BLACK);
        self.snapshot.capture_texture(gpu, texture, frame);
        Ok(())
    }
}

/// `texture`'s rows, read back tight.
fn read_texture(gpu: &Gpu, texture: &wgpu::Texture) -> Vec<u8> {
    let rows = TexelRows::new(CANVAS.0, CANVAS.1, 4).expect("rows");
    let buffer = gpu.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("read"),
        size: rows.padded_len(),
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    encoder.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &buffer,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(rows.padded_row()),
                rows_per_image: Some(CANVAS.1),
            },
        },
        texture.size(),
    );
    gpu.queue.submit([encoder.finish()]);
    buffer.slice(..).map_async(wgpu::MapMode::Read, |_| ());
    gpu.device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("the read");
    let data = buffer.slice(..).get_mapped_range().expect("mapped");
    rows.strip(&data).expect("whole rows")
}

#[test]
fn a_texture_painted_on_the_gpu_is_restored_from_its_snapshot_after_a_loss() {
    let app = Painting {
        snapshot: webgpu_guard_wgpu::snapshot::GpuSnapshot::new("painting", 1),
        strokes: Cell::new(0),
    };
    let runtime = Runtime::headless(app, SIDE, SIDE, losses_allowed());
    runtime.start();
    until(&runtime, "eight strokes in a snapshot", |r| {
        r.app().strokes.get() == 8 && r.app().snapshot.latest().is_some_and(|s| s.frame > 10)
    });
    let before = runtime
        .with_live(|gpu, texture| read_texture(gpu, texture))
        .expect("a live device");
    assert!(before.iter().any(|&b| b != 0), "nothing was painted");
    assert!(runtime.inject_loss());
    until(&runtime, "device 2", running_on(&runtime, 2));
    let after = runtime
        .with_live(|gpu, texture| read_texture(gpu, texture))
        .expect("a live device");
    assert_eq!(after, before, "the painting differs after the loss");
}

/// Frames that stop coming (here: the loop asked to wait 30 s between them)
/// are a frozen picture: the runtime says so and asks for a frame again, with
/// nothing of its own borrowed across the supervisor's commands.
#[test]
fn a_frozen_picture_is_reported_and_a_frame_asked_for_again() {
    let (runtime, _) = probe(async |_: &Gpu| Ok(()));
    until(&runtime, "a first frame", |r| r.status().frames > 0);
    runtime.set_frame_interval(Duration::from_secs(30));
    until(&runtime, "the stall reported", |r| {
        r.faults()
            .recent_lines()
            .iter()
            .any(|l| l.contains("presentation stalled"))
    });
    // Still frozen: the device is probed (alive: no loss) and frames come
    // from a timer.
    until(&runtime, "frames from a timer", |r| {
        r.status().frames_from_timer > 3
    });
    let status = runtime.status();
    assert_eq!(status.state, DeviceState::Running, "{status:?}");
    assert_eq!(status.generation, 1, "a live device was taken for lost");
}

/// A stall belongs to the device it froze: a device brought up after it is
/// not stalled before its first frame, and its own stall is counted from
/// when it ran, not from the last frame of the device before.
#[test]
fn a_device_brought_up_after_a_stall_is_judged_from_when_it_runs() {
    let (runtime, _) = probe(async |_: &Gpu| Ok(()));
    until(&runtime, "a first frame", |r| r.status().frames > 0);
    // From here one loop, with no frame for long: each `run_until` fires a
    // frame that is wanted at once, then every ten minutes.
    runtime.set_frame_interval(Duration::from_secs(600));
    let stall_on_device_2 = |r: &Runtime<_>| {
        r.faults()
            .recent_lines()
            .into_iter()
            .find(|l| l.contains("presentation stalled") && l.contains("on device 2"))
    };
    let mut stopped: Option<(std::time::Instant, u64)> = None;
    let mut second_running: Option<Status> = None;
    let done = runtime.run_until(
        |r| match (&stopped, &second_running) {
            (None, _) => {
                if r.status().stalled {
                    stopped = Some((std::time::Instant::now(), r.status().frames));
                    r.stop();
                    r.start();
                }
                false
            }
            (Some(_), None) => {
                let status = r.status();
                if status.generation == 2 && status.state == DeviceState::Running {
                    second_running = Some(status);
                }
                false
            }
            (Some(_), Some(_)) => stall_on_device_2(r).is_some(),
        },
        Duration::from_secs(60),
    );
    assert!(
        done,
        "{stopped:?} {second_running:?} {:?}",
        runtime.status()
    );
    let (stopped_at, frames) = stopped.unwrap_or_else(|| unreachable!());
    let status = second_running.unwrap_or_else(|| unreachable!());
    assert_eq!(status.frames, frames, "a frame came: {status:?}");
    assert!(!status.stalled, "{status:?}");
    let since_the_stop = stopped_at.elapsed().as_millis();
    let line = stall_on_device_2(&runtime).unwrap_or_default();
    let waited: u128 = line
        .split("no frame for ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("no wait in {line}"));
    assert!(
        waited <= since_the_stop,
        "waited {waited} ms, stopped {since_the_stop} ms ago: {line}"
    );
}

/// A buffer wgpu refuses (a mappable buffer may not be a storage buffer).
fn refused_buffer(gpu: &Gpu, label: &'static str) -> webgpu_guard_wgpu::Tracked<wgpu::Buffer> {
    gpu.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: 16,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    })
}

/// A build that gives up with `?` while a phase of its own is open.
struct GivesUp;

impl App for GivesUp {
    type Resources = ();

    async fn build(&self, gpu: &Gpu) -> Result<(), Fault> {
        let _phase = gpu.phase("upload");
        let _wrong = refused_buffer(gpu, "dropped-phase-wrong");
        Err(Fault::new(FaultKind::Validation, "the build gives up"))?;
        Ok(())
    }

    fn frame(&self, _: &Gpu, _: &mut (), _: &Frame) -> Result<(), Fault> {
        Ok(())
    }
}

/// The phase a failing build drops (its `?`) is popped, and what it caught
/// is reported, though the failed build's device is let go before the answer
/// comes: the phase closed while the device was the runtime's.
#[test]
fn what_a_phase_dropped_by_a_failing_build_caught_is_reported_after_its_device_is_let_go() {
    let runtime = Runtime::headless(GivesUp, SIDE, SIDE, RuntimeOptions::default());
    runtime.start();
    until(&runtime, "the init-failed fallback", |r| {
        r.status().fallback.is_some()
    });
    until(&runtime, "the phase's fault and the build's", |r| {
        r.status().faults.validation >= 2
    });
    let lines = runtime.faults().recent_lines().join("\n");
    assert!(lines.contains("dropped-phase-wrong"), "{lines}");
}

/// The same with a phase dropped in `with_live` right before a stop.
#[test]
fn what_a_phase_dropped_before_a_stop_caught_is_reported_after_it() {
    let (runtime, _) = probe(async |_: &Gpu| Ok(()));
    until(&runtime, "a first frame", |r| r.status().frames > 0);
    runtime.with_live(|gpu, _| {
        let _phase = gpu.phase("live-work");
        let _wrong = refused_buffer(gpu, "live-wrong");
    });
    runtime.stop();
    until(&runtime, "the phase's fault", |r| {
        r.status().faults.validation >= 1
    });
    let lines = runtime.faults().recent_lines().join("\n");
    assert!(lines.contains("live-wrong"), "{lines}");
}

/// `capture()` submits and waits for the GPU, which runs the application's
/// callbacks that completed meanwhile: one that panics is the application's
/// crash, as in the runtime's own polls, and never escapes `capture()`.
#[test]
fn a_callback_that_panics_during_capture_is_a_crash_and_does_not_escape() {
    let (runtime, _) = probe(async |_: &Gpu| Ok(()));
    until(&runtime, "a first frame", |r| r.status().frames > 0);
    let _mapped = runtime
        .with_live(|gpu, _| map_with_a_panicking_callback(gpu, "the callback broke in capture"))
        .expect("a live device");
    let captured = runtime.capture();
    assert!(captured.is_none(), "a picture after the crash");
    crashed_with(&runtime, "the callback broke in capture");
}

/// An outer phase ended first pops the inner one's scopes too (wgpu's order),
/// and keeps what they caught for the inner phase's own end: its `Err` is
/// the application's to see (two phases awaited together end in any order).
#[test]
fn an_inner_phase_ended_after_its_outer_one_still_returns_what_it_caught() {
    let (runtime, outcome) = probe(async |gpu: &Gpu| {
        let outer = gpu.phase("outer");
        let inner = gpu.phase("inner");
        let _wrong = refused_buffer(gpu, "inner-wrong");
        outer.end().await?;
        inner.end().await
    });
    let fault = outcome.expect_err("the inner phase caught nothing");
    assert_eq!(fault.kind, FaultKind::Validation, "{fault}");
    assert_eq!(fault.origin.phase.as_deref(), Some("inner"), "{fault}");
    assert_eq!(fault.object_label().as_deref(), Some("inner-wrong"));
    // Reported once, by the phase that caught it.
    assert_eq!(runtime.status().faults.validation, 1);
}

/// A copy the GPU refused leaves zeros in the staging buffer: they are never
/// kept as the snapshot (a build would restore them), and the refusal is
/// reported.
#[test]
fn a_snapshot_whose_copy_is_refused_keeps_nothing_and_says_why() {
    let snapshot = webgpu_guard_wgpu::snapshot::GpuSnapshot::new("refused", 2);
    // A buffer made without `COPY_SRC`.
    let app = Snapshotting {
        snapshot: snapshot.clone(),
        usage: wgpu::BufferUsages::STORAGE,
    };
    let runtime = Runtime::headless(app, SIDE, SIDE, RuntimeOptions::default());
    runtime.start();
    until(&runtime, "two refused copies reported", |r| {
        r.status().faults.validation >= 2
    });
    turns(&runtime, 10);
    assert_eq!(snapshot.taken(), 0, "{:?}", snapshot.latest());
    let lines = runtime.faults().recent_lines().join("\n");
    assert!(lines.contains("'state'"), "{lines}");
}
