//! The one error-scope guard: [`ScopeSet`].
//!
//! A scope set pushes every filter it is given, in [`Filter::ALL`] order, and pops
//! them in reverse, on every path:
//! * [`ScopeSet::close`] pops now and hands back the pending pops
//!   ([`PendingPops`]), to await ([`PendingPops::wait`], [`wait_all`]) or to let
//!   settle on their own ([`PendingPops::detach`]);
//! * `Drop` pops without awaiting, and whatever the scopes caught goes to the
//!   device's fault sink, tagged with the set's [`Origin`]: `?`, `Err` and early
//!   returns all pop.
//!
//! A wait cancelled (its future dropped) before or while its pops settle loses
//! nothing: the pops settle anyway, what they caught goes to the fault sink and
//! a device found lost is marked lost.
//!
//! One rule for reporting: every fault a pop catches has one owner, the
//! [`ScopeOutcome`] its settle made, whether the pops were awaited, detached,
//! dropped or cancelled. The outcome hands it to the fault sink, once, when it
//! is dropped, unless the caller took it with [`ScopeOutcome::into_fault`] (see
//! there); the library's own waits (phases, shader creation) take it that way
//! and report one fault naming the phase or module.
//!
//! Phases, frames, per-call tracking, the out-of-memory ladder and shader creation
//! all use it. Pushing and popping happen in one JavaScript call each and never
//! throw into Rust; a pop on an empty stack rejects, and that rejection is always
//! observed here and becomes a [`FaultKind::ScopeStack`] fault, never an unhandled
//! rejection.
//!
//! A pop on a lost device resolves to null, exactly like a clean pop. An awaited
//! pop is therefore classified only once the device's state is known, through a
//! liveness probe: a deliberately invalid call whose error comes back only if the
//! device was alive when the pops were answered. The probe always has a
//! validation scope of its own, pushed just for it and popped right after the
//! call, so no other scope (the set's, another set's, an application's) ever
//! sees its error, and that error is never read: on a live device the probe's
//! pop resolves to an error, on a lost one to null, whatever the engine's
//! wording (WebKit's messages are the same generic text for every error). A
//! set popped to be awaited ([`ScopeSet::pop`], phases, the ladder, shader
//! creation) carries its probe: the probe's push, call and pop follow the
//! set's own pops in the same JavaScript call (one extra push/pop pair), and
//! its pop is settled together with theirs. Sets awaited together are vouched
//! for by the probe of the set popped last; sets without one get a separate
//! probe issued after every pop; and a carried probe that reads null or rejects
//! gets a second, separate probe, so that only a probe issued after it judges a
//! device lost.

use std::cell::Cell;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::GpuError;

use crate::fault::{Fault, FaultKind, Origin};
use crate::web::abandon::Registration;
use crate::web::classify::to_fault;
use crate::web::faults::FaultSink;
use crate::web::handle::DeviceHandle;
use crate::web::js::describe;

#[wasm_bindgen(module = "/src/web/scope.js")]
extern "C" {
    fn guard_set_filters(names: js_sys::Array);
    fn guard_push(device: &web_sys::GpuDevice, mask: u32) -> u32;
    fn guard_pop(device: &web_sys::GpuDevice, mask: u32, probe: bool) -> js_sys::Array;
    /// Settles every pop of `batches` (arrays of pops) together. With
    /// `probe_device`, liveness is read from the probe carried by batch `folded`
    /// (popped last of all), or from a separate probe issued after every pop when
    /// `folded` is -1 or carries none. Resolves to `alive` when nothing was
    /// caught, else to `[alive, then (index, fulfilled, value) for each pop that
    /// caught an error or rejected]`; probes are never among them.
    fn guard_settle(
        batches: &js_sys::Array,
        probe_device: Option<&web_sys::GpuDevice>,
        folded: i32,
    ) -> js_sys::Promise;
    fn guard_pop_report(
        device: &web_sys::GpuDevice,
        mask: u32,
        tag: f64,
        report: &js_sys::Function,
    );
}

/// What the trampoline does for a set of `mask` on `device` that a throw
/// abandoned: its pops, what they catch sent to the fault sink tagged with
/// `origin`, as its `Drop` would.
fn undo_on_abandon(device: &DeviceHandle, mask: u32, origin: Origin) -> Registration {
    let device = device.clone();
    Registration::new(Box::new(move || {
        PendingPops::pop(&device, mask, origin, false).detach();
    }))
}

/// An error-scope filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Filter {
    /// `"validation"`.
    Validation,
    /// `"out-of-memory"`.
    OutOfMemory,
    /// `"internal"`.
    Internal,
}

impl Filter {
    /// Every filter, in the order a set pushes them (popped in reverse). Adding a
    /// filter touches this list and [`Filter::as_str`] only.
    pub const ALL: [Filter; 3] = [Filter::Validation, Filter::OutOfMemory, Filter::Internal];

    /// The `GPUErrorFilter` string.
    pub fn as_str(self) -> &'static str {
        match self {
            Filter::Validation => "validation",
            Filter::OutOfMemory => "out-of-memory",
            Filter::Internal => "internal",
        }
    }

    /// The fault kind this filter catches.
    pub fn kind(self) -> FaultKind {
        match self {
            Filter::Validation => FaultKind::Validation,
            Filter::OutOfMemory => FaultKind::OutOfMemory,
            Filter::Internal => FaultKind::Internal,
        }
    }

    fn bit(self) -> u32 {
        let index = Filter::ALL.iter().position(|f| *f == self).unwrap_or(0);
        1 << index
    }
}

/// A mask of filters, in [`Filter::ALL`] order.
pub(crate) fn mask_of(filters: &[Filter]) -> u32 {
    filters.iter().fold(0, |mask, f| mask | f.bit())
}

fn filters_of(mask: u32) -> Vec<Filter> {
    Filter::ALL
        .into_iter()
        .filter(|f| mask & f.bit() != 0)
        .collect()
}

thread_local! {
    static FILTERS_SET: Cell<bool> = const { Cell::new(false) };
}

/// Hands the filter names to the JavaScript side once.
fn ensure_filters() {
    if !FILTERS_SET.with(|set| set.replace(true)) {
        let names = js_sys::Array::new();
        for filter in Filter::ALL {
            names.push(&filter.as_str().into());
        }
        guard_set_filters(names);
    }
}

/// Pushes the filters of `mask` on `device`; returns the mask actually pushed.
fn push_mask(device: &DeviceHandle, mask: u32) -> u32 {
    ensure_filters();
    guard_push(device.raw(), mask)
}

fn pop_mask_reported(device: &DeviceHandle, mask: u32, tag: f64, report: &js_sys::Function) {
    ensure_filters();
    guard_pop_report(device.raw(), mask, tag, report);
}

/// Fills the origin fields a fault lacks from `origin`.
pub(crate) fn tag_fault(mut fault: Fault, origin: &Origin) -> Fault {
    if fault.origin.phase.is_none() {
        fault.origin.phase = origin.phase.clone();
    }
    if fault.origin.object.is_none() {
        fault.origin.object = origin.object.clone();
    }
    if fault.origin.frame.is_none() {
        fault.origin.frame = origin.frame;
    }
    if fault.origin.call_site.is_none() {
        fault.origin.call_site = origin.call_site;
    }
    fault
}

/// One RAII guard over a set of error scopes. See the [module docs](self).
///
/// ```no_run
/// # async fn demo(device: &webgpu_guard::web::GuardedDevice) {
/// use webgpu_guard::web::scope::{Filter, ScopeSet};
/// let scopes = ScopeSet::push(device, &Filter::ALL);
/// // ... synchronous WebGPU calls ...
/// let outcome = scopes.close().wait().await;
/// if let Some(fault) = outcome.into_fault() {
///     eprintln!("{fault}");
/// }
/// # }
/// ```
#[must_use = "a scope set pops when dropped: bind it to a name"]
#[derive(Debug)]
pub struct ScopeSet {
    device: DeviceHandle,
    mask: u32,
    origin: Origin,
    open: bool,
    /// The pops a throw that abandons this set leaves to the trampoline.
    registration: Registration,
}

impl ScopeSet {
    /// Pushes `filters` on `device` in [`Filter::ALL`] order.
    pub fn push(device: &impl AsRef<DeviceHandle>, filters: &[Filter]) -> Self {
        let device = device.as_ref().clone();
        let mask = push_mask(&device, mask_of(filters));
        ScopeSet {
            registration: undo_on_abandon(&device, mask, Origin::default()),
            device,
            mask,
            origin: Origin::default(),
            open: true,
        }
    }

    /// Sets the origin the faults caught by this set are tagged with (phase,
    /// object, frame, call site).
    pub fn tagged(mut self, origin: Origin) -> Self {
        if self.registration.release() {
            self.registration = undo_on_abandon(&self.device, self.mask, origin.clone());
        } else {
            // Undone already: nothing of it is open.
            self.open = false;
        }
        self.origin = origin;
        self
    }

    /// Whether the set is still this value's to pop (a throw that abandoned
    /// it had the trampoline pop it); it is not any more either way.
    fn take_open(&mut self) -> bool {
        std::mem::replace(&mut self.open, false) && self.registration.release()
    }

    /// The filters pushed (a filter whose push threw is not among them).
    pub fn filters(&self) -> Vec<Filter> {
        filters_of(self.mask)
    }

    /// Pops every scope now, in reverse order, without awaiting.
    pub fn close(self) -> PendingPops {
        self.close_with(false)
    }

    /// Pops every scope now, then issues the liveness probe in a validation
    /// scope of its own: for pops about to be awaited.
    pub(crate) fn close_probed(self) -> PendingPops {
        self.close_with(true)
    }

    fn close_with(mut self, probe: bool) -> PendingPops {
        let mask = if self.take_open() { self.mask } else { 0 };
        PendingPops::pop(&self.device, mask, std::mem::take(&mut self.origin), probe)
    }

    /// Pops and awaits. What the scopes caught reaches the fault sink once, by
    /// itself (see [`ScopeOutcome`]).
    pub async fn pop(self) -> ScopeOutcome {
        self.close_with(true).wait().await
    }

    /// Pops every scope now, without awaiting and without allocating: each caught
    /// error goes to `report(tag, error, rejection)` (a JavaScript function made
    /// once) when the GPU process has answered. The frame scope's path.
    pub(crate) fn end_reported(mut self, tag: f64, report: &js_sys::Function) {
        if self.take_open() {
            pop_mask_reported(&self.device, self.mask, tag, report);
        }
    }
}

impl Drop for ScopeSet {
    /// Pops without awaiting; what the scopes caught goes to the fault sink.
    fn drop(&mut self) {
        if self.take_open() {
            PendingPops::pop(
                &self.device,
                self.mask,
                std::mem::take(&mut self.origin),
                false,
            )
            .detach();
        }
    }
}

/// Pops that were issued and not yet awaited.
#[must_use = "pending pops must be awaited or detached"]
#[derive(Debug)]
pub struct PendingPops {
    device: DeviceHandle,
    filters: Vec<Filter>,
    /// The pops' promises, one per filter, in push order.
    promises: js_sys::Array,
    origin: Origin,
    /// When the pops were issued, among every set of this thread.
    sequence: u64,
    /// Whether the liveness probe was asked for after the pops.
    probed: bool,
    /// Whether a settle has taken the pops (dropped before that, they detach).
    taken: bool,
}

thread_local! {
    static POP_SEQUENCE: Cell<u64> = const { Cell::new(0) };
}

fn next_sequence() -> u64 {
    POP_SEQUENCE.with(|n| {
        let next = n.get() + 1;
        n.set(next);
        next
    })
}

impl PendingPops {
    fn pop(device: &DeviceHandle, mask: u32, origin: Origin, probe: bool) -> Self {
        ensure_filters();
        let probed = probe && !device.is_lost();
        let promises = guard_pop(device.raw(), mask, probed);
        PendingPops {
            device: device.clone(),
            filters: filters_of(mask),
            promises,
            origin,
            sequence: next_sequence(),
            probed,
            taken: false,
        }
    }

    /// Awaits the pops (with the liveness probe). What they caught reaches the
    /// fault sink once, by itself (see [`ScopeOutcome`]).
    pub async fn wait(self) -> ScopeOutcome {
        settle(vec![self], true)
            .await
            .pop()
            .unwrap_or_else(ScopeOutcome::empty)
    }

    /// Lets the pops settle on their own (without the liveness probe: nothing is
    /// concluded from a null here); what they caught goes to the fault sink, its
    /// outcome dropped unread.
    pub fn detach(self) {
        wasm_bindgen_futures::spawn_local(async move {
            drop(settle(vec![self], false).await);
        });
    }
}

impl Drop for PendingPops {
    /// Pops dropped before anything awaited them (a future cancelled while it
    /// held them, say) are detached: what they caught still reaches the fault
    /// sink, and a rejection is still observed.
    fn drop(&mut self) {
        if std::mem::replace(&mut self.taken, true) {
            return;
        }
        PendingPops {
            device: self.device.clone(),
            filters: std::mem::take(&mut self.filters),
            promises: self.promises.clone(),
            origin: std::mem::take(&mut self.origin),
            sequence: self.sequence,
            probed: self.probed,
            taken: false,
        }
        .detach();
    }
}

/// Lets `settling` run to its end on its own and hands the faults it yields to
/// `sink`: how the library lets go of GPU work that may still fail and that
/// nobody awaits any more (pops dropped or detached, a pipeline dropped
/// unfinished). `settling` observes its promises by its first poll at the
/// latest (a microtask away), so that no rejection goes unhandled.
pub(crate) fn detach_to(
    sink: FaultSink,
    settling: impl std::future::Future<Output = Vec<Fault>> + 'static,
) {
    wasm_bindgen_futures::spawn_local(async move {
        for fault in settling.await {
            sink.report_ref(&fault);
        }
    });
}

/// What one set of pops caught.
///
/// An outcome owns what it caught: the one owner of those faults' report. It
/// hands them to the device's fault sink by itself, once, when it is dropped:
/// nobody has to forward them. What [`ScopeOutcome::faults`] shows is marked
/// reported meanwhile (the report is the outcome's), so that a caller who
/// forwards a copy as well (reports it, returns it as `Err`) does not count it
/// twice. Only [`ScopeOutcome::into_fault`] moves the faults to the caller: the
/// fault it returns is then the caller's to return as `Err` or to report. The
/// library's own waits (phases, shader creation) take them that way and report
/// one fault naming the phase or module.
#[must_use = "what the scopes caught goes to the fault sink when the outcome is dropped: read it first"]
#[derive(Debug, Default)]
pub struct ScopeOutcome {
    /// The errors caught (at most one per filter, in push order) and the
    /// rejected pops ([`FaultKind::ScopeStack`]), tagged with the set's origin.
    faults: Vec<Fault>,
    /// Whether the device was lost by the time the pops were answered: a lost
    /// device's pops resolve to null, which is then *not* a sign of success.
    pub device_lost: bool,
    /// The fault sink the faults go to when the outcome is dropped; `None`
    /// once they were taken, with nothing caught, and for a clone (the
    /// original reports).
    owner: Option<FaultSink>,
}

impl Clone for ScopeOutcome {
    fn clone(&self) -> Self {
        ScopeOutcome {
            faults: self.faults.clone(),
            device_lost: self.device_lost,
            owner: None,
        }
    }
}

impl PartialEq for ScopeOutcome {
    /// Outcomes compare by what they caught, whoever reports it.
    fn eq(&self, other: &ScopeOutcome) -> bool {
        self.faults == other.faults && self.device_lost == other.device_lost
    }
}

impl Eq for ScopeOutcome {}

impl Drop for ScopeOutcome {
    fn drop(&mut self) {
        if let Some(sink) = self.owner.take() {
            for fault in std::mem::take(&mut self.faults) {
                sink.report_ref(&unreported(fault));
            }
        }
    }
}

/// `fault` again, not marked reported (a fault handed back to the caller).
fn unreported(fault: Fault) -> Fault {
    fault.unreported()
}

impl ScopeOutcome {
    fn empty() -> Self {
        ScopeOutcome::default()
    }

    /// An outcome owning `faults`, reported to `sink` when it is dropped.
    fn owning(faults: Vec<Fault>, device_lost: bool, sink: &FaultSink) -> Self {
        let owner = (!faults.is_empty()).then(|| sink.clone());
        let faults = match owner {
            Some(_) => faults.into_iter().map(Fault::mark_reported).collect(),
            None => faults,
        };
        ScopeOutcome {
            faults,
            device_lost,
            owner,
        }
    }

    /// The errors caught (at most one per filter, in push order) and the
    /// rejected pops ([`FaultKind::ScopeStack`]), tagged with the set's origin;
    /// marked reported while the outcome owns their report.
    pub fn faults(&self) -> &[Fault] {
        &self.faults
    }

    /// Takes the faults out of the outcome's duty: the caller's from here, not
    /// marked reported.
    /// A clone, which owns nothing, hands back its copies still marked: the
    /// original reports them.
    pub(crate) fn take_faults(mut self) -> Vec<Fault> {
        let faults = std::mem::take(&mut self.faults);
        if self.owner.take().is_none() {
            return faults;
        }
        faults.into_iter().map(unreported).collect()
    }

    /// `true` only when nothing was caught and the device is known to be alive.
    pub fn is_clean(&self) -> bool {
        self.faults.is_empty() && !self.device_lost
    }

    /// The fault caught for `kind`, if any.
    pub fn caught(&self, kind: FaultKind) -> Option<&Fault> {
        self.faults.iter().find(|f| f.kind == kind)
    }

    /// One fault for the whole set: the first caught, with the others as related;
    /// a [`FaultKind::DeviceLost`] fault when nothing was caught on a lost device;
    /// `None` when clean.
    ///
    /// The faults are the caller's from here: an awaited outcome no longer hands
    /// them to the fault sink, and the fault comes back not marked reported, to
    /// return as `Err` (the runtime reports it) or to report. (The out-of-memory
    /// ladder takes them this way: a size that does not fit is a warning, not an
    /// error, when a smaller one does.)
    #[must_use = "the fault is the caller's: return it as `Err` or report it"]
    pub fn into_fault(self) -> Option<Fault> {
        let device_lost = self.device_lost;
        let mut faults = self.take_faults();
        if device_lost {
            faults.insert(
                0,
                Fault::new(
                    FaultKind::DeviceLost,
                    "the device was lost: its error scopes resolve to null, nothing can be known",
                ),
            );
        }
        if faults.is_empty() {
            return None;
        }
        let first = faults.remove(0);
        Some(first.with_related(faults))
    }
}

/// Pops a scope that was never pushed: resolves to a [`FaultKind::ScopeStack`]
/// fault when the stack is balanced. For tests that prove balance: awaited, take
/// the fault (the expected answer) with [`ScopeOutcome::into_fault`]; an outcome
/// dropped unread hands it to the fault sink like any other.
pub fn pop_unmatched(device: &impl AsRef<DeviceHandle>) -> PendingPops {
    let device = device.as_ref();
    let promise: js_sys::Promise = device.raw().pop_error_scope().unchecked_into();
    PendingPops {
        device: device.clone(),
        filters: vec![Filter::Validation],
        promises: js_sys::Array::of1(&promise),
        origin: Origin::default(),
        sequence: next_sequence(),
        probed: false,
        taken: false,
    }
}

/// Awaits many sets of pops as one: one settle with one liveness probe for the
/// batch, not one await per pop. Sets of different devices are settled device
/// by device, each with its own probe. What they caught reaches each device's
/// fault sink once, by itself (see [`ScopeOutcome`]).
pub async fn wait_all(sets: Vec<PendingPops>) -> Vec<ScopeOutcome> {
    let one_device = sets
        .windows(2)
        .all(|pair| pair[0].device.same_device(&pair[1].device));
    if one_device {
        return settle(sets, true).await;
    }
    let count = sets.len();
    let mut groups: Vec<Vec<(usize, PendingPops)>> = Vec::new();
    for (index, set) in sets.into_iter().enumerate() {
        match groups
            .iter_mut()
            .find(|group| group[0].1.device.same_device(&set.device))
        {
            Some(group) => group.push((index, set)),
            None => groups.push(vec![(index, set)]),
        }
    }
    // Settled device by device: if the wait is cancelled meanwhile, the
    // outcomes settled so far are dropped, and what they caught goes to their
    // fault sinks.
    let mut outcomes: Vec<Option<ScopeOutcome>> = (0..count).map(|_| None).collect();
    for group in groups {
        let (indices, group): (Vec<usize>, Vec<PendingPops>) = group.into_iter().unzip();
        for (index, outcome) in indices.into_iter().zip(settle(group, true).await) {
            if let Some(slot) = outcomes.get_mut(index) {
                *slot = Some(outcome);
            }
        }
    }
    outcomes
        .into_iter()
        .map(|outcome| outcome.unwrap_or_else(ScopeOutcome::empty))
        .collect()
}

/// Awaits sets of pops of one device as one (one settle, with one liveness
/// probe when `probe`); [`wait_all`] for sets of any devices.
pub(crate) async fn settle(mut sets: Vec<PendingPops>, probe: bool) -> Vec<ScopeOutcome> {
    if sets.is_empty() {
        return Vec::new();
    }
    for set in &mut sets {
        set.taken = true;
    }
    let device = sets[0].device.clone();
    let batches = js_sys::Array::new();
    for set in &sets {
        batches.push(&set.promises);
    }
    // The probe is answered with its error only if the device was alive when the
    // pops before it were answered: the one carried by the set popped last
    // vouches for every set, else a separate one is issued after every pop.
    let probed = probe && !device.is_lost();
    let last = sets
        .iter()
        .enumerate()
        .max_by_key(|(_, set)| set.sequence)
        .filter(|(_, set)| set.probed)
        .map_or(-1, |(index, _)| index as i32);
    let settling = guard_settle(&batches, probed.then(|| device.raw()), last);
    let mut in_flight = SettleInFlight {
        settling: settling.clone(),
        settle: Some(Settle {
            sets,
            device,
            probe,
            probed,
        }),
    };
    let answer = crate::web::wait::settled(&settling).await;
    match in_flight.settle.take() {
        Some(settle) => settle.conclude(answer),
        None => Vec::new(),
    }
}

/// A settle whose answer has not been read yet.
struct Settle {
    sets: Vec<PendingPops>,
    device: DeviceHandle,
    probe: bool,
    probed: bool,
}

/// A settle under way. Dropped before its answer came (the future awaiting it
/// was cancelled), it lets the answer come anyway: what the pops caught reaches
/// the fault sink and a lost device is still marked lost.
struct SettleInFlight {
    settling: js_sys::Promise,
    settle: Option<Settle>,
}

impl Drop for SettleInFlight {
    fn drop(&mut self) {
        let Some(settle) = self.settle.take() else {
            return;
        };

        let settling = self.settling.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let answer = crate::web::wait::settled(&settling).await;
            // Dropped unread: what the outcomes caught goes to the fault sink.
            drop(settle.conclude(answer));
        });
    }
}

impl Settle {
    /// Reads `guard_settle`'s answer into one outcome per set.
    fn conclude(self, answer: Result<JsValue, JsValue>) -> Vec<ScopeOutcome> {
        let Settle {
            sets,
            device,
            probe,
            probed,
        } = self;
        let sink = device.session().faults().clone();
        // A boolean when nothing was caught (the usual case), else an array.
        let (verdict, settled) = match answer {
            Ok(value) => match value.as_bool() {
                Some(alive) => (alive, js_sys::Array::new()),
                None => {
                    let settled: js_sys::Array = value.unchecked_into();
                    (settled.get(0).as_bool().unwrap_or(false), settled)
                }
            },
            Err(e) => {
                let fault = Fault::new(FaultKind::ScopeStack, describe(&e));
                return sets
                    .iter()
                    .map(|_| ScopeOutcome::owning(vec![fault.clone()], device.is_lost(), &sink))
                    .collect();
            }
        };
        let alive = if probed { verdict } else { !device.is_lost() };
        if !alive && probe {
            // Found lost by the probe: whoever runs the device is told now, not
            // when (or whether) `lost` resolves.
            device.found_lost();
        }
        // Only the pops that caught something or rejected come back, by index.
        let mut caught = Vec::new();
        let length = settled.length();
        let mut at = 1;
        while at + 3 <= length {
            let index = settled.get(at).as_f64().unwrap_or(f64::MAX) as usize;
            let fulfilled = settled.get(at + 1).as_bool().unwrap_or(false);
            caught.push((index, fulfilled, settled.get(at + 2)));
            at += 3;
        }
        let mut caught = caught.into_iter().peekable();
        let mut first = 0;
        sets.into_iter()
            .map(|set| {
                let end = first + set.filters.len();
                let mut faults = Vec::new();
                while let Some((_, fulfilled, value)) = caught.next_if(|(index, _, _)| *index < end)
                {
                    let fault = if fulfilled {
                        to_fault(value.unchecked_ref::<GpuError>())
                    } else {
                        Fault::new(
                            FaultKind::ScopeStack,
                            format!(
                                "popErrorScope() rejected (a pop without a matching push?): {}",
                                describe(&value)
                            ),
                        )
                    };
                    faults.push(tag_fault(fault, &set.origin));
                }
                first = end;
                ScopeOutcome::owning(faults, probe && !alive, &sink)
            })
            .collect()
    }
}
