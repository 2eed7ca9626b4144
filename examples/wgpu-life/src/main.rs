//! Conway's Game of Life on a 64x64 board that lives on the GPU: a compute
//! pass steps it every frame (two storage buffers, ping-pong), a render pass
//! draws it. Nothing on the CPU knows the board, so `build` cannot recompute
//! it after a loss: a `GpuSnapshot` reads it back every 10 frames and the next
//! device starts from the last copy. With `?still` the board stops after 60
//! steps, so two pictures compare pixel for pixel across a loss.
//! `window.lifeStatus()`: `{ steps, pausedAtFrame, snapshotFrame, snapshotsTaken }`.
//!
//! The same source runs on the desktop (`cargo run -p webgpu-guard-wgpu-life
//! -- --still`): F8 loses the device, F9 forces a recovery, F10 writes the status.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use webgpu_guard_wgpu::snapshot::GpuSnapshot;
use webgpu_guard_wgpu::{App, Fault, Frame, Gpu, Runtime, RuntimeOptions, Tracked};
use wgpu::util::BufferInitDescriptor;

const SIDE: u32 = 64;
const CELLS: usize = (SIDE * SIDE) as usize;
/// Steps taken before a `?still` board stops.
const STILL_STEPS: u64 = 60;

const STEP: &str = "
const W: u32 = 64u;
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
fn alive(x: i32, y: i32) -> u32 {
  let xx = u32((x + i32(W)) % i32(W));
  let yy = u32((y + i32(W)) % i32(W));
  return src[yy * W + xx];
}
@compute @workgroup_size(8, 8) fn step(@builtin(global_invocation_id) id: vec3u) {
  if (id.x >= W || id.y >= W) { return; }
  let x = i32(id.x);
  let y = i32(id.y);
  var n = 0u;
  for (var dy = -1; dy <= 1; dy++) {
    for (var dx = -1; dx <= 1; dx++) {
      if (dx != 0 || dy != 0) { n += alive(x + dx, y + dy); }
    }
  }
  let me = src[id.y * W + id.x];
  dst[id.y * W + id.x] = select(0u, 1u, n == 3u || (n == 2u && me == 1u));
}
";

const DRAW: &str = "
@group(0) @binding(0) var<storage, read> cells: array<u32>;
@vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
  let corners = array(vec2f(-1.0, -1.0), vec2f(3.0, -1.0), vec2f(-1.0, 3.0));
  return vec4f(corners[i], 0.0, 1.0);
}
@fragment fn fs(@builtin(position) p: vec4f) -> @location(0) vec4f {
  let x = min(u32(p.x / 4.0), 63u);
  let y = min(u32(p.y / 4.0), 63u);
  let on = cells[y * 64u + x];
  return select(vec4f(0.05, 0.05, 0.1, 1.0), vec4f(0.3, 0.9, 0.5, 1.0), on == 1u);
}
";

/// What survives a loss: the step count, which buffer holds the board, and
/// the snapshot of the board itself.
struct Life {
    still: bool,
    steps: Cell<u64>,
    current: Cell<usize>,
    paused_at_frame: Cell<Option<u64>>,
    snapshot: GpuSnapshot,
    /// The step count of recent captures, by frame: a restored board takes
    /// the count it was captured at.
    captured_steps: RefCell<VecDeque<(u64, u64)>>,
    /// Whether the stopped board's snapshot was announced (on the desktop,
    /// where no `lifeStatus()` can be asked).
    announced: Cell<bool>,
}

/// Every GPU object.
struct Resources {
    boards: [Tracked<wgpu::Buffer>; 2],
    step: wgpu::ComputePipeline,
    draw: wgpu::RenderPipeline,
    /// `step_groups[i]` reads board `i` and writes the other.
    step_groups: [wgpu::BindGroup; 2],
    /// `draw_groups[i]` draws board `i`.
    draw_groups: [wgpu::BindGroup; 2],
}

/// The first board: a fixed pseudo-random half of the cells alive.
fn seed() -> Vec<u32> {
    let mut state = 0x2545_f491_u32;
    (0..CELLS)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state & 1
        })
        .collect()
}

fn bytes_of(cells: &[u32]) -> Vec<u8> {
    cells.iter().flat_map(|c| c.to_le_bytes()).collect()
}

impl App for Life {
    type Resources = Resources;

    async fn build(&self, gpu: &Gpu) -> Result<Resources, Fault> {
        let board = match self.snapshot.restore(gpu) {
            Some(snapshot) => {
                let steps = self
                    .captured_steps
                    .borrow()
                    .iter()
                    .find(|(frame, _)| *frame == snapshot.frame)
                    .map(|(_, steps)| *steps);
                if let Some(steps) = steps {
                    self.steps.set(steps);
                }
                snapshot.bytes
            }
            None => {
                self.steps.set(0);
                bytes_of(&seed())
            }
        };
        self.current.set(0);
        let step_shader = gpu.create_shader_module("life-step", STEP).await?;
        let draw_shader = gpu.create_shader_module("life-draw", DRAW).await?;
        let phase = gpu.phase("life");
        let usage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST;
        let boards = [
            gpu.create_buffer_init(&BufferInitDescriptor {
                label: Some("board-a"),
                contents: &board,
                usage,
            }),
            gpu.create_buffer_init(&BufferInitDescriptor {
                label: Some("board-b"),
                contents: &vec![0; board.len()],
                usage,
            }),
        ];
        let step = gpu
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("life-step"),
                layout: None,
                module: &step_shader,
                entry_point: Some("step"),
                compilation_options: Default::default(),
                cache: None,
            });
        let draw = gpu
            .device
            .create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some("life-draw"),
                layout: None,
                vertex: wgpu::VertexState {
                    module: &draw_shader,
                    entry_point: Some("vs"),
                    compilation_options: Default::default(),
                    buffers: &[],
                },
                fragment: Some(wgpu::FragmentState {
                    module: &draw_shader,
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
        let step_layout = step.get_bind_group_layout(0);
        let draw_layout = draw.get_bind_group_layout(0);
        let step_group = |from: usize| {
            gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(if from == 0 {
                    "step-a-to-b"
                } else {
                    "step-b-to-a"
                }),
                layout: &step_layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: boards[from].as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: boards[1 - from].as_entire_binding(),
                    },
                ],
            })
        };
        let draw_group = |which: usize| {
            gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(if which == 0 { "draw-a" } else { "draw-b" }),
                layout: &draw_layout,
                entries: &[wgpu::BindGroupEntry {
                    binding: 0,
                    resource: boards[which].as_entire_binding(),
                }],
            })
        };
        let step_groups = [step_group(0), step_group(1)];
        let draw_groups = [draw_group(0), draw_group(1)];
        phase.end().await?;
        Ok(Resources {
            boards,
            step,
            draw,
            step_groups,
            draw_groups,
        })
    }

    fn frame(&self, gpu: &Gpu, r: &mut Resources, frame: &Frame) -> Result<(), Fault> {
        let mut encoder = gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("life"),
            });
        let stepping = !self.still || self.steps.get() < STILL_STEPS;
        if stepping {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("step"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&r.step);
            pass.set_bind_group(0, &r.step_groups[self.current.get()], &[]);
            pass.dispatch_workgroups(SIDE / 8, SIDE / 8, 1);
            drop(pass);
            self.current.set(1 - self.current.get());
            self.steps.set(self.steps.get() + 1);
            if self.still && self.steps.get() == STILL_STEPS {
                self.paused_at_frame.set(Some(frame.number));
            }
        }
        {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("draw"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: &frame.view,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                        store: wgpu::StoreOp::Store,
                    },
                })],
                ..Default::default()
            });
            pass.set_pipeline(&r.draw);
            pass.set_bind_group(0, &r.draw_groups[self.current.get()], &[]);
            pass.draw(0..3, 0..1);
        }
        gpu.queue.submit([encoder.finish()]);
        if self
            .snapshot
            .capture(gpu, &r.boards[self.current.get()], frame)
        {
            let mut captured = self.captured_steps.borrow_mut();
            captured.push_back((frame.number, self.steps.get()));
            if captured.len() > 8 {
                captured.pop_front();
            }
        }
        let paused = self.paused_at_frame.get();
        let kept = self.snapshot.latest().map(|s| s.frame);
        if matches!((paused, kept), (Some(p), Some(k)) if k >= p) && !self.announced.replace(true) {
            #[cfg(not(target_arch = "wasm32"))]
            eprintln!("life: the stopped board is in a snapshot");
        }
        Ok(())
    }
}

/// In the browser: on the page's canvas.
#[cfg(target_arch = "wasm32")]
fn main() {
    let still = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .is_some_and(|search| search.contains("still"));
    match Runtime::on_canvas_id(Life::new(still), "canvas", RuntimeOptions::default()) {
        Ok(runtime) => {
            runtime.expose_console();
            expose_status(&runtime);
            runtime.start();
        }
        Err(fault) => webgpu_guard_wgpu::web::log::error(&fault.to_string()),
    }
}

/// On the desktop: in a window (`--still`: the board stops after 60 steps).
#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let still = std::env::args().any(|a| a == "--still");
    let runtime = Runtime::windowed(Life::new(still), RuntimeOptions::default());
    let window = webgpu_guard_wgpu::WindowOptions::new("life, webgpu-guard-wgpu", 512, 512);
    if let Err(fault) = runtime.run(window) {
        eprintln!("{fault}");
        std::process::exit(1);
    }
}

impl Life {
    fn new(still: bool) -> Self {
        Life {
            still,
            steps: Cell::new(0),
            current: Cell::new(0),
            paused_at_frame: Cell::new(None),
            snapshot: GpuSnapshot::new("life-snapshot", 10),
            captured_steps: RefCell::default(),
            announced: Cell::new(false),
        }
    }
}

/// `window.lifeStatus()`.
#[cfg(target_arch = "wasm32")]
fn expose_status(runtime: &Runtime<Life>) {
    use wasm_bindgen::prelude::*;
    let runtime = runtime.clone();
    let status = Closure::<dyn Fn() -> JsValue>::new(move || {
        let life = runtime.app();
        let object = js_sys::Object::new();
        let set = |key: &str, value: JsValue| {
            let _ = js_sys::Reflect::set(&object, &key.into(), &value);
        };
        set("steps", (life.steps.get() as f64).into());
        set(
            "pausedAtFrame",
            life.paused_at_frame
                .get()
                .map_or(JsValue::NULL, |f| (f as f64).into()),
        );
        set(
            "snapshotFrame",
            life.snapshot
                .latest()
                .map_or(JsValue::NULL, |s| (s.frame as f64).into()),
        );
        set("snapshotsTaken", (life.snapshot.taken() as f64).into());
        object.into()
    });
    if let Some(window) = web_sys::window() {
        let _ = js_sys::Reflect::set(&window, &"lifeStatus".into(), status.as_ref());
    }
    status.forget();
}
