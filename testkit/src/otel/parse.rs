//! A plain receiver: OTLP/JSON `ExportLogsServiceRequest` bodies read back into collector
//! records, to hold the bodies and the records to each other.

use serde_json::{Value, json};

use super::Attr;
use super::flat::flat_map;
use super::time::format_time;

/// An OTLP/JSON `AnyValue` read back: numbers from a JSON number or a decimal string.
fn attr_of(v: &Value) -> Option<Attr> {
    if let Some(s) = v.get("stringValue").and_then(Value::as_str) {
        return Some(Attr::Str(s.to_owned()));
    }
    if let Some(i) = v.get("intValue") {
        return i
            .as_i64()
            .or_else(|| i.as_str().and_then(|s| s.parse().ok()))
            .map(Attr::Int);
    }
    if let Some(d) = v.get("doubleValue").and_then(Value::as_f64) {
        return Some(Attr::Double(d));
    }
    v.get("boolValue").and_then(Value::as_bool).map(Attr::Bool)
}

fn attrs_of(list: Option<&Value>) -> Vec<(String, Attr)> {
    list.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|kv| {
                    let k = kv.get("key")?.as_str()?;
                    Some((k.to_owned(), attr_of(kv.get("value")?)?))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A plain receiver: the collector records one OTLP/JSON `ExportLogsServiceRequest` body
/// becomes. The event's name is the body (Claude Code), else its `event.name` attribute
/// (Claude Code's short one prefixed `claude_code.`); its session `session.id`, else
/// `conversation.id`; its agent by its name's prefix, else the resource's `service.name`.
pub fn records_from_request(body: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    let empty = Vec::new();
    let list = |v: Option<&Value>| v.and_then(Value::as_array).unwrap_or(&empty).clone();
    for rl in list(body.get("resourceLogs")) {
        let resource = attrs_of(rl.pointer("/resource/attributes"));
        for sl in list(rl.get("scopeLogs")) {
            for lr in list(sl.get("logRecords")) {
                let attributes = attrs_of(lr.get("attributes"));
                let get = |k: &str| attributes.iter().find(|(n, _)| n == k).map(|(_, v)| v);
                let text = |k: &str| match get(k) {
                    Some(Attr::Str(s)) => Some(s.clone()),
                    _ => None,
                };
                let named = text("event.name").unwrap_or_default();
                let name = match lr.pointer("/body/stringValue").and_then(Value::as_str) {
                    Some(b) if b.contains('.') => b.to_owned(),
                    _ if named.contains('.') => named,
                    _ => format!("claude_code.{named}"),
                };
                let agent = match name.split('.').next() {
                    Some("claude_code") => "claude-code".to_owned(),
                    Some("codex") => "codex".to_owned(),
                    Some("gemini_cli") => "gemini-cli".to_owned(),
                    _ => match resource.iter().find(|(k, _)| k == "service.name") {
                        Some((_, Attr::Str(s))) => s.clone(),
                        _ => String::new(),
                    },
                };
                let time: u64 = match lr.get("timeUnixNano") {
                    Some(Value::String(s)) => s.parse().unwrap_or(0),
                    Some(n) => n.as_u64().unwrap_or(0),
                    None => 0,
                };
                let mut r = json!({
                    "type": "otel/log",
                    "session": text("session.id").or_else(|| text("conversation.id")).unwrap_or_default(),
                    "agent": agent,
                    "event": name,
                    "time": format_time(time),
                });
                if let Some(Attr::Int(s)) = get("event.sequence") {
                    r["sequence"] = json!(s);
                }
                r["attributes"] = flat_map(&attributes);
                r["resource"] = flat_map(&resource);
                out.push(r);
            }
        }
    }
    out
}
