//! Error scopes that wgpu can never see popped out of order. wgpu 28+ hands
//! out an `ErrorScopeGuard` per push and panics when one is popped before a
//! scope pushed after it. Every scope this crate pushes lives on one stack per
//! device ([`ScopeStack`]); closing a scope closes every scope opened after
//! it first, newest first, so the order wgpu checks always holds, whichever
//! [`Phase`] ends or is dropped first.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;

use webgpu_guard_core::fault::{label_in_message, CallSite, Fault, FaultKind};

use crate::gpu::Gpu;

/// A popped scope's outcome, still to come.
type PopFuture = Pin<Box<dyn Future<Output = Option<wgpu::Error>>>>;

/// The filters of one set, in the order they are pushed (popped in reverse).
const FILTERS: [wgpu::ErrorFilter; 3] = [
    wgpu::ErrorFilter::Validation,
    wgpu::ErrorFilter::OutOfMemory,
    wgpu::ErrorFilter::Internal,
];

/// One open set of scopes (validation, out of memory, internal).
struct OpenSet {
    id: u64,
    /// Whether a [`Phase`] owns it (it waits for its outcome).
    phase: bool,
    name: String,
    guards: Vec<wgpu::ErrorScopeGuard>,
    /// The labelled creations made while this set was the newest, with their
    /// call sites: the suspects of an error whose message names no object.
    calls: Vec<(String, CallSite)>,
}

/// A set closed: its scopes popped, their outcomes still to come.
pub(crate) struct ClosedSet {
    id: u64,
    phase: bool,
    name: String,
    pops: Vec<PopFuture>,
    calls: Vec<(String, CallSite)>,
}

impl ClosedSet {
    /// The set's faults, once the device answered: each names the set, the
    /// object the message names, or else the set's labelled calls.
    pub(crate) async fn faults(self) -> Vec<Fault> {
        let mut faults = Vec::new();
        for pop in self.pops {
            if let Some(error) = pop.await {
                faults.push(fault_of(&error, &self.name, &self.calls));
            }
        }
        faults
    }
}

/// The fault of one of wgpu's errors, caught by the set `name`.
pub(crate) fn fault_of(error: &wgpu::Error, name: &str, calls: &[(String, CallSite)]) -> Fault {
    let (kind, message) = match error {
        wgpu::Error::Validation { description, .. } => {
            (FaultKind::Validation, description.trim_end().to_string())
        }
        wgpu::Error::OutOfMemory { source } => (FaultKind::OutOfMemory, source.to_string()),
        wgpu::Error::Internal { description, .. } => {
            (FaultKind::Internal, description.trim_end().to_string())
        }
    };
    let label = label_in_message(&message);
    let mut fault = Fault::new(kind, message).in_phase(name);
    match label {
        Some(label) => fault = fault.on_object(label),
        None => fault.suspects = Some(calls.to_vec()),
    }
    fault
}

/// Every set of scopes open on one device, oldest first.
#[derive(Default)]
pub(crate) struct ScopeStack {
    open: RefCell<Vec<OpenSet>>,
    /// Sets of phases that an outer phase closed first, kept for their
    /// phases' own end (or drop).
    parked: RefCell<Vec<ClosedSet>>,
    next_id: Cell<u64>,
}

impl ScopeStack {
    /// Pushes a set (validation, out of memory, internal) named `name`, of
    /// the runtime's own (whoever closes it reports what it caught).
    pub(crate) fn open(&self, device: &wgpu::Device, name: &str) -> u64 {
        self.push(device, name, false)
    }

    /// Pushes the set of a [`Phase`]: closed first by an outer phase, it is
    /// kept for this one's end.
    fn open_phase(&self, device: &wgpu::Device, name: &str) -> u64 {
        self.push(device, name, true)
    }

    fn push(&self, device: &wgpu::Device, name: &str, phase: bool) -> u64 {
        let id = self.next_id.get() + 1;
        self.next_id.set(id);
        let guards = FILTERS
            .iter()
            .map(|filter| device.push_error_scope(*filter))
            .collect();
        self.open.borrow_mut().push(OpenSet {
            id,
            phase,
            name: name.to_string(),
            guards,
            calls: Vec::new(),
        });
        id
    }

    /// Closes set `id` and every set opened after it, newest first, each
    /// popped in reverse: what each will say, newest first. Nothing when `id`
    /// was closed already (with a set opened before it).
    pub(crate) fn close(&self, id: u64) -> Vec<ClosedSet> {
        let closing: Vec<OpenSet> = {
            let mut open = self.open.borrow_mut();
            match open.iter().position(|set| set.id == id) {
                Some(at) => open.drain(at..).collect(),
                None => return Vec::new(),
            }
        };
        closing
            .into_iter()
            .rev()
            .map(|set| {
                let mut guards = set.guards;
                let mut pops: Vec<PopFuture> = Vec::with_capacity(guards.len());
                while let Some(guard) = guards.pop() {
                    pops.push(Box::pin(guard.pop()));
                }
                ClosedSet {
                    id: set.id,
                    phase: set.phase,
                    name: set.name,
                    pops,
                    calls: set.calls,
                }
            })
            .collect()
    }

    /// How many sets are open.
    pub(crate) fn depth(&self) -> usize {
        self.open.borrow().len()
    }

    /// Closes every set opened above the first `depth`, newest first (see
    /// [`ScopeStack::close`]).
    pub(crate) fn close_above(&self, depth: usize) -> Vec<ClosedSet> {
        let id = self.open.borrow().get(depth).map(|set| set.id);
        id.map(|id| self.close(id)).unwrap_or_default()
    }

    /// Keeps `set`, a phase's that an outer phase closed first, for that
    /// phase's own end.
    fn park(&self, set: ClosedSet) {
        self.parked.borrow_mut().push(set);
    }

    /// Phase `id`'s set, if an outer phase closed it first.
    fn claim(&self, id: u64) -> Option<ClosedSet> {
        let mut parked = self.parked.borrow_mut();
        let at = parked.iter().position(|set| set.id == id)?;
        Some(parked.swap_remove(at))
    }

    /// Records a labelled creation in the newest open set.
    pub(crate) fn record_call(&self, label: &str, site: CallSite) {
        if let Some(set) = self.open.borrow_mut().last_mut() {
            set.calls.push((label.to_string(), site));
        }
    }
}

impl Drop for ScopeStack {
    /// Sets still open when the device's `Gpu` goes (an application's code
    /// abandoned by a trap) are popped newest first, each in reverse: wgpu's
    /// guards, dropped in the order they were pushed, would panic.
    fn drop(&mut self) {
        let open = std::mem::take(self.open.get_mut());
        for set in open.into_iter().rev() {
            let mut guards = set.guards;
            while let Some(guard) = guards.pop() {
                drop(guard.pop());
            }
        }
    }
}

/// A phase of work (an upload, the build of a pipeline) inside its own error
/// scopes (validation, out of memory, internal). [`Phase::end`] pops them in
/// reverse and says what they caught, as a [`Fault`] naming the phase and the
/// object the engine's message names. A phase dropped without `end` (a `?`
/// between) is popped all the same, and what it caught is reported through
/// the runtime's fault log. Phases nest; ending an outer phase first pops the
/// inner ones too, so the order wgpu demands holds, and keeps what they
/// caught for their own `end` (or drop).
#[must_use = "a phase catches errors until it ends: call `end().await`"]
pub struct Phase<'a> {
    gpu: &'a Gpu,
    id: u64,
    ended: bool,
}

impl<'a> Phase<'a> {
    pub(crate) fn new(gpu: &'a Gpu, name: &str) -> Self {
        let id = gpu.scopes().open_phase(&gpu.device, name);
        Phase {
            gpu,
            id,
            ended: false,
        }
    }

    /// Pops the phase's scopes (and any phase opened inside it and still open,
    /// first) and waits for their outcome: `Err` with the first fault, the
    /// others attached as related. A lost device's scopes answer nothing,
    /// which proves nothing: when they caught nothing, [`Gpu::confirm_alive`]
    /// decides, and a lost device is `Err` ([`FaultKind::DeviceLost`]). The
    /// `Err` is reported once (the log, the counters, telemetry) and returned
    /// marked reported: handled by the caller or returned again with `?`, it
    /// is counted once.
    pub async fn end(self) -> Result<(), Fault> {
        let gpu = self.gpu;
        // As the scopes close (in this first poll): held by the runtime?
        let held = gpu.held();
        self.conclude()
            .await
            .map_err(|fault| gpu.report_seen(fault, held))
    }

    /// [`Self::end`] without reporting the `Err` (the ladder's sizes that do
    /// not fit are notes, not errors).
    pub(crate) async fn conclude(mut self) -> Result<(), Fault> {
        self.ended = true;
        let scopes = self.gpu.scopes();
        let mut closed = scopes.close(self.id);
        let own = closed.pop().or_else(|| scopes.claim(self.id));
        for inner in closed {
            self.hand_on(inner);
        }
        let Some(own) = own else {
            // Closed by the runtime (left open at the end of a frame or of
            // `build`: its faults reported then): on a lost device, its
            // silence proves nothing either.
            return match self.gpu.confirm_alive().await {
                true => Ok(()),
                false => Err(Fault::new(
                    FaultKind::DeviceLost,
                    "the device was lost: the runtime closed the phase's scopes before it ended, and the device answers nothing",
                )),
            };
        };
        let name = own.name.clone();
        let mut faults = own.faults().await.into_iter();
        match faults.next() {
            Some(first) => Err(first.with_related(faults.collect())),
            None if self.gpu.confirm_alive().await => Ok(()),
            None => Err(Fault::new(
                FaultKind::DeviceLost,
                "the device was lost: the phase's scopes answered nothing, which proves nothing",
            )
            .in_phase(name)),
        }
    }
}

impl Drop for Phase<'_> {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let scopes = self.gpu.scopes();
        let mut closed = scopes.close(self.id);
        if let Some(own) = closed.pop().or_else(|| scopes.claim(self.id)) {
            self.gpu.report_later(own);
        }
        for inner in closed {
            self.hand_on(inner);
        }
    }
}

impl Phase<'_> {
    /// A set this phase closed above its own: a phase's is kept for that
    /// phase's end (which says what it caught), any other is reported.
    fn hand_on(&self, set: ClosedSet) {
        if set.phase {
            self.gpu.scopes().park(set);
        } else {
            self.gpu.report_later(set);
        }
    }
}

impl std::fmt::Debug for Phase<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Phase").field("id", &self.id).finish()
    }
}
