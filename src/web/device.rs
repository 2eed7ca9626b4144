//! [`GuardedDevice`]: a `GPUDevice` with its context (ledger, level, frame, fault
//! sink), its lost flag and the bookkeeping of the phase in progress.

use std::cell::Cell;

use crate::held::Held;
use std::rc::Rc;

use web_sys::{GpuDevice, GpuQueue};

use crate::fault::{CallSite, Fault};
use crate::ledger::SharedLedger;
use crate::web::faults::FaultSink;
use crate::web::handle::DeviceHandle;
use crate::web::scope::PendingPops;
use crate::web::session::{DiagnosticsLevel, Session};

/// What every clone of a [`GuardedDevice`] shares.
struct DeviceParts {
    handle: DeviceHandle,
    phase_depth: Cell<u32>,
    frame_depth: Cell<u32>,
    pending_calls: Held<Vec<PendingPops>>,
    call_sites: Held<Vec<(String, CallSite)>>,
    frame_reporter: Held<Option<js_sys::Function>>,
}

/// A `GPUDevice` with the library's bookkeeping. Cheap to clone (shared).
///
/// Every WebGPU method has a counterpart here or on the encoders it makes,
/// or needs none (`texture.create_view()` and `pipeline.get_bind_group_layout()`
/// are called on the web-sys objects directly: the one catches, the other
/// never throws); `docs/coverage.md` in the repository has the table, method by
/// method.
///
/// ```no_run
/// # async fn demo(raw: web_sys::GpuDevice) -> Result<(), webgpu_guard::Fault> {
/// use webgpu_guard::{usage::BufferUsages, web::GuardedDevice};
/// let device = GuardedDevice::new(raw);
/// let globals = device
///     .phase("buffers", || device.create_buffer("globals", 256, BufferUsages::UNIFORM))
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct GuardedDevice {
    inner: Rc<DeviceParts>,
}

impl std::fmt::Debug for GuardedDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedDevice")
            .field("label", &crate::web::js::label_of(self.raw()))
            .field("lost", &self.is_lost())
            .field("level", &self.level())
            .finish()
    }
}

impl AsRef<DeviceHandle> for GuardedDevice {
    fn as_ref(&self) -> &DeviceHandle {
        &self.inner.handle
    }
}

impl GuardedDevice {
    /// Wraps `device` with a fresh context (its own net on the console).
    pub fn new(device: GpuDevice) -> Self {
        GuardedDevice::with_context(device, Session::default())
    }

    /// Wraps `device`, sharing `context` (ledger, level, frame, net) with earlier
    /// devices.
    pub fn with_context(device: GpuDevice, context: Session) -> Self {
        crate::web::js::install_describer();
        GuardedDevice {
            inner: Rc::new(DeviceParts {
                handle: DeviceHandle::new(device, context),
                phase_depth: Cell::new(0),
                frame_depth: Cell::new(0),
                pending_calls: Held::default(),
                call_sites: Held::default(),
                frame_reporter: Held::default(),
            }),
        }
    }

    /// The raw device (its `web-sys` bindings for `createBindGroup`,
    /// `createCommandEncoder`, `queue.submit` and the pass methods throw through
    /// Rust on a malformed descriptor: prefer this type's methods, which catch).
    pub fn raw(&self) -> &GpuDevice {
        self.inner.handle.raw()
    }

    /// The device's queue.
    pub fn queue(&self) -> GpuQueue {
        self.raw().queue()
    }

    /// The session this device shares (ledger, level, frame counter, fault sink).
    pub fn session(&self) -> &Session {
        self.inner.handle.session()
    }

    /// [`Self::session`]'s name before 0.2.0.
    #[deprecated(since = "0.2.0", note = "renamed `session`")]
    pub fn guard(&self) -> &Session {
        self.session()
    }

    /// The fault sink.
    pub fn faults(&self) -> &FaultSink {
        self.session().faults()
    }

    /// Reports `fault` to the fault sink (once) and returns it marked as reported.
    pub fn report(&self, fault: Fault) -> Fault {
        if self.inner.handle.was_let_go() {
            // A device the runtime let go (a stop, a superseded attempt): what
            // its work fails with now is the runtime's doing, not news.
            return fault.mark_reported();
        }
        self.faults().report(fault)
    }

    /// The diagnostics level.
    pub fn level(&self) -> DiagnosticsLevel {
        self.session().level()
    }

    /// Changes the diagnostics level, effective from the next call.
    pub fn set_level(&self, level: DiagnosticsLevel) {
        self.session().set_level(level);
    }

    /// The ledger of live objects.
    pub fn ledger(&self) -> SharedLedger {
        self.session().ledger().clone()
    }

    /// Whether this device is known to be lost.
    pub fn is_lost(&self) -> bool {
        self.inner.handle.is_lost()
    }

    /// Records that this device is lost (the loss watcher calls this).
    pub(crate) fn mark_lost(&self) {
        self.inner.handle.mark_lost();
    }

    /// Calls `on_lost(reason, message)` once when this device is lost, after
    /// marking it lost; dropping the guard disarms it. The watcher holds no
    /// reference to the device.
    pub fn watch_lost(
        &self,
        on_lost: impl FnOnce(crate::supervisor::LossReason, String) + 'static,
    ) -> crate::web::lost::LostWatch {
        self.inner.handle.watch_lost(on_lost)
    }

    /// The current frame number.
    pub fn frame(&self) -> u64 {
        self.session().frame()
    }

    /// Destroys the device (never throws): the application's own destroy,
    /// which the runtime never recovers from (its loss reads `destroyed`
    /// even where a probe finds it lost before the browser says so).
    pub fn destroy(&self) {
        self.inner.handle.mark_destroyed_by_application();
        let _ = crate::web::bindings::try_destroy_device(self.raw());
    }

    /// Lets the device go for good: marked lost, and destroyed where the engine
    /// allows it ([`crate::web::engine::Engine::destroy_is_safe`]); elsewhere left to
    /// the garbage collector once its objects are released.
    pub fn retire(&self) {
        self.mark_lost();
        crate::web::engine::let_device_go(self.raw());
    }

    /// Retires the device quietly: the runtime let it go on purpose (a stop,
    /// a superseded attempt), so what its work fails with from now on is not
    /// reported ([`Self::report`] marks it reported instead).
    pub(crate) fn let_go(&self) {
        self.inner.handle.mark_let_go();
        self.retire();
    }

    pub(crate) fn frame_reporter(&self) -> js_sys::Function {
        if let Some(Some(f)) = self.inner.frame_reporter.get() {
            return f;
        }
        // Holds the fault sink, not the device: no cycle keeps a dead device alive.
        let net = self.faults().clone();
        let callback =
            wasm_bindgen::closure::Closure::<dyn Fn(f64, wasm_bindgen::JsValue, String)>::new(
                move |frame: f64, error: wasm_bindgen::JsValue, rejection: String| {
                    let fault = if error.is_null() || error.is_undefined() {
                        // A rejected pop (an unbalanced stack) is no error of the
                        // frame's work: scoping more frames would not name it.
                        Fault::new(crate::fault::FaultKind::ScopeStack, rejection)
                    } else {
                        net.note_frame_catch(frame as u64);
                        crate::web::classify::to_fault(wasm_bindgen::JsCast::unchecked_ref(&error))
                    }
                    .in_frame(frame as u64);
                    net.report_ref(&fault);
                },
            );
        let function: js_sys::Function =
            wasm_bindgen::JsCast::unchecked_into(callback.into_js_value());
        self.inner.frame_reporter.replace(Some(function.clone()));
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

    /// The frame in progress, if a frame scope is open.
    pub(crate) fn current_frame(&self) -> Option<u64> {
        (self.inner.frame_depth.get() > 0).then(|| self.frame())
    }

    pub(crate) fn enter_frame(&self) {
        self.inner.frame_depth.set(self.inner.frame_depth.get() + 1);
    }

    pub(crate) fn leave_frame(&self) {
        self.inner
            .frame_depth
            .set(self.inner.frame_depth.get().saturating_sub(1));
    }

    pub(crate) fn add_pending_call(&self, pops: PendingPops) {
        let mut pops = Some(pops);
        self.inner
            .pending_calls
            .with(|calls| calls.extend(pops.take()));
        // Not kept (the library reached its own cell): settled on their own.
        if let Some(pops) = pops {
            pops.detach();
        }
    }

    pub(crate) fn take_pending_calls(&self) -> Vec<PendingPops> {
        self.inner.pending_calls.take().unwrap_or_default()
    }

    pub(crate) fn record_call_site(&self, label: &str, site: CallSite) {
        self.inner
            .call_sites
            .with(|sites| sites.push((label.to_string(), site)));
    }

    /// The call sites attribution recorded, taken (a phase takes those of its
    /// own work before it awaits: another phase may run meanwhile).
    pub(crate) fn take_call_sites(&self) -> Vec<(String, CallSite)> {
        self.inner.call_sites.take().unwrap_or_default()
    }

    /// A copy of the call sites attribution recorded so far (for a phase
    /// nested in another's work, which leaves them to the outermost).
    pub(crate) fn call_sites(&self) -> Vec<(String, CallSite)> {
        self.inner.call_sites.get().unwrap_or_default()
    }

    /// How many call sites attribution holds now (for tests: none outside a
    /// phase).
    #[doc(hidden)]
    pub fn recorded_call_sites(&self) -> usize {
        self.inner.call_sites.with(|s| s.len()).unwrap_or(0)
    }
}
