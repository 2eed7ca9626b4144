//! Phases: a labelled, synchronous piece of work inside one scope set of every
//! filter, awaited together with the per-call pops it collected.

use crate::fault::{Fault, FaultKind, Origin};
use crate::web::context::DiagnosticsLevel;
use crate::web::device::GuardedDevice;
use crate::web::scope::{tag_fault, wait_all, Filter, ScopeSet};

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
    /// the phase `label` (the others caught with it in [`Fault::related`]). The
    /// fault is reported to the fault sink once, and returned.
    ///
    /// `work` is synchronous on purpose: an `.await` between push and pop would let
    /// other tasks drop their errors into this phase. With
    /// [`DiagnosticsLevel::Off`] no scope is pushed: GPU errors reach the net, and
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
        if self.level() == DiagnosticsLevel::Off {
            return work().map_err(|f| self.report(tag_fault(f, &origin)));
        }
        let scopes = ScopeSet::push(self, &Filter::ALL).tagged(origin.clone());
        self.enter_phase();
        let result = work();
        self.leave_phase();
        let mut sets = vec![scopes.close_probed()];
        let outermost = !self.in_phase();
        if outermost {
            sets.extend(self.take_pending_calls());
        }
        let mut outcomes = wait_all(sets).await;
        let device_lost = outcomes.iter().any(|o| o.device_lost);
        let phase_outcome = if outcomes.is_empty() {
            Default::default()
        } else {
            outcomes.remove(0)
        };
        let mut faults: Vec<Fault> = Vec::new();
        if let Err(fault) = &result {
            faults.push(tag_fault(fault.clone(), &origin));
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
                .flat_map(|o| o.faults)
                .chain(phase_outcome.faults)
                .map(|f| self.attribute(tag_fault(f, &origin))),
        );
        if outermost {
            self.clear_call_sites();
        }
        match result {
            Ok(value) if faults.is_empty() => Ok(value),
            _ => {
                let first = faults.remove(0);
                Err(self.report(first.with_related(faults)))
            }
        }
    }
}
