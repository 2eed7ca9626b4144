//! The telemetry sinks the fault sink uses or offers: the console's and a
//! JavaScript function's (for a page), and the trampoline around an
//! application's sink. (The queue the fault log writes into while it is
//! borrowed is the core's `telemetry::deferred`.)

use wasm_bindgen::prelude::*;

use crate::telemetry::{HeldBack, TelemetryEvent, TelemetrySink};
use crate::web::js::describe;
use crate::web::log;

/// A telemetry sink writing one `console.debug` line per event (verbose level,
/// hidden by default in developer tools), for a page that wants telemetry on
/// its console. Not the default: the fault's own console line is the one line
/// a fault writes.
#[derive(Debug, Default)]
pub struct ConsoleSink;

impl TelemetrySink for ConsoleSink {
    fn send(&self, e: &TelemetryEvent) -> Result<(), String> {
        let frame = e
            .frame
            .map_or_else(|| "none".to_string(), |n| n.to_string());
        log::debug(&format!(
            "telemetry {} \"{}\" x{} frame {frame}: {}",
            e.kind, e.label, e.occurrences, e.message
        ));
        Ok(())
    }
}

/// A telemetry sink calling a JavaScript function with `{kind, label, message,
/// frame, occurrences}`; an exception it throws is caught and counted.
#[derive(Debug)]
pub struct JsFunctionSink(pub js_sys::Function);

impl TelemetrySink for JsFunctionSink {
    fn send(&self, e: &TelemetryEvent) -> Result<(), String> {
        let object = js_sys::Object::new();
        let set = |k: &str, v: JsValue| {
            js_sys::Reflect::set(&object, &k.into(), &v).map_err(|e| describe(&e))
        };
        set("kind", e.kind.as_str().into())?;
        set("label", e.label.as_str().into())?;
        set("message", e.message.as_str().into())?;
        set("frame", e.frame.map(|f| f as f64).into())?;
        set("occurrences", (e.occurrences as f64).into())?;
        self.0
            .call1(&JsValue::NULL, &object)
            .map(|_| ())
            .map_err(|e| describe(&e))
    }
}

/// An application's sink, called through the trampoline (see
/// [`FaultSink::set_sink`]).
pub(crate) struct CatchingSink(pub(crate) Box<dyn TelemetrySink>);

impl TelemetrySink for CatchingSink {
    fn send(&self, event: &TelemetryEvent) -> Result<(), String> {
        let mut sent = Ok(());
        match crate::web::crash::trampoline(&mut || sent = self.0.send(event)) {
            Ok(()) => sent,
            Err(thrown) => Err(format!("the telemetry sink threw: {}", describe(&thrown))),
        }
    }

    fn held_back(&self, held: &HeldBack<'_>) -> Result<(), String> {
        let mut counted = Ok(());
        match crate::web::crash::trampoline(&mut || counted = self.0.held_back(held)) {
            Ok(()) => counted,
            Err(thrown) => Err(format!("the telemetry sink threw: {}", describe(&thrown))),
        }
    }

    fn adapter(&self, adapter: &str) {
        // A sink that throws here learns nothing; the fault sink goes on.
        let _ = crate::web::crash::trampoline(&mut || self.0.adapter(adapter));
    }

    fn retire(&self) -> u64 {
        let mut given_up = 0;
        let _ = crate::web::crash::trampoline(&mut || given_up = self.0.retire());
        given_up
    }
}
