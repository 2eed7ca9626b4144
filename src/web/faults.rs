//! The fault sink: the one fault sink of an application. Every fault the library
//! observes (scoped, late, frame, an application's `Err`, shader diagnostics) and
//! every `uncapturederror` event goes through [`FaultSink::report`]: counted,
//! rendered by one formatter, rate-limited (5 lines a second and one cut-off
//! line), and sent to telemetry grouped by its sanitised label
//! ([`crate::fault_log::FaultLog`] holds that logic; this module adds the clock,
//! the console and the listener).
//!
//! A panic cannot be caught in WebAssembly, so the handler is written to have none
//! (no `unwrap`, no indexing, state lent only through `Held`); an error from a telemetry sink (a
//! JavaScript sink that throws, or a Rust sink returning `Err`) is caught and counted.

use std::cell::Cell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::GpuDevice;

use crate::fault::{label_in_message, Fault, FaultKind};
use crate::fault_log::FaultStats;
use crate::fault_log::{FaultLog, Line, Severity};
use crate::frame_sampling::Hunt;
use crate::held::Held;
use crate::sanitize::{sanitized_nested, sanitized_text_nested, Sanitized, Sanitizer};
use crate::telemetry::deferred::{Deferring, Delivery, DeliveryCounts};
use crate::telemetry::{GroupSummary, TelemetrySink};
use crate::web::js::now_ms;
use crate::web::listener::EventListener;
use crate::web::log;
use crate::web::telemetry_sinks::CatchingSink;
pub use crate::web::telemetry_sinks::{ConsoleSink, JsFunctionSink};

#[wasm_bindgen(module = "/src/web/faults.js")]
extern "C" {
    /// The `uncapturederror` listener and its held counts.
    #[derive(Clone)]
    type UncapturedHooks;

    /// Makes the listener: it prevents the default and classifies the error by
    /// class as [`crate::web::classify::classify`] does for popped errors (1
    /// validation, 2 out of memory, 3 internal or any other `GPUError`, 0 not a
    /// `GPUError`), then calls `handler(kind, message, 0)`, which returns the time
    /// until which the log is silent (0 when it is not). An error arriving before
    /// that time is only counted, by kind and quoted label; the counts go to
    /// `handler(kind, first message, count)` at the next live error, at `drain()`,
    /// or 100 ms later. Counts the handler refuses once the hooks are closed (the
    /// log was busy), and errors that arrive after, go to `orphans` as `kind,
    /// first message, count` triples (count 0: one live error).
    fn uncaptured_hooks(handler: &js_sys::Function, orphans: &js_sys::Array) -> UncapturedHooks;

    #[wasm_bindgen(method, getter)]
    fn listener(this: &UncapturedHooks) -> js_sys::Function;

    #[wasm_bindgen(method)]
    fn drain(this: &UncapturedHooks);

    /// Hands over what is held and stops calling the handler.
    #[wasm_bindgen(method)]
    fn close(this: &UncapturedHooks);
}

/// What telemetry gets in place of a text whose sanitiser threw: never the raw
/// text, which may hold what the sanitiser was there to remove.
pub const SANITIZER_THREW: &str = "[the sanitiser threw]";

pub use crate::sanitize::{SANITIZER_DEPTH, SANITIZER_REPORTED};

/// The fault sink, shared by every device of an application. Cheap to clone.
///
/// ```no_run
/// # use std::{cell::Cell, rc::Rc};
/// # fn demo(device: &web_sys::GpuDevice) {
/// use webgpu_guard::web::FaultSink;
/// let faults = FaultSink::new(Rc::new(Cell::new(0)));
/// faults.set_sanitizer(Some(Box::new(webgpu_guard::sanitize::strict)));
/// let listener = faults.install(device); // removed when dropped
/// # drop(listener);
/// # }
/// ```
#[derive(Clone)]
pub struct FaultSink {
    shared: Rc<Shared>,
}

/// What every clone of a [`FaultSink`] shares.
struct Shared {
    /// Lent only to the log's own calls, which run no code the library does
    /// not own (the sanitiser runs before, the telemetry sink after).
    log: Held<FaultLog>,
    /// What the log gave the telemetry sink, waiting for the log's borrow to end.
    outgoing: Rc<Held<Vec<Delivery>>>,
    /// The application's telemetry sink (the console's by default).
    telemetry: Held<Option<Rc<dyn TelemetrySink>>>,
    /// The application's sanitiser, run before the log is borrowed.
    sanitizer: Held<Option<Rc<Sanitizer>>>,
    /// How many runs of the sanitiser are under way, nested.
    sanitizing: Cell<u32>,
    /// The adapter the errors come from, as the browser names it (telemetry
    /// gets it sanitised).
    adapter: Held<Option<String>>,
    /// Whether the queue is being delivered (a sink's report waits its turn).
    delivering: Cell<bool>,
    /// What became of the deliveries after the log queued them.
    delivered: DeliveryCounts,
    frame: Rc<Cell<u64>>,
    reentrant_failures: Cell<u64>,
    handler_us: Cell<f64>,
    last_uncaptured_frame: Cell<Option<u64>>,
    hunt: Cell<Hunt>,
    installed: Cell<u32>,
    /// The listeners' held counts, by listener.
    held: Held<Vec<(u32, UncapturedHooks)>>,
    /// Counts that removed listeners could not hand over (the log was busy):
    /// `kind, first message, count` triples, read at the next chance.
    orphans: js_sys::Array,
    next_listener: Cell<u32>,
}

impl std::fmt::Debug for FaultSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultSink")
            .field("stats", &self.stats())
            .finish()
    }
}

impl FaultSink {
    /// A fault sink tagging uncaptured errors with the frame number in `frame`,
    /// with no telemetry sink (one console line per fault; see
    /// [`FaultSink::set_sink`]). Advance the frame with [`FaultSink::set_frame`] (or
    /// [`crate::web::Session::set_frame`]): errors held during a storm are
    /// tagged when they are handed over.
    pub fn new(frame: Rc<Cell<u64>>) -> Self {
        crate::web::js::install_describer();
        let outgoing = Rc::new(Held::default());
        let log = FaultLog::new(Box::new(Deferring(outgoing.clone())));
        let shared = Shared {
            log: Held::new(log),
            outgoing,
            telemetry: Held::new(None),
            sanitizer: Held::new(None),
            sanitizing: Cell::new(0),
            adapter: Held::default(),
            delivering: Cell::new(false),
            delivered: DeliveryCounts::default(),
            frame,
            reentrant_failures: Cell::new(0),
            handler_us: Cell::new(0.0),
            last_uncaptured_frame: Cell::new(None),
            hunt: Cell::new(Hunt::default()),
            installed: Cell::new(0),
            held: Held::default(),
            orphans: js_sys::Array::new(),
            next_listener: Cell::new(0),
        };
        FaultSink {
            shared: Rc::new(shared),
        }
    }

    /// Hands the errors the listeners counted while the log was silent to the log,
    /// tagged with the current frame. Done before every reading of the counters
    /// and before a new frame starts; the listeners also do it themselves at the
    /// next live error or 100 ms after holding one. Counts that a removed
    /// listener could not hand over (the log was busy) go in first.
    pub fn drain_held(&self) {
        self.hand_over_orphans();
        let hooks = self
            .shared
            .held
            .with(|held| -> Vec<UncapturedHooks> {
                held.iter().map(|(_, hooks)| hooks.clone()).collect()
            })
            .unwrap_or_default();
        for hooks in hooks {
            hooks.drain();
        }
    }

    /// Records the counts removed listeners left in `orphans` (a count of 0 is
    /// a live error, recorded and written as one), tagged with the current
    /// frame, if the log is free; held counts it cannot take stay for the next
    /// chance (a live error finding the log out of reach, which only a crash
    /// leaves so, is counted as a reentrant failure).
    fn hand_over_orphans(&self) {
        let length = self.shared.orphans.length();
        if length < 3 {
            return;
        }
        let entries = self.shared.orphans.slice(0, length);
        self.shared.orphans.set_length(0);
        let mut at = 0;
        while at + 3 <= length {
            let kind = entries.get(at).as_f64().unwrap_or(0.0) as u32;
            let message = entries.get(at + 1).as_string().unwrap_or_default();
            let count = entries.get(at + 2).as_f64().unwrap_or(0.0) as u32;
            if self.on_uncaptured(kind, message, count) < 0.0 {
                // Busy again (a sanitizer at work): this group and the rest wait.
                for rest in at..length {
                    self.shared.orphans.push(&entries.get(rest));
                }
                return;
            }
            at += 3;
        }
    }

    /// Lends the log to `f`, once the listeners have handed over what they hold
    /// (it arrived before whatever the caller is about to read or record).
    /// `None` if the log is lent already, which is a bug the `Held` records.
    fn with_log<R>(&self, f: impl FnOnce(&mut FaultLog) -> R) -> Option<R> {
        self.drain_held();
        self.shared.log.with(f)
    }

    /// Replaces the telemetry sink. It is called after the log's borrow ends
    /// (a sink may report into this fault sink, and is heard), through the
    /// trampoline: a sink that throws through WebAssembly (a raw web-sys call
    /// that does not catch) is counted as a failed send.
    /// The sink replaced is retired first: what it holds waiting is sent, or
    /// counted as dropped ([`FaultStats::telemetry_dropped`]).
    pub fn set_sink(&self, sink: Box<dyn TelemetrySink>) {
        let sink: Rc<dyn TelemetrySink> = Rc::new(CatchingSink(sink));
        if let Some(Some(old)) = self.shared.telemetry.replace(Some(sink)) {
            self.shared.delivered.dropped(old.retire());
            let _ = crate::web::crash::drop_in_trampoline(old);
        }
        // The log's own sink only queues; set again, it tells the new sink
        // the adapter.
        let told =
            self.with_log(|log| log.set_sink(Box::new(Deferring(self.shared.outgoing.clone()))));
        if told.is_some() {
            self.deliver();
        }
    }

    /// Hands what the log queued to the application's sink, with the log not
    /// borrowed. A sink that reports meanwhile queues more, delivered by the
    /// same loop.
    fn deliver(&self) {
        if self.shared.delivering.replace(true) {
            return;
        }
        while let Some(batch) = self.shared.outgoing.take().filter(|b| !b.is_empty()) {
            let Some(Some(sink)) = self.shared.telemetry.get() else {
                // No sink: nothing was sent (not counted as sent).
                self.shared.delivered.no_sink(&batch);
                continue;
            };
            for delivery in batch {
                if delivery.deliver_to(&*sink).is_err() {
                    self.shared.delivered.refused(&delivery);
                }
            }
            // A sink replaced while it sent holds its last reference here:
            // its `Drop` is the application's code.
            let _ = crate::web::crash::drop_in_trampoline(sink);
        }
        self.shared.delivering.set(false);
    }

    /// Tells the telemetry sink which adapter the errors come from (the runtime
    /// does it each time a device comes up).
    pub fn set_adapter(&self, adapter: &str) {
        self.shared.adapter.replace(Some(adapter.to_string()));
        self.tell_adapter();
    }

    /// Tells the telemetry sink the adapter, sanitised as every text that
    /// leaves for it is (again after the sanitiser changes).
    fn tell_adapter(&self) {
        let Some(Some(adapter)) = self.shared.adapter.get() else {
            return;
        };
        let clean = match self.shared.sanitizer.get().flatten() {
            Some(sanitize) => sanitized_text_nested(&adapter, &**sanitize, &self.shared.sanitizing),
            None => adapter,
        };
        let told = self.with_log(|log| log.set_adapter(&clean));
        if told.is_some() {
            self.deliver();
        }
    }

    /// Sets the sanitising step applied to telemetry messages, labels and
    /// phases (what the listeners hold goes in under the old one). It runs
    /// before the log is borrowed (one that reports into this fault sink is
    /// heard), through the trampoline: one that throws through WebAssembly
    /// yields a placeholder (never the raw text) and leaves the log as it was.
    pub fn set_sanitizer(&self, sanitizer: Option<Sanitizer>) {
        let sanitizer = sanitizer.map(|sanitize| -> Sanitizer {
            Box::new(move |text: &str| {
                let mut clean = None;
                match crate::web::crash::trampoline(&mut || clean = Some(sanitize(text))) {
                    Ok(()) => clean.unwrap_or_default(),
                    Err(_) => SANITIZER_THREW.to_string(),
                }
            })
        });
        self.drain_held();
        self.shared.sanitizer.replace(sanitizer.map(Rc::new));
        self.tell_adapter();
    }

    /// `fault` as telemetry may see it, sanitised with nothing lent. What
    /// arrives while the sanitiser runs (errors it causes, faults it reports)
    /// is sanitised by it too, up to [`SANITIZER_DEPTH`] deep: past that (a
    /// sanitiser that reports every time it runs), a text reaches telemetry as
    /// a placeholder and the recursion ends.
    fn sanitized<'a>(&self, fault: &'a Fault) -> Sanitized<'a> {
        match self.shared.sanitizer.get().flatten() {
            Some(sanitizer) => sanitized_nested(fault, &**sanitizer, &self.shared.sanitizing),
            None => Sanitized::new(fault, None),
        }
    }

    /// The counters.
    pub fn stats(&self) -> FaultStats {
        let mut stats = self.with_log(|l| l.stats()).unwrap_or_default();
        // Sends the log counted, not received or refused after it.
        self.shared.delivered.correct(&mut stats);
        stats.handler_failures += self.shared.reentrant_failures.get();
        stats.handler_us = self.shared.handler_us.get() as u64;
        stats
    }

    /// The last lines written (at most 64), oldest first.
    pub fn recent_lines(&self) -> Vec<String> {
        self.with_log(|l| l.recent_lines()).unwrap_or_default()
    }

    /// Telemetry groups (kind, sanitised label) seen so far.
    pub fn groups(&self) -> Vec<GroupSummary> {
        self.with_log(|l| l.groups()).unwrap_or_default()
    }

    /// The frame number uncaptured errors are tagged with.
    pub fn frame(&self) -> u64 {
        self.shared.frame.get()
    }

    /// Sets the frame number, handing over first what the listeners hold (so
    /// that it is tagged with the frame during which it arrived). Advance the
    /// frame through this or [`crate::web::Session::set_frame`], not through
    /// the cell given to [`FaultSink::new`].
    pub fn set_frame(&self, frame: u64) {
        if frame != self.shared.frame.get() {
            self.drain_held();
        }
        self.shared.frame.set(frame);
    }

    /// The frame during which the last uncaptured error arrived, if any.
    pub fn last_uncaptured_frame(&self) -> Option<u64> {
        self.shared.last_uncaptured_frame.get()
    }

    /// Whether every frame is being scoped after an error, and since when (see
    /// [`Hunt`]).
    pub fn hunt(&self) -> Hunt {
        self.shared.hunt.get()
    }

    /// Records an error a frame's own scope caught in frame `frame`.
    pub(crate) fn note_frame_catch(&self, frame: u64) {
        let mut hunt = self.shared.hunt.get();
        hunt.caught_in_frame(frame);
        self.shared.hunt.set(hunt);
    }

    /// Whether the `uncapturederror` listener is installed on some device: without
    /// it, an error outside a scope reaches nobody, so every frame is scoped.
    pub fn is_installed(&self) -> bool {
        self.shared.installed.get() > 0
    }

    /// Reports `fault` unless it was reported already; returns it marked as
    /// reported (its related faults too), so that a caller who also returns it
    /// as `Err` does not report it twice. Related faults are counted with it,
    /// except those reported already; of a fault reported already, only the
    /// related faults attached to it since (not reported yet) are reported.
    pub fn report(&self, fault: Fault) -> Fault {
        self.report_ref(&fault);
        fault.mark_reported()
    }

    /// Reports a borrowed fault unless it was reported already (and, of one
    /// reported already, the related faults not reported yet).
    pub fn report_ref(&self, fault: &Fault) {
        if !fault.is_reported() {
            self.record(fault);
        } else {
            for other in &fault.related {
                self.report_ref(other);
            }
        }
    }

    /// Writes a shader compiler warning through the same limiter (counted apart).
    pub fn warn(&self, text: &str) {
        let line = match self.with_log(|log| log.record_warning(text, now_ms())) {
            Some(line) => line,
            None => return self.count_reentrant(),
        };
        write(line);
        self.deliver();
    }

    /// Writes a note (a device running again, a retry) through the same limiter.
    pub fn note(&self, text: &str) {
        let line = match self.with_log(|log| log.record_note(text, now_ms())) {
            Some(line) => line,
            None => return self.count_reentrant(),
        };
        write(line);
        self.deliver();
    }

    /// Writes a note whatever the rate limit says (after the cut-off line, if
    /// the limiter gives that): a runtime's giving up with no fault of its
    /// own, which the errors before it must not hide.
    pub fn note_final(&self, text: &str) {
        let lines = match self.with_log(|log| log.record_note_final(text, now_ms())) {
            Some(lines) => lines,
            None => return self.count_reentrant(),
        };
        for line in lines {
            write(Some(line));
        }
        self.deliver();
    }

    fn record(&self, fault: &Fault) {
        // What the listeners hold arrived before it (and before what the
        // sanitiser may cause): in first.
        self.drain_held();
        let clean = self.sanitized(fault);
        let line = match self
            .shared
            .log
            .with(|log| log.record(fault, &clean, now_ms()))
        {
            Some(line) => line,
            None => return self.count_reentrant(),
        };
        write(line);
        self.deliver();
    }

    /// Reports `fault` and writes its line whatever the rate limit says: the
    /// one line of a runtime giving up (its fallback), which the errors
    /// before it must not hold back.
    pub fn report_final(&self, fault: &Fault) {
        self.drain_held();
        let clean = self.sanitized(fault);
        let lines = match self
            .shared
            .log
            .with(|log| log.record_final(fault, &clean, now_ms()))
        {
            Some(lines) => lines,
            None => return self.count_reentrant(),
        };
        for line in lines {
            write(Some(line));
        }
        self.deliver();
    }

    fn count_reentrant(&self) {
        self.shared
            .reentrant_failures
            .set(self.shared.reentrant_failures.get() + 1);
    }

    /// Installs the `uncapturederror` listener on `device`; removed when the guard
    /// drops.
    #[must_use = "the listener is removed when the guard drops"]
    pub fn install(&self, device: &GpuDevice) -> UncapturedListener {
        let faults = self.clone();
        let handler = Closure::<dyn Fn(u32, String, u32) -> f64>::new(
            move |kind: u32, message: String, held: u32| faults.on_uncaptured(kind, message, held),
        );
        // The listener itself is JavaScript: it prevents the default and
        // classifies the error, then makes one call into WebAssembly with the
        // kind and the message; while the log is silent it only counts (a storm
        // brings a thousand events a second).
        let hooks = uncaptured_hooks(handler.as_ref().unchecked_ref(), &self.shared.orphans);
        let listener =
            EventListener::with_function(device, "uncapturederror", hooks.listener()).ok();
        let installed = listener.is_some();
        if !installed {
            log::error("could not install the uncapturederror listener");
        }
        let id = self.shared.next_listener.get();
        self.shared.next_listener.set(id.wrapping_add(1));
        if installed {
            self.shared.installed.set(self.shared.installed.get() + 1);
            self.shared.held.with(|held| held.push((id, hooks.clone())));
        }
        UncapturedListener {
            listener,
            hooks,
            id,
            faults: self.clone(),
            installed,
            _handler: handler,
        }
    }

    /// One uncaptured error (`held` 0), or `held` errors like it counted while the
    /// log was silent. Returns the time until which the log is silent, 0 if it
    /// is not.
    fn on_uncaptured(&self, kind: u32, message: String, held: u32) -> f64 {
        // What removed listeners left goes in before a live error.
        if held == 0 {
            self.hand_over_orphans();
        }
        let started = now_ms();
        let kind = match kind {
            1 => FaultKind::Validation,
            2 => FaultKind::OutOfMemory,
            3 => FaultKind::Internal,
            _ => {
                self.count_reentrant();
                return 0.0;
            }
        };
        let frame = self.shared.frame.get();
        self.shared.last_uncaptured_frame.set(Some(frame));
        let mut hunt = self.shared.hunt.get();
        hunt.uncaptured(frame);
        self.shared.hunt.set(hunt);
        let mut fault = Fault::without_hint(kind, message).in_frame(frame);
        // Uncaptured errors carry no origin: the message is all there is, and
        // only some engines quote the label in it.
        if let Some(label) = label_in_message(&fault.message) {
            fault = fault.on_object(label);
        }
        let clean = self.sanitized(&fault);
        // Read after the sanitiser: one that reports back had its note
        // recorded at a later time, and an earlier one would read to the
        // limiter as a clock gone backwards (which starts it afresh).
        let now = now_ms();
        // The log itself, not `with_log`: this is where held counts go in.
        let recorded = self.shared.log.with(|log| {
            if held > 0 {
                log.record_held(&fault, &clean, u64::from(held));
                (None, 0.0)
            } else {
                let line = log.record(&fault, &clean, now);
                (line, log.silent_until().unwrap_or(0.0))
            }
        });
        let silent_until = match recorded {
            Some((line, silent_until)) => {
                write(line);
                self.deliver();
                silent_until
            }
            // Lent already (a bug, which the `Held` recorded): held counts stay
            // where they are held, unless the module crashed (a trap inside the
            // lend leaves it lent for good: the listener would offer them
            // every 100 ms for ever).
            None if held > 0 && !crate::web::crash::crashed() => return -1.0,
            None => {
                self.count_reentrant();
                0.0
            }
        };
        self.shared
            .handler_us
            .set(self.shared.handler_us.get() + (now_ms() - started) * 1000.0);
        silent_until
    }
}

fn write(line: Option<Line>) {
    if let Some(line) = line {
        match line.severity {
            Severity::Error => log::error(&line.text),
            Severity::Warning => log::warn(&line.text),
            Severity::Info => log::info(&line.text),
        }
    }
}

/// The installed `uncapturederror` listener; removed on `Drop`.
pub struct UncapturedListener {
    /// Removed first on `Drop`, before the held counts are handed over.
    listener: Option<EventListener>,
    hooks: UncapturedHooks,
    id: u32,
    /// The fault sink it counts in.
    faults: FaultSink,
    /// Whether the listener was installed (and counted in `faults`).
    installed: bool,
    _handler: Closure<dyn Fn(u32, String, u32) -> f64>,
}

impl std::fmt::Debug for UncapturedListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UncapturedListener").finish_non_exhaustive()
    }
}

impl Drop for UncapturedListener {
    fn drop(&mut self) {
        drop(self.listener.take());
        // What it held is handed over before its handler goes; what the log
        // could not take (it was busy: a sink or a sanitizer dropped this guard)
        // waits in the fault sink's orphans, handed over at the fault sink's next reading or
        // record, and by itself as soon as the work under way is done.
        self.hooks.close();
        let faults = &self.faults;
        if self.installed {
            faults
                .shared
                .installed
                .set(faults.shared.installed.get().saturating_sub(1));
            faults
                .shared
                .held
                .with(|held| held.retain(|(id, _)| *id != self.id));
        }
        // Handed over by itself once the work under way is done: what is
        // orphaned now, and a live error the listener still queues after this
        // (the error whose handling removed it).
        let faults = faults.clone();
        wasm_bindgen_futures::spawn_local(async move { faults.drain_held() });
    }
}
