//! Telemetry for GPU errors: grouped by kind and object label (never by message
//! text, which differs between browsers), truncated and rate-limited. What it
//! is given is sanitised already ([`crate::sanitize::Sanitized`], made by the
//! fault log's caller before the log is borrowed).
//! [`outbox`] and [`otlp`] batch the groups for an HTTP collector (the browser's
//! transport is `web::HttpSink`).

pub mod deferred;
pub mod otlp;
pub mod outbox;
pub mod record;
pub mod retry_after;

use crate::fault::{label_in_message, FaultKind};
use crate::rate_limit::{Admission, RateLimiter};
use crate::sanitize::{truncate_chars, TELEMETRY_MAX_CHARS};

/// The longest label telemetry carries, in characters.
pub const LABEL_MAX_CHARS: usize = 80;

/// The label used for errors that name no object.
pub const UNLABELLED: &str = "(unlabelled)";

/// The most groups kept; errors of any further (kind, label) are counted in one
/// overflow group per kind, labelled [`OTHER_LABELS`].
pub const MAX_GROUPS: usize = 256;

/// The label of the overflow group.
pub const OTHER_LABELS: &str = "(other labels)";

/// One event handed to a sink.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TelemetryEvent {
    /// The error kind.
    pub kind: FaultKind,
    /// The object label the group is keyed by.
    pub label: String,
    /// The labelled phase whose scope caught the error, if any.
    pub phase: Option<String>,
    /// The sanitised, truncated message.
    pub message: String,
    /// The frame number at which the error arrived.
    pub frame: Option<u64>,
    /// Occurrences of this group so far, this one included.
    pub occurrences: u64,
}

/// Errors of one group that the limiter held back: no [`TelemetryEvent`] was
/// sent for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeldBack<'a> {
    /// The error kind.
    pub kind: FaultKind,
    /// The (sanitised, truncated) label of the group.
    pub label: &'a str,
    /// The labelled phase, if any.
    pub phase: Option<&'a str>,
    /// The last of them's message (sanitised under the policy in force when
    /// it came, truncated).
    pub message: &'a str,
    /// The frame of the last of them.
    pub frame: Option<u64>,
    /// How many errors.
    pub count: u64,
}

/// One error as telemetry receives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observed<'a> {
    /// The error kind.
    pub kind: FaultKind,
    /// The object label the library knows; without one, a label quoted in the
    /// message is used (Dawn quotes them, wgpu does not).
    pub label: Option<&'a str>,
    /// The labelled phase, if any.
    pub phase: Option<&'a str>,
    /// The implementation's message, raw.
    pub message: &'a str,
    /// The frame at which it arrived.
    pub frame: Option<u64>,
}

impl<'a> Observed<'a> {
    /// An error of `kind` with `message` and nothing else known.
    pub fn new(kind: FaultKind, message: &'a str) -> Self {
        Observed {
            kind,
            label: None,
            phase: None,
            message,
            frame: None,
        }
    }

    /// The same, on the object labelled `label`.
    pub fn on(mut self, label: Option<&'a str>) -> Self {
        self.label = label;
        self
    }

    /// The same, in `phase`.
    pub fn in_phase(mut self, phase: Option<&'a str>) -> Self {
        self.phase = phase;
        self
    }

    /// The same, at `frame`.
    pub fn at_frame(mut self, frame: Option<u64>) -> Self {
        self.frame = frame;
        self
    }
}

/// Where telemetry goes. Implement this to send events to your own service.
pub trait TelemetrySink {
    /// Receives one event. An `Err` is counted, never propagated.
    fn send(&self, event: &TelemetryEvent) -> Result<(), String>;

    /// Receives the errors of a group that the limiter held back, so that a sink
    /// that batches (the HTTP sink) counts every error, not only the events
    /// sent. The default ignores them. An `Err` is counted, never propagated.
    fn held_back(&self, held: &HeldBack<'_>) -> Result<(), String> {
        let _ = held;
        Ok(())
    }

    /// Learns the adapter the errors come from (each time a device comes up),
    /// for a sink that names it (the HTTP sink's resource). The default ignores it.
    fn adapter(&self, adapter: &str) {
        let _ = adapter;
    }

    /// The fault sink replaced this sink: a sink that holds errors waiting
    /// hands them on now (the HTTP sink sends them) and returns how many it had
    /// to give up, which the fault sink counts
    /// ([`crate::fault_log::FaultStats::telemetry_dropped`]): nothing vanishes uncounted.
    /// The default holds nothing.
    fn retire(&self) -> u64 {
        0
    }

    /// The program is about to end: sends what waits now, waiting at most
    /// `timeout_ms` for it to go; whether nothing waits any more. The default
    /// holds nothing.
    fn flush(&self, timeout_ms: u32) -> bool {
        let _ = timeout_ms;
        true
    }
}

/// A sink that keeps events in memory (for tests and for a page's own panel).
/// Clones share the events: keep one, hand the other to the fault sink.
#[derive(Clone, Debug, Default)]
pub struct MemorySink {
    events: std::rc::Rc<std::cell::RefCell<Vec<TelemetryEvent>>>,
}

impl MemorySink {
    /// A copy of the events received.
    pub fn events(&self) -> Vec<TelemetryEvent> {
        self.events.borrow().clone()
    }
}

impl TelemetrySink for MemorySink {
    fn send(&self, event: &TelemetryEvent) -> Result<(), String> {
        self.events.borrow_mut().push(event.clone());
        Ok(())
    }
}

/// Counts of one (kind, label) group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSummary {
    /// The error kind.
    pub kind: FaultKind,
    /// The object label.
    pub label: String,
    /// Occurrences.
    pub occurrences: u64,
    /// The first message seen (sanitised, truncated).
    pub first_message: String,
    /// The last frame seen.
    pub last_frame: Option<u64>,
}

/// Groups, truncates and rate-limits events (sanitised already) on their way to
/// a sink.
pub struct Telemetry {
    /// Most recently hit first (a storm hits one group again and again).
    groups: Vec<GroupSummary>,
    limiter: RateLimiter,
    sent: u64,
    held_back: u64,
    sink_failures: u64,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("groups", &self.groups.len())
            .field("sent", &self.sent)
            .field("held_back", &self.held_back)
            .finish()
    }
}

impl Default for Telemetry {
    fn default() -> Self {
        Telemetry::new(RateLimiter::default())
    }
}

impl Telemetry {
    /// A telemetry path limited by `limiter`.
    pub fn new(limiter: RateLimiter) -> Self {
        Telemetry {
            groups: Vec::new(),
            limiter,
            sent: 0,
            held_back: 0,
            sink_failures: 0,
        }
    }

    /// Records one error and, when the limiter admits it, sends it to `sink`;
    /// one it holds back goes to [`TelemetrySink::held_back`]. The label is
    /// truncated like the message, and the group is keyed by the truncated label.
    /// Returns whether an event was sent.
    pub fn record(&mut self, error: Observed<'_>, now_ms: f64, sink: &dyn TelemetrySink) -> bool {
        self.hit_group(error.kind, error.label, error.message);
        let group = &mut self.groups[0];
        group.occurrences += 1;
        group.last_frame = error.frame;
        let occurrences = group.occurrences;
        if self.limiter.admit(now_ms) != Admission::Emit {
            self.held_back += 1;
            self.hand_held_to(sink, error, 1);
            return false;
        }
        let event = TelemetryEvent {
            kind: error.kind,
            label: self.groups[0].label.clone(),
            phase: error.phase.map(|p| self.truncated_label(p)),
            message: self.truncated(error.message),
            frame: error.frame,
            occurrences,
        };
        match sink.send(&event) {
            Ok(()) => {
                self.sent += 1;
                true
            }
            Err(_) => {
                self.sink_failures += 1;
                false
            }
        }
    }

    /// Records `count` errors like one [`Self::record`] would, that arrived while
    /// the limiter was silent (see [`Self::silent_until`]): grouped, held back
    /// and handed to [`TelemetrySink::held_back`] in one call.
    pub fn record_held(&mut self, error: Observed<'_>, count: u64, sink: &dyn TelemetrySink) {
        if count == 0 {
            return;
        }
        self.hit_group(error.kind, error.label, error.message);
        let group = &mut self.groups[0];
        group.occurrences += count;
        group.last_frame = error.frame;
        self.limiter.hold_back(count);
        self.held_back += count;
        self.hand_held_to(sink, error, count);
    }

    /// Hands `count` held-back errors of the first group (the one just hit) to
    /// `sink`.
    fn hand_held_to(&mut self, sink: &dyn TelemetrySink, error: Observed<'_>, count: u64) {
        let phase = error.phase.map(|p| self.truncated_label(p));
        // This error's own message, not the group's first: that one was kept
        // under the sanitiser of its time, perhaps none.
        let message = self.truncated(error.message);
        let group = &self.groups[0];
        let held = HeldBack {
            kind: group.kind,
            label: &group.label,
            phase: phase.as_deref(),
            message: &message,
            frame: error.frame,
            count,
        };
        if sink.held_back(&held).is_err() {
            self.sink_failures += 1;
        }
    }

    /// A label or phase as telemetry keeps it: truncated.
    fn truncated_label(&self, label: &str) -> String {
        truncate_chars(label, LABEL_MAX_CHARS)
    }

    /// Until when every event is certain to be held back (see
    /// [`RateLimiter::silent_until`]).
    pub fn silent_until(&self) -> Option<f64> {
        self.limiter.silent_until()
    }

    /// The message as telemetry keeps it: truncated.
    fn truncated(&self, message: &str) -> String {
        truncate_chars(message, TELEMETRY_MAX_CHARS)
    }

    /// Finds (or adds) the group of an error and moves it first. `label` is the
    /// object label the library knows; without one, a label quoted in the message
    /// is used. The group is keyed by the truncated label; past
    /// [`MAX_GROUPS`], a new label goes to the kind's overflow group.
    fn hit_group(&mut self, kind: FaultKind, label: Option<&str>, message: &str) {
        let raw_label = label
            .map(str::to_string)
            .or_else(|| label_in_message(message))
            .unwrap_or_else(|| UNLABELLED.to_string());
        let label = self.truncated_label(&raw_label);
        let find = |groups: &[GroupSummary], label: &str| {
            groups
                .iter()
                .position(|g| g.kind == kind && g.label == label)
        };
        let known = find(&self.groups, &label);
        let label = if known.is_none() && self.groups.len() >= MAX_GROUPS {
            OTHER_LABELS.to_string()
        } else {
            label
        };
        let index = match known.or_else(|| find(&self.groups, &label)) {
            Some(index) => index,
            None => {
                // The message is copied only when it is kept or sent: under a
                // storm most errors are neither.
                let first_message = self.truncated(message);
                self.groups.push(GroupSummary {
                    kind,
                    label,
                    occurrences: 0,
                    first_message,
                    last_frame: None,
                });
                self.groups.len() - 1
            }
        };
        // Most recently hit first (a storm hits one group again and again).
        self.groups[..=index].rotate_right(1);
    }

    /// The groups seen so far, ordered by kind then label.
    pub fn groups(&self) -> Vec<GroupSummary> {
        let mut groups: Vec<GroupSummary> = Vec::with_capacity(self.groups.len());
        for group in &self.groups {
            let at = groups.partition_point(|g| (g.kind, &g.label) < (group.kind, &group.label));
            groups.insert(at, group.clone());
        }
        groups
    }

    /// Events sent.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Events held back by the limiter.
    pub fn held_back(&self) -> u64 {
        self.held_back
    }

    /// Sink calls that failed.
    pub fn sink_failures(&self) -> u64 {
        self.sink_failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct FailingSink;
    impl TelemetrySink for FailingSink {
        fn send(&self, _: &TelemetryEvent) -> Result<(), String> {
            Err("network down".into())
        }
    }

    #[test]
    fn groups_by_kind_and_label_not_message_text() {
        let mut t = Telemetry::default();
        let sink = MemorySink::default();
        t.record(
            Observed::new(
                FaultKind::Validation,
                "Chrome says [Buffer \"verts\"] is bad",
            )
            .at_frame(Some(1)),
            0.0,
            &sink,
        );
        t.record(
            Observed::new(
                FaultKind::Validation,
                "Invalid usage flags BufferUsages(0x3)",
            )
            .on(Some("verts"))
            .at_frame(Some(2)),
            1.0,
            &sink,
        );
        t.record(
            Observed::new(FaultKind::OutOfMemory, "[Buffer \"verts\"] no memory").at_frame(Some(3)),
            2.0,
            &sink,
        );
        t.record(
            Observed::new(FaultKind::Validation, "no label at all").at_frame(Some(4)),
            3.0,
            &sink,
        );
        let groups = t.groups();
        assert_eq!(groups.len(), 3);
        let verts = groups
            .iter()
            .find(|g| g.kind == FaultKind::Validation && g.label == "verts")
            .unwrap();
        assert_eq!(verts.occurrences, 2);
        assert_eq!(verts.last_frame, Some(2));
        assert!(groups.iter().any(|g| g.label == UNLABELLED));
        assert_eq!(sink.events()[1].occurrences, 2);
    }

    /// Keeps what `held_back` receives.
    #[derive(Default)]
    struct HeldSink(std::cell::RefCell<Vec<String>>);

    impl TelemetrySink for HeldSink {
        fn send(&self, _: &TelemetryEvent) -> Result<(), String> {
            Ok(())
        }
        fn held_back(&self, held: &HeldBack<'_>) -> Result<(), String> {
            self.0.borrow_mut().push(held.message.to_string());
            Ok(())
        }
    }

    #[test]
    fn a_held_back_error_carries_its_own_message_not_the_group_s_first() {
        let mut t = Telemetry::default();
        let sink = HeldSink::default();
        // The first of the group came before the application set a sanitiser.
        t.record(
            Observed::new(FaultKind::Validation, "bad token=hunter2").on(Some("buf")),
            0.0,
            &sink,
        );
        for _ in 0..20 {
            t.record(
                Observed::new(FaultKind::Validation, "bad token=***").on(Some("buf")),
                1.0,
                &sink,
            );
        }
        let held = sink.0.borrow();
        assert!(!held.is_empty(), "nothing held back");
        assert!(held.iter().all(|m| m == "bad token=***"), "{held:?}");
    }

    #[test]
    fn groups_are_capped_and_the_rest_counted_together() {
        let mut t = Telemetry::default();
        let sink = MemorySink::default();
        for i in 0..MAX_GROUPS + 50 {
            t.record(
                Observed::new(FaultKind::Validation, "bad").on(Some(&format!("buffer-{i}"))),
                i as f64 * 1000.0,
                &sink,
            );
        }
        t.record(
            Observed::new(FaultKind::Validation, "bad").on(Some("buffer-3")),
            0.0,
            &sink,
        );
        let groups = t.groups();
        assert_eq!(groups.len(), MAX_GROUPS + 1);
        let other = groups.iter().find(|g| g.label == OTHER_LABELS).unwrap();
        assert_eq!(other.occurrences, 50);
        let three = groups.iter().find(|g| g.label == "buffer-3").unwrap();
        assert_eq!(three.occurrences, 2, "a known group is still found");
        assert_eq!(
            groups.iter().map(|g| g.occurrences).sum::<u64>(),
            MAX_GROUPS as u64 + 51,
            "every error counted once"
        );
    }

    #[test]
    fn sanitised_messages_and_labels_are_truncated_before_they_are_kept() {
        use crate::sanitize::{strict, Sanitized};
        use crate::Fault;
        let mut t = Telemetry::default();
        let sink = MemorySink::default();
        let long = Fault::new(
            FaultKind::Internal,
            format!("[Texture \"secret\"] {}", "x".repeat(1000)),
        );
        let clean = Sanitized::new(&long, Some(&strict));
        let label = clean.fault().label_for_grouping();
        let record = |t: &mut Telemetry, label: Option<&str>, message: &str, at: f64| {
            let error = Observed::new(FaultKind::Internal, message).on(label);
            t.record(error, at, &sink)
        };
        record(&mut t, label.as_deref(), &clean.fault().message, 0.0);
        let event = &sink.events()[0];
        assert_eq!(event.message.chars().count(), 400);
        assert!(!event.message.contains("secret"));
        // A label past its length is cut before it keys a group.
        let long_label = "l".repeat(500);
        record(&mut t, Some(&long_label), "bad", 1.0);
        let event = &sink.events()[1];
        assert!(event.label.chars().count() < 500);
        assert!(t.groups().iter().all(|g| g.label.chars().count() < 500));
    }

    #[test]
    fn the_path_is_rate_limited_and_sink_failures_are_counted() {
        let mut t = Telemetry::default();
        let sink = MemorySink::default();
        for i in 0..100 {
            t.record(Observed::new(FaultKind::Validation, "e"), i as f64, &sink);
        }
        assert_eq!(sink.events().len(), 5);
        assert_eq!(t.held_back(), 95);
        assert_eq!(t.groups()[0].occurrences, 100);
        let mut t = Telemetry::default();
        assert!(!t.record(Observed::new(FaultKind::Validation, "e"), 0.0, &FailingSink));
        assert_eq!(t.sink_failures(), 1);
        assert_eq!(t.sent(), 0);
    }
}
