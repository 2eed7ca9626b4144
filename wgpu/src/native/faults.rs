//! The desktop's fault sink: every fault, note and warning of a runtime goes
//! through `webgpu-guard-core`'s rate-limited [`FaultLog`] (5 lines a second
//! and one cut-off line, counted, grouped for telemetry), is written to the
//! program's standard error (or the writer given), and is handed to the
//! application's telemetry sink after the log's borrow ends. wgpu's
//! uncaptured errors arrive on whatever thread made the call that failed:
//! the handler only puts them in an [`Inbox`] (a storm beyond
//! [`INBOX_LIVE`] errors is only counted, by kind), emptied at every turn of
//! the loop and before every reading of the counters.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use webgpu_guard_core::fault::{label_in_message, Fault, FaultKind};
use webgpu_guard_core::fault_log::{FaultLog, FaultStats, Line, Severity};
use webgpu_guard_core::held::Held;
use webgpu_guard_core::sanitize::{sanitized_nested, sanitized_text_nested, Sanitized, Sanitizer};
use webgpu_guard_core::telemetry::deferred::{Deferring, Delivery, DeliveryCounts};
use webgpu_guard_core::telemetry::{GroupSummary, TelemetrySink};

use super::panics::catching;

/// How many uncaptured errors an inbox keeps whole between two turns; the
/// rest of a storm is counted by kind.
pub const INBOX_LIVE: usize = 64;

/// What telemetry receives in place of a text the sanitiser panicked on.
const SANITIZER_PANICKED: &str = "(the sanitiser panicked)";

/// Where written lines go.
pub type LineWriter = Box<dyn Fn(Severity, &str)>;

/// Uncaptured errors of one device, from any thread, until the loop takes
/// them; each tagged with the frame under way when wgpu reported it.
pub(crate) struct Inbox {
    state: Mutex<InboxState>,
    frame: Arc<AtomicU64>,
}

#[derive(Default)]
struct InboxState {
    live: Vec<(FaultKind, String, u64)>,
    /// By kind and the label the message names: the first message counted
    /// and how many.
    counted: Vec<Counted>,
}

/// Errors of a storm, counted by kind and label.
struct Counted {
    kind: FaultKind,
    label: Option<String>,
    first_message: String,
    count: u64,
    last_frame: u64,
}

/// The most (kind, label) groups an inbox counts apart; beyond, errors are
/// counted in their kind's first group.
const COUNTED_GROUPS: usize = 32;

impl Inbox {
    /// Takes one of wgpu's errors (the handler's only work).
    pub(crate) fn put(&self, error: wgpu::Error) {
        let (kind, message) = match error {
            wgpu::Error::Validation { description, .. } => (FaultKind::Validation, description),
            wgpu::Error::OutOfMemory { source } => (FaultKind::OutOfMemory, source.to_string()),
            wgpu::Error::Internal { description, .. } => (FaultKind::Internal, description),
        };
        let frame = self.frame.load(Ordering::Relaxed);
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if state.live.len() < INBOX_LIVE {
            state.live.push((kind, message, frame));
            return;
        }
        let label = label_in_message(&message);
        let groups = state.counted.len();
        let group = state
            .counted
            .iter_mut()
            .position(|c| c.kind == kind && (c.label == label || groups >= COUNTED_GROUPS));
        match group {
            Some(at) => {
                state.counted[at].count += 1;
                state.counted[at].last_frame = frame;
            }
            None => state.counted.push(Counted {
                kind,
                label,
                first_message: message,
                count: 1,
                last_frame: frame,
            }),
        }
    }

    fn take(&self) -> InboxState {
        self.state
            .lock()
            .map(|mut state| std::mem::take(&mut *state))
            .unwrap_or_default()
    }
}

/// The fault sink of a desktop runtime. Cheap to clone.
#[derive(Clone)]
pub struct FaultSink {
    shared: Rc<Shared>,
}

struct Shared {
    log: RefCell<FaultLog>,
    outgoing: Rc<Held<Vec<Delivery>>>,
    telemetry: RefCell<Option<Rc<dyn TelemetrySink>>>,
    sanitizer: RefCell<Option<Rc<Sanitizer>>>,
    writer: RefCell<Option<Rc<LineWriter>>>,
    delivering: Cell<bool>,
    /// The frame under way, read by the inboxes' handlers on any thread.
    frame: Arc<AtomicU64>,
    started: std::time::Instant,
    inboxes: RefCell<Vec<Arc<Inbox>>>,
    /// What became of the deliveries after the log queued them.
    delivered: DeliveryCounts,
    /// How many runs of the sanitiser are under way, nested.
    sanitizing: Cell<u32>,
    /// The adapter the errors come from (telemetry gets it sanitised).
    adapter: RefCell<Option<String>>,
    lines: RefCell<VecDeque<String>>,
}

impl std::fmt::Debug for FaultSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultSink")
            .field("stats", &self.stats())
            .finish()
    }
}

impl Default for FaultSink {
    fn default() -> Self {
        Self::new()
    }
}

impl FaultSink {
    /// A fault sink writing to standard error, with no telemetry sink.
    pub fn new() -> Self {
        let outgoing = Rc::new(Held::default());
        FaultSink {
            shared: Rc::new(Shared {
                log: RefCell::new(FaultLog::new(Box::new(Deferring(outgoing.clone())))),
                outgoing,
                telemetry: RefCell::new(None),
                sanitizer: RefCell::new(None),
                writer: RefCell::new(None),
                delivering: Cell::new(false),
                frame: Arc::default(),
                started: std::time::Instant::now(),
                inboxes: RefCell::default(),
                delivered: DeliveryCounts::default(),
                sanitizing: Cell::new(0),
                adapter: RefCell::default(),
                lines: RefCell::default(),
            }),
        }
    }

    fn now_ms(&self) -> f64 {
        self.shared.started.elapsed().as_secs_f64() * 1000.0
    }

    /// Reports `fault` (counted, written if the limiter lets it, grouped for
    /// telemetry) unless it was reported already; of a fault reported
    /// already, only the related faults attached to it since are reported.
    pub fn report(&self, fault: &Fault) {
        if fault.is_reported() {
            for other in &fault.related {
                self.report(other);
            }
            return;
        }
        let clean = self.sanitized(fault);
        let now = self.now_ms();
        let line = self
            .shared
            .log
            .try_borrow_mut()
            .ok()
            .and_then(|mut log| log.record(fault, &Sanitized::new(&clean, None), now));
        self.after(line);
    }

    /// Reports `fault` and writes its line whatever the rate limit says: the
    /// one line of a runtime giving up (its fallback), which the errors
    /// before it must not hold back.
    pub fn report_final(&self, fault: &Fault) {
        let clean = self.sanitized(fault);
        let now = self.now_ms();
        let lines = self
            .shared
            .log
            .try_borrow_mut()
            .map(|mut log| log.record_final(fault, &Sanitized::new(&clean, None), now))
            .unwrap_or_default();
        for line in lines {
            self.write(line);
        }
        self.deliver();
    }

    /// `fault` as telemetry may see it: through the sanitiser (a panicking
    /// one gives a placeholder, never the raw text).
    fn sanitized(&self, fault: &Fault) -> Fault {
        let sanitizer = self.shared.sanitizer.borrow().clone();
        match &sanitizer {
            Some(sanitize) => sanitized_nested(fault, &caught(sanitize), &self.shared.sanitizing)
                .fault()
                .clone(),
            None => fault.clone(),
        }
    }

    /// Writes an informational line (through the same limiter).
    pub fn note(&self, text: &str) {
        let now = self.now_ms();
        let line = self
            .shared
            .log
            .try_borrow_mut()
            .ok()
            .and_then(|mut log| log.record_note(text, now));
        self.after(line);
    }

    /// Writes a note whatever the rate limit says (after the cut-off line, if
    /// the limiter gives that): a runtime's giving up with no fault of its own.
    pub fn note_final(&self, text: &str) {
        let now = self.now_ms();
        let lines = self
            .shared
            .log
            .try_borrow_mut()
            .map(|mut log| log.record_note_final(text, now))
            .unwrap_or_default();
        for line in lines {
            self.write(line);
        }
        self.deliver();
    }

    /// Records a warning (a shader compiler's).
    pub fn warn(&self, text: &str) {
        let now = self.now_ms();
        let line = self
            .shared
            .log
            .try_borrow_mut()
            .ok()
            .and_then(|mut log| log.record_warning(text, now));
        self.after(line);
    }

    fn after(&self, line: Option<Line>) {
        if let Some(line) = line {
            self.write(line);
        }
        self.deliver();
    }

    fn write(&self, line: Line) {
        {
            let mut lines = self.shared.lines.borrow_mut();
            if lines.len() == 64 {
                lines.pop_front();
            }
            lines.push_back(line.text.clone());
        }
        let writer = self.shared.writer.borrow().clone();
        match writer {
            Some(writer) => {
                let _ = catching(|| writer(line.severity, &line.text));
            }
            None => {
                let prefix = match line.severity {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                    Severity::Info => "info",
                };
                eprintln!("[gpu {prefix}] {}", line.text);
            }
        }
    }

    /// Replaces where lines are written (standard error by default).
    pub fn set_writer(&self, writer: Option<LineWriter>) {
        *self.shared.writer.borrow_mut() = writer.map(Rc::new);
    }

    /// The frame number uncaptured errors are tagged with from now on.
    pub fn set_frame(&self, frame: u64) {
        self.shared.frame.store(frame, Ordering::Relaxed);
    }

    /// Replaces the telemetry sink; the one replaced is retired (what it
    /// holds is sent or counted as dropped).
    pub fn set_sink(&self, sink: Box<dyn TelemetrySink>) {
        let old = self.shared.telemetry.replace(Some(Rc::from(sink)));
        if let Some(old) = old {
            // What it gave up is counted (one that panics says nothing).
            if let Ok(given_up) = catching(|| old.retire()) {
                self.shared.delivered.dropped(given_up);
            }
        }
        if let Ok(mut log) = self.shared.log.try_borrow_mut() {
            log.set_sink(Box::new(Deferring(self.shared.outgoing.clone())));
        }
        self.deliver();
    }

    /// The program is about to end: the telemetry sink sends what waits,
    /// within `timeout` ([`TelemetrySink::flush`]); whether nothing waits any
    /// more. A windowed runtime does it when its window closes.
    pub fn flush(&self, timeout: std::time::Duration) -> bool {
        self.drain();
        let sink = self.shared.telemetry.borrow().clone();
        let millis = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
        sink.is_none_or(|sink| catching(|| sink.flush(millis)).unwrap_or(false))
    }

    /// Sets the sanitising step applied to what telemetry receives (what the
    /// inboxes hold goes in under the old one: it came before).
    pub fn set_sanitizer(&self, sanitizer: Option<Sanitizer>) {
        self.drain();
        *self.shared.sanitizer.borrow_mut() = sanitizer.map(Rc::new);
        self.tell_adapter();
    }

    /// Tells the telemetry sink which adapter the errors come from.
    pub fn set_adapter(&self, adapter: &str) {
        *self.shared.adapter.borrow_mut() = Some(adapter.to_string());
        self.tell_adapter();
    }

    /// Tells the telemetry sink the adapter, sanitised as every text that
    /// leaves for it is (again after the sanitiser changes).
    fn tell_adapter(&self) {
        let Some(adapter) = self.shared.adapter.borrow().clone() else {
            return;
        };
        let sanitizer = self.shared.sanitizer.borrow().clone();
        let clean = match &sanitizer {
            Some(sanitize) => {
                sanitized_text_nested(&adapter, &caught(sanitize), &self.shared.sanitizing)
            }
            None => adapter,
        };
        if let Ok(mut log) = self.shared.log.try_borrow_mut() {
            log.set_adapter(&clean);
        }
        self.deliver();
    }

    fn deliver(&self) {
        if self.shared.delivering.replace(true) {
            return;
        }
        loop {
            let batch = self.shared.outgoing.take().unwrap_or_default();
            if batch.is_empty() {
                break;
            }
            let Some(sink) = self.shared.telemetry.borrow().clone() else {
                // No sink: nothing was sent (not counted as sent).
                self.shared.delivered.no_sink(&batch);
                continue;
            };
            for delivery in batch {
                let refused = catching(|| delivery.deliver_to(&*sink)).map_or(true, |r| r.is_err());
                if refused {
                    self.shared.delivered.refused(&delivery);
                }
            }
        }
        self.shared.delivering.set(false);
    }

    /// A new inbox for one device's uncaptured errors, emptied by [`Self::drain`].
    pub(crate) fn inbox(&self) -> Arc<Inbox> {
        let inbox = Arc::new(Inbox {
            state: Mutex::default(),
            frame: self.shared.frame.clone(),
        });
        self.shared.inboxes.borrow_mut().push(inbox.clone());
        inbox
    }

    /// Forgets `inbox` (what it holds is taken first).
    pub(crate) fn close_inbox(&self, inbox: &Arc<Inbox>) {
        self.drain();
        self.shared
            .inboxes
            .borrow_mut()
            .retain(|i| !Arc::ptr_eq(i, inbox));
    }

    /// Takes what the inboxes hold: each error kept whole is reported, the
    /// rest of a storm recorded as held back, each tagged with the frame it
    /// came in.
    pub fn drain(&self) {
        let inboxes: Vec<Arc<Inbox>> = self.shared.inboxes.borrow().clone();
        for inbox in inboxes {
            let taken = inbox.take();
            for (kind, message, frame) in taken.live {
                let label = label_in_message(&message);
                let mut fault = Fault::new(kind, message).in_frame(frame);
                if let Some(label) = label {
                    fault = fault.on_object(label);
                }
                self.report(&fault);
            }
            for counted in taken.counted {
                let mut fault =
                    Fault::new(counted.kind, counted.first_message).in_frame(counted.last_frame);
                if let Some(label) = counted.label {
                    fault = fault.on_object(label);
                }
                let clean = self.sanitized(&fault);
                if let Ok(mut log) = self.shared.log.try_borrow_mut() {
                    log.record_held(&fault, &Sanitized::new(&clean, None), counted.count);
                }
                self.deliver();
            }
        }
    }

    /// The counters (what the inboxes hold counted first).
    pub fn stats(&self) -> FaultStats {
        self.drain();
        let mut stats = self
            .shared
            .log
            .try_borrow()
            .map(|log| log.stats())
            .unwrap_or_default();
        // Sends the log counted, not received or refused after it.
        self.shared.delivered.correct(&mut stats);
        stats
    }

    /// The last lines written (at most 64), oldest first.
    pub fn recent_lines(&self) -> Vec<String> {
        self.shared.lines.borrow().iter().cloned().collect()
    }

    /// Telemetry's groups: counts by kind and label.
    pub fn groups(&self) -> Vec<GroupSummary> {
        self.drain();
        self.shared
            .log
            .try_borrow()
            .map(|log| log.groups())
            .unwrap_or_default()
    }
}

/// `sanitize` under the panic guard: a panicking run gives a placeholder,
/// never the raw text.
fn caught(sanitize: &Sanitizer) -> impl Fn(&str) -> String + '_ {
    move |text: &str| catching(|| sanitize(text)).unwrap_or_else(|_| SANITIZER_PANICKED.into())
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use webgpu_guard_core::fault::{Fault, FaultKind};
    use webgpu_guard_core::telemetry::{TelemetryEvent, TelemetrySink};

    use super::FaultSink;

    /// A sink that refuses every event and gives up `retired` when replaced.
    struct Refusing {
        retired: u64,
    }

    impl TelemetrySink for Refusing {
        fn send(&self, _: &TelemetryEvent) -> Result<(), String> {
            Err("refused".into())
        }
        fn retire(&self) -> u64 {
            self.retired
        }
    }

    fn quiet() -> FaultSink {
        let faults = FaultSink::new();
        faults.set_writer(Some(Box::new(|_, _| {})));
        faults
    }

    fn fault() -> Fault {
        Fault::new(FaultKind::Validation, "bad").on_object("buf")
    }

    #[test]
    fn an_event_with_no_sink_or_refused_is_not_counted_sent() {
        let faults = quiet();
        faults.report(&fault());
        let stats = faults.stats();
        assert_eq!((stats.telemetry_sent, stats.sink_failures), (0, 0));
        faults.set_sink(Box::new(Refusing { retired: 0 }));
        faults.report(&fault());
        let stats = faults.stats();
        assert_eq!((stats.telemetry_sent, stats.sink_failures), (0, 1));
    }

    #[test]
    fn what_a_replaced_sink_gives_up_is_counted_dropped() {
        let faults = quiet();
        faults.set_sink(Box::new(Refusing { retired: 3 }));
        faults.set_sink(Box::new(Refusing { retired: 0 }));
        assert_eq!(faults.stats().telemetry_dropped, 3);
    }

    /// Keeps the adapters it is told.
    #[derive(Clone, Default)]
    struct Adapters(Rc<std::cell::RefCell<Vec<String>>>);

    impl TelemetrySink for Adapters {
        fn send(&self, _: &TelemetryEvent) -> Result<(), String> {
            Ok(())
        }
        fn adapter(&self, adapter: &str) {
            self.0.borrow_mut().push(adapter.to_string());
        }
    }

    #[test]
    fn the_adapter_reaches_telemetry_sanitised_whenever_the_sanitiser_is_set() {
        let faults = quiet();
        let told = Adapters::default();
        faults.set_sink(Box::new(told.clone()));
        faults.set_adapter("GPU 0x2206 serial 12345");
        faults.set_sanitizer(Some(Box::new(|_: &str| "REDACTED".to_string())));
        faults.set_adapter("GPU 0x2206 serial 12345");
        let told = told.0.borrow();
        assert_eq!(
            told.first().map(String::as_str),
            Some("GPU 0x2206 serial 12345")
        );
        assert!(told[1..].iter().all(|a| a == "REDACTED"), "{told:?}");
        assert!(told.len() >= 3, "{told:?}");
    }

    #[test]
    fn a_sanitiser_that_reports_into_its_own_sink_ends() {
        let faults = quiet();
        let runs = Rc::new(Cell::new(0u32));
        let (inner, counted) = (faults.clone(), runs.clone());
        faults.set_sanitizer(Some(Box::new(move |text: &str| {
            counted.set(counted.get() + 1);
            assert!(counted.get() < 100, "no end to the recursion");
            inner.report(&Fault::new(FaultKind::Validation, "from the sanitiser"));
            text.to_string()
        })));
        faults.report(&fault());
        assert!(runs.get() > 1, "the sanitiser ran once");
        assert!(runs.get() < 100);
    }
}
