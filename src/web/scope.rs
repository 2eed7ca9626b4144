//! Error scopes that cannot unbalance the device's stack.
//!
//! * [`ErrorScope`] pushes on creation and pops on [`ErrorScope::pop`],
//!   [`ErrorScope::close`] or `Drop` (without awaiting), so `?`, `Err` and early
//!   returns all pop.
//! * [`GuardedDevice::phase`] runs a synchronous closure inside validation +
//!   out-of-memory + internal scopes (pushed in that order, popped in reverse) and
//!   awaits the three pops together with any per-call pops of the phase.
//! * [`FrameScope`] spans `queue.submit` and never awaits inside the frame.
//!
//! A pop on an empty stack rejects; that rejection is always observed here and
//! becomes a [`FaultKind::ScopeStack`] fault, never an unhandled rejection.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{GpuError, GpuErrorFilter};

use crate::fault::{Fault, FaultKind};
use crate::web::classify::to_fault;
use crate::web::device::{GuardedDevice, PendingCall};
use crate::web::js::describe;

#[wasm_bindgen(inline_js = r#"
export function guard_push_three(device) {
  device.pushErrorScope('validation');
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('internal');
}
export function guard_pop_three(device, frame, report) {
  const internal = device.popErrorScope();
  const oom = device.popErrorScope();
  const validation = device.popErrorScope();
  Promise.allSettled([validation, oom, internal]).then((results) => {
    for (const r of results) {
      if (r.status !== 'fulfilled') {
        report(frame, null, String(r.reason));
      } else if (r.value) {
        report(frame, r.value, '');
      }
    }
  });
}
"#)]
extern "C" {
    /// Pushes validation, out-of-memory and internal scopes in one call.
    fn guard_push_three(device: &web_sys::GpuDevice);
    /// Pops three scopes in one call; `report(frame, error, rejection)` runs for
    /// each error caught, after the GPU process has answered.
    fn guard_pop_three(device: &web_sys::GpuDevice, frame: f64, report: &js_sys::Function);
}

/// The three error-scope filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filter {
    /// `"validation"`.
    Validation,
    /// `"out-of-memory"`.
    OutOfMemory,
    /// `"internal"`.
    Internal,
}

impl Filter {
    pub(crate) fn raw(self) -> GpuErrorFilter {
        match self {
            Filter::Validation => GpuErrorFilter::Validation,
            Filter::OutOfMemory => GpuErrorFilter::OutOfMemory,
            Filter::Internal => GpuErrorFilter::Internal,
        }
    }
}

/// The outcome of one pop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Popped {
    /// The first error the scope caught, if any.
    pub error: Option<Fault>,
    /// Whether the device was lost when the pop resolved: a lost device's pop
    /// resolves to null, which is then *not* a sign of success.
    pub device_lost: bool,
}

impl Popped {
    /// `true` only when nothing was caught and the device is alive.
    pub fn is_clean(&self) -> bool {
        self.error.is_none() && !self.device_lost
    }
}

/// A pop that was issued and not yet awaited.
pub struct PendingPop {
    promise: js_sys::Promise,
    device: GuardedDevice,
}

/// Pops one scope of `device` now. The promise's rejection is observed when the
/// result is awaited or detached.
pub fn pop_now(device: &GuardedDevice) -> PendingPop {
    let promise: js_sys::Promise = device.raw().pop_error_scope().unchecked_into();
    PendingPop {
        promise,
        device: device.clone(),
    }
}

fn interpret(device: &GuardedDevice, settled: Result<JsValue, JsValue>) -> Result<Popped, Fault> {
    match settled {
        Ok(value) if value.is_null() || value.is_undefined() => Ok(Popped {
            error: None,
            device_lost: device.is_lost(),
        }),
        Ok(value) => Ok(Popped {
            error: Some(to_fault(value.unchecked_ref::<GpuError>())),
            device_lost: device.is_lost(),
        }),
        Err(reason) => Err(Fault::new(
            FaultKind::ScopeStack,
            format!(
                "popErrorScope() rejected (a pop without a matching push?): {}",
                describe(&reason)
            ),
        )),
    }
}

impl PendingPop {
    /// Awaits the pop.
    pub async fn wait(self) -> Result<Popped, Fault> {
        let settled = wasm_bindgen_futures::JsFuture::from(self.promise).await;
        interpret(&self.device, settled)
    }

    /// Lets the pop resolve on its own and hands the outcome to `report`.
    pub fn detach(self, report: impl FnOnce(Result<Popped, Fault>) + 'static) {
        wasm_bindgen_futures::spawn_local(async move { report(self.wait().await) });
    }
}

/// Awaits many pops as one: a single `Promise.allSettled`, not one await per pop.
pub async fn wait_all(pops: Vec<PendingPop>) -> Vec<Result<Popped, Fault>> {
    if pops.is_empty() {
        return Vec::new();
    }
    let array = js_sys::Array::new();
    for pop in &pops {
        array.push(&pop.promise);
    }
    let all = js_sys::Promise::all_settled(&array);
    let settled = match wasm_bindgen_futures::JsFuture::from(all).await {
        Ok(value) => js_sys::Array::from(&value),
        Err(e) => {
            let fault = Fault::new(FaultKind::ScopeStack, describe(&e));
            return pops.iter().map(|_| Err(fault.clone())).collect();
        }
    };
    pops.iter()
        .enumerate()
        .map(|(i, pop)| {
            let entry = settled.get(i as u32);
            let status = js_sys::Reflect::get(&entry, &"status".into())
                .ok()
                .and_then(|s| s.as_string())
                .unwrap_or_default();
            let result = if status == "fulfilled" {
                Ok(js_sys::Reflect::get(&entry, &"value".into()).unwrap_or(JsValue::NULL))
            } else {
                Err(js_sys::Reflect::get(&entry, &"reason".into()).unwrap_or(JsValue::UNDEFINED))
            };
            interpret(&pop.device, result)
        })
        .collect()
}

/// Names a per-call outcome after its call: the template's object and call site
/// with the caught error's kind, message and hint. `None` when the call was clean.
pub(crate) fn name_call_outcome(template: &Fault, outcome: Result<Popped, Fault>) -> Option<Fault> {
    match outcome {
        Ok(Popped {
            error: Some(fault), ..
        }) => {
            let mut named = template.clone();
            named.kind = fault.kind;
            named.message = fault.message;
            named.hint = fault.hint;
            Some(named)
        }
        Ok(_) => None,
        Err(fault) => Some(fault),
    }
}

/// The fault of one outcome, if any (a rejected pop is a fault too).
fn outcome_fault(outcome: Result<Popped, Fault>) -> Option<Fault> {
    match outcome {
        Ok(popped) => popped.error,
        Err(fault) => Some(fault),
    }
}

/// Splits pending calls into one template and one pop per scope.
fn unpack_calls(calls: Vec<PendingCall>) -> (Vec<Fault>, Vec<PendingPop>) {
    let mut templates = Vec::new();
    let mut pops = Vec::new();
    for call in calls {
        for pop in call.pops {
            templates.push(call.fault_template.clone());
            pops.push(pop);
        }
    }
    (templates, pops)
}

/// One pushed error scope. Pops on `pop`, `close`, or `Drop`.
pub struct ErrorScope {
    device: GuardedDevice,
    filter: Filter,
    open: bool,
}

impl ErrorScope {
    /// Pushes a scope with `filter` on `device`.
    pub fn push(device: &GuardedDevice, filter: Filter) -> Self {
        device.raw().push_error_scope(filter.raw());
        ErrorScope {
            device: device.clone(),
            filter,
            open: true,
        }
    }

    /// The scope's filter.
    pub fn filter(&self) -> Filter {
        self.filter
    }

    /// Pops now without awaiting.
    pub fn close(mut self) -> PendingPop {
        self.open = false;
        pop_now(&self.device)
    }

    /// Pops and awaits.
    pub async fn pop(self) -> Result<Popped, Fault> {
        self.close().wait().await
    }
}

impl Drop for ErrorScope {
    /// Pops without awaiting; anything caught goes to the device's late-fault reporter.
    fn drop(&mut self) {
        if !self.open {
            return;
        }
        self.open = false;
        let device = self.device.clone();
        pop_now(&self.device).detach(move |outcome| match outcome {
            Ok(Popped {
                error: Some(fault), ..
            }) => device.report_late(&fault),
            Ok(_) => {}
            Err(fault) => device.report_late(&fault),
        });
    }
}

/// Pushes validation, out-of-memory and internal scopes, in that order.
fn push_three(device: &GuardedDevice) -> [ErrorScope; 3] {
    [
        ErrorScope::push(device, Filter::Validation),
        ErrorScope::push(device, Filter::OutOfMemory),
        ErrorScope::push(device, Filter::Internal),
    ]
}

/// Pops the three in reverse order, without awaiting.
fn close_three(scopes: [ErrorScope; 3]) -> Vec<PendingPop> {
    let [validation, oom, internal] = scopes;
    let internal = internal.close();
    let oom = oom.close();
    let validation = validation.close();
    vec![validation, oom, internal]
}

impl GuardedDevice {
    /// Runs `work` inside validation + out-of-memory + internal scopes and returns its
    /// value, or the first fault caught (with the others in [`Fault::related`]), named
    /// after the phase `label`.
    ///
    /// `work` is synchronous on purpose: an `.await` between push and pop would let
    /// other tasks drop their errors into this phase. With
    /// [`crate::web::DiagnosticsLevel::Off`] no scope is pushed.
    pub async fn phase<T>(
        &self,
        label: &str,
        work: impl FnOnce() -> Result<T, Fault>,
    ) -> Result<T, Fault> {
        if self.level() == crate::web::DiagnosticsLevel::Off {
            return work().map_err(|f| f.in_phase(label));
        }
        let scopes = push_three(self);
        self.enter_phase();
        let result = work();
        self.leave_phase();
        let mut pops = close_three(scopes);
        let calls = if self.in_phase() {
            Vec::new()
        } else {
            self.take_pending_calls()
        };
        let phase_pops = pops.len();
        let (templates, call_pops) = unpack_calls(calls);
        pops.extend(call_pops);
        let mut outcomes = wait_all(pops).await;
        let call_outcomes = outcomes.split_off(phase_pops);
        // Per-call faults first: they carry the call site.
        let faults: Vec<Fault> = templates
            .iter()
            .zip(call_outcomes)
            .filter_map(|(template, outcome)| name_call_outcome(template, outcome))
            .chain(outcomes.into_iter().filter_map(outcome_fault))
            .map(|f| f.in_phase(label))
            .collect();
        let mut faults: Vec<Fault> = faults.into_iter().map(|f| self.attribute(f)).collect();
        if !self.in_phase() {
            self.clear_call_sites();
        }
        let lost = self.is_lost();
        match (result, faults.is_empty(), lost) {
            (Ok(value), true, false) => Ok(value),
            (result, _, _) => {
                if let Err(exception) = result {
                    faults.push(exception.in_phase(label));
                }
                if lost {
                    faults.insert(
                        0,
                        Fault::new(
                            FaultKind::DeviceLost,
                            "the device was lost: pops resolve to null, nothing can be known",
                        )
                        .in_phase(label),
                    );
                }
                let first = faults.remove(0);
                Err(first.with_related(faults))
            }
        }
    }

    /// Opens the scopes of frame `frame` (validation, out-of-memory, internal, in one
    /// call); close them after `queue.submit` with [`FrameScope::end_reported`] or
    /// [`FrameScope::end`].
    pub fn begin_frame(&self, frame: u64) -> FrameScope {
        let open = self.level() != crate::web::DiagnosticsLevel::Off;
        if open {
            guard_push_three(self.raw());
        }
        FrameScope {
            device: self.clone(),
            frame,
            open,
        }
    }

    /// Awaits the per-call pops issued outside any phase; returns their faults.
    pub async fn flush_calls(&self) -> Vec<Fault> {
        let (templates, pops) = unpack_calls(self.take_pending_calls());
        let outcomes = wait_all(pops).await;
        templates
            .iter()
            .zip(outcomes)
            .filter_map(|(template, outcome)| name_call_outcome(template, outcome))
            .collect()
    }
}

/// The scopes of one frame, spanning `queue.submit`. Never awaited in the frame.
/// Dropping it ends it with [`FrameScope::end_reported`].
pub struct FrameScope {
    device: GuardedDevice,
    frame: u64,
    open: bool,
}

impl FrameScope {
    /// The frame number.
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Pops the scopes (after `queue.submit`) without awaiting; `report` receives the
    /// faults, tagged with the frame number, once the GPU process has answered.
    /// `report` is not called when the frame was clean.
    pub fn end(mut self, report: impl FnOnce(Vec<Fault>) + 'static) {
        if !std::mem::replace(&mut self.open, false) {
            return;
        }
        let pops = vec![
            pop_now(&self.device),
            pop_now(&self.device),
            pop_now(&self.device),
        ];
        let frame = self.frame;
        wasm_bindgen_futures::spawn_local(async move {
            let faults: Vec<Fault> = wait_all(pops)
                .await
                .into_iter()
                .filter_map(outcome_fault)
                .map(|f| f.in_frame(frame))
                .collect();
            if !faults.is_empty() {
                report(faults);
            }
        });
    }

    /// Pops the scopes (after `queue.submit`) in one call, without awaiting and
    /// without allocating: faults go to the device's late-fault reporter, tagged
    /// with the frame number. The cheap path the runtime uses every frame.
    pub fn end_reported(mut self) {
        if std::mem::replace(&mut self.open, false) {
            guard_pop_three(
                self.device.raw(),
                self.frame as f64,
                &self.device.frame_reporter(),
            );
        }
    }
}

impl Drop for FrameScope {
    fn drop(&mut self) {
        if std::mem::replace(&mut self.open, false) {
            guard_pop_three(
                self.device.raw(),
                self.frame as f64,
                &self.device.frame_reporter(),
            );
        }
    }
}
