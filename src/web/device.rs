//! [`GuardedDevice`]: a `GPUDevice` with its ledger, diagnostics level, frame
//! counter and lost flag.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use web_sys::{GpuDevice, GpuQueue};

use crate::fault::Fault;
use crate::ledger::Ledger;
use crate::web::log;

/// How much scoping the library does, chosen at run time (no rebuild).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiagnosticsLevel {
    /// Production: no scopes; the uncaptured-error net and the loss supervisor stay on.
    Off,
    /// One scope set per phase and per frame (the default).
    Phases,
    /// Phase scopes, plus the Rust call site of every creation recorded under its
    /// label: a fault is attributed to its call through the object label the
    /// implementation's message names. Costs about what phases cost; reports the
    /// first fault of each filter per phase.
    Attributed,
    /// One scope set per creation, with the Rust call site: every fault of a phase,
    /// each named (the hunt; costs a scope round trip per creation).
    PerCall,
}

impl DiagnosticsLevel {
    /// Parses `"off"`, `"phases"` or `"per-call"`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "off" => Some(DiagnosticsLevel::Off),
            "phases" => Some(DiagnosticsLevel::Phases),
            "attributed" => Some(DiagnosticsLevel::Attributed),
            "per-call" | "percall" | "call" => Some(DiagnosticsLevel::PerCall),
            _ => None,
        }
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

/// A reporter for faults that arrive after the code that caused them has returned
/// (frame scopes, per-call scopes outside a phase, scopes closed by `Drop`).
pub type FaultReporter = Rc<dyn Fn(&Fault)>;

/// State shared by every device of one application, across recoveries.
#[derive(Clone)]
pub struct GuardContext {
    /// Live objects and bytes.
    pub ledger: Rc<RefCell<Ledger>>,
    /// The diagnostics level.
    pub level: Rc<Cell<DiagnosticsLevel>>,
    /// The current frame number.
    pub frame: Rc<Cell<u64>>,
    /// Where late faults go; `None` writes them to the console.
    pub reporter: Rc<RefCell<Option<FaultReporter>>>,
}

impl GuardContext {
    /// Hands a late fault to the reporter, or writes it to the console.
    pub fn report(&self, fault: &Fault) {
        let reporter = self.reporter.borrow().clone();
        match reporter {
            Some(report) => report(fault),
            None => log::error(&fault.to_string()),
        }
    }
}

impl Default for GuardContext {
    fn default() -> Self {
        GuardContext {
            ledger: Rc::new(RefCell::new(Ledger::new())),
            level: Rc::new(Cell::new(DiagnosticsLevel::Phases)),
            frame: Rc::new(Cell::new(0)),
            reporter: Rc::new(RefCell::new(None)),
        }
    }
}

pub(crate) struct PendingCall {
    pub(crate) fault_template: Fault,
    pub(crate) pops: Vec<crate::web::scope::PendingPop>,
}

struct Inner {
    device: GpuDevice,
    context: GuardContext,
    lost: Cell<bool>,
    phase_depth: Cell<u32>,
    pending_calls: RefCell<Vec<PendingCall>>,
    call_sites: RefCell<Vec<(String, crate::fault::CallSite)>>,
    frame_reporter: RefCell<Option<js_sys::Function>>,
}

/// A `GPUDevice` with the library's bookkeeping. Cheap to clone (shared).
#[derive(Clone)]
pub struct GuardedDevice {
    inner: Rc<Inner>,
}

impl GuardedDevice {
    /// Wraps `device` with a fresh context.
    pub fn new(device: GpuDevice) -> Self {
        GuardedDevice::with_context(device, GuardContext::default())
    }

    /// Wraps `device`, sharing `context` (ledger, level, frame) with earlier devices.
    pub fn with_context(device: GpuDevice, context: GuardContext) -> Self {
        GuardedDevice {
            inner: Rc::new(Inner {
                device,
                context,
                lost: Cell::new(false),
                phase_depth: Cell::new(0),
                pending_calls: RefCell::new(Vec::new()),
                call_sites: RefCell::new(Vec::new()),
                frame_reporter: RefCell::new(None),
            }),
        }
    }

    /// The raw device.
    pub fn raw(&self) -> &GpuDevice {
        &self.inner.device
    }

    /// The device's queue.
    pub fn queue(&self) -> GpuQueue {
        self.inner.device.queue()
    }

    /// The shared context.
    pub fn context(&self) -> &GuardContext {
        &self.inner.context
    }

    /// The diagnostics level.
    pub fn level(&self) -> DiagnosticsLevel {
        self.inner.context.level.get()
    }

    /// Changes the diagnostics level, effective from the next call.
    pub fn set_level(&self, level: DiagnosticsLevel) {
        self.inner.context.level.set(level);
    }

    /// The ledger of live objects.
    pub fn ledger(&self) -> Rc<RefCell<Ledger>> {
        self.inner.context.ledger.clone()
    }

    /// Whether this device is known to be lost.
    pub fn is_lost(&self) -> bool {
        self.inner.lost.get()
    }

    /// Records that this device is lost (the loss watcher calls this).
    pub fn mark_lost(&self) {
        self.inner.lost.set(true);
    }

    /// The current frame number.
    pub fn frame(&self) -> u64 {
        self.inner.context.frame.get()
    }

    /// Destroys the device.
    pub fn destroy(&self) {
        self.inner.device.destroy();
    }

    /// Hands a late fault to the reporter (or the console).
    pub fn report_late(&self, fault: &Fault) {
        self.inner.context.report(fault);
    }

    /// The JavaScript callback frame scopes report through: `(frame, error,
    /// rejection)` to the context's reporter. Made once per device; it holds the
    /// shared context, not the device, so nothing is kept alive by a cycle.
    pub(crate) fn frame_reporter(&self) -> js_sys::Function {
        if let Some(f) = self.inner.frame_reporter.borrow().as_ref() {
            return f.clone();
        }
        let context = self.inner.context.clone();
        let callback =
            wasm_bindgen::closure::Closure::<dyn Fn(f64, wasm_bindgen::JsValue, String)>::new(
                move |frame: f64, error: wasm_bindgen::JsValue, rejection: String| {
                    let fault = if error.is_null() || error.is_undefined() {
                        Fault::new(crate::fault::FaultKind::ScopeStack, rejection)
                    } else {
                        crate::web::classify::to_fault(wasm_bindgen::JsCast::unchecked_ref(&error))
                    }
                    .in_frame(frame as u64);
                    context.report(&fault);
                },
            );
        let function: js_sys::Function =
            wasm_bindgen::JsCast::unchecked_into(callback.into_js_value());
        *self.inner.frame_reporter.borrow_mut() = Some(function.clone());
        function
    }

    pub(crate) fn in_phase(&self) -> bool {
        self.inner.phase_depth.get() > 0
    }

    pub(crate) fn enter_phase(&self) {
        self.inner.phase_depth.set(self.inner.phase_depth.get() + 1);
    }

    pub(crate) fn leave_phase(&self) {
        self.inner
            .phase_depth
            .set(self.inner.phase_depth.get().saturating_sub(1));
    }

    pub(crate) fn add_pending_call(&self, call: PendingCall) {
        self.inner.pending_calls.borrow_mut().push(call);
    }

    pub(crate) fn record_call_site(&self, label: &str, site: crate::fault::CallSite) {
        self.inner
            .call_sites
            .borrow_mut()
            .push((label.to_string(), site));
    }

    /// Names the call behind `fault` from the label its message quotes (the most
    /// recent creation with that label), when attribution recorded one.
    pub(crate) fn attribute(&self, mut fault: Fault) -> Fault {
        if fault.origin.call_site.is_some() {
            return fault;
        }
        let Some(label) = crate::fault::label_in_message(&fault.message) else {
            return fault;
        };
        let sites = self.inner.call_sites.borrow();
        if let Some((_, site)) = sites.iter().rev().find(|(l, _)| *l == label) {
            fault.origin.call_site = Some(*site);
            fault.origin.object = Some(label);
        }
        fault
    }

    pub(crate) fn clear_call_sites(&self) {
        self.inner.call_sites.borrow_mut().clear();
    }

    pub(crate) fn take_pending_calls(&self) -> Vec<PendingCall> {
        std::mem::take(&mut *self.inner.pending_calls.borrow_mut())
    }
}
