//! Phases: a labelled, synchronous piece of work inside one scope set of every
//! filter, awaited together with the per-call pops it collected.

use crate::fault::{CallSite, Fault, FaultKind, Origin};
use crate::web::device::GuardedDevice;
use crate::web::scope::{settle, tag_fault, Filter, ScopeOutcome, ScopeSet};
use crate::web::session::DiagnosticsLevel;

impl GuardedDevice {
    /// Whether the device is alive, known for certain: one round trip through the
    /// GPU process (a `lost` promise may resolve later than the loss).
    pub async fn confirm_alive(&self) -> bool {
        !ScopeSet::push(self, &[Filter::Validation])
            .pop()
            .await
            .device_lost
    }

    /// Runs `work` inside validation + out-of-memory + internal scopes (pushed in
    /// that order, popped in reverse) and returns its value, or one fault naming
    /// the phase `label` (the others caught with it in [`FaultRecord::related`](crate::FaultRecord::related)). The
    /// fault is reported to the fault sink once, and returned.
    ///
    /// `work` is synchronous on purpose: an `.await` between push and pop would let
    /// other tasks drop their errors into this phase. With
    /// [`DiagnosticsLevel::Off`] no scope is pushed: GPU errors reach the fault sink, and
    /// an `Err` from `work` still names the phase.
    ///
    /// A phase on a device that turns out to be lost fails with
    /// [`FaultKind::DeviceLost`]: its null pops prove nothing.
    pub async fn phase<T>(
        &self,
        label: &str,
        work: impl FnOnce() -> Result<T, Fault>,
    ) -> Result<T, Fault> {
        let origin = Origin {
            phase: Some(label.to_string()),
            ..Origin::default()
        };
        let (scopes, result) = self.run_scoped(&origin, work);
        // The rest does not depend on `T`: one copy however many phases an
        // application has.
        let (value, fault) = match result {
            Ok(value) => (Some(value), None),
            Err(fault) => (None, Some(fault)),
        };
        match (
            self.conclude_phase(label, &origin, scopes, fault).await,
            value,
        ) {
            (Some(fault), _) => Err(fault),
            (None, Some(value)) => Ok(value),
            (None, None) => Err(Fault::new(FaultKind::Exception, "the phase never ran")),
        }
    }

    /// What a phase's scopes caught, with the fault its work returned: one
    /// fault naming the phase (the others related to it), reported, or `None`.
    async fn conclude_phase(
        &self,
        label: &str,
        origin: &Origin,
        scopes: Option<ScopeSet>,
        fault: Option<Fault>,
    ) -> Option<Fault> {
        let Some(scopes) = scopes else {
            return fault.map(|f| self.report(tag_fault(f, origin)));
        };
        let mut sets = vec![scopes.close_probed()];
        // The per-call scopes and call sites of this phase's work, taken before
        // it awaits: another phase of this device may run its work meanwhile.
        // A phase inside another's work leaves them to the outermost, and
        // names its calls from a copy of the sites recorded so far.
        let call_sites = if self.in_phase() {
            self.call_sites()
        } else {
            sets.extend(self.take_pending_calls());
            self.take_call_sites()
        };
        // All of this device: settled as one, with one probe.
        let mut outcomes = settle(sets, true).await;
        let device_lost = outcomes.iter().any(|o| o.device_lost);
        let phase_outcome = if outcomes.is_empty() {
            Default::default()
        } else {
            outcomes.remove(0)
        };
        let mut faults: Vec<Fault> = Vec::new();
        if let Some(fault) = fault {
            faults.push(tag_fault(fault, origin));
        }
        if device_lost {
            faults.push(
                Fault::new(
                    FaultKind::DeviceLost,
                    "the device was lost: its error scopes resolve to null, nothing can be known",
                )
                .in_phase(label),
            );
        }
        // Per-call faults before the phase's own: they carry the call site.
        faults.extend(
            outcomes
                .into_iter()
                .flat_map(ScopeOutcome::take_faults)
                .chain(phase_outcome.take_faults())
                .map(|f| attribute(tag_fault(f, origin), &call_sites)),
        );
        if faults.is_empty() {
            return None;
        }
        let first = faults.remove(0);
        Some(self.report(first.with_related(faults)))
    }
}

impl GuardedDevice {
    /// Runs `work` in a labelled phase without awaiting, for work between frames
    /// that cannot wait (rebuilding what depends on the canvas's size): the
    /// scopes pop at once, and what they catch reaches the fault sink, tagged with the
    /// phase, when the GPU process answers. An `Err` of `work` (or a throw
    /// through WebAssembly) is reported and returned.
    pub fn phase_now<T>(
        &self,
        label: &str,
        work: impl FnOnce() -> Result<T, Fault>,
    ) -> Result<T, Fault> {
        let origin = Origin {
            phase: Some(label.to_string()),
            ..Origin::default()
        };
        let (scopes, result) = self.run_scoped(&origin, work);
        if let Some(scopes) = scopes {
            scopes.close().detach();
        }
        if !self.in_phase() {
            // Per-call scopes of the phase: settled on their own, to the fault sink.
            drop(self.take_pending_calls());
            // Its call sites go with it: nothing here awaits the errors they
            // would name.
            drop(self.take_call_sites());
        }
        result.map_err(|f| self.report(tag_fault(f, &origin)))
    }

    /// Pushes a phase's scopes (none at [`DiagnosticsLevel::Off`]) and runs
    /// `work` inside them, through the trampoline; the caller closes them.
    fn run_scoped<T>(
        &self,
        origin: &Origin,
        work: impl FnOnce() -> Result<T, Fault>,
    ) -> (Option<ScopeSet>, Result<T, Fault>) {
        if self.level() == DiagnosticsLevel::Off {
            return (None, run_in_trampoline(work));
        }
        let scopes = ScopeSet::push(self, &Filter::ALL).tagged(origin.clone());
        self.enter_phase();
        let result = run_in_trampoline(work);
        self.leave_phase();
        (Some(scopes), result)
    }
}

/// Names the call behind `fault` from the object its message blames (known to
/// the library, or named by the engine), when attribution recorded a call with
/// that label among `call_sites` (the phase's own). Where the message does not
/// say which object failed, the fault lists the phase's calls that could have
/// (none recorded below the attributed level: the per-call level names it)
/// instead of guessing.
fn attribute(mut fault: Fault, call_sites: &[(String, CallSite)]) -> Fault {
    if fault.origin.call_site.is_some() {
        return fault;
    }
    let Some(label) = fault.object_label() else {
        if matches!(
            fault.kind,
            FaultKind::Validation | FaultKind::OutOfMemory | FaultKind::Internal
        ) {
            fault.suspects = Some(call_sites.iter().take(MAX_SUSPECTS).cloned().collect());
        }
        return fault;
    };
    // Objects of the same label made at different places: the message names
    // one of them, and which is not known. They are the suspects.
    let mut namesakes = call_sites.iter().filter(|(l, _)| *l == label);
    if let Some((_, first)) = namesakes.next() {
        if namesakes.clone().all(|(_, site)| site == first) {
            fault.origin.call_site = Some(*first);
        } else {
            let suspects = call_sites.iter().filter(|(l, _)| *l == label);
            fault.suspects = Some(suspects.take(MAX_SUSPECTS).cloned().collect());
        }
    }
    fault.origin.object = Some(label);
    fault
}

/// The most calls a fault lists as suspects.
const MAX_SUSPECTS: usize = 12;

/// Runs `work` through the crash trampoline: a JavaScript exception thrown
/// through WebAssembly (a raw binding that does not catch) becomes an
/// [`FaultKind::Exception`] and the phase's scopes still pop (scopes of sets the
/// throw abandoned inside `work` first); after a panic the fault says the
/// application crashed.
fn run_in_trampoline<T>(work: impl FnOnce() -> Result<T, Fault>) -> Result<T, Fault> {
    let mut work = Some(work);
    let mut result = None;
    let thrown = trampoline_in_phase(&mut || {
        if let Some(work) = work.take() {
            result = Some(work());
        }
    });
    match (thrown, result) {
        (None, Some(result)) => result,
        (Some(fault), _) => Err(fault),
        (None, None) => Err(Fault::new(FaultKind::Exception, "the phase never ran")),
    }
}

/// The untyped part of [`run_in_trampoline`]: `f` through the trampoline, and
/// the fault of a throw (after the scopes it abandoned are popped).
fn trampoline_in_phase(f: &mut dyn FnMut()) -> Option<Fault> {
    let thrown = crate::web::crash::trampoline(f).err()?;
    if crate::web::crash::crashed() {
        return Some(crate::web::crash::thrown_fault(
            "the application crashed inside the phase",
            &thrown,
        ));
    }
    Some(crate::web::crash::thrown_fault(
        "the phase threw (a raw web-sys call that does not catch?)",
        &thrown,
    ))
}
