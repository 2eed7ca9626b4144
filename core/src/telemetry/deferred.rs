//! A telemetry sink that only queues: what a fault log gives its sink while
//! the log is borrowed waits here, and is handed to the application's sink
//! once the borrow ends, so that a sink runs with nothing of the log lent (one
//! that reports back into its fault sink is heard, not refused). Both fronts'
//! fault sinks hold one.

use std::cell::Cell;
use std::rc::Rc;

use super::{HeldBack, TelemetryEvent, TelemetrySink};
use crate::fault::FaultKind;
use crate::fault_log::FaultStats;
use crate::held::Held;

/// One call the log made on its sink, kept until it can be made on the
/// application's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// [`TelemetrySink::send`].
    Send(TelemetryEvent),
    /// [`TelemetrySink::held_back`], its borrowed fields owned.
    HeldBack {
        /// The error kind.
        kind: FaultKind,
        /// The group's label.
        label: String,
        /// The labelled phase, if any.
        phase: Option<String>,
        /// The last error's message.
        message: String,
        /// The frame of the last of them.
        frame: Option<u64>,
        /// How many errors.
        count: u64,
    },
    /// [`TelemetrySink::adapter`].
    Adapter(String),
}

impl Delivery {
    /// Whether this is an event sent (what a sink's absence leaves unsent).
    pub fn is_send(&self) -> bool {
        matches!(self, Delivery::Send(_))
    }

    /// Makes the call on `sink`: its answer (an adapter told is `Ok`).
    pub fn deliver_to(&self, sink: &dyn TelemetrySink) -> Result<(), String> {
        match self {
            Delivery::Send(event) => sink.send(event),
            Delivery::HeldBack {
                kind,
                label,
                phase,
                message,
                frame,
                count,
            } => sink.held_back(&HeldBack {
                kind: *kind,
                label,
                phase: phase.as_deref(),
                message,
                frame: *frame,
                count: *count,
            }),
            Delivery::Adapter(adapter) => {
                sink.adapter(adapter);
                Ok(())
            }
        }
    }
}

/// What became of the deliveries after the log queued them, counted the same
/// way by both fronts' fault sinks. The log counts an event sent when it
/// queues it; [`Self::correct`] takes off what no sink received or a sink
/// refused, and adds what a retired sink gave up.
#[derive(Debug, Default)]
pub struct DeliveryCounts {
    unsent: Cell<u64>,
    refused_sends: Cell<u64>,
    refused_held: Cell<u64>,
    dropped: Cell<u64>,
}

impl DeliveryCounts {
    /// `batch` found no sink: its events were not sent.
    pub fn no_sink(&self, batch: &[Delivery]) {
        let sends = batch.iter().filter(|d| d.is_send()).count() as u64;
        add(&self.unsent, sends);
    }

    /// The sink refused `delivery` (or panicked, or threw, making it).
    pub fn refused(&self, delivery: &Delivery) {
        match delivery {
            Delivery::Send(_) => add(&self.refused_sends, 1),
            Delivery::HeldBack { .. } => add(&self.refused_held, 1),
            // An adapter told is no event: never a refusal.
            Delivery::Adapter(_) => {}
        }
    }

    /// A sink that was replaced gave up `count` errors it held
    /// ([`TelemetrySink::retire`]).
    pub fn dropped(&self, count: u64) {
        add(&self.dropped, count);
    }

    /// `stats`, as the log counted them, corrected by what came after.
    pub fn correct(&self, stats: &mut FaultStats) {
        let refused = self.refused_sends.get();
        stats.telemetry_sent = stats
            .telemetry_sent
            .saturating_sub(refused + self.unsent.get());
        stats.sink_failures += refused + self.refused_held.get();
        stats.telemetry_dropped += self.dropped.get();
    }
}

fn add(counter: &Cell<u64>, n: u64) {
    counter.set(counter.get().saturating_add(n));
}

/// The sink a fault log holds: every call is queued in the shared list, which
/// the fault sink empties once the log's borrow ended. A call made while the
/// list itself is borrowed is refused (`Err`), never lost silently.
#[derive(Clone, Debug, Default)]
pub struct Deferring(pub Rc<Held<Vec<Delivery>>>);

impl Deferring {
    fn queue(&self, delivery: Delivery) -> Result<(), String> {
        self.0
            .with(|queue| queue.push(delivery))
            .ok_or_else(|| "the telemetry queue was busy".to_string())
    }
}

impl TelemetrySink for Deferring {
    fn send(&self, event: &TelemetryEvent) -> Result<(), String> {
        self.queue(Delivery::Send(event.clone()))
    }

    fn held_back(&self, held: &HeldBack<'_>) -> Result<(), String> {
        self.queue(Delivery::HeldBack {
            kind: held.kind,
            label: held.label.to_string(),
            phase: held.phase.map(str::to_string),
            message: held.message.to_string(),
            frame: held.frame,
            count: held.count,
        })
    }

    fn adapter(&self, adapter: &str) {
        let _ = self.queue(Delivery::Adapter(adapter.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    /// Writes each call down, in order.
    #[derive(Default)]
    struct Recorder(RefCell<Vec<String>>);

    impl TelemetrySink for Recorder {
        fn send(&self, e: &TelemetryEvent) -> Result<(), String> {
            let line = format!("send {} {} {:?}", e.label, e.message, e.phase);
            self.0.borrow_mut().push(line);
            Ok(())
        }

        fn held_back(&self, h: &HeldBack<'_>) -> Result<(), String> {
            let line = format!(
                "held {} {} {:?} {:?} {}",
                h.label, h.message, h.phase, h.frame, h.count
            );
            self.0.borrow_mut().push(line);
            Err("full".to_string())
        }

        fn adapter(&self, adapter: &str) {
            self.0.borrow_mut().push(format!("adapter {adapter}"));
        }
    }

    fn event(label: &str) -> TelemetryEvent {
        TelemetryEvent {
            kind: FaultKind::Validation,
            label: label.to_string(),
            phase: Some("frame".to_string()),
            message: format!("bad {label}"),
            frame: Some(3),
            occurrences: 1,
        }
    }

    #[test]
    fn what_was_queued_reaches_a_sink_in_order_whole_with_its_answers() {
        let deferring = Deferring::default();
        deferring.adapter("lavapipe");
        deferring.send(&event("a")).unwrap();
        deferring
            .held_back(&HeldBack {
                kind: FaultKind::OutOfMemory,
                label: "b",
                phase: None,
                message: "no room",
                frame: Some(9),
                count: 7,
            })
            .unwrap();
        let queued = deferring.0.take().unwrap();
        assert_eq!(queued.iter().filter(|d| d.is_send()).count(), 1);
        let sink = Recorder::default();
        let answers: Vec<bool> = queued.iter().map(|d| d.deliver_to(&sink).is_ok()).collect();
        assert_eq!(answers, [true, true, false]);
        assert_eq!(
            sink.0.into_inner(),
            [
                "adapter lavapipe",
                "send a bad a Some(\"frame\")",
                "held b no room None Some(9) 7",
            ]
        );
    }

    #[test]
    fn a_call_while_the_queue_is_borrowed_is_refused_not_lost() {
        let deferring = Deferring::default();
        let inner = deferring.clone();
        let answer = deferring
            .0
            .with(|_| inner.send(&event("a")))
            .expect("the queue was free");
        assert!(answer.is_err());
    }
}
