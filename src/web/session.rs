//! What every device of one application shares across recoveries: the ledger, the
//! diagnostics level, the frame counter, the one fault sink and the fault injector.

use std::cell::Cell;
use std::rc::Rc;

use crate::frame_sampling::FrameSampling;
use crate::ledger::SharedLedger;
use crate::web::faults::FaultSink;
#[cfg(feature = "fault-injection")]
use crate::web::inject::Injector;

/// How much scoping the library does, chosen at run time (no rebuild).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiagnosticsLevel {
    /// Production: no phase or frame scopes; the uncaptured-error listener and the loss
    /// supervisor stay on, and the library's own scopes (the out-of-memory ladder,
    /// shader creation) still run, because their answer decides what happens next.
    Off,
    /// One scope set per phase, and per frame as [`FrameSampling`] says: one
    /// frame in 32, every frame for a while after the fault sink caught an error (the
    /// default).
    Phases,
    /// Phase scopes, plus the Rust call site of every creation recorded under its
    /// label: a fault is attributed to its call through the object label the
    /// message names. Costs about what phases cost; reports the first fault of each
    /// filter per phase.
    Attributed,
    /// One scope set per creation, with the Rust call site: every fault of a phase,
    /// each named, and every frame scoped (the hunt; costs a scope round trip per
    /// creation).
    PerCall,
}

impl DiagnosticsLevel {
    /// Every level, in order of cost.
    pub const ALL: [DiagnosticsLevel; 4] = [
        DiagnosticsLevel::Off,
        DiagnosticsLevel::Phases,
        DiagnosticsLevel::Attributed,
        DiagnosticsLevel::PerCall,
    ];

    /// Parses `"off"`, `"phases"`, `"attributed"` or `"per-call"`.
    pub fn parse(text: &str) -> Option<Self> {
        DiagnosticsLevel::ALL
            .into_iter()
            .find(|level| level.as_str() == text)
    }

    /// The name `parse` accepts.
    pub fn as_str(self) -> &'static str {
        match self {
            DiagnosticsLevel::Off => "off",
            DiagnosticsLevel::Phases => "phases",
            DiagnosticsLevel::Attributed => "attributed",
            DiagnosticsLevel::PerCall => "per-call",
        }
    }
}

/// A session: what every device of one application shares, across recoveries. The fault
/// sink is given at construction and never replaced. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Session {
    ledger: SharedLedger,
    level: Rc<Cell<DiagnosticsLevel>>,
    frame: Rc<Cell<u64>>,
    sampling: Rc<Cell<FrameSampling>>,
    faults: FaultSink,
    #[cfg(feature = "fault-injection")]
    injector: Rc<Injector>,
}

impl Session {
    /// A context whose faults go to `faults`; the fault sink's frame counter is the context's.
    pub fn new(faults: FaultSink, frame: Rc<Cell<u64>>) -> Self {
        Session {
            ledger: SharedLedger::new(),
            level: Rc::new(Cell::new(DiagnosticsLevel::Phases)),
            frame,
            sampling: Rc::new(Cell::new(FrameSampling::default())),
            faults,
            #[cfg(feature = "fault-injection")]
            injector: Rc::new(Injector::default()),
        }
    }

    /// The fault injector (idle unless armed).
    #[cfg(feature = "fault-injection")]
    pub fn injector(&self) -> &Injector {
        &self.injector
    }

    /// The fault sink.
    pub fn faults(&self) -> &FaultSink {
        &self.faults
    }

    /// The ledger of live objects.
    pub fn ledger(&self) -> &SharedLedger {
        &self.ledger
    }

    /// The diagnostics level.
    pub fn level(&self) -> DiagnosticsLevel {
        self.level.get()
    }

    /// Changes the diagnostics level, effective from the next call.
    pub fn set_level(&self, level: DiagnosticsLevel) {
        self.level.set(level);
    }

    /// The current frame number (0 before the first frame).
    pub fn frame(&self) -> u64 {
        self.frame.get()
    }

    /// Sets the current frame number. Errors the fault sink's listeners counted while
    /// its log was silent are handed over first, tagged with the frame they
    /// arrived in.
    pub fn set_frame(&self, frame: u64) {
        if frame != self.frame.get() {
            self.faults.drain_held();
        }
        self.frame.set(frame);
    }

    /// Which frames get scopes.
    pub fn frame_sampling(&self) -> FrameSampling {
        self.sampling.get()
    }

    /// Changes which frames get scopes, effective from the next frame.
    pub fn set_frame_sampling(&self, sampling: FrameSampling) {
        self.sampling.set(sampling);
    }

    /// Whether frame `frame` gets scopes at the current level and sampling. Every
    /// frame does while the fault sink's listener is installed on no device (an error
    /// outside a scope would then reach nobody).
    pub fn frame_is_scoped(&self, frame: u64) -> bool {
        let level = self.level();
        level != DiagnosticsLevel::Off
            && self.sampling.get().scoped(
                frame,
                level == DiagnosticsLevel::PerCall || !self.faults.is_installed(),
                &self.faults.hunt(),
            )
    }
}

impl Default for Session {
    /// A context with a fresh fault sink.
    fn default() -> Self {
        let frame = Rc::new(Cell::new(0));
        Session::new(FaultSink::new(frame.clone()), frame)
    }
}
