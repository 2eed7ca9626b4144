//! Fault injection, carried out: the allocator's hook (zero cost when nothing is
//! armed: one `Cell<bool>` read per creation) and the faults a runtime injects
//! ([`crate::web::Runtime::inject`]). What can be injected, and seeded random
//! sequences of it, are in [`crate::chaos`].

use std::cell::Cell;

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

/// The allocator's side of fault injection, shared by every device of a context.
#[derive(Debug, Default)]
pub struct Injector {
    armed: Cell<bool>,
    creations: Cell<u32>,
    fault: Cell<Option<BuildFault>>,
    fired: Cell<u64>,
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
