//! Telemetry to an HTTP collector from the desktop: OTLP/HTTP JSON (an
//! OpenTelemetry Collector's `/v1/logs`), batched, bounded and retried by
//! `webgpu-guard-core`'s [`Outbox`], sent by a thread of its own with
//! [`ureq`]: the render loop only adds to the outbox, never waits for the
//! network.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use webgpu_guard_core::telemetry::otlp::Resource;
use webgpu_guard_core::telemetry::outbox::{ExportConfig, ExportStats, Outbox, Response, Verdict};
use webgpu_guard_core::telemetry::{HeldBack, TelemetryEvent, TelemetrySink};

/// What the sender thread and every clone share.
struct Shared {
    url: String,
    headers: Vec<(String, String)>,
    state: Mutex<State>,
    /// Wakes the sender: errors added, a flush asked for, the sink closing.
    wake: Condvar,
    /// Wakes a flush: a request ended.
    settled: Condvar,
    clock: Clock,
}

struct State {
    outbox: Outbox,
    /// No clone is left: what waits is sent once, what fails is given up.
    closing: bool,
    /// Flushes waiting: what waits goes now, without waiting for the interval.
    flushing: u32,
    /// A request failed while they wait: they end, and the outbox's own
    /// schedule (retry and backoff) resumes.
    flush_failed: bool,
}

/// Milliseconds since the epoch, as the sink was made, running on with the
/// monotonic clock: a wall clock set back does not hold requests for as long.
struct Clock {
    epoch_ms: f64,
    started: Instant,
}

impl Clock {
    fn new() -> Self {
        Clock {
            epoch_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64() * 1000.0),
            started: Instant::now(),
        }
    }

    fn now_ms(&self) -> f64 {
        self.epoch_ms + self.started.elapsed().as_secs_f64() * 1000.0
    }
}

/// The last clone's drop closes the sender.
struct Closer(Arc<Shared>);

impl Drop for Closer {
    fn drop(&mut self) {
        close(&self.0);
    }
}

/// Sends telemetry to an HTTP collector. Cheap to clone: clones share one
/// outbox and one sender thread, which ends (sending what waits, once)
/// when the last clone goes. Hand one to
/// [`FaultSink::set_sink`](super::FaultSink::set_sink).
#[derive(Clone)]
pub struct HttpSink {
    shared: Arc<Shared>,
    _closer: Arc<Closer>,
}

impl std::fmt::Debug for HttpSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSink")
            .field("url", &self.shared.url)
            .field("stats", &self.stats())
            .finish()
    }
}

impl HttpSink {
    /// A sink posting to `url` with the default batching, for the application
    /// `service_name` (the resource's `service.name`). `Err` names the URL and
    /// why it cannot be sent to (not `http://` or `https://`).
    pub fn new(url: &str, service_name: &str) -> Result<Self, String> {
        HttpSink::with_config(url, service_name, ExportConfig::default(), Vec::new())
    }

    /// As [`Self::new`], batching and retrying as `config` says, each request
    /// carrying `headers` (an `authorization`, say).
    pub fn with_config(
        url: &str,
        service_name: &str,
        config: ExportConfig,
        headers: Vec<(String, String)>,
    ) -> Result<Self, String> {
        let scheme_ok = ["http://", "https://"]
            .iter()
            .any(|scheme| url.len() > scheme.len() && url.starts_with(scheme));
        if !scheme_ok {
            return Err(format!(
                "HttpSink: cannot send to \"{url}\": not an http:// or https:// URL"
            ));
        }
        let mut resource = Resource::new(service_name);
        resource.set("os.type", std::env::consts::OS);
        resource.set("host.arch", std::env::consts::ARCH);
        let shared = Arc::new(Shared {
            url: url.to_string(),
            headers,
            state: Mutex::new(State {
                outbox: Outbox::new(config, resource),
                closing: false,
                flushing: 0,
                flush_failed: false,
            }),
            wake: Condvar::new(),
            settled: Condvar::new(),
            clock: Clock::new(),
        });
        let sender = shared.clone();
        std::thread::Builder::new()
            .name("webgpu-guard telemetry".into())
            .spawn(move || send_until_closed(&sender))
            .map_err(|e| format!("HttpSink: no thread to send from: {e}"))?;
        Ok(HttpSink {
            _closer: Arc::new(Closer(shared.clone())),
            shared,
        })
    }

    /// The outbox's counters.
    pub fn stats(&self) -> ExportStats {
        lock(&self.shared).outbox.stats()
    }

    fn add(&self, add: impl FnOnce(&mut Outbox, f64)) {
        add(&mut lock(&self.shared).outbox, self.shared.clock.now_ms());
        self.shared.wake.notify_all();
    }

    /// Sends what waits now, without waiting for the interval, and waits at
    /// most `timeout` for it to be answered: whether nothing waits any more.
    /// For the end of a program (`main` returning ends the sender's thread
    /// wherever it is).
    pub fn flush(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut state = lock(&self.shared);
        state.flushing += 1;
        self.shared.wake.notify_all();
        let emptied = loop {
            let stats = state.outbox.stats();
            if stats.pending + stats.in_flight == 0 {
                break true;
            }
            let now = Instant::now();
            if now >= deadline || state.flush_failed {
                break false;
            }
            state = self
                .shared
                .settled
                .wait_timeout(state, deadline - now)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|poisoned| poisoned.into_inner().0);
        };
        state.flushing -= 1;
        if state.flushing == 0 {
            state.flush_failed = false;
        }
        emptied
    }
}

/// The state, even from a sender that panicked holding it (its counts stay
/// right: the outbox is changed by whole steps).
fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    shared
        .state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn close(shared: &Shared) {
    lock(shared).closing = true;
    shared.wake.notify_all();
}

impl TelemetrySink for HttpSink {
    fn send(&self, e: &TelemetryEvent) -> Result<(), String> {
        self.add(|outbox, now| outbox.add_event(e, now));
        Ok(())
    }

    fn held_back(&self, held: &HeldBack<'_>) -> Result<(), String> {
        self.add(|outbox, now| outbox.add_held_back(held, now));
        Ok(())
    }

    fn adapter(&self, adapter: &str) {
        lock(&self.shared)
            .outbox
            .resource_mut()
            .set("webgpu.adapter", adapter);
    }

    fn flush(&self, timeout_ms: u32) -> bool {
        HttpSink::flush(self, Duration::from_millis(u64::from(timeout_ms)))
    }

    /// Nothing is lost by the replacement: the sender sends what waits (at
    /// once, when no clone is left) and counts what it cannot as dropped.
    fn retire(&self) -> u64 {
        0
    }
}

/// The sender thread: a request whenever the outbox has one due, waiting on
/// the condition variable meanwhile; when closing, what waits goes at once,
/// and what still fails is given up (counted as dropped).
fn send_until_closed(shared: &Shared) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_millis(u64::from(
            lock(shared).outbox.config().timeout_ms,
        ))))
        .build()
        .into();
    let mut state = lock(shared);
    loop {
        let now = shared.clock.now_ms();
        let next = state.outbox.next_request_ms();
        let hurry = state.closing || (state.flushing > 0 && !state.flush_failed);
        let body = match next {
            None if state.closing => break,
            None => None,
            // Closing or flushing: no waiting for the interval or a backoff.
            Some(_) if hurry => state.outbox.take_request(f64::MAX),
            Some(at) if at <= now => state.outbox.take_request(now),
            Some(_) => None,
        };
        let Some(body) = body else {
            let wait = next.map_or(Duration::from_secs(3600), |at| {
                Duration::from_secs_f64(((at - now) / 1000.0).max(0.001))
            });
            state = shared
                .wake
                .wait_timeout(state, wait)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|poisoned| poisoned.into_inner().0);
            continue;
        };
        drop(state);
        let response = post(&agent, shared, body);
        state = lock(shared);
        let verdict = state.outbox.finish(response, shared.clock.now_ms());
        shared.settled.notify_all();
        if matches!(verdict, Some(Verdict::RetryIn(_))) && hurry {
            // One try when hurried: what fails is given up (closing) or left
            // to the outbox's schedule (the flushes end).
            if state.closing {
                break;
            }
            state.flush_failed = true;
        }
    }
    state.outbox.give_up();
    shared.settled.notify_all();
}

/// One request, as the outbox's [`Response`].
fn post(agent: &ureq::Agent, shared: &Shared, body: String) -> Response {
    let mut request = agent
        .post(&shared.url)
        .header("content-type", "application/json");
    for (name, value) in &shared.headers {
        request = request.header(name, value);
    }
    match request.send(body) {
        Ok(answer) => Response::Status {
            status: answer.status().as_u16(),
            retry_after: answer
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
        },
        Err(e) => Response::Failed(e.to_string()),
    }
}
