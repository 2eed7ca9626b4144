//! The one fault path, as plain Rust: every fault the library observes (scoped,
//! late, frame, an application's `Err`, shader diagnostics, uncaptured errors) is
//! counted by kind, rendered by one formatter ([`Fault`]'s `Display`), written
//! through one rate limiter and sent to telemetry grouped by its sanitised label.
//!
//! The browser layer (`webgpu_guard::web::faults`) only adds the clock and the console.

use std::collections::VecDeque;

use crate::fault::{Fault, FaultKind};
use crate::rate_limit::{Admission, RateLimiter};
use crate::sanitize::Sanitized;
use crate::telemetry::{GroupSummary, Observed, Telemetry, TelemetrySink};

/// The counters' name before 0.2.0.
#[deprecated(since = "0.2.0", note = "renamed `FaultStats`")]
pub type NetStats = FaultStats;

/// Counters of the fault path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultStats {
    /// Validation errors seen.
    pub validation: u64,
    /// Out-of-memory errors seen.
    pub out_of_memory: u64,
    /// Internal errors seen.
    pub internal: u64,
    /// Other faults reported (exceptions, pipeline, scope-stack, device-lost).
    pub other: u64,
    /// Shader compiler warnings reported.
    pub warnings: u64,
    /// Lines written to the console (cut-off lines included).
    pub logged: u64,
    /// Faults held back by the limiter.
    pub suppressed: u64,
    /// Of those, the uncaptured errors the listener only counted, by kind and
    /// label, while the log was silent (handed over in one call per group).
    pub held_by_listener: u64,
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
    /// Errors a telemetry sink held and gave up when it was replaced (see
    /// [`crate::telemetry::TelemetrySink::retire`]).
    pub telemetry_dropped: u64,
    /// Main-thread time spent in the uncaptured-error handler, in microseconds.
    pub handler_us: u64,
    /// The most lines written in any one second so far.
    pub max_lines_in_a_second: u64,
}

impl FaultStats {
    /// Errors of every kind seen (warnings excluded).
    pub fn total_errors(&self) -> u64 {
        self.validation + self.out_of_memory + self.internal + self.other
    }

    fn count(&mut self, kind: FaultKind) {
        self.count_n(kind, 1);
    }

    fn count_n(&mut self, kind: FaultKind, n: u64) {
        match kind {
            FaultKind::Validation => self.validation += n,
            FaultKind::OutOfMemory => self.out_of_memory += n,
            FaultKind::Internal => self.internal += n,
            _ => self.other += n,
        }
    }
}

/// How a written line is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// `console.error`.
    Error,
    /// `console.warn`.
    Warning,
    /// `console.info`.
    Info,
}

/// One line to write, decided by the limiter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// How to show it.
    pub severity: Severity,
    /// The text.
    pub text: String,
}

const RECENT_LINES: usize = 64;

impl std::fmt::Debug for FaultLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultLog")
            .field("stats", &self.stats)
            .finish()
    }
}

/// Counts, limits, formats and forwards faults.
pub struct FaultLog {
    limiter: RateLimiter,
    telemetry: Telemetry,
    sink: Box<dyn TelemetrySink>,
    adapter: Option<String>,
    stats: FaultStats,
    recent: VecDeque<String>,
    written_at: VecDeque<f64>,
}

impl FaultLog {
    /// A log writing at most 5 lines a second, with `sink` for telemetry.
    pub fn new(sink: Box<dyn TelemetrySink>) -> Self {
        FaultLog {
            limiter: RateLimiter::default(),
            telemetry: Telemetry::default(),
            sink,
            adapter: None,
            stats: FaultStats::default(),
            recent: VecDeque::new(),
            written_at: VecDeque::new(),
        }
    }

    /// Replaces the telemetry sink (told the adapter, if one is known).
    pub fn set_sink(&mut self, sink: Box<dyn TelemetrySink>) {
        self.sink = sink;
        if let Some(adapter) = &self.adapter {
            self.sink.adapter(adapter);
        }
    }

    /// Tells the sink, now and after any change of sink, which adapter the
    /// errors come from.
    pub fn set_adapter(&mut self, adapter: &str) {
        self.adapter = Some(adapter.to_string());
        self.sink.adapter(adapter);
    }

    /// The counters.
    pub fn stats(&self) -> FaultStats {
        self.stats
    }

    /// The last lines written (at most 64), oldest first.
    pub fn recent_lines(&self) -> Vec<String> {
        self.recent.iter().cloned().collect()
    }

    /// Telemetry groups (kind, sanitised label) seen so far.
    pub fn groups(&self) -> Vec<GroupSummary> {
        self.telemetry.groups()
    }

    /// Records one fault observed at `now_ms`: counts it (and its related faults),
    /// sends it to telemetry, and returns the line to write if the limiter admits
    /// one (the fault itself, or the cut-off line).
    ///
    /// Related faults (caught with it: another scope of the same phase, the
    /// sizes a ladder tried) are counted and sent to telemetry like any other
    /// fault, grouped by their own kind and label (the fault's label when they
    /// have none); one already reported is neither counted nor sent again.
    /// The console line is made of `fault`; telemetry gets `clean`, the same
    /// fault sanitised.
    pub fn record(&mut self, fault: &Fault, clean: &Sanitized<'_>, now_ms: f64) -> Option<Line> {
        let related = unreported_related(fault);
        self.stats.count(fault.kind);
        for other in &related {
            self.stats.count(other.kind);
        }
        let line = self.admit(now_ms, || line_of(fault), Severity::Error);
        let sent_before = self.telemetry.sent();
        let failures_before = self.telemetry.sink_failures();
        let fault = clean.fault();
        let label = fault.label_for_grouping();
        self.telemetry
            .record(observed(fault, &label), now_ms, self.sink.as_ref());
        for other in unreported_related(fault) {
            let (other_label, frame) = related_grouping(other, fault, &label);
            self.telemetry.record(
                observed(other, &other_label).at_frame(frame),
                now_ms,
                self.sink.as_ref(),
            );
        }
        self.stats.telemetry_sent += self.telemetry.sent() - sent_before;
        self.stats.sink_failures += self.telemetry.sink_failures() - failures_before;
        self.stats.telemetry_held_back = self.telemetry.held_back();
        line
    }

    /// Records `fault` as [`Self::record`] does, and writes its own line
    /// whatever the limiter says (after the cut-off line, if the limiter gave
    /// that): the line of a runtime giving up (a fallback) is never held back
    /// by the errors before it. Counted as written.
    pub fn record_final(&mut self, fault: &Fault, clean: &Sanitized<'_>, now_ms: f64) -> Vec<Line> {
        let line = self.record(fault, clean, now_ms);
        self.written_all_the_same(line, line_of(fault), Severity::Error)
    }

    /// Records a note as [`Self::record_note`] does, and writes it whatever
    /// the limiter says, as [`Self::record_final`] does a fault: the line of a
    /// runtime giving up with no fault of its own (a build that failed was
    /// reported already; no WebGPU; a stalled picture).
    pub fn record_note_final(&mut self, text: &str, now_ms: f64) -> Vec<Line> {
        let line = self.record_note(text, now_ms);
        self.written_all_the_same(line, text.to_string(), Severity::Info)
    }

    /// The lines the limiter let through for a final line (`admitted`), and
    /// the final `text` itself after them when the limiter held it back (or
    /// gave the cut-off line in its place): then it is counted written, not
    /// held back.
    fn written_all_the_same(
        &mut self,
        admitted: Option<Line>,
        text: String,
        severity: Severity,
    ) -> Vec<Line> {
        let mut lines: Vec<Line> = admitted.into_iter().collect();
        if lines.iter().any(|line| line.text == text) {
            return lines;
        }
        // Counted as held back by the limiter: it is written after all.
        self.stats.suppressed = self.stats.suppressed.saturating_sub(1);
        self.kept(&text);
        lines.push(Line { severity, text });
        lines
    }

    /// The time until which any fault would be held back both from the console
    /// (no line, no cut-off line) and from telemetry, when the log is in that state
    /// now. The uncaptured-error listener counts what arrives before it and hands
    /// the counts to [`Self::record_held`]: a storm then costs one call per group
    /// instead of one per error.
    pub fn silent_until(&self) -> Option<f64> {
        Some(
            self.limiter
                .silent_until()?
                .min(self.telemetry.silent_until()?),
        )
    }

    /// Records `count` faults like `fault` that arrived while the log was silent
    /// (see [`Self::silent_until`]), exactly as `count` calls of [`Self::record`]
    /// would have: counted, held back, and grouped in telemetry (its related
    /// faults too). `clean` is `fault` sanitised, for telemetry.
    pub fn record_held(&mut self, fault: &Fault, clean: &Sanitized<'_>, count: u64) {
        if count == 0 {
            return;
        }
        let related = unreported_related(fault);
        self.stats.count_n(fault.kind, count);
        for other in &related {
            self.stats.count_n(other.kind, count);
        }
        self.limiter.hold_back(count);
        self.stats.suppressed += count;
        self.stats.held_by_listener += count;
        let failures_before = self.telemetry.sink_failures();
        let fault = clean.fault();
        let label = fault.label_for_grouping();
        self.telemetry
            .record_held(observed(fault, &label), count, self.sink.as_ref());
        for other in unreported_related(fault) {
            let (other_label, frame) = related_grouping(other, fault, &label);
            self.telemetry.record_held(
                observed(other, &other_label).at_frame(frame),
                count,
                self.sink.as_ref(),
            );
        }
        self.stats.sink_failures += self.telemetry.sink_failures() - failures_before;
        self.stats.telemetry_held_back = self.telemetry.held_back();
    }

    /// Records a warning (a shader compiler warning): counted apart, written through
    /// the same limiter, not sent to telemetry.
    pub fn record_warning(&mut self, text: &str, now_ms: f64) -> Option<Line> {
        self.stats.warnings += 1;
        self.admit(now_ms, || text.to_string(), Severity::Warning)
    }

    /// Records a note (a device running again, a retry): not counted as a fault,
    /// written through the same limiter.
    pub fn record_note(&mut self, text: &str, now_ms: f64) -> Option<Line> {
        self.admit(now_ms, || text.to_string(), Severity::Info)
    }

    /// Counts one event the browser layer could not process.
    pub fn count_handler_failure(&mut self) {
        self.stats.handler_failures += 1;
    }

    fn admit(
        &mut self,
        now_ms: f64,
        text: impl FnOnce() -> String,
        severity: Severity,
    ) -> Option<Line> {
        let line = match self.limiter.admit(now_ms) {
            Admission::Emit => Line {
                severity,
                text: text(),
            },
            Admission::CutOff => {
                self.stats.suppressed += 1;
                self.stats.cut_offs += 1;
                Line {
                    severity: Severity::Error,
                    text: self.limiter.cut_off_line(),
                }
            }
            Admission::Suppress => {
                self.stats.suppressed += 1;
                return None;
            }
        };
        self.timed(now_ms);
        self.kept(&line.text);
        Some(line)
    }

    /// A line the limiter let through was written at `now_ms`: counted in
    /// its second (`max_lines_in_a_second`, which final lines stay out of:
    /// no limit holds them back).
    fn timed(&mut self, now_ms: f64) {
        while self
            .written_at
            .front()
            .is_some_and(|&t| now_ms - t >= 1000.0 || now_ms < t)
        {
            self.written_at.pop_front();
        }
        self.written_at.push_back(now_ms);
        self.stats.max_lines_in_a_second = self
            .stats
            .max_lines_in_a_second
            .max(self.written_at.len() as u64);
    }

    /// A line was written: counted, kept among the recent.
    fn kept(&mut self, text: &str) {
        self.stats.logged += 1;
        if self.recent.len() >= RECENT_LINES {
            self.recent.pop_front();
        }
        self.recent.push_back(text.to_string());
    }
}

/// The line `fault` is written as: with the hint its message calls for,
/// when it carries none of its own.
fn line_of(fault: &Fault) -> String {
    match fault.hint {
        Some(_) => fault.to_string(),
        None => {
            let mut hinted = fault.clone();
            hinted.hint = crate::fault::hint_for(&fault.message);
            hinted.to_string()
        }
    }
}

/// The faults caught with `fault` (its related faults and theirs, depth first)
/// that were not reported yet: a related fault already reported (on its own,
/// then attached to another) is skipped with what it carries.
fn unreported_related(fault: &Fault) -> Vec<&Fault> {
    fn walk<'a>(fault: &'a Fault, out: &mut Vec<&'a Fault>) {
        for other in &fault.related {
            if !other.is_reported() {
                out.push(other);
                walk(other, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(fault, &mut out);
    out
}

/// The label and frame a related fault is grouped and sent with: its own, else
/// those of the fault it was caught with (`label`: that fault's grouping label).
/// `fault` as telemetry receives it, grouped under `label`.
fn observed<'a>(fault: &'a Fault, label: &'a Option<String>) -> Observed<'a> {
    Observed::new(fault.kind, &fault.message)
        .on(label.as_deref())
        .in_phase(fault.origin.phase.as_deref())
        .at_frame(fault.origin.frame)
}

fn related_grouping(
    other: &Fault,
    fault: &Fault,
    label: &Option<String>,
) -> (Option<String>, Option<u64>) {
    (
        other.label_for_grouping().or_else(|| label.clone()),
        other.origin.frame.or(fault.origin.frame),
    )
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_final_fault_is_written_even_when_the_limiter_holds_everything_back() {
        let mut log = FaultLog::new(Box::new(MemorySink::default()));
        let storm = Fault::new(FaultKind::Validation, "bad");
        let mut written = 0;
        for _ in 0..50 {
            written += usize::from(
                log.record(&storm, &Sanitized::new(&storm, None), 10.0)
                    .is_some(),
            );
        }
        assert!(written <= 6, "{written}");
        let last = Fault::new(FaultKind::Exception, "giving up: the application crashed");
        let lines = log.record_final(&last, &Sanitized::new(&last, None), 11.0);
        assert_eq!(
            lines.last().map(|l| l.text.as_str()),
            Some(last.to_string().as_str())
        );
        assert_eq!(log.recent_lines().last(), Some(&last.to_string()));
        assert_eq!(log.stats().logged, written as u64 + 1);
        // The storm's own: all but the five written (the cut-off line took a
        // sixth one's place); the final line is not among them.
        assert_eq!(log.stats().suppressed, 45);
    }

    /// The final line given where the limiter gives the cut-off line: both
    /// are written, and the final one is not counted held back.
    #[test]
    fn a_final_line_at_the_cut_off_is_counted_written() {
        for note in [false, true] {
            let mut log = FaultLog::new(Box::new(MemorySink::default()));
            let storm = Fault::new(FaultKind::Validation, "bad");
            for _ in 0..5 {
                let line = log.record(&storm, &Sanitized::new(&storm, None), 10.0);
                assert!(line.is_some());
            }
            let lines = if note {
                log.record_note_final("giving up: no WebGPU", 11.0)
            } else {
                let last = Fault::new(FaultKind::Exception, "giving up: crashed");
                log.record_final(&last, &Sanitized::new(&last, None), 11.0)
            };
            assert_eq!(
                lines.len(),
                2,
                "the cut-off line, then the final one: {lines:?}"
            );
            let stats = log.stats();
            assert_eq!((stats.logged, stats.suppressed), (7, 0), "note: {note}");
            // The limit's own count: five lines and the cut-off line.
            assert_eq!(stats.max_lines_in_a_second, 6, "note: {note}");
        }
    }

    /// A fault whose message calls for a hint is written once, hinted, when
    /// the limiter lets it through: no second, unhinted line.
    #[test]
    fn a_final_fault_the_limiter_lets_through_is_written_once() {
        let mut log = FaultLog::new(Box::new(MemorySink::default()));
        let hinted = Fault::new(
            FaultKind::Validation,
            "Buffer offset 3 is not a multiple of 4",
        );
        let lines = log.record_final(&hinted, &Sanitized::new(&hinted, None), 0.0);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(log.stats().logged, 1);
    }

    use super::*;
    use crate::telemetry::MemorySink;
    use std::rc::Rc;

    /// `fault` as the fault sink hands it to telemetry with no sanitiser set.
    fn raw(fault: &Fault) -> Sanitized<'_> {
        Sanitized::new(fault, None)
    }

    /// `fault` as the fault sink hands it to telemetry with the strict sanitiser.
    fn strict(fault: &Fault) -> Sanitized<'_> {
        Sanitized::new(fault, Some(&crate::sanitize::strict))
    }

    struct Shared(Rc<MemorySink>);
    impl TelemetrySink for Shared {
        fn send(&self, e: &crate::telemetry::TelemetryEvent) -> Result<(), String> {
            self.0.send(e)
        }
    }

    #[test]
    fn a_fault_recorded_without_its_hint_gets_it_in_the_line_written() {
        let mut log = FaultLog::new(Box::new(crate::telemetry::MemorySink::default()));
        let message = "Offset (3) is not a multiple of 4.";
        let bare = Fault::without_hint(FaultKind::Validation, message);
        assert_eq!(bare.hint, None);
        let line = log.record(&bare, &raw(&bare), 0.0).unwrap();
        assert_eq!(
            line.text,
            Fault::new(FaultKind::Validation, message).to_string()
        );
        assert!(line.text.contains("hint: alignment"), "{}", line.text);
    }

    #[test]
    fn one_formatter_one_limiter_for_every_kind_of_fault() {
        let mut log = FaultLog::new(Box::new(crate::telemetry::MemorySink::default()));
        let frame = Fault::new(FaultKind::Validation, "bad submit").in_frame(7);
        let line = log.record(&frame, &raw(&frame), 0.0).unwrap();
        assert_eq!(line.text, frame.to_string());
        assert_eq!(line.severity, Severity::Error);
        assert!(line.text.contains("at frame 7"));
        let warn = log
            .record_warning("shader:1:1 warning: unused", 1.0)
            .unwrap();
        assert_eq!(warn.severity, Severity::Warning);
        for i in 0..10 {
            let fault = Fault::new(FaultKind::Exception, format!("e{i}"));
            log.record(&fault, &raw(&fault), 2.0);
        }
        let stats = log.stats();
        assert_eq!(stats.logged, 6, "5 lines then one cut-off: {stats:?}");
        assert_eq!(stats.max_lines_in_a_second, 6);
        assert_eq!(stats.cut_offs, 1);
        assert_eq!(stats.validation, 1);
        assert_eq!(stats.other, 10);
        assert_eq!(stats.warnings, 1);
        assert_eq!(
            log.recent_lines().last().unwrap(),
            "more than 5 errors in a second, silencing the rest"
        );
    }

    #[test]
    fn related_faults_are_counted_and_labels_group_telemetry() {
        let memory = Rc::new(MemorySink::default());
        let mut log = FaultLog::new(Box::new(Shared(memory.clone())));
        let fault = Fault::new(FaultKind::Validation, "Invalid usage flags")
            .on_object("upload:/home/ana/cat.png")
            .with_related(vec![Fault::new(FaultKind::OutOfMemory, "no room")]);
        log.record(&fault, &strict(&fault), 0.0);
        let stats = log.stats();
        assert_eq!((stats.validation, stats.out_of_memory), (1, 1));
        let events = memory.events();
        // The related out-of-memory error is sent too, under the fault's label.
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].label, "upload:…");
        assert_eq!(
            (events[1].kind, events[1].label.as_str()),
            (FaultKind::OutOfMemory, "upload:…")
        );
        assert_eq!(log.groups()[0].label, "upload:…");
    }

    #[test]
    fn related_faults_go_to_telemetry_grouped_like_any_other_fault() {
        // An out-of-memory error caught with a validation error in one phase:
        // each is counted, and each is sent, grouped by its own kind and label.
        let memory = Rc::new(MemorySink::default());
        let mut log = FaultLog::new(Box::new(Shared(memory.clone())));
        let fault = Fault::new(FaultKind::Validation, "Invalid usage flags")
            .in_phase("startup")
            .with_related(vec![
                Fault::new(FaultKind::OutOfMemory, "no room")
                    .in_phase("startup")
                    .on_object("shadow-map")
                    .in_frame(4),
                // No label of its own: grouped under the fault's.
                Fault::new(FaultKind::Internal, "too complex"),
            ]);
        log.record(&fault, &raw(&fault), 0.0);
        let sent: Vec<(FaultKind, String, u64, Option<u64>)> = memory
            .events()
            .into_iter()
            .map(|e| (e.kind, e.label, e.occurrences, e.frame))
            .collect();
        assert_eq!(
            sent,
            vec![
                (FaultKind::Validation, "startup".to_string(), 1, None),
                (FaultKind::OutOfMemory, "shadow-map".to_string(), 1, Some(4)),
                (FaultKind::Internal, "startup".to_string(), 1, None),
            ]
        );
        let stats = log.stats();
        assert_eq!(
            (stats.validation, stats.out_of_memory, stats.internal),
            (1, 1, 1)
        );
        assert_eq!(stats.telemetry_sent, 3);
        // The same fault again: the groups grow, none is added.
        log.record(&fault, &raw(&fault), 1.0);
        let groups: Vec<(FaultKind, String, u64)> = log
            .groups()
            .into_iter()
            .map(|g| (g.kind, g.label, g.occurrences))
            .collect();
        assert_eq!(
            groups,
            vec![
                (FaultKind::Validation, "startup".to_string(), 2),
                (FaultKind::OutOfMemory, "shadow-map".to_string(), 2),
                (FaultKind::Internal, "startup".to_string(), 2),
            ]
        );
        // Held by the listener: counted and grouped as often as it arrived.
        log.record_held(&fault, &raw(&fault), 3);
        let stats = log.stats();
        assert_eq!(
            (stats.validation, stats.out_of_memory, stats.internal),
            (5, 5, 5)
        );
        assert_eq!(log.groups().iter().map(|g| g.occurrences).sum::<u64>(), 15);
        // A related fault that already went to the sink (reported on its own,
        // then attached to another) is neither counted nor sent again.
        let events_before = memory.events().len();
        let again = Fault::new(FaultKind::Exception, "bail out")
            .in_phase("later")
            .with_related(vec![
                Fault::new(FaultKind::Validation, "seen").mark_reported()
            ]);
        log.record(&again, &raw(&again), 2000.0);
        assert_eq!(log.stats().validation, 5);
        assert_eq!(log.stats().other, 1);
        assert_eq!(memory.events().len(), events_before + 1);
    }

    /// A storm as the fault sink sees it: uncaptured errors (a kind, a message quoting
    /// one of a few labels, hundreds of others past the group cap, or none) and,
    /// now and then, a fault a scope caught (`scoped`, its object label known), each
    /// at a time and a frame.
    fn storm_events(seed: u64, n: usize) -> Vec<(f64, Fault, bool)> {
        let mut next = crate::test_uniform(seed);
        let labels = [
            "[Buffer \"verts\"]",
            "[Texture \"shadow\"]",
            "[Queue]",
            "",
            "[Buffer \"token=abc123\"]",
        ];
        let kinds = [
            FaultKind::Validation,
            FaultKind::OutOfMemory,
            FaultKind::Internal,
        ];
        let mut now = 0.0;
        (0..n)
            .map(|i| {
                now += if next() < 0.85 {
                    next() * 3.0
                } else {
                    next() * 700.0
                };
                let kind = kinds[(next() * 2.2) as usize];
                let many = format!("[Buffer \"many-{}\"]", (next() * 300.0) as u32);
                let label = if next() < 0.2 {
                    many.as_str()
                } else {
                    labels[(next() * labels.len() as f64) as usize]
                };
                let message = format!("Offset ({i}) is not a multiple of 4. While writing {label}");
                let frame = (now / 100.0) as u64;
                if next() < 0.1 {
                    // A scope names the object the uncaptured errors quote.
                    let object = crate::fault::label_in_message(&message)
                        .unwrap_or_else(|| "scoped".to_string());
                    let fault = Fault::new(kind, message).on_object(object).in_frame(frame);
                    return (now, fault, true);
                }
                (
                    now,
                    Fault::without_hint(kind, message).in_frame(frame),
                    false,
                )
            })
            .collect()
    }

    /// Errors held by the listener: (kind, quoted label) -> first fault, count.
    type Held = Vec<(FaultKind, Option<String>, Fault, u64)>;

    /// Hands the held counts over, tagged with the current frame, as the fault sink does.
    fn drain(log: &mut FaultLog, held: &mut Held, frame: u64) {
        for (_, _, mut fault, count) in held.drain(..) {
            fault.origin.frame = Some(frame);
            log.record_held(&fault, &strict(&fault), count);
        }
    }

    #[test]
    fn errors_held_while_silent_end_exactly_as_if_each_were_recorded() {
        // The listener's fast path: while the log is silent, uncaptured errors are
        // counted by (kind, quoted label) and handed over in one call per group,
        // before the next live one, before any other fault is recorded and before
        // the frame changes. Everything the log shows must be what recording each
        // would show: counters, lines, groups (past the cap too) and telemetry.
        for seed in [1, 2, 3, 2026] {
            let events = storm_events(seed, 8000);
            let each_sink = Rc::new(MemorySink::default());
            let held_sink = Rc::new(MemorySink::default());
            let mut each = FaultLog::new(Box::new(Shared(each_sink.clone())));
            let mut log = FaultLog::new(Box::new(Shared(held_sink.clone())));
            let mut each_lines = Vec::new();
            let mut lines = Vec::new();
            let mut held: Held = Vec::new();
            let mut frame = 0;
            let mut silent_until = None;
            let mut held_count = 0;
            for (now, fault, scoped) in &events {
                each_lines.extend(each.record(fault, &strict(fault), *now));
                let arrived_in = fault.origin.frame.unwrap_or(0);
                if arrived_in != frame {
                    drain(&mut log, &mut held, frame);
                    frame = arrived_in;
                }
                if !scoped && silent_until.is_some_and(|until| *now < until) {
                    held_count += 1;
                    let key = crate::fault::label_in_message(&fault.message);
                    match held.iter_mut().find(|h| h.0 == fault.kind && h.1 == key) {
                        Some(group) => group.3 += 1,
                        None => held.push((fault.kind, key, fault.clone(), 1)),
                    }
                    continue;
                }
                drain(&mut log, &mut held, frame);
                lines.extend(log.record(fault, &strict(fault), *now));
                if !scoped {
                    silent_until = log.silent_until();
                }
            }
            drain(&mut log, &mut held, frame);
            assert!(held_count > 4000, "seed {seed}: only {held_count} held");
            let stats = log.stats();
            assert_eq!(stats.held_by_listener, held_count, "seed {seed}");
            let stats = FaultStats {
                held_by_listener: 0,
                ..stats
            };
            assert_eq!(each.stats(), stats, "seed {seed}");
            assert_eq!(each_lines, lines, "seed {seed}");
            let groups = log.groups();
            assert!(
                groups
                    .iter()
                    .any(|g| g.label == crate::telemetry::OTHER_LABELS),
                "seed {seed}: the cap was not reached"
            );
            assert_eq!(each.groups(), groups, "seed {seed}");
            assert_eq!(each_sink.events(), held_sink.events(), "seed {seed}");
        }
    }
}
