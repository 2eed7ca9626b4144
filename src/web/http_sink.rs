//! A telemetry sink that sends to an HTTP collector: OTLP/HTTP JSON logs posted
//! to `/v1/logs` (see [`crate::telemetry::otlp`]), batched and retried by the
//! [`Outbox`], flushed with `keepalive` requests when the page is hidden or
//! unloads (page-hide requests; "beacons" in the counters).
//!
//! Delivery is at least once: a request the collector answers after the
//! request's timeout is sent again, so a collector may see an error twice.
//! No request carries the user's cookies (`credentials: "omit"`, the page-hide
//! requests too).
//!
//! Nothing it does blocks a frame or throws through WebAssembly: an error is
//! only added to the outbox (no request is made from the fault sink's call), requests
//! go from a timer, one at a time, through a JavaScript half that never throws
//! and always settles (`http.js`), and memory is bounded by the outbox.

use std::cell::Cell;
use std::rc::{Rc, Weak};

use gloo_timers::callback::Timeout;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::held::Held;
use crate::str_search::contains;
use crate::telemetry::otlp::Resource;
use crate::telemetry::outbox::{ExportConfig, ExportStats, Outbox, Response};
use crate::telemetry::{HeldBack, TelemetryEvent, TelemetrySink};
use crate::web::js::{epoch_ms, now_ms};
use crate::web::listener::EventListener;

#[wasm_bindgen(module = "/src/web/http.js")]
extern "C" {
    fn guard_post(
        url: &str,
        body: &str,
        headers: &js_sys::Array,
        keepalive: bool,
        timeout_ms: u32,
    ) -> js_sys::Promise;
    fn guard_beacon(url: &str, body: &str, headers: &js_sys::Array) -> bool;
    fn guard_check_url(url: &str) -> String;
}

/// The largest body a `keepalive` request may carry (all of a page's together).
const KEEPALIVE_QUOTA: usize = 64 * 1024;

/// Sends telemetry to an HTTP collector (an OpenTelemetry Collector's
/// `/v1/logs`, or anything that takes OTLP/HTTP JSON). Cheap to clone: clones
/// share one outbox. Hand one to [`crate::web::FaultSink::set_sink`].
///
/// The collector must answer the page's CORS preflight: allow its origin (no
/// request carries credentials, so `"*"` serves), the `content-type` header,
/// every header given to [`HttpSink::with_header`] and `POST`; expose
/// `Retry-After` for it to be honoured. For an OpenTelemetry Collector, in its
/// configuration:
///
/// ```yaml
/// receivers:
///   otlp:
///     protocols:
///       http:
///         endpoint: 0.0.0.0:4318
///         cors:
///           # The page's origin (or "*": no request carries credentials).
///           allowed_origins: ["https://app.example.com"]
///           # Every header given to `with_header` (content-type is allowed already).
///           allowed_headers: ["authorization"]
///           max_age: 7200
/// ```
///
/// Where the collector's CORS options cannot expose `Retry-After`, the sink
/// backs off on its own schedule; a proxy in front that adds
/// `Access-Control-Expose-Headers: Retry-After` makes it honour the server's.
#[derive(Clone)]
pub struct HttpSink {
    inner: Rc<Exporter>,
}

/// What every clone of an [`HttpSink`] shares: where it sends, the outbox, its
/// timer and the page-hide listeners.
struct Exporter {
    url: String,
    /// Extra request headers, as name, value, name, value… (the page-hide
    /// requests carry them too)
    headers: js_sys::Array,
    outbox: Held<Outbox>,
    timer: Held<Option<Timeout>>,
    listeners: Held<Vec<EventListener>>,
    /// The body of the keepalive request in flight, in bytes (0 if none).
    in_flight_bytes: Cell<usize>,
    /// Time spent in the sink's own code taking errors, in ms.
    taking_ms: Cell<f64>,
    /// Time spent in the sink's own code encoding and sending, in ms.
    sending_ms: Cell<f64>,
}

impl Exporter {
    /// Runs `work`, adding the time it took to `total`.
    fn timed<T>(total: &Cell<f64>, work: impl FnOnce() -> T) -> T {
        let started = now_ms();
        let out = work();
        total.set(total.get() + (now_ms() - started));
        out
    }

    /// Runs `work` (encoding or sending), timed.
    fn sending<T>(&self, work: impl FnOnce() -> T) -> T {
        Exporter::timed(&self.sending_ms, work)
    }
}

impl std::fmt::Debug for HttpSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSink")
            .field("url", &self.inner.url)
            .field("stats", &self.stats())
            .finish()
    }
}

impl HttpSink {
    /// A sink posting to `url` with the default batching, for the application
    /// `service_name` (the resource's `service.name`). `Err` names the URL and
    /// why it cannot be sent to (not a URL, not `http:` or `https:`): a mistake
    /// of the build, never retried.
    pub fn new(url: &str, service_name: &str) -> Result<Self, String> {
        HttpSink::with_config(url, service_name, ExportConfig::default())
    }

    /// As [`Self::new`], batching and retrying as `config` says.
    pub fn with_config(
        url: &str,
        service_name: &str,
        config: ExportConfig,
    ) -> Result<Self, String> {
        let problem = guard_check_url(url);
        if !problem.is_empty() {
            return Err(format!("HttpSink: cannot send to \"{url}\": {problem}"));
        }
        let mut resource = Resource::new(service_name);
        describe_the_browser(&mut resource);
        let inner = Rc::new(Exporter {
            url: url.to_string(),
            headers: js_sys::Array::new(),
            outbox: Held::new(Outbox::new(config, resource)),
            timer: Held::default(),
            listeners: Held::default(),
            in_flight_bytes: Cell::new(0),
            taking_ms: Cell::new(0.0),
            sending_ms: Cell::new(0.0),
        });
        flush_when_the_page_goes(&inner);
        Ok(HttpSink { inner })
    }

    /// Adds a header to every request, the page-hide ones included (an API key).
    pub fn with_header(self, name: &str, value: &str) -> Self {
        self.inner.headers.push(&name.into());
        self.inner.headers.push(&value.into());
        self
    }

    /// The outbox's counters: what was counted, delivered, beaconed, dropped,
    /// what waits and what is in flight.
    pub fn stats(&self) -> ExportStats {
        self.inner
            .outbox
            .with(|outbox| outbox.stats())
            .unwrap_or_default()
    }

    /// The time spent in the sink's own code so far, in milliseconds: taking
    /// errors (on the fault sink's path), and encoding and sending requests and beacons
    /// (from its timer and the page's events). Its cost, apart from the
    /// browser's network work.
    pub fn busy_ms(&self) -> (f64, f64) {
        (self.inner.taking_ms.get(), self.inner.sending_ms.get())
    }

    /// Names the adapter in the resource of the requests to come.
    pub fn set_adapter(&self, adapter: &str) {
        self.inner
            .outbox
            .with(|outbox| outbox.resource_mut().set("webgpu.adapter", adapter));
    }

    /// Sends what waits now in page-hide requests (`keepalive`, what the sink
    /// does itself when the page is hidden or unloads).
    pub fn flush_with_beacon(&self) {
        self.inner.sending(|| beacon_everything(&self.inner, false));
    }

    fn add(&self, record: impl FnOnce(&mut Outbox, f64)) -> Result<(), String> {
        Exporter::timed(&self.inner.taking_ms, || {
            if self
                .inner
                .outbox
                .with(|outbox| record(outbox, epoch_ms()))
                .is_none()
            {
                return Err("the HTTP sink was busy".into());
            }
            arm(&self.inner);
            Ok(())
        })
    }
}

impl TelemetrySink for HttpSink {
    fn send(&self, e: &TelemetryEvent) -> Result<(), String> {
        self.add(|outbox, now| outbox.add_event(e, now))
    }

    fn held_back(&self, held: &HeldBack<'_>) -> Result<(), String> {
        self.add(|outbox, now| outbox.add_held_back(held, now))
    }

    fn adapter(&self, adapter: &str) {
        self.set_adapter(adapter);
    }

    /// Sends what waits now in page-hide requests; when nothing else holds
    /// this sink (its timer goes with it), what could not go is given up and
    /// counted.
    fn retire(&self) -> u64 {
        self.flush_with_beacon();
        if Rc::strong_count(&self.inner) > 1 {
            // A clone lives on: its timer sends the rest.
            return 0;
        }
        self.inner.outbox.with(Outbox::give_up).unwrap_or(0)
    }
}

/// The engine and the browser, in the resource.
fn describe_the_browser(resource: &mut Resource) {
    let agent = web_sys::window()
        .and_then(|w| w.navigator().user_agent().ok())
        .unwrap_or_default();
    let engine = if contains(&agent, "Firefox/") {
        "wgpu (Gecko)"
    } else if contains(&agent, "Chrome/") || contains(&agent, "Chromium/") {
        "dawn (Chromium)"
    } else if contains(&agent, "AppleWebKit/") {
        "webkit"
    } else {
        "unknown"
    };
    resource.set("webgpu.engine", engine);
    resource.set("user_agent.original", &agent);
}

/// Sets a timer for the next request unless one is set or none can go.
fn arm(shared: &Rc<Exporter>) {
    if shared.timer.with(|timer| timer.is_some()) != Some(false) {
        return;
    }
    let Some(at) = shared.outbox.with(|o| o.next_request_ms()).flatten() else {
        return;
    };
    let delay = (at - epoch_ms()).clamp(0.0, f64::from(i32::MAX)) as u32;
    let weak = Rc::downgrade(shared);
    let timeout = Timeout::new(delay, move || {
        if let Some(shared) = weak.upgrade() {
            // This timer has fired: the slot is free for the next one.
            let fired = shared.timer.take();
            drop(fired);
            shared.sending(|| post_next(&shared));
        }
    });
    shared.timer.replace(Some(timeout));
}

/// Posts the next request if one is due; arms the timer again once it ends.
fn post_next(shared: &Rc<Exporter>) {
    let now = epoch_ms();
    let taken = shared
        .outbox
        .with(|outbox| {
            let timeout_ms = outbox.config().timeout_ms;
            outbox.take_request(now).map(|body| (body, timeout_ms))
        })
        .flatten();
    let Some((body, timeout_ms)) = taken else {
        return arm(shared);
    };
    let keepalive = body.len() <= KEEPALIVE_QUOTA - 1024;
    shared
        .in_flight_bytes
        .set(if keepalive { body.len() } else { 0 });
    let promise = guard_post(&shared.url, &body, &shared.headers, keepalive, timeout_ms);
    let weak: Weak<Exporter> = Rc::downgrade(shared);
    wasm_bindgen_futures::spawn_local(async move {
        let outcome = crate::web::wait::settled(&promise).await;
        let Some(shared) = weak.upgrade() else {
            return;
        };
        let response = match outcome {
            Ok(answer) => {
                let answer: js_sys::Array = answer.unchecked_into();
                Response::Status {
                    status: answer.get(0).as_f64().unwrap_or(0.0) as u16,
                    retry_after: answer.get(1).as_string(),
                }
            }
            Err(reason) => Response::Failed(
                reason
                    .as_string()
                    .unwrap_or_else(|| "no answer".to_string()),
            ),
        };
        shared.in_flight_bytes.set(0);
        shared.sending(|| {
            shared
                .outbox
                .with(|outbox| outbox.finish(response, epoch_ms()));
            arm(&shared);
        });
    });
}

/// Hands everything that waits to page-hide requests (`keepalive` fetches),
/// one body at a time, until the browser refuses one (its quota is spent: the
/// rest waits).
/// The bodies share the browser's keepalive quota (64 KiB for every keepalive
/// request and beacon in flight): each beacon fits in what the request in
/// flight leaves, and a refused one is tried again at half the size. A page
/// being hidden (`respect_backoff`) sends nothing while the server asked to
/// wait; a page unloading sends what it can.
fn beacon_everything(shared: &Rc<Exporter>, respect_backoff: bool) {
    if respect_backoff && shared.outbox.with(|o| o.backing_off(epoch_ms())) != Some(false) {
        return;
    }
    // A little under the quota: headers count against it too.
    let mut budget = (KEEPALIVE_QUOTA - 1024).saturating_sub(shared.in_flight_bytes.get());
    while budget >= MIN_BEACON_BYTES {
        let taken = shared.outbox.with(|o| o.take_beacon(epoch_ms(), budget));
        let Some(Some(beacon)) = taken else {
            return;
        };
        // Sent with the outbox not lent: the browser's call is outside it.
        let sent_bytes = beacon.body.len();
        let sent = sent_bytes <= budget && guard_beacon(&shared.url, &beacon.body, &shared.headers);
        shared.outbox.with(|o| {
            if sent {
                o.beacon_sent(beacon);
            } else {
                o.beacon_refused(beacon);
            }
        });
        if sent {
            budget -= sent_bytes;
        } else {
            budget /= 2;
        }
    }
}

/// The smallest beacon worth sending (a few groups).
const MIN_BEACON_BYTES: usize = 4 * 1024;

/// Beacons what waits when the page is hidden (the last moment a page is sure
/// to see on a phone) and when it unloads.
fn flush_when_the_page_goes(shared: &Rc<Exporter>) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let Some(document) = window.document() else {
        return;
    };
    let weak = Rc::downgrade(shared);
    let on_hidden = EventListener::new(&document, "visibilitychange", move |_| {
        let hidden = web_sys::window()
            .and_then(|w| w.document())
            .is_some_and(|d| d.hidden());
        if let (true, Some(shared)) = (hidden, weak.upgrade()) {
            shared.sending(|| beacon_everything(&shared, true));
        }
    });
    let weak = Rc::downgrade(shared);
    let on_pagehide = EventListener::new(&window, "pagehide", move |_| {
        if let Some(shared) = weak.upgrade() {
            shared.sending(|| beacon_everything(&shared, false));
        }
    });
    shared.listeners.with(|listeners| {
        listeners.push(on_hidden);
        listeners.push(on_pagehide);
    });
}
