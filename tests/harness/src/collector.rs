//! A telemetry collector for the end-to-end tests: a real HTTP server on
//! 127.0.0.1 that takes OTLP/HTTP JSON logs the way an OpenTelemetry Collector
//! does (CORS preflight answered, `POST /v1/logs`), and that can be told to
//! refuse connections, answer slowly, or answer 500 or 429 with `Retry-After`.
//! Bodies are decoded with the `opentelemetry-proto` crate's own types.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::KeyValue;

/// How the collector answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// 200 at once.
    Accept,
    /// Nothing listens: connections are refused.
    Refuse,
    /// 200 after this long.
    Slow(Duration),
    /// This status, with this `Retry-After` if any.
    Status(u16, Option<String>),
}

/// One `POST` the collector received.
#[derive(Clone, Debug)]
pub struct Received {
    /// When it arrived.
    pub at: Instant,
    /// The status it was answered with.
    pub status: u16,
    /// The body, as sent.
    pub body: String,
}

impl Received {
    /// The body decoded as an `ExportLogsServiceRequest`; panics (naming the
    /// body) when it is not one.
    pub fn decoded(&self) -> ExportLogsServiceRequest {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not OTLP/HTTP JSON logs ({e}): {}", self.body))
    }

    /// Whether the server accepted it (2xx).
    pub fn accepted(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// A string attribute of `attributes`.
pub fn string_attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    attributes.iter().find(|kv| kv.key == key).and_then(|kv| {
        match kv.value.as_ref()?.value.as_ref()? {
            AnyValue::StringValue(s) => Some(s.as_str()),
            _ => None,
        }
    })
}

/// An integer attribute of `attributes`.
pub fn int_attribute(attributes: &[KeyValue], key: &str) -> Option<i64> {
    attributes.iter().find(|kv| kv.key == key).and_then(|kv| {
        match kv.value.as_ref()?.value.as_ref()? {
            AnyValue::IntValue(n) => Some(*n),
            _ => None,
        }
    })
}

/// The sum of `webgpu.error.count` over every log record of `request`.
pub fn errors_in(request: &ExportLogsServiceRequest) -> u64 {
    request
        .resource_logs
        .iter()
        .flat_map(|r| &r.scope_logs)
        .flat_map(|s| &s.log_records)
        .map(|record| int_attribute(&record.attributes, "webgpu.error.count").unwrap_or(0) as u64)
        .sum()
}

struct State {
    mode: Mode,
    received: Vec<Received>,
    preflights: u32,
}

/// The collector; it stops when dropped.
pub struct Collector {
    port: u16,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl Collector {
    /// A collector accepting everything, on a free port of 127.0.0.1.
    pub fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(Mutex::new(State {
            mode: Mode::Accept,
            received: Vec::new(),
            preflights: 0,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let (shared, flag) = (state.clone(), stop.clone());
        std::thread::spawn(move || accept_loop(Some(listener), port, shared, flag));
        Collector { port, state, stop }
    }

    /// The URL to send logs to.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1/logs", self.port)
    }

    /// Changes how it answers from now on.
    pub fn set_mode(&self, mode: Mode) {
        self.state.lock().expect("collector").mode = mode;
        // The accept loop closes or opens the port within a few milliseconds.
        std::thread::sleep(Duration::from_millis(50));
    }

    /// Every `POST` so far, in order of arrival.
    pub fn received(&self) -> Vec<Received> {
        self.state.lock().expect("collector").received.clone()
    }

    /// The CORS preflights answered so far.
    pub fn preflights(&self) -> u32 {
        self.state.lock().expect("collector").preflights
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn accept_loop(
    mut listener: Option<TcpListener>,
    port: u16,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
) {
    while !stop.load(Ordering::Relaxed) {
        let refuse = state
            .lock()
            .map(|s| s.mode == Mode::Refuse)
            .unwrap_or(false);
        if refuse {
            listener = None;
        } else if listener.is_none() {
            listener = TcpListener::bind(("127.0.0.1", port)).ok();
        }
        let Some(open) = listener.as_ref() else {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        let _ = open.set_nonblocking(true);
        match open.accept() {
            Ok((stream, _)) => {
                let state = state.clone();
                std::thread::spawn(move || serve(stream, &state));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

fn serve(stream: TcpStream, state: &Mutex<State>) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let (mut length, mut origin) = (0usize, String::from("*"));
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).map(|n| n == 0).unwrap_or(true) || line == "\r\n" {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.parse().unwrap_or(0),
            "origin" => origin = value.to_string(),
            _ => {}
        }
    }
    let cors = format!(
        "Access-Control-Allow-Origin: {origin}\r\nAccess-Control-Allow-Credentials: true\r\n\
         Access-Control-Allow-Methods: POST\r\nAccess-Control-Allow-Headers: content-type\r\n\
         Access-Control-Expose-Headers: Retry-After\r\nAccess-Control-Max-Age: 600\r\nVary: Origin\r\n"
    );
    let mut stream = stream;
    if request_line.starts_with("OPTIONS") {
        if let Ok(mut s) = state.lock() {
            s.preflights += 1;
        }
        let _ = write!(
            stream,
            "HTTP/1.1 204 No Content\r\n{cors}Content-Length: 0\r\nConnection: close\r\n\r\n"
        );
        return;
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let mode = state.lock().map(|s| s.mode.clone()).unwrap_or(Mode::Accept);
    let (status, retry_after) = match &mode {
        Mode::Status(status, retry_after) => (*status, retry_after.clone()),
        _ => (200, None),
    };
    if let Ok(mut s) = state.lock() {
        s.received.push(Received {
            at: Instant::now(),
            status,
            body: String::from_utf8_lossy(&body).into_owned(),
        });
    }
    if let Mode::Slow(delay) = mode {
        std::thread::sleep(delay);
    }
    let retry_after = retry_after
        .map(|value| format!("Retry-After: {value}\r\n"))
        .unwrap_or_default();
    let answer = if status == 200 { "{}" } else { "" };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} Answer\r\n{cors}{retry_after}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
        answer.len()
    );
}
