//! The one place the current generation's device lives, and what an init
//! attempt hands over with its events.
//!
//! A device goes from the attempt that obtained it to the slot in one move:
//! the attempt sends it with `DeviceCreated` (a [`Handover::Device`]), the
//! driver adopts it into the slot or discards it as the supervisor says; the
//! attempt sends what it built with `InitSucceeded` (a [`Handover::Built`]),
//! and the driver makes it live or destroys it. Nothing is parked between
//! events: a stale attempt's event carries its own device, and finds nothing
//! of a newer generation to take.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::held::Held;
use crate::oneshot;
use crate::web::device::GuardedDevice;
use crate::web::init::GpuContext;

/// A running device and the application's resources on it.
pub(super) struct Live<R> {
    pub(super) gpu: GpuContext,
    /// Borrowed by each frame; mutably by a resize, between frames (the
    /// application's own borrow, not the runtime's).
    pub(super) resources: RefCell<R>,
    /// Frames drawn on this device.
    pub(super) frames: Cell<u64>,
    /// The device's `maxTextureDimension2D`, read once (each frame compares
    /// the canvas's size against it).
    pub(super) max_dimension: u32,
}

/// Where the current generation stands.
#[derive(Default)]
enum Stage<R> {
    /// No device.
    #[default]
    Vacant,
    /// Adopted; its attempt is building on it.
    Initialising {
        generation: u64,
        device: GuardedDevice,
    },
    /// Running.
    Live(Rc<Live<R>>),
}

/// The generation slot, with the canvas's owner and the adapter's name.
pub(super) struct GenerationSlot<R> {
    stage: Held<Stage<R>>,
    /// The generation whose device configured the canvas last (only it may
    /// unconfigure it).
    canvas_owner: Cell<Option<u64>>,
    adapter: Held<String>,
}

impl<R> Default for GenerationSlot<R> {
    fn default() -> Self {
        GenerationSlot {
            stage: Held::default(),
            canvas_owner: Cell::new(None),
            adapter: Held::default(),
        }
    }
}

/// What an attempt's event carries.
pub(super) enum Handover<R> {
    /// Nothing.
    None,
    /// The device it obtained.
    Device(Arrival),
    /// What it built, on its device.
    Built(GpuContext, R),
}

/// A device an attempt obtained, and the one-shot that carries the
/// supervisor's word back to it. Dropped without a word (discarded, or the
/// runtime crashed or went away), the device is destroyed and the attempt
/// hears "gone".
pub(super) struct Arrival {
    raw: Option<web_sys::GpuDevice>,
    decision: Option<oneshot::Sender<(GuardedDevice, u64)>>,
}

impl Arrival {
    pub(super) fn new(
        raw: web_sys::GpuDevice,
        decision: oneshot::Sender<(GuardedDevice, u64)>,
    ) -> Self {
        Arrival {
            raw: Some(raw),
            decision: Some(decision),
        }
    }

    /// The device, for adoption; the one-shot that tells the attempt.
    pub(super) fn open(
        mut self,
    ) -> Option<(web_sys::GpuDevice, oneshot::Sender<(GuardedDevice, u64)>)> {
        Some((self.raw.take()?, self.decision.take()?))
    }
}

impl Drop for Arrival {
    fn drop(&mut self) {
        if let Some(raw) = self.raw.take() {
            crate::web::engine::let_device_go(&raw);
        }
    }
}

impl<R> GenerationSlot<R> {
    /// Device `generation` was adopted: its attempt builds on it.
    pub(super) fn initialising(&self, generation: u64, device: GuardedDevice) {
        let previous = self
            .stage
            .replace(Stage::Initialising { generation, device });
        // The supervisor tears down or destroys a generation before it adopts
        // the next: anything left here is let go.
        if let Some(previous) = previous {
            Self::let_go_stage(previous);
        }
    }

    fn let_go_stage(stage: Stage<R>) {
        match stage {
            Stage::Initialising { device, .. } => device.let_go(),
            Stage::Live(live) => live.gpu.device.let_go(),
            Stage::Vacant => {}
        }
    }

    /// The device being initialised as `generation`, taken out of the slot.
    pub(super) fn take_initialising(&self, generation: u64) -> Option<GuardedDevice> {
        self.take_where(|stage| match stage {
            Stage::Initialising {
                generation: g,
                device,
            } if g == generation => Ok(device),
            other => Err(other),
        })
    }

    /// What `pick` takes out of the stage (`Ok`), leaving the slot vacant;
    /// a stage it hands back (`Err`) stays as it was.
    fn take_where<T>(&self, pick: impl FnOnce(Stage<R>) -> Result<T, Stage<R>>) -> Option<T> {
        self.stage
            .with(|stage| match pick(std::mem::take(stage)) {
                Ok(taken) => Some(taken),
                Err(kept) => {
                    *stage = kept;
                    None
                }
            })
            .flatten()
    }

    /// `live` goes live; handed back when its generation is not the one
    /// initialised here (a stale attempt finds nothing to replace).
    pub(super) fn go_live(&self, live: Live<R>) -> Result<Rc<Live<R>>, Box<Live<R>>> {
        let generation = live.gpu.generation;
        if self.take_initialising(generation).is_none() {
            return Err(Box::new(live));
        }
        let live = Rc::new(live);
        self.stage.replace(Stage::Live(live.clone()));
        Ok(live)
    }

    /// The live device and resources, if a device runs.
    pub(super) fn live(&self) -> Option<Rc<Live<R>>> {
        self.stage
            .with(|stage| match stage {
                Stage::Live(live) => Some(live.clone()),
                _ => None,
            })
            .flatten()
    }

    /// The live generation `generation`, taken out of the slot.
    pub(super) fn take_live(&self, generation: u64) -> Option<Rc<Live<R>>> {
        self.take_where(|stage| match stage {
            Stage::Live(live) if live.gpu.generation == generation => Ok(live),
            other => Err(other),
        })
    }

    /// Device `generation` configured the canvas.
    pub(super) fn owns_canvas(&self, generation: u64) {
        self.canvas_owner.set(Some(generation));
    }

    /// Lets `gpu`'s device go; unconfigures the canvas only if that device
    /// still owns it (an old attempt must not unconfigure a newer device's
    /// canvas).
    pub(super) fn release(&self, gpu: &GpuContext) {
        if self.canvas_owner.get() == Some(gpu.generation) {
            self.canvas_owner.set(None);
            gpu.release();
        } else {
            gpu.device.retire();
        }
    }

    /// The adapter, in words (the last one obtained).
    pub(super) fn adapter(&self) -> String {
        self.adapter.get().unwrap_or_default()
    }

    pub(super) fn set_adapter(&self, name: &str) {
        self.adapter.replace(name.to_string());
    }
}
