//! Fault injection, carried out. One idea, two names: an [`Injection`] is
//! what to inject ([`crate::chaos`], with seeded random sequences of them);
//! the [`Injector`] is what injections left armed or pending: a fault for the
//! next build (the allocator's hook, zero cost when nothing is armed: one
//! `Cell<bool>` read per creation), a loss due after some frames, a storm of
//! errors. [`crate::web::Runtime::inject`] carries an injection out.
//!
//! [`Injection`]: crate::chaos::Injection

use std::cell::Cell;

use gloo_timers::callback::Interval;

use crate::held::Held;

/// A fault armed for the next build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildFault {
    /// Lose the device before the Nth creation.
    Lose(u32),
    /// Fail the Nth creation as out-of-memory.
    OutOfMemory(u32),
    /// Make the Nth creation throw.
    Throw(u32),
}

impl BuildFault {
    fn at(self) -> u32 {
        match self {
            BuildFault::Lose(n) | BuildFault::OutOfMemory(n) | BuildFault::Throw(n) => n,
        }
    }
}

/// What injections left armed or pending, shared by every device of a guard.
#[derive(Debug, Default)]
pub struct Injector {
    armed: Cell<bool>,
    creations: Cell<u32>,
    fault: Cell<Option<BuildFault>>,
    fired: Cell<u64>,
    /// Frames left before an injected loss.
    lose_after: Cell<Option<u32>>,
    /// The storm under way.
    storm: Held<Option<Interval>>,
}

impl Injector {
    /// Whether a fault is armed (the allocator's only cost when none is).
    pub fn is_armed(&self) -> bool {
        self.armed.get()
    }

    /// Arms `fault` for the creations to come, counted from 0.
    pub fn arm(&self, fault: BuildFault) {
        self.creations.set(0);
        self.fault.set(Some(fault));
        self.armed.set(true);
    }

    /// Disarms whatever is armed.
    pub fn disarm(&self) {
        self.fault.set(None);
        self.armed.set(false);
    }

    /// Cancels everything armed or pending (on stop, on drop, after a crash).
    pub fn clear(&self) {
        self.disarm();
        self.lose_after.set(None);
        self.stop_storm();
    }

    /// Loses the device after `frames` more frames.
    pub(crate) fn lose_after(&self, frames: u32) {
        self.lose_after.set(Some(frames.max(1)));
    }

    /// Cancels a loss due after some frames (the device it was meant for is gone).
    pub(crate) fn cancel_pending_loss(&self) {
        self.lose_after.set(None);
    }

    /// Counts a frame towards a pending loss: whether the loss is due now.
    pub(crate) fn loss_due(&self) -> bool {
        match self.lose_after.get() {
            Some(left) if left <= 1 => {
                self.lose_after.set(None);
                true
            }
            Some(left) => {
                self.lose_after.set(Some(left - 1));
                false
            }
            None => false,
        }
    }

    /// Keeps `storm` running until it ends or is stopped.
    pub(crate) fn set_storm(&self, storm: Interval) {
        let previous = self.storm.replace(Some(storm));
        drop(previous);
    }

    /// Whether an injected storm is under way.
    pub fn storm_running(&self) -> bool {
        self.storm.with(|storm| storm.is_some()).unwrap_or(false)
    }

    /// Stops the storm under way, if any.
    pub fn stop_storm(&self) {
        let storm = self.storm.take();
        drop(storm);
    }

    /// The storm ended, from inside its own timer: its closure (running
    /// now) is kept, the timer cleared.
    pub(crate) fn storm_ended(&self) {
        if let Some(Some(done)) = self.storm.take() {
            done.cancel().forget();
        }
    }

    /// How many armed faults fired so far.
    pub fn fired(&self) -> u64 {
        self.fired.get()
    }

    /// Called before each creation: the fault to carry out now, if its turn came.
    pub(crate) fn on_creation(&self) -> Option<BuildFault> {
        let fault = self.fault.get()?;
        let n = self.creations.get();
        self.creations.set(n + 1);
        if n < fault.at() {
            return None;
        }
        self.disarm();
        self.fired.set(self.fired.get() + 1);
        Some(fault)
    }
}
