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
        "line one\nline \"two\" \\ é 🎉 \u{7}",
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
        "again",
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
