//! What goes out: the events batched into OTLP/JSON `ExportLogsServiceRequest` bodies as an
//! SDK's batch processor exports them, and the records `agent-fold collect` writes for them.

use serde_json::{Value, json};

use super::flat::flat_map;
use super::time::format_time;
use super::{Attr, OtelAgent, OtelEvent};

/// An OTLP `AnyValue` (64-bit integers as decimal strings, as OTLP/JSON encodes them).
fn any_value(a: &Attr) -> Value {
    match a {
        Attr::Str(s) => json!({ "stringValue": s }),
        Attr::Int(n) => json!({ "intValue": n.to_string() }),
        Attr::Double(d) => json!({ "doubleValue": d }),
        Attr::Bool(b) => json!({ "boolValue": b }),
    }
}

fn key_values(attrs: &[(String, Attr)]) -> Value {
    Value::Array(
        attrs
            .iter()
            .map(|(k, v)| json!({"key": k, "value": any_value(v)}))
            .collect(),
    )
}

/// One OTLP log record.
fn log_record(e: &OtelEvent) -> Value {
    let mut r = json!({
        "timeUnixNano": e.time_ns.to_string(),
        "observedTimeUnixNano": e.time_ns.to_string(),
        "severityNumber": 9,
        "severityText": "INFO",
    });
    // Claude Code's body is the full event name; Codex writes none.
    if e.agent == OtelAgent::ClaudeCode {
        r["body"] = json!({ "stringValue": e.name });
    }
    r["attributes"] = key_values(&e.attributes);
    r
}

/// How an SDK's batch processor cuts the export: every this many nanoseconds of event time…
pub const EXPORT_INTERVAL_NS: u64 = 5_000_000_000;
/// …or this many records, whichever comes first.
pub const MAX_EXPORT_BATCH: usize = 512;

/// The events as the OTLP/JSON `ExportLogsServiceRequest` bodies an exporter sends: a request
/// per 5 s of event time (at most 512 records each), consecutive records of one resource and
/// scope under one `resourceLogs`/`scopeLogs`.
pub fn export_requests(events: &[OtelEvent]) -> Vec<Value> {
    let Some(first) = events.first() else {
        return Vec::new();
    };
    let t0 = first.time_ns;
    let window = |e: &OtelEvent| e.time_ns.saturating_sub(t0) / EXPORT_INTERVAL_NS;
    let mut batches: Vec<Vec<&OtelEvent>> = Vec::new();
    for e in events {
        match batches.last_mut() {
            Some(b) if b.len() < MAX_EXPORT_BATCH && window(b[0]) == window(e) => b.push(e),
            _ => batches.push(vec![e]),
        }
    }
    batches
        .into_iter()
        .map(|batch| {
            let mut resource_logs: Vec<Value> = Vec::new();
            let mut previous: Option<&OtelEvent> = None;
            for e in batch {
                if previous.is_none_or(|p| p.resource != e.resource || p.scope != e.scope) {
                    resource_logs.push(json!({
                        "resource": {"attributes": key_values(&e.resource)},
                        "scopeLogs": [{
                            "scope": {"name": e.scope.0, "version": e.scope.1},
                            "logRecords": [],
                        }],
                    }));
                }
                previous = Some(e);
                let records = resource_logs
                    .last_mut()
                    .and_then(|r| r.pointer_mut("/scopeLogs/0/logRecords"))
                    .and_then(Value::as_array_mut)
                    .expect("a resourceLogs entry was just made");
                records.push(log_record(e));
            }
            json!({ "resourceLogs": resource_logs })
        })
        .collect()
}

/// The records `agent-fold collect` writes for the events, one per event (`docs/adapters.md`).
pub fn collector_records(events: &[OtelEvent]) -> Vec<Value> {
    events
        .iter()
        .map(|e| {
            let mut r = json!({
                "type": "otel/log",
                "session": e.session,
                "agent": e.agent.name(),
                "event": e.name,
                "time": format_time(e.time_ns),
            });
            if let Some(s) = e.sequence {
                r["sequence"] = s.into();
            }
            r["attributes"] = flat_map(&e.attributes);
            r["resource"] = flat_map(&e.resource);
            r
        })
        .collect()
}
