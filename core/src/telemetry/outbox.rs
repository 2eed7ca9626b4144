//! The HTTP sink's outbox: every error handed to it, grouped by (kind, label)
//! until the next request, sent at most once per interval with at most one
//! request in flight, retried with capped exponential backoff (or the server's
//! `Retry-After`) when it fails, and bounded in records and in bytes. Plain Rust
//! (time is passed in); the browser's transport is `web::HttpSink`.
//!
//! Invariant (checked by the tests after every step): every error counted is, at
//! any moment, in exactly one of delivered, beaconed, dropped, pending or in
//! flight: `counted == delivered + beaconed + dropped + pending + in_flight`.

use std::collections::VecDeque;

use super::otlp::{self, Resource};
pub use super::record::ExportRecord;
use super::retry_after;
use crate::fault::FaultKind;
use crate::sanitize::{redact_user_data, truncate_chars, TELEMETRY_MAX_CHARS};
use crate::telemetry::LABEL_MAX_CHARS;

/// How the outbox batches, bounds and retries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExportConfig {
    /// At most one request per interval, in milliseconds; also the first retry
    /// delay.
    pub interval_ms: u32,
    /// The most groups waiting; a new group past it drops the oldest (counted).
    pub max_records: usize,
    /// The largest request body, in bytes (a keepalive request or a beacon may
    /// carry at most 64 KiB, all of a page's together).
    pub max_request_bytes: usize,
    /// The longest retry delay, in milliseconds.
    pub retry_cap_ms: u32,
    /// The longest wait a `Retry-After` is honoured for, in milliseconds.
    pub max_retry_after_ms: u32,
    /// How long a request may take before it counts as failed, in milliseconds.
    pub timeout_ms: u32,
}

impl Default for ExportConfig {
    /// A request every 5 s at most; 512 groups; 60 KiB a request; retries
    /// doubling from 5 s to a minute; `Retry-After` honoured up to 10 minutes;
    /// 10 s to answer.
    fn default() -> Self {
        ExportConfig {
            interval_ms: 5_000,
            max_records: 512,
            max_request_bytes: 60 * 1024,
            retry_cap_ms: 60_000,
            max_retry_after_ms: 600_000,
            timeout_ms: 10_000,
        }
    }
}

/// How a request ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    /// The server answered `status`, with this `Retry-After` header if any.
    Status {
        /// The HTTP status.
        status: u16,
        /// The `Retry-After` header's value.
        retry_after: Option<String>,
    },
    /// No answer: the connection was refused or reset, the request timed out or
    /// the browser blocked it (CORS). The reason, for the status line.
    Failed(String),
}

/// What became of a request's errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Accepted (2xx).
    Delivered,
    /// Failed and kept: sent again after the delay, in milliseconds.
    RetryIn(u32),
    /// Refused for good (any status but 2xx, 429, 502, 503 and 504, the ones
    /// OTLP/HTTP retries): dropped, counted.
    Rejected,
}

/// The outbox's counters, in errors unless named otherwise.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Errors handed to the outbox.
    pub counted: u64,
    /// Errors in requests the server accepted.
    pub delivered: u64,
    /// Errors handed to page-hide requests (`keepalive`: the browser sends them).
    pub beaconed: u64,
    /// Errors dropped: the oldest groups past [`ExportConfig::max_records`], and
    /// those of requests refused for good.
    pub dropped: u64,
    /// Of those dropped, the ones whose request the server refused for good.
    pub rejected: u64,
    /// Errors waiting for the next request.
    pub pending: u64,
    /// Errors in the request in flight.
    pub in_flight: u64,
    /// Requests made.
    pub requests: u64,
    /// Requests that failed (no answer, 429, 502, 503, 504) and were kept for a retry.
    pub failed_requests: u64,
    /// Beacons the browser took.
    pub beacons: u64,
    /// Retries that waited for the server's `Retry-After`.
    pub retry_after_honoured: u64,
    /// The last HTTP status answered, if any.
    pub last_status: Option<u16>,
    /// Why the last failed request failed.
    pub last_failure: Option<String>,
}

/// A body handed to a page-hide request (`keepalive`), with what it carries (see
/// [`Outbox::take_beacon`]).
#[derive(Debug)]
pub struct Beacon {
    /// The request body.
    pub body: String,
    records: Vec<ExportRecord>,
}

/// The errors waiting, the one request in flight, and when the next may go.
#[derive(Debug)]
pub struct Outbox {
    config: ExportConfig,
    resource: Resource,
    /// Oldest first.
    pending: VecDeque<ExportRecord>,
    in_flight: Option<Vec<ExportRecord>>,
    /// The earliest time of the next request (ms since the epoch).
    next_ms: f64,
    failures_in_a_row: u32,
    stats: ExportStats,
    /// The last label and phase redacted, raw and clean: a storm hits the same
    /// group again and again, and is not redacted again each time.
    last_redacted: Option<Redacted>,
    /// The last message redacted, raw and clean (the same, for messages).
    last_message: Option<(String, String)>,
}

#[derive(Debug)]
struct Redacted {
    raw: (String, Option<String>),
    clean: (String, Option<String>),
}

impl Outbox {
    /// An empty outbox sending records of `resource`.
    pub fn new(config: ExportConfig, resource: Resource) -> Self {
        Outbox {
            config,
            resource,
            pending: VecDeque::new(),
            in_flight: None,
            next_ms: 0.0,
            failures_in_a_row: 0,
            stats: ExportStats::default(),
            last_redacted: None,
            last_message: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ExportConfig {
        &self.config
    }

    /// The resource the records belong to, to change (the adapter is known only
    /// once a device is up).
    pub fn resource_mut(&mut self) -> &mut Resource {
        &mut self.resource
    }

    /// The counters.
    pub fn stats(&self) -> ExportStats {
        let mut stats = self.stats.clone();
        stats.pending = self.pending.iter().map(|r| r.count).sum();
        stats.in_flight = self
            .in_flight
            .as_ref()
            .map_or(0, |records| records.iter().map(|r| r.count).sum());
        stats
    }

    /// Gives up every error that waits and the request in flight (the sink is
    /// going away): counted as dropped. Returns how many.
    pub fn give_up(&mut self) -> u64 {
        let waiting: u64 = self.pending.drain(..).map(|r| r.count).sum();
        let in_flight: u64 = self
            .in_flight
            .take()
            .map_or(0, |records| records.iter().map(|r| r.count).sum());
        self.stats.dropped += waiting + in_flight;
        waiting + in_flight
    }

    /// Adds `count` errors of the group (`kind`, `label`) at `now_ms`. Labels,
    /// phases and messages are redacted of whatever looks like user data
    /// (addresses, paths and URLs, long numbers) whatever the application's
    /// sanitiser left: they leave the page.
    #[allow(clippy::too_many_arguments)]
    pub fn add(
        &mut self,
        kind: FaultKind,
        label: &str,
        phase: Option<&str>,
        message: &str,
        frame: Option<u64>,
        count: u64,
        now_ms: f64,
    ) {
        if count == 0 {
            return;
        }
        self.stats.counted += count;
        let message = redacted_message(&mut self.last_message, message);
        let clean = redacted(&mut self.last_redacted, label, phase);
        // A storm hits the group added last, again and again. The record
        // carries the last message: an older one came under the sanitiser
        // of its time, perhaps none.
        if let Some(record) = self
            .pending
            .iter_mut()
            .rev()
            .find(|r| r.kind == kind && r.label == clean.0)
        {
            record.count += count;
            record.last_frame = frame.or(record.last_frame);
            if clean.1.is_some() && record.phase != clean.1 {
                record.phase.clone_from(&clean.1);
            }
            if record.message != *message {
                record.message.clone_from(message);
            }
            return;
        }
        let (label, phase) = clean.clone();
        let message = message.clone();
        self.pending.push_back(ExportRecord {
            kind,
            label,
            phase,
            message,
            count,
            first_frame: frame,
            last_frame: frame,
            first_ms: now_ms,
        });
        self.drop_past_the_bound();
    }

    /// Adds one event a sink received ([`Self::add`] with its fields).
    pub fn add_event(&mut self, event: &super::TelemetryEvent, now_ms: f64) {
        self.add(
            event.kind,
            &event.label,
            event.phase.as_deref(),
            &event.message,
            event.frame,
            1,
            now_ms,
        );
    }

    /// Adds the errors a sink was told were held back ([`Self::add`] with
    /// their fields and count).
    pub fn add_held_back(&mut self, held: &super::HeldBack<'_>, now_ms: f64) {
        self.add(
            held.kind,
            held.label,
            held.phase,
            held.message,
            held.frame,
            held.count,
            now_ms,
        );
    }

    fn drop_past_the_bound(&mut self) {
        while self.pending.len() > self.config.max_records.max(1) {
            if let Some(oldest) = self.pending.pop_front() {
                self.stats.dropped += oldest.count;
            }
        }
    }

    /// When the next request may go (ms since the epoch): `None` while one is in
    /// flight or nothing waits.
    pub fn next_request_ms(&self) -> Option<f64> {
        if self.in_flight.is_some() || self.pending.is_empty() {
            None
        } else {
            Some(self.next_ms)
        }
    }

    /// The body of the next request, if one is due at `now_ms`: the oldest
    /// groups that fit in [`ExportConfig::max_request_bytes`] (one at least). It
    /// is in flight until [`Self::finish`].
    pub fn take_request(&mut self, now_ms: f64) -> Option<String> {
        if self.next_request_ms()? > now_ms {
            return None;
        }
        let (body, records) = self.take_body(now_ms)?;
        self.in_flight = Some(records);
        self.stats.requests += 1;
        self.next_ms = now_ms + f64::from(self.config.interval_ms);
        Some(body)
    }

    /// The oldest groups that fit in one body, taken out of `pending`.
    fn take_body(&mut self, now_ms: f64) -> Option<(String, Vec<ExportRecord>)> {
        self.take_body_within(now_ms, self.config.max_request_bytes)
    }

    /// The oldest groups that fit in `max_bytes` (one at least), taken out of
    /// `pending`.
    fn take_body_within(
        &mut self,
        now_ms: f64,
        max_bytes: usize,
    ) -> Option<(String, Vec<ExportRecord>)> {
        let max_bytes = max_bytes.min(self.config.max_request_bytes);
        let mut size = otlp::envelope_len(&self.resource);
        let mut encoded = Vec::new();
        let mut records = Vec::new();
        while let Some(record) = self.pending.front() {
            let json = otlp::record_json(record, now_ms);
            let grown = size + json.len() + usize::from(!encoded.is_empty());
            if !encoded.is_empty() && grown > max_bytes {
                break;
            }
            size = grown;
            encoded.push(json);
            records.extend(self.pending.pop_front());
        }
        if records.is_empty() {
            return None;
        }
        let body = otlp::request_json(&self.resource, encoded.iter().map(String::as_str));
        Some((body, records))
    }

    /// Ends the request in flight with `response` at `now_ms`. Its errors are
    /// delivered, kept for a retry (no answer, 429, 502, 503, 504; after the server's
    /// `Retry-After` when it gives one, else after a delay doubling from the
    /// interval to the cap), or dropped (any other status). `None` when no
    /// request was in flight.
    pub fn finish(&mut self, response: Response, now_ms: f64) -> Option<Verdict> {
        let records = self.in_flight.take()?;
        let count: u64 = records.iter().map(|r| r.count).sum();
        let retry_after = match &response {
            Response::Status {
                status,
                retry_after,
            } => {
                self.stats.last_status = Some(*status);
                if (200..300).contains(status) {
                    self.stats.delivered += count;
                    self.failures_in_a_row = 0;
                    return Some(Verdict::Delivered);
                }
                // OTLP/HTTP retries 429, 502, 503 and 504 only. Any other
                // status (500, 501, a 4xx, a redirect the browser did not
                // follow) will not pass by itself: dropped, counted.
                if !matches!(status, 429 | 502 | 503 | 504) {
                    self.stats.last_failure =
                        Some(format!("the server refused the request ({status})"));
                    self.stats.dropped += count;
                    self.stats.rejected += count;
                    return Some(Verdict::Rejected);
                }
                self.stats.last_failure = Some(format!("the server answered {status}"));
                retry_after.as_deref()
            }
            Response::Failed(reason) => {
                self.stats.last_failure = Some(reason.clone());
                None
            }
        };
        self.stats.failed_requests += 1;
        self.failures_in_a_row = self.failures_in_a_row.saturating_add(1);
        let asked = retry_after.and_then(|value| retry_after::delay_ms(value, now_ms));
        let delay = match asked {
            Some(asked) => {
                self.stats.retry_after_honoured += 1;
                asked.min(u64::from(self.config.max_retry_after_ms)) as u32
            }
            None => self.backoff_ms(),
        }
        .max(self.config.interval_ms);
        self.next_ms = now_ms + f64::from(delay);
        self.put_back(records);
        Some(Verdict::RetryIn(delay))
    }

    /// The delay after the current run of failures: the interval doubled once
    /// per failure after the first, up to the cap.
    fn backoff_ms(&self) -> u32 {
        let doublings = self.failures_in_a_row.saturating_sub(1).min(31);
        self.config
            .interval_ms
            .saturating_mul(1u32 << doublings)
            .min(self.config.retry_cap_ms.max(self.config.interval_ms))
    }

    /// Puts `records` (older than anything pending) back in front; a group that
    /// came again meanwhile is merged into them.
    fn put_back(&mut self, records: Vec<ExportRecord>) {
        for mut record in records.into_iter().rev() {
            if let Some(at) = self
                .pending
                .iter()
                .position(|r| r.kind == record.kind && r.label == record.label)
            {
                if let Some(newer) = self.pending.remove(at) {
                    record.count += newer.count;
                    record.last_frame = newer.last_frame.or(record.last_frame);
                    record.phase = newer.phase.or(record.phase);
                    record.message = newer.message;
                }
            }
            self.pending.push_front(record);
        }
        self.drop_past_the_bound();
    }

    /// What waits, as one beacon body (the oldest groups that fit), for a page
    /// being hidden or closed; `None` if nothing waits. Hand it back with
    /// [`Self::beacon_sent`] or [`Self::beacon_refused`].
    pub fn take_beacon(&mut self, now_ms: f64, max_bytes: usize) -> Option<Beacon> {
        let (body, records) = self.take_body_within(now_ms, max_bytes)?;
        Some(Beacon { body, records })
    }

    /// Whether the server asked to wait (a failed request's delay or its
    /// `Retry-After` still runs): a page being hidden then sends nothing.
    pub fn backing_off(&self, now_ms: f64) -> bool {
        self.failures_in_a_row > 0 && self.next_ms > now_ms
    }

    /// The browser took `beacon` (it sends it, even after the page is gone).
    pub fn beacon_sent(&mut self, beacon: Beacon) {
        self.stats.beacons += 1;
        self.stats.beaconed += beacon.records.iter().map(|r| r.count).sum::<u64>();
    }

    /// The browser refused `beacon` (over its quota): its errors wait again.
    pub fn beacon_refused(&mut self, beacon: Beacon) {
        self.put_back(beacon.records);
    }
}

/// `label` and `phase` with whatever looks like user data redacted, and
/// truncated; `last` keeps the last ones, so that a storm on one group is not
/// redacted again for each error.
fn redacted<'a>(
    last: &'a mut Option<Redacted>,
    label: &str,
    phase: Option<&str>,
) -> &'a (String, Option<String>) {
    let known = last
        .as_ref()
        .is_some_and(|l| l.raw.0 == label && l.raw.1.as_deref() == phase);
    if !known {
        *last = None;
    }
    &last
        .get_or_insert_with(|| Redacted {
            raw: (label.to_string(), phase.map(str::to_string)),
            clean: (
                truncate_chars(&redact_user_data(label), LABEL_MAX_CHARS),
                phase.map(|p| truncate_chars(&redact_user_data(p), LABEL_MAX_CHARS)),
            ),
        })
        .clean
}

/// `message` redacted and truncated, from `last` when it is the message
/// redacted last.
fn redacted_message<'a>(last: &'a mut Option<(String, String)>, message: &str) -> &'a String {
    if last.as_ref().is_none_or(|(raw, _)| raw != message) {
        *last = None;
    }
    &last
        .get_or_insert_with(|| {
            let clean = truncate_chars(&redact_user_data(message), TELEMETRY_MAX_CHARS);
            (message.to_string(), clean)
        })
        .1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outbox(config: ExportConfig) -> Outbox {
        Outbox::new(config, Resource::new("test"))
    }

    fn add(outbox: &mut Outbox, label: &str, count: u64, now: f64) {
        outbox.add(
            FaultKind::Validation,
            label,
            None,
            "bad",
            Some(1),
            count,
            now,
        );
    }

    fn balanced(outbox: &Outbox) {
        let s = outbox.stats();
        assert_eq!(
            s.counted,
            s.delivered + s.beaconed + s.dropped + s.pending + s.in_flight,
            "{s:?}"
        );
    }

    fn ok() -> Response {
        Response::Status {
            status: 200,
            retry_after: None,
        }
    }

    /// A group's record carries its last message: one that came before the
    /// application set its sanitiser (what the sink received then) does not
    /// leave with the errors after it.
    #[test]
    fn a_record_carries_its_group_s_last_message() {
        let mut out = outbox(ExportConfig::default());
        let mut add_message = |message: &str| {
            out.add(FaultKind::Validation, "avatar", None, message, None, 1, 0.0);
        };
        add_message("upload of Alice Smith's avatar failed");
        for _ in 0..100 {
            add_message("upload of [name]'s avatar failed");
        }
        let body = out.take_request(0.0).expect("a request");
        assert!(!body.contains("Alice"), "{body}");
        assert!(body.contains("[name]"), "{body}");
    }

    #[test]
    fn one_request_per_interval_whatever_the_storm() {
        let mut out = outbox(ExportConfig::default());
        let mut requests = 0;
        // 1000 errors a second for 10 s, in 10 ms steps, the server answering at once.
        for step in 0..1000 {
            let now = 1_000_000.0 + f64::from(step) * 10.0;
            add(&mut out, "storm", 10, now);
            if out.take_request(now).is_some() {
                requests += 1;
                assert_eq!(out.finish(ok(), now), Some(Verdict::Delivered));
            }
            balanced(&out);
        }
        assert_eq!(requests, 2, "at 0 s and at 5 s");
        let s = out.stats();
        assert_eq!(s.counted, 10_000);
        assert_eq!(s.delivered + s.pending, 10_000);
    }

    #[test]
    fn a_failing_server_backs_off_doubling_to_the_cap_and_gets_everything_after() {
        let config = ExportConfig {
            interval_ms: 1_000,
            retry_cap_ms: 8_000,
            ..ExportConfig::default()
        };
        let mut out = outbox(config);
        let mut now = 0.0;
        add(&mut out, "a", 3, now);
        let mut delays = Vec::new();
        for _ in 0..6 {
            now = out.next_request_ms().unwrap();
            assert!(out.take_request(now).is_some());
            assert_eq!(out.take_request(now), None, "one request in flight at most");
            add(&mut out, "a", 1, now);
            add(&mut out, "b", 1, now);
            let verdict = out.finish(Response::Failed("refused".into()), now);
            let Some(Verdict::RetryIn(delay)) = verdict else {
                panic!("{verdict:?}")
            };
            delays.push(delay);
            balanced(&out);
        }
        assert_eq!(delays, vec![1_000, 2_000, 4_000, 8_000, 8_000, 8_000]);
        assert_eq!(out.pending.len(), 2, "groups merged, not duplicated");
        now = out.next_request_ms().unwrap();
        let body = out.take_request(now).unwrap();
        assert!(body.contains("\"intValue\":\"9\""), "3 + 6 of a: {body}");
        out.finish(ok(), now);
        let s = out.stats();
        assert_eq!((s.delivered, s.failed_requests, s.pending), (15, 6, 0));
        // After a success the schedule starts again from the interval.
        add(&mut out, "a", 1, now);
        let next = out.next_request_ms().unwrap();
        out.take_request(next).unwrap();
        assert_eq!(
            out.finish(
                Response::Status {
                    status: 503,
                    retry_after: None
                },
                next
            ),
            Some(Verdict::RetryIn(1_000))
        );
    }

    #[test]
    fn retry_after_is_honoured_up_to_its_cap_and_never_below_the_interval() {
        let mut out = outbox(ExportConfig {
            interval_ms: 1_000,
            max_retry_after_ms: 30_000,
            ..ExportConfig::default()
        });
        let mut verdict = |retry_after: &str, status: u16| {
            add(&mut out, "a", 1, 0.0);
            let now = out.next_request_ms().unwrap();
            out.take_request(now).unwrap();
            let response = Response::Status {
                status,
                retry_after: Some(retry_after.into()),
            };
            out.finish(response, now)
        };
        assert_eq!(verdict("7", 429), Some(Verdict::RetryIn(7_000)));
        assert_eq!(verdict("0", 429), Some(Verdict::RetryIn(1_000)));
        assert_eq!(verdict("3600", 503), Some(Verdict::RetryIn(30_000)));
        assert_eq!(
            verdict("later", 502),
            Some(Verdict::RetryIn(8_000)),
            "backoff"
        );
        // OTLP/HTTP retries 429, 502, 503 and 504 only: a 500 and a 408 will
        // not pass by themselves.
        assert_eq!(verdict("1", 500), Some(Verdict::Rejected));
        assert_eq!(verdict("1", 408), Some(Verdict::Rejected));
        assert_eq!(verdict("1", 504), Some(Verdict::RetryIn(1_000)));
        assert_eq!(out.stats().retry_after_honoured, 4);
        balanced(&out);
    }

    #[test]
    fn errors_given_up_are_counted_as_dropped() {
        let mut out = outbox(ExportConfig::default());
        add(&mut out, "a", 5, 0.0);
        out.take_request(0.0).unwrap();
        add(&mut out, "b", 2, 0.0);
        assert_eq!(out.give_up(), 7);
        let s = out.stats();
        assert_eq!((s.dropped, s.pending, s.in_flight), (7, 0, 0));
        balanced(&out);
    }

    #[test]
    fn a_request_refused_for_good_is_dropped_and_counted() {
        let mut out = outbox(ExportConfig::default());
        add(&mut out, "a", 5, 0.0);
        out.take_request(0.0).unwrap();
        let refused = Response::Status {
            status: 400,
            retry_after: None,
        };
        assert_eq!(out.finish(refused, 0.0), Some(Verdict::Rejected));
        let s = out.stats();
        assert_eq!((s.dropped, s.rejected, s.pending), (5, 5, 0));
        assert_eq!(s.last_status, Some(400));
        assert_eq!(out.finish(ok(), 0.0), None, "nothing in flight");
        balanced(&out);
    }

    #[test]
    fn the_queue_drops_the_oldest_groups_and_counts_them() {
        let mut out = outbox(ExportConfig {
            max_records: 3,
            ..ExportConfig::default()
        });
        for (i, label) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            add(&mut out, label, i as u64 + 1, i as f64);
        }
        let labels: Vec<&str> = out.pending.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["c", "d", "e"]);
        assert_eq!(out.stats().dropped, 1 + 2);
        balanced(&out);
    }

    #[test]
    fn requests_are_bounded_in_bytes_and_the_rest_waits() {
        let mut out = outbox(ExportConfig {
            max_request_bytes: 4_000,
            ..ExportConfig::default()
        });
        for i in 0..40 {
            out.add(
                FaultKind::Validation,
                &format!("buffer-{i}"),
                None,
                &"x".repeat(300),
                None,
                1,
                0.0,
            );
        }
        let mut now = 0.0;
        let mut bodies = 0;
        while let Some(at) = out.next_request_ms() {
            now = f64::max(now, at);
            let body = out.take_request(now).unwrap();
            assert!(body.len() <= 4_000, "{}", body.len());
            out.finish(ok(), now);
            bodies += 1;
        }
        assert!(bodies >= 4, "{bodies}");
        assert_eq!(out.stats().delivered, 40);
        balanced(&out);
    }

    #[test]
    fn a_beacon_takes_what_waits_and_a_refused_one_puts_it_back() {
        let mut out = outbox(ExportConfig::default());
        add(&mut out, "a", 2, 0.0);
        out.take_request(0.0).unwrap();
        add(&mut out, "b", 3, 1.0);
        let beacon = out.take_beacon(2.0, usize::MAX).unwrap();
        assert!(beacon.body.contains("\"b\"") && !beacon.body.contains("\"a\""));
        out.beacon_refused(beacon);
        balanced(&out);
        let beacon = out.take_beacon(2.0, usize::MAX).unwrap();
        out.beacon_sent(beacon);
        assert!(out.take_beacon(3.0, usize::MAX).is_none());
        out.finish(ok(), 4.0);
        let s = out.stats();
        assert_eq!(
            (s.delivered, s.beaconed, s.beacons, s.pending),
            (2, 3, 1, 0)
        );
        balanced(&out);
    }

    #[test]
    fn a_beacon_fits_its_budget_and_waits_while_the_server_asked_to() {
        let mut out = outbox(ExportConfig {
            interval_ms: 1_000,
            ..ExportConfig::default()
        });
        for i in 0..20 {
            out.add(
                FaultKind::Validation,
                &format!("b{i}"),
                None,
                &"x".repeat(200),
                None,
                1,
                0.0,
            );
        }
        let small = out.take_beacon(0.0, 1_500).unwrap();
        assert!(small.body.len() <= 1_500, "{}", small.body.len());
        assert!(small.records.len() < 20);
        out.beacon_refused(small);
        balanced(&out);
        assert!(!out.backing_off(0.0));
        out.take_request(0.0).unwrap();
        let asked = Response::Status {
            status: 429,
            retry_after: Some("30".into()),
        };
        out.finish(asked, 0.0);
        assert!(out.backing_off(29_000.0));
        assert!(!out.backing_off(30_000.0));
    }

    #[test]
    fn what_looks_like_user_data_never_leaves_the_page() {
        let mut out = outbox(ExportConfig::default());
        out.add(
            FaultKind::Validation,
            "avatar https://cdn.example.com/u?token=abc",
            Some("upload ana@example.com"),
            "[Texture \"avatar\"] from https://cdn.example.com/u?token=abc for ana@example.com (id 12345)",
            None,
            1,
            0.0,
        );
        // The same label again, in another phase: redacted as well.
        out.add(
            FaultKind::Validation,
            "avatar https://cdn.example.com/u?token=abc",
            Some("resize for bob@example.com"),
            "again",
            None,
            1,
            0.0,
        );
        let body = out.take_request(0.0).unwrap();
        assert!(body.contains("resize for …"), "{body}");
        for secret in ["token", "abc", "ana@", "bob@", "example.com", "12345"] {
            assert!(!body.contains(secret), "{secret} in {body}");
        }
        assert!(body.contains("avatar …"), "{body}");
    }

    #[test]
    fn the_counts_balance_under_any_order_of_events() {
        // A seeded walk over every operation, the invariant checked after each.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut out = outbox(ExportConfig {
            max_records: 4,
            max_request_bytes: 1_500,
            interval_ms: 10,
            ..ExportConfig::default()
        });
        let mut now = 0.0;
        let mut beacon = None;
        for _ in 0..20_000 {
            now += (next() % 7) as f64;
            match next() % 9 {
                0..=3 => add(&mut out, &format!("l{}", next() % 6), next() % 5, now),
                4 => {
                    out.take_request(now);
                }
                5 => {
                    let status =
                        [200, 204, 400, 408, 413, 429, 500, 501, 503][(next() % 9) as usize];
                    let retry_after = (next() % 2 == 0).then(|| (next() % 3).to_string());
                    out.finish(
                        Response::Status {
                            status,
                            retry_after,
                        },
                        now,
                    );
                }
                6 => {
                    out.finish(Response::Failed("reset".into()), now);
                }
                7 => beacon = beacon.or_else(|| out.take_beacon(now, 2_000)),
                _ => {
                    if let Some(b) = beacon.take() {
                        if next() % 2 == 0 {
                            out.beacon_sent(b);
                        } else {
                            out.beacon_refused(b);
                        }
                    }
                }
            }
            let s = out.stats();
            let in_beacon: u64 = beacon
                .as_ref()
                .map_or(0, |b: &Beacon| b.records.iter().map(|r| r.count).sum());
            assert_eq!(
                s.counted,
                s.delivered + s.beaconed + s.dropped + s.pending + s.in_flight + in_beacon,
                "{s:?}"
            );
            assert!(out.pending.len() <= 4);
        }
    }
}
