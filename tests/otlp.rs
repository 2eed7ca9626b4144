//! What the HTTP sink sends is OTLP/HTTP JSON logs as the OpenTelemetry
//! project's own types read them (`opentelemetry-proto`, its serde mapping):
//! every field where a collector looks for it, text escaped, counts exact.

#![cfg(not(target_arch = "wasm32"))]

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use webgpu_guard::telemetry::otlp::Resource;
use webgpu_guard::telemetry::outbox::{ExportConfig, Outbox};
use webgpu_guard::FaultKind;

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
}

#[test]
fn a_request_decodes_as_an_export_logs_service_request() {
    let mut resource = Resource::new("my-app");
    resource.set("webgpu.adapter", "swiftshader / \"quoted\"");
    let mut outbox = Outbox::new(ExportConfig::default(), resource);
    let now = 1_796_212_800_123.0;
    outbox.add(
        FaultKind::Validation,
        "vertices",
        Some("upload"),
        "an earlier message",
        Some(7),
        41,
        now,
    );
    outbox.add(
        FaultKind::OutOfMemory,
        "shadow-map",
        None,
        "no memory",
        None,
        1,
        now,
    );
    outbox.add(
        FaultKind::Validation,
        "vertices",
        None,
        // The record carries its group's last message.
        "line one\nline \"two\" \\ é 🎉 \u{7}",
        Some(9),
        1,
        now,
    );
    let body = outbox.take_request(now).expect("a request is due");
    let request: ExportLogsServiceRequest = serde_json::from_str(&body).expect(&body);

    assert_eq!(request.resource_logs.len(), 1);
    let logs = &request.resource_logs[0];
    let resource = &logs.resource.as_ref().expect("resource").attributes;
    let text = |v: Option<&Value>| match v {
        Some(Value::StringValue(s)) => s.clone(),
        other => panic!("not a string: {other:?}"),
    };
    assert_eq!(text(attribute(resource, "service.name")), "my-app");
    assert_eq!(
        text(attribute(resource, "telemetry.sdk.name")),
        "webgpu-guard"
    );
    assert_eq!(
        text(attribute(resource, "webgpu.adapter")),
        "swiftshader / \"quoted\""
    );
    let scope = &logs.scope_logs[0];
    assert_eq!(scope.scope.as_ref().expect("scope").name, "webgpu-guard");
    let records = &scope.log_records;
    assert_eq!(records.len(), 2, "one record per group");

    let vertices = &records[0];
    assert_eq!(vertices.time_unix_nano, 1_796_212_800_123_000_000);
    assert_eq!(vertices.severity_number, 17);
    assert_eq!(vertices.severity_text, "ERROR");
    assert_eq!(vertices.event_name, "webgpu.error");
    let body_text = match vertices.body.as_ref().and_then(|b| b.value.as_ref()) {
        Some(Value::StringValue(s)) => s.clone(),
        other => panic!("{other:?}"),
    };
    // The lone backslash reads as a path: redacted, like any user data.
    assert_eq!(body_text, "line one\nline \"two\" … é 🎉 \u{7}");
    let a = &vertices.attributes;
    assert_eq!(text(attribute(a, "webgpu.error.kind")), "validation");
    assert_eq!(text(attribute(a, "webgpu.object.label")), "vertices");
    assert_eq!(text(attribute(a, "webgpu.phase")), "upload");
    assert_eq!(
        attribute(a, "webgpu.error.count"),
        Some(&Value::IntValue(42))
    );
    assert_eq!(
        attribute(a, "webgpu.frame.first"),
        Some(&Value::IntValue(7))
    );
    assert_eq!(attribute(a, "webgpu.frame"), Some(&Value::IntValue(9)));

    let shadow = &records[1];
    assert_eq!(shadow.severity_number, 13, "out of memory is a warning");
    assert_eq!(attribute(&shadow.attributes, "webgpu.phase"), None);
    assert_eq!(attribute(&shadow.attributes, "webgpu.frame"), None);
}

/// A small deterministic generator (xorshift), so that a failure replays.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// A secret that could not appear by chance.
fn secret(random: &mut Random) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
    let tail: String = (0..10)
        .map(|_| ALPHABET[random.below(ALPHABET.len())] as char)
        .collect();
    format!("Zq{tail}")
}

/// `secret` carried the ways a page's text carries one: in a URL's query after
/// punctuation, in a path, as a matrix parameter, as a bare `key=value`.
fn carrying(random: &mut Random, secret: &str) -> String {
    let punctuation = [
        ",", ";", ":", "(", ")", "[", "]", "{", "}", "<", ">", "|", "!", "*", "+", ",64",
    ];
    let key = random.pick(&[
        "sig",
        "token",
        "access_token",
        "api_key",
        "apiKey",
        "X-Amz-Signature",
        "signature",
        "key",
        "secret",
        "client_secret",
        "password",
        "Password",
        "auth",
        "session",
        "jsessionid",
        "JSESSIONID",
        "code",
        "sid",
        "id_token",
        "Authorization",
    ]);
    let p = random.pick(&punctuation);
    let q = random.pick(&punctuation);
    match random.below(6) {
        0 => format!("https://cdn.example.com/a?size=64{p}64&{key}={secret}{q}"),
        1 => format!("https://cdn.example.com/a;{key}={secret}{p}x?y=1"),
        2 => format!("{p}{key}={secret}{q}"),
        3 => format!("/static/img.png;jsessionid={secret}{p}"),
        4 => format!("http://h.example/u/{secret}/avatar.png{p}"),
        _ => format!("www.example.com/path?{key}={secret}{q}"),
    }
}

/// Text with the secret-bearing part at a random place among words and
/// punctuation.
fn text_around(random: &mut Random, carried: &str) -> String {
    let words = [
        "buffer",
        "[Texture",
        "\"photo\"]",
        "bind",
        "group",
        "mip-3",
        "(again)",
        "at",
        "line",
        "7:3",
        "—",
        "é",
        "🎉",
        "x=1",
        "size=64,64",
        "while",
        "calling",
        ";",
        ",",
        "=",
    ];
    let before = random.below(6);
    let after = random.below(6);
    let mut parts: Vec<String> = (0..before)
        .map(|_| random.pick(&words).to_string())
        .collect();
    let glue = random.pick(&[" ", "", ",", ";", "(", "=", ":"]);
    parts.push(format!("{glue}{carried}"));
    parts.extend((0..after).map(|_| random.pick(&words).to_string()));
    parts.join(random.pick(&[" ", " ", ", ", "; "]))
}

/// Thousands of messages, labels and phase names with a secret at a random
/// place amid random punctuation: no secret reaches an OTLP request's body
/// or a page-hide body (the two ways the HTTP sink sends).
#[test]
fn no_secret_reaches_a_request_or_a_page_hide_body() {
    let mut random = Random(0x9e37_79b9_7f4a_7c15);
    for round in 0..3_000 {
        let mut outbox = Outbox::new(ExportConfig::default(), Resource::new("secrets"));
        let secrets: Vec<String> = (0..3).map(|_| secret(&mut random)).collect();
        let texts: Vec<String> = secrets
            .iter()
            .map(|s| {
                let carried = carrying(&mut random, s);
                text_around(&mut random, &carried)
            })
            .collect();
        let clean_label = random
            .pick(&["globals", "vertices", "shadow-map"])
            .to_string();
        let (message, label, phase) = match random.below(3) {
            0 => (texts[0].clone(), clean_label, None),
            1 => (texts[0].clone(), texts[1].clone(), None),
            _ => (texts[0].clone(), texts[1].clone(), Some(texts[2].clone())),
        };
        outbox.add(
            FaultKind::Validation,
            &label,
            phase.as_deref(),
            &message,
            Some(3),
            1,
            1_000.0,
        );
        let body = if round % 2 == 0 {
            outbox.take_request(1_000_000.0).expect("a request")
        } else {
            outbox.take_beacon(1_000.0, 60_000).expect("a beacon").body
        };
        for secret in &secrets {
            assert!(
                !body.contains(secret.as_str()),
                "round {round}: {secret} leaked\nmessage: {message}\nlabel: {label}\nphase: {phase:?}\nbody: {body}"
            );
        }
    }
}
