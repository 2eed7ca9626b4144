//! The uncaptured-error net: one listener per device, never throwing, classifying,
//! rate-limited (5 lines a second and one cut-off line), feeding telemetry.
//!
//! Late faults from frame and per-call scopes go through the same channel (see
//! [`ErrorNet::report`]), so one storm cannot flood the console by another path.
//!
//! A panic cannot be caught in WebAssembly, so the handler is written to have none
//! (no `unwrap`, no indexing, `try_borrow_mut`); an error from a sink (a JavaScript
//! sink that throws, or a Rust sink returning `Err`) is caught and counted.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{GpuDevice, GpuUncapturedErrorEvent};

use crate::fault::{Fault, FaultKind};
use crate::rate_limit::{Admission, RateLimiter};
use crate::sanitize::Sanitizer;
use crate::telemetry::{GroupSummary, Telemetry, TelemetryEvent, TelemetrySink};
use crate::web::classify::classify;
use crate::web::js::now_ms;
use crate::web::log;

/// Counters of the net.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Validation errors seen.
    pub validation: u64,
    /// Out-of-memory errors seen.
    pub out_of_memory: u64,
    /// Internal errors seen.
    pub internal: u64,
    /// Other faults reported (exceptions, pipeline, scope-stack).
    pub other: u64,
    /// Lines written to the console (cut-off lines included).
    pub logged: u64,
    /// Errors held back by the limiter.
    pub suppressed: u64,
    /// Cut-off lines written.
    pub cut_offs: u64,
    /// Events the handler could not process (re-entrancy, foreign event).
    pub handler_failures: u64,
    /// Telemetry events sent.
    pub telemetry_sent: u64,
    /// Telemetry events held back by the telemetry limiter.
    pub telemetry_held_back: u64,
    /// Telemetry sink calls that failed (threw or returned `Err`).
    pub sink_failures: u64,
    /// Main-thread time spent in the uncaptured-error handler, in microseconds.
    pub handler_us: u64,
}

/// The default sink: one `console.debug` line per event (verbose level, hidden by
/// default in developer tools).
pub struct ConsoleSink;

impl TelemetrySink for ConsoleSink {
    fn send(&self, e: &TelemetryEvent) -> Result<(), String> {
        web_sys::console::debug_1(
            &format!(
                "{} telemetry {} \"{}\" x{} frame {:?}: {}",
                log::PREFIX,
                e.kind,
                e.label,
                e.occurrences,
                e.frame,
                e.message
            )
            .into(),
        );
        Ok(())
    }
}

/// A sink calling a JavaScript function with `{kind, label, message, frame,
/// occurrences}`; an exception it throws is caught and counted.
pub struct JsFunctionSink(pub js_sys::Function);

impl TelemetrySink for JsFunctionSink {
    fn send(&self, e: &TelemetryEvent) -> Result<(), String> {
        let object = js_sys::Object::new();
        let set = |k: &str, v: JsValue| js_sys::Reflect::set(&object, &k.into(), &v);
        set("kind", e.kind.as_str().into()).map_err(|e| crate::web::js::describe(&e))?;
        set("label", e.label.as_str().into()).map_err(|e| crate::web::js::describe(&e))?;
        set("message", e.message.as_str().into()).map_err(|e| crate::web::js::describe(&e))?;
        set("frame", e.frame.map(|f| f as f64).into()).map_err(|e| crate::web::js::describe(&e))?;
        set("occurrences", (e.occurrences as f64).into())
            .map_err(|e| crate::web::js::describe(&e))?;
        self.0
            .call1(&JsValue::NULL, &object)
            .map(|_| ())
            .map_err(|e| crate::web::js::describe(&e))
    }
}

struct NetState {
    limiter: RateLimiter,
    telemetry: Telemetry,
    sink: Box<dyn TelemetrySink>,
    stats: NetStats,
    recent: VecDeque<String>,
}

const RECENT_LINES: usize = 64;

/// The net, shared by every device of an application.
#[derive(Clone)]
pub struct ErrorNet {
    state: Rc<RefCell<NetState>>,
    frame: Rc<Cell<u64>>,
    reentrant_failures: Rc<Cell<u64>>,
    handler_us: Rc<Cell<f64>>,
}

impl ErrorNet {
    /// A net tagging lines with the frame number in `frame`, with the console sink.
    pub fn new(frame: Rc<Cell<u64>>) -> Self {
        ErrorNet {
            state: Rc::new(RefCell::new(NetState {
                limiter: RateLimiter::default(),
                telemetry: Telemetry::default(),
                sink: Box::new(ConsoleSink),
                stats: NetStats::default(),
                recent: VecDeque::new(),
            })),
            frame,
            reentrant_failures: Rc::new(Cell::new(0)),
            handler_us: Rc::new(Cell::new(0.0)),
        }
    }

    /// Replaces the telemetry sink.
    pub fn set_sink(&self, sink: Box<dyn TelemetrySink>) {
        if let Ok(mut state) = self.state.try_borrow_mut() {
            state.sink = sink;
        }
    }

    /// Sets the sanitising step applied to telemetry messages.
    pub fn set_sanitizer(&self, sanitizer: Option<Sanitizer>) {
        if let Ok(mut state) = self.state.try_borrow_mut() {
            state.telemetry.set_sanitizer(sanitizer);
        }
    }

    /// The counters.
    pub fn stats(&self) -> NetStats {
        let mut stats = self.state.try_borrow().map(|s| s.stats).unwrap_or_default();
        stats.handler_failures += self.reentrant_failures.get();
        stats.handler_us = self.handler_us.get() as u64;
        stats
    }

    /// The last lines written (at most 64), oldest first.
    pub fn recent_lines(&self) -> Vec<String> {
        self.state
            .try_borrow()
            .map(|s| s.recent.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Telemetry groups (kind, label) seen so far.
    pub fn groups(&self) -> Vec<GroupSummary> {
        self.state
            .try_borrow()
            .map(|s| s.telemetry.groups())
            .unwrap_or_default()
    }

    /// Handles one error: counts it, logs it if the limiter admits it, sends telemetry.
    pub fn report(&self, kind: FaultKind, message: &str) {
        let Ok(mut state) = self.state.try_borrow_mut() else {
            self.reentrant_failures
                .set(self.reentrant_failures.get() + 1);
            return;
        };
        let state = &mut *state;
        match kind {
            FaultKind::Validation => state.stats.validation += 1,
            FaultKind::OutOfMemory => state.stats.out_of_memory += 1,
            FaultKind::Internal => state.stats.internal += 1,
            _ => state.stats.other += 1,
        }
        let frame = self.frame.get();
        let now = now_ms();
        let line = match state.limiter.admit(now) {
            Admission::Emit => Some(format!("frame {frame} {kind}: {message}")),
            Admission::CutOff => {
                state.stats.suppressed += 1;
                state.stats.cut_offs += 1;
                Some(state.limiter.cut_off_line())
            }
            Admission::Suppress => {
                state.stats.suppressed += 1;
                None
            }
        };
        if let Some(line) = line {
            state.stats.logged += 1;
            log::error(&line);
            if state.recent.len() >= RECENT_LINES {
                state.recent.pop_front();
            }
            state.recent.push_back(line);
        }
        let sent_before = state.telemetry.sent();
        let failures_before = state.telemetry.sink_failures();
        state
            .telemetry
            .record(kind, message, Some(frame), now, state.sink.as_ref());
        state.stats.telemetry_sent += state.telemetry.sent() - sent_before;
        state.stats.sink_failures += state.telemetry.sink_failures() - failures_before;
        state.stats.telemetry_held_back = state.telemetry.held_back();
    }

    /// Handles a late fault (frame or per-call scope): same channel as uncaptured errors.
    pub fn report_fault(&self, fault: &Fault) {
        let mut text = fault.message.clone();
        if let Some(object) = &fault.origin.object {
            text = format!("[\"{object}\"] {text}");
        }
        if let Some(site) = &fault.origin.call_site {
            text.push_str(&format!(" (created at {site})"));
        }
        if let Some(phase) = &fault.origin.phase {
            text.push_str(&format!(" (phase \"{phase}\")"));
        }
        self.report(fault.kind, &text);
    }

    /// Installs the net on `device`; the listener is removed when the guard drops.
    pub fn install(&self, device: &GpuDevice) -> NetListener {
        let net = self.clone();
        let handler = Closure::<dyn Fn(web_sys::Event)>::new(move |event: web_sys::Event| {
            let started = now_ms();
            event.prevent_default();
            match event.dyn_ref::<GpuUncapturedErrorEvent>() {
                Some(uncaptured) => {
                    let error = uncaptured.error();
                    net.report(classify(&error), &error.message());
                }
                None => net.reentrant_failures.set(net.reentrant_failures.get() + 1),
            }
            net.handler_us
                .set(net.handler_us.get() + (now_ms() - started) * 1000.0);
        });
        let installed = device
            .add_event_listener_with_callback("uncapturederror", handler.as_ref().unchecked_ref())
            .is_ok();
        if !installed {
            log::error("could not install the uncapturederror listener");
        }
        NetListener {
            device: device.clone(),
            handler,
        }
    }
}

/// The installed listener; removed on `Drop`.
pub struct NetListener {
    device: GpuDevice,
    handler: Closure<dyn Fn(web_sys::Event)>,
}

impl Drop for NetListener {
    fn drop(&mut self) {
        let _ = self.device.remove_event_listener_with_callback(
            "uncapturederror",
            self.handler.as_ref().unchecked_ref(),
        );
    }
}
