//! The OpenTelemetry wire format the HTTP sink speaks: OTLP/HTTP JSON logs (an
//! `ExportLogsServiceRequest` posted to a collector's `/v1/logs`), one log record
//! per group of errors. Written by hand (no serde in the page): the encoding
//! follows the OTLP JSON mapping (camelCase names, 64-bit integers as decimal
//! strings, enums as numbers), and a host test decodes it with the
//! `opentelemetry-proto` crate.

use super::record::ExportRecord;
use crate::fault::FaultKind;

/// The instrumentation scope's name, and the default `service.name`.
pub const SCOPE_NAME: &str = "webgpu-guard";

/// OTLP's `SEVERITY_NUMBER_ERROR`.
pub const SEVERITY_ERROR: u32 = 17;

/// OTLP's `SEVERITY_NUMBER_WARN`.
pub const SEVERITY_WARN: u32 = 13;

/// The resource every record of a request belongs to: the application, the
/// library, the engine and the adapter, as string attributes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    attributes: Vec<(String, String)>,
}

impl Default for Resource {
    fn default() -> Self {
        Resource::new(SCOPE_NAME)
    }
}

impl Resource {
    /// A resource for the application `service_name`, naming the library
    /// (`telemetry.sdk.*`).
    pub fn new(service_name: &str) -> Self {
        let mut resource = Resource {
            attributes: Vec::new(),
        };
        resource.set("service.name", service_name);
        resource.set("telemetry.sdk.name", SCOPE_NAME);
        resource.set("telemetry.sdk.language", "rust");
        resource.set("telemetry.sdk.version", env!("CARGO_PKG_VERSION"));
        resource
    }

    /// Sets `key` to `value`, replacing an earlier value.
    pub fn set(&mut self, key: &str, value: &str) {
        match self.attributes.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value.to_string(),
            None => self.attributes.push((key.to_string(), value.to_string())),
        }
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The severity (number, text) of an error of `kind`.
pub fn severity(kind: FaultKind) -> (u32, &'static str) {
    match kind {
        // A size the ladder could not get, most often degraded around.
        FaultKind::OutOfMemory => (SEVERITY_WARN, "WARN"),
        _ => (SEVERITY_ERROR, "ERROR"),
    }
}

/// One group's log record, as JSON. `observed_ms` is when it leaves the page
/// (milliseconds since the Unix epoch).
pub fn record_json(record: &ExportRecord, observed_ms: f64) -> String {
    let (number, text) = severity(record.kind);
    let mut out = String::with_capacity(256 + record.message.len() + record.label.len());
    out.push_str("{\"timeUnixNano\":\"");
    out.push_str(&nanos(record.first_ms));
    out.push_str("\",\"observedTimeUnixNano\":\"");
    out.push_str(&nanos(observed_ms));
    out.push_str(&format!(
        "\",\"severityNumber\":{number},\"severityText\":\"{text}\",\"eventName\":\"webgpu.error\",\"body\":{{\"stringValue\":"
    ));
    push_string(&mut out, &record.message);
    out.push_str("},\"attributes\":[");
    push_attribute(
        &mut out,
        "webgpu.error.kind",
        Value::Str(record.kind.as_str()),
    );
    out.push(',');
    push_attribute(&mut out, "webgpu.object.label", Value::Str(&record.label));
    if let Some(phase) = &record.phase {
        out.push(',');
        push_attribute(&mut out, "webgpu.phase", Value::Str(phase));
    }
    out.push(',');
    push_attribute(&mut out, "webgpu.error.count", Value::Int(record.count));
    if let Some(frame) = record.first_frame {
        out.push(',');
        push_attribute(&mut out, "webgpu.frame.first", Value::Int(frame));
    }
    if let Some(frame) = record.last_frame {
        out.push(',');
        push_attribute(&mut out, "webgpu.frame", Value::Int(frame));
    }
    out.push_str("]}");
    out
}

/// What a request adds around its records (the length of
/// [`request_json`] with no record).
pub fn envelope_len(resource: &Resource) -> usize {
    request_json(resource, std::iter::empty::<&str>()).len()
}

/// The `ExportLogsServiceRequest` of `records` (each from [`record_json`]).
pub fn request_json<'a>(resource: &Resource, records: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::with_capacity(1024);
    out.push_str("{\"resourceLogs\":[{\"resource\":{\"attributes\":[");
    for (at, (key, value)) in resource.attributes.iter().enumerate() {
        if at > 0 {
            out.push(',');
        }
        push_attribute(&mut out, key, Value::Str(value));
    }
    out.push_str("]},\"scopeLogs\":[{\"scope\":{\"name\":");
    push_string(&mut out, SCOPE_NAME);
    out.push_str(",\"version\":");
    push_string(&mut out, env!("CARGO_PKG_VERSION"));
    out.push_str("},\"logRecords\":[");
    for (at, record) in records.into_iter().enumerate() {
        if at > 0 {
            out.push(',');
        }
        out.push_str(record);
    }
    out.push_str("]}]}]}");
    out
}

enum Value<'a> {
    Str(&'a str),
    Int(u64),
}

fn push_attribute(out: &mut String, key: &str, value: Value<'_>) {
    out.push_str("{\"key\":");
    push_string(out, key);
    match value {
        Value::Str(text) => {
            out.push_str(",\"value\":{\"stringValue\":");
            push_string(out, text);
            out.push_str("}}");
        }
        // OTLP's JSON mapping writes 64-bit integers as decimal strings.
        Value::Int(n) => out.push_str(&format!(",\"value\":{{\"intValue\":\"{n}\"}}}}")),
    }
}

/// Milliseconds since the epoch as the decimal string of nanoseconds.
fn nanos(ms: f64) -> String {
    let ms = if ms.is_finite() && ms > 0.0 { ms } else { 0.0 };
    let whole = ms.trunc() as u64;
    let sub = ((ms - ms.trunc()) * 1_000_000.0) as u64;
    format!("{}", whole.saturating_mul(1_000_000).saturating_add(sub))
}

/// `text` as a JSON string literal.
fn push_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> ExportRecord {
        ExportRecord {
            kind: FaultKind::Validation,
            label: "vertices \"main\"".into(),
            phase: Some("upload".into()),
            message: "line one\nline\ttwo \\ \u{1} é".into(),
            count: 12,
            first_frame: Some(3),
            last_frame: Some(9),
            first_ms: 1_796_212_800_000.5,
        }
    }

    #[test]
    fn a_record_escapes_its_text_and_writes_integers_as_strings() {
        let json = record_json(&record(), 1_796_212_801_000.0);
        assert!(
            json.contains("\"timeUnixNano\":\"1796212800000500000\""),
            "{json}"
        );
        assert!(json.contains("\"observedTimeUnixNano\":\"1796212801000000000\""));
        assert!(
            json.contains("\"stringValue\":\"line one\\nline\\ttwo \\\\ \\u0001 é\""),
            "{json}"
        );
        assert!(json.contains("\"stringValue\":\"vertices \\\"main\\\"\""));
        assert!(json.contains("{\"key\":\"webgpu.error.count\",\"value\":{\"intValue\":\"12\"}}"));
        assert!(json.contains("\"severityNumber\":17"));
    }

    #[test]
    fn the_envelope_is_what_a_request_adds() {
        let resource = Resource::new("app");
        let one = record_json(&record(), 0.0);
        let two = request_json(&resource, [one.as_str(), one.as_str()]);
        assert_eq!(two.len(), envelope_len(&resource) + 2 * one.len() + 1);
        assert_eq!(resource.get("service.name"), Some("app"));
        let mut resource = resource;
        resource.set("service.name", "other");
        assert_eq!(resource.get("service.name"), Some("other"));
    }
}
