//! One group's errors as an export carries them: what the outbox queues and
//! the OTLP encoder writes (each imports it, neither the other's internals).

use crate::fault::FaultKind;

/// One group's errors since the last request that carried it.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportRecord {
    /// The error kind.
    pub kind: FaultKind,
    /// The object label (sanitised, truncated).
    pub label: String,
    /// The labelled phase of the last of them, if any.
    pub phase: Option<String>,
    /// The last message seen (sanitised under the policy in force when it
    /// came, redacted, truncated).
    pub message: String,
    /// How many errors.
    pub count: u64,
    /// The frame of the first of them.
    pub first_frame: Option<u64>,
    /// The frame of the last of them.
    pub last_frame: Option<u64>,
    /// When the first of them arrived, in milliseconds since the Unix epoch.
    pub first_ms: f64,
}
