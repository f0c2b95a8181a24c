//! An OTLP log record as the record `input=otel` reads (`docs/adapters.md`, "OpenTelemetry"):
//! one JSON object per agent event, keyed by its session.
//!
//! ```text
//! {"type":"otel/log","session":"…","agent":"claude-code","event":"claude_code.api_request",
//!  "time":"2026-12-03T08:00:00.123456789Z","sequence":12,"attributes":{…},"resource":{…}}
//! ```
//!
//! What holds: the session is the event's `session.id` (Claude Code, Gemini CLI),
//! `conversation.id` (Codex) or `gen_ai.conversation.id` (the GenAI conventions), else the same
//! keys on the resource; an event without one is no agent's event and is refused with why. The
//! event's full name is its body when the body is one (`claude_code.api_request`), else its
//! `event.name` attribute (Claude Code's short name is prefixed `claude_code.`), else the log
//! record's own `event_name`. Attributes keep their JSON types (an OTLP int is a JSON number,
//! a string stays a string: Codex sends some counts as strings); a string over
//! [`LONG_STRING`] bytes is carried as `{"length": chars}` — telemetry's sizes are what the
//! module reads, not its text — and values nest at most [`DEPTH`] deep.

use std::borrow::Cow;

use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value::Value as Any};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::record::Rec;

/// A string attribute longer than this is carried as its length.
pub(crate) const LONG_STRING: usize = 16 << 10;
/// How deep attribute values nest at most: deeper ones are null.
pub(crate) const DEPTH: usize = 16;
/// The longest event name taken.
const EVENT_NAME_BYTES: usize = 128;

/// The attributes that name an event's session, in the order they are looked for.
const SESSION_KEYS: [&str; 3] = ["session.id", "conversation.id", "gen_ai.conversation.id"];

/// Why a log record is not taken (counted, and said in the partial-success answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refused {
    #[error("no session.id, conversation.id or gen_ai.conversation.id attribute")]
    NoSession,
    #[error("a session id over {} bytes", agent_fold_core::MAX_KEY_LEN)]
    LongSession,
    #[error("no event name (body, event.name or the record's event_name)")]
    NoEvent,
}

impl Refused {
    pub(crate) const ALL: [Refused; 3] =
        [Refused::NoSession, Refused::LongSession, Refused::NoEvent];

    /// The reason as a metric label.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Refused::NoSession => "no_session",
            Refused::LongSession => "long_session",
            Refused::NoEvent => "no_event",
        }
    }
}

#[derive(Serialize)]
struct EventRecord<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    session: &'a str,
    agent: &'a str,
    event: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sequence: Option<i64>,
    attributes: Map<String, Value>,
    resource: &'a Map<String, Value>,
}

/// An attribute value as JSON, within the bounds above.
fn json(v: Option<&AnyValue>, depth: usize) -> Value {
    let Some(v) = v.and_then(|v| v.value.as_ref()) else {
        return Value::Null;
    };
    if depth >= DEPTH {
        return Value::Null;
    }
    match v {
        Any::StringValue(s) if s.len() > LONG_STRING => {
            serde_json::json!({ "length": s.chars().count() })
        }
        Any::StringValue(s) => Value::String(s.clone()),
        Any::BoolValue(b) => Value::Bool(*b),
        Any::IntValue(n) => Value::from(*n),
        Any::DoubleValue(x) => serde_json::Number::from_f64(*x).map_or(Value::Null, Value::Number),
        Any::BytesValue(b) => serde_json::json!({ "bytes": b.len() }),
        Any::ArrayValue(a) => {
            Value::Array(a.values.iter().map(|x| json(Some(x), depth + 1)).collect())
        }
        Any::KvlistValue(kv) => Value::Object(attributes(&kv.values, depth + 1)),
        // An index into a profile's string table: nothing a log event means by it.
        Any::StringValueStrindex(_) => Value::Null,
    }
}

/// Attributes as a JSON object (a key given twice: the last wins).
pub(crate) fn attributes(kvs: &[KeyValue], depth: usize) -> Map<String, Value> {
    kvs.iter()
        .map(|kv| (kv.key.clone(), json(kv.value.as_ref(), depth)))
        .collect()
}

fn string<'a>(kvs: &'a [KeyValue], key: &str) -> Option<&'a str> {
    kvs.iter().rev().find(|kv| kv.key == key).and_then(|kv| {
        match kv.value.as_ref()?.value.as_ref()? {
            Any::StringValue(s) if !s.is_empty() => Some(s.as_str()),
            _ => None,
        }
    })
}

fn int(kvs: &[KeyValue], key: &str) -> Option<i64> {
    kvs.iter().rev().find(|kv| kv.key == key).and_then(|kv| {
        match kv.value.as_ref()?.value.as_ref()? {
            Any::IntValue(n) => Some(*n),
            Any::StringValue(s) => s.parse().ok(),
            _ => None,
        }
    })
}

/// A dotted event name: no spaces, a prefix before its dot, short.
fn dotted(s: &str) -> bool {
    s.len() <= EVENT_NAME_BYTES
        && s.contains('.')
        && !s.starts_with('.')
        && s.bytes().all(|b| b.is_ascii_graphic())
}

/// The agent an event is, by its name's prefix, else by the exporter's `service.name`.
fn agent<'a>(event: &str, service: Option<&'a str>) -> &'a str {
    match event.split_once('.').map(|(p, _)| p) {
        Some("claude_code") => "claude-code",
        Some("codex") => "codex",
        Some("gemini_cli") => "gemini-cli",
        _ => match service {
            Some(s) if s.starts_with("claude-code") => "claude-code",
            Some(s) => s,
            None => "unknown",
        },
    }
}

/// A resource's attributes, read once for all its records.
pub(crate) struct Resource<'a> {
    kvs: &'a [KeyValue],
    json: Map<String, Value>,
    service: Option<&'a str>,
}

impl<'a> Resource<'a> {
    pub(crate) fn new(kvs: &'a [KeyValue]) -> Resource<'a> {
        Resource {
            kvs,
            json: attributes(kvs, 0),
            service: string(kvs, "service.name"),
        }
    }
}

/// One log record as a record keyed by its session, or why it is not taken.
pub(crate) fn record(res: &Resource, r: &LogRecord) -> Result<Rec, Refused> {
    let session = SESSION_KEYS
        .iter()
        .find_map(|k| string(&r.attributes, k))
        .or_else(|| SESSION_KEYS.iter().find_map(|k| string(res.kvs, k)))
        .ok_or(Refused::NoSession)?;
    if session.len() > agent_fold_core::MAX_KEY_LEN {
        return Err(Refused::LongSession);
    }
    let body = match r.body.as_ref().and_then(|b| b.value.as_ref()) {
        Some(Any::StringValue(s)) if dotted(s) => Some(s.as_str()),
        _ => None,
    };
    let event: Cow<str> = match (body, string(&r.attributes, "event.name")) {
        (Some(b), _) => Cow::Borrowed(b),
        (None, Some(n)) if dotted(n) => Cow::Borrowed(n),
        // Claude Code's attribute is the short name; its service says whose it is.
        (None, Some(n))
            if n.len() < EVENT_NAME_BYTES
                && res.service.is_some_and(|s| s.starts_with("claude-code")) =>
        {
            Cow::Owned(format!("claude_code.{n}"))
        }
        _ if dotted(&r.event_name) => Cow::Borrowed(r.event_name.as_str()),
        _ => return Err(Refused::NoEvent),
    };
    let nanos = match (r.time_unix_nano, r.observed_time_unix_nano) {
        (0, 0) => None,
        (0, t) | (t, _) => Some(t),
    };
    let out = EventRecord {
        kind: "otel/log",
        session,
        agent: agent(&event, res.service),
        event: &event,
        time: nanos.map(agent_fold_core::time::format),
        sequence: int(&r.attributes, "event.sequence"),
        attributes: attributes(&r.attributes, 0),
        resource: &res.json,
    };
    let value = serde_json::to_vec(&out).expect("a record serialises");
    Ok(Rec {
        key: Some(session.as_bytes().to_vec()),
        value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(k: &str, v: Any) -> KeyValue {
        KeyValue {
            key: k.into(),
            value: Some(AnyValue { value: Some(v) }),
            ..KeyValue::default()
        }
    }

    fn s(v: &str) -> Any {
        Any::StringValue(v.into())
    }

    fn value(rec: &Rec) -> Value {
        serde_json::from_slice(&rec.value).unwrap()
    }

    #[test]
    fn a_claude_code_event_is_named_keyed_and_typed() {
        let kvs = [
            kv("service.name", s("claude-code")),
            kv("service.version", s("2.1.45")),
        ];
        let res = Resource::new(&kvs);
        let r = LogRecord {
            time_unix_nano: 1_700_000_000_123_456_789,
            body: Some(AnyValue {
                value: Some(s("claude_code.api_request")),
            }),
            attributes: vec![
                kv("session.id", s("sess-1")),
                kv("event.name", s("api_request")),
                kv("event.sequence", Any::IntValue(7)),
                kv("input_tokens", Any::IntValue(1200)),
                kv("cost_usd", Any::DoubleValue(0.25)),
                kv("prompt", s(&"x".repeat(LONG_STRING + 1))),
            ],
            ..LogRecord::default()
        };
        let rec = record(&res, &r).unwrap();
        assert_eq!(rec.key.as_deref(), Some(&b"sess-1"[..]));
        let v = value(&rec);
        assert_eq!(v["type"], "otel/log");
        assert_eq!(v["event"], "claude_code.api_request");
        assert_eq!(v["agent"], "claude-code");
        assert_eq!(v["time"], "2023-11-14T22:13:20.123456789Z");
        assert_eq!(v["sequence"], 7);
        assert_eq!(v["attributes"]["input_tokens"], 1200);
        assert_eq!(v["attributes"]["cost_usd"], 0.25);
        assert_eq!(v["attributes"]["prompt"]["length"], LONG_STRING + 1);
        assert_eq!(v["resource"]["service.version"], "2.1.45");
    }

    #[test]
    fn each_agent_s_names_and_sessions_are_read() {
        // Codex: an empty body, the full name in `event.name`, the session in `conversation.id`.
        let kvs = [kv("service.name", s("codex_cli_rs"))];
        let res = Resource::new(&kvs);
        let r = LogRecord {
            attributes: vec![
                kv("event.name", s("codex.sse_event")),
                kv("conversation.id", s("c-9")),
                kv("input_token_count", s("1200")),
            ],
            ..LogRecord::default()
        };
        let v = value(&record(&res, &r).unwrap());
        assert_eq!(
            (&v["event"], &v["agent"]),
            (&"codex.sse_event".into(), &"codex".into())
        );
        assert_eq!(
            v["attributes"]["input_token_count"], "1200",
            "a string stays a string"
        );
        assert!(v.get("time").is_none());
        // Claude Code's short name, no body: prefixed by its service.
        let kvs = [kv("service.name", s("claude-code-desktop"))];
        let res = Resource::new(&kvs);
        let r = LogRecord {
            attributes: vec![kv("event.name", s("user_prompt")), kv("session.id", s("x"))],
            ..LogRecord::default()
        };
        assert_eq!(
            value(&record(&res, &r).unwrap())["event"],
            "claude_code.user_prompt"
        );
        // Gemini CLI: the session on the resource, a sentence as the body.
        let kvs = [
            kv("service.name", s("gemini-cli")),
            kv("session.id", s("g-1")),
        ];
        let res = Resource::new(&kvs);
        let r = LogRecord {
            body: Some(AnyValue {
                value: Some(s("API response from gemini-2.5-flash. Status: 200.")),
            }),
            attributes: vec![kv("event.name", s("gemini_cli.api_response"))],
            ..LogRecord::default()
        };
        let v = value(&record(&res, &r).unwrap());
        assert_eq!(
            (&v["event"], &v["agent"]),
            (&"gemini_cli.api_response".into(), &"gemini-cli".into())
        );
    }

    #[test]
    fn what_is_no_agent_event_is_refused_with_why() {
        let res = Resource::new(&[]);
        let no_session = LogRecord {
            attributes: vec![kv("event.name", s("claude_code.user_prompt"))],
            ..LogRecord::default()
        };
        assert_eq!(record(&res, &no_session), Err(Refused::NoSession));
        let no_event = LogRecord {
            attributes: vec![kv("session.id", s("s"))],
            body: Some(AnyValue {
                value: Some(s("a line of text")),
            }),
            ..LogRecord::default()
        };
        assert_eq!(record(&res, &no_event), Err(Refused::NoEvent));
        let long = LogRecord {
            attributes: vec![
                kv("session.id", s(&"s".repeat(2000))),
                kv("event.name", s("a.b")),
            ],
            ..LogRecord::default()
        };
        assert_eq!(record(&res, &long), Err(Refused::LongSession));
    }

    #[test]
    fn deep_values_stop_at_the_bound() {
        let mut v = AnyValue {
            value: Some(s("leaf")),
        };
        for _ in 0..40 {
            v = AnyValue {
                value: Some(Any::ArrayValue(
                    opentelemetry_proto::tonic::common::v1::ArrayValue { values: vec![v] },
                )),
            };
        }
        let mut j = json(Some(&v), 0);
        let mut depth = 0;
        while let Value::Array(a) = j {
            j = a.into_iter().next().unwrap();
            depth += 1;
        }
        assert_eq!((depth, j), (DEPTH, Value::Null));
    }
}
