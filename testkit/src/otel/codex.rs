//! Codex's events for a rollout (`~/.codex/sessions/…/rollout-*.jsonl`):
//! - each `session_meta` (a process start) → `codex.conversation_starts` with `context_window`
//!   (the first `model_context_window` after it), `auto_compact_token_limit` (where the rollout
//!   names `model_auto_compact_token_limit`), `provider_name`, `model` (the first
//!   `turn_context`'s after it);
//! - `event_msg`/`user_message` → `codex.user_prompt`, `prompt_length` its characters (a
//!   string, as Codex records it), `prompt` `[REDACTED]`;
//! - a tool output item (`function_call_output`, `custom_tool_call_output`, …) →
//!   `codex.tool_result` with `tool_name`, `call_id`, `arguments` (of its call), `success`,
//!   `output` (a string; anything else its JSON);
//! - each `token_count` reading (not `info: null`, not all zero, not the repeat of the last
//!   `total_tokens`) → `codex.sse_event` with `event.kind` `response.completed`,
//!   `input_token_count` (which includes the cached), `output_token_count`,
//!   `tool_token_count` as strings and `cached_token_count`, `reasoning_token_count` as
//!   integers, as Codex records them. Codex logs it when the response completes, before the
//!   tools it asked for run, while the rollout writes the reading after their outputs: the event
//!   is placed after the response's last item, stamped with that item's time.
//! - every event carries `conversation.id`, `app.version`, `model`, `slug`, `event.name` (the
//!   full name), `event.timestamp`; the resource is `service.name` = the rollout's
//!   `originator`, `service.version` its `cli_version`, `env` `dev`; the scope
//!   `codex_otel.log_only`; the body is empty. Codex exports no compaction event.

use serde_json::{Value, json};

use super::json::{str_at, u64_at};
use super::time::{Clock, format_time_ms};
use super::{Attr, OtelAgent, OtelEvent, chars};

/// Codex's events for a rollout (see the module's doc).
pub fn codex_events(lines: &[(usize, Value)]) -> Vec<OtelEvent> {
    let mut out: Vec<OtelEvent> = Vec::new();
    let mut clock = Clock::default();
    let (mut session, mut version, mut origin) = (String::new(), String::new(), String::new());
    let mut model = String::new();
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let mut total: Option<u64> = None;
    // Where the latest response's items ended, and when: a reading goes there.
    let mut response: Option<(usize, u64)> = None;
    for (k, (index, line)) in lines.iter().enumerate() {
        let time = clock.at(line);
        let payload = line.get("payload").cloned().unwrap_or(Value::Null);
        let kind = line.get("type").and_then(Value::as_str).unwrap_or("");
        let ptype = payload.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "session_meta" {
            session = str_at(&payload, &["id"]).unwrap_or("").to_owned();
            version = str_at(&payload, &["cli_version"]).unwrap_or("").to_owned();
            origin = str_at(&payload, &["originator"])
                .unwrap_or("codex_cli_rs")
                .to_owned();
        }
        if kind == "turn_context"
            && let Some(m) = payload.get("model").and_then(Value::as_str)
        {
            model = m.to_owned();
        }
        let event = |name: &str, time: u64, attrs: Vec<(&str, Attr)>, model: &str| {
            let mut attributes: Vec<(String, Attr)> = vec![
                ("event.name".into(), format!("codex.{name}").into()),
                ("event.timestamp".into(), format_time_ms(time).into()),
                ("conversation.id".into(), session.as_str().into()),
                ("app.version".into(), version.as_str().into()),
                ("model".into(), model.into()),
                ("slug".into(), model.into()),
            ];
            attributes.extend(attrs.into_iter().map(|(k, v)| (k.to_owned(), v)));
            OtelEvent {
                agent: OtelAgent::Codex,
                session: session.clone(),
                name: format!("codex.{name}"),
                time_ns: time,
                sequence: None,
                attributes,
                resource: vec![
                    ("service.name".into(), origin.as_str().into()),
                    ("service.version".into(), version.as_str().into()),
                    ("env".into(), "dev".into()),
                ],
                scope: ("codex_otel.log_only".into(), version.clone()),
                line: *index,
            }
        };
        match (kind, ptype) {
            ("session_meta", _) => {
                let rest = &lines[k + 1..];
                let window = rest.iter().find_map(|(_, l)| {
                    u64_at(l, &["payload", "model_context_window"])
                        .or_else(|| u64_at(l, &["payload", "info", "model_context_window"]))
                });
                let limit = u64_at(&payload, &["model_auto_compact_token_limit"]).or_else(|| {
                    rest.iter()
                        .filter(|(_, l)| l.get("type") == Some(&json!("turn_context")))
                        .find_map(|(_, l)| {
                            u64_at(l, &["payload", "model_auto_compact_token_limit"])
                        })
                });
                let first = rest
                    .iter()
                    .filter(|(_, l)| l.get("type") == Some(&json!("turn_context")))
                    .find_map(|(_, l)| str_at(l, &["payload", "model"]))
                    .unwrap_or(&model)
                    .to_owned();
                model = first;
                let mut attrs = vec![(
                    "provider_name",
                    str_at(&payload, &["model_provider"])
                        .unwrap_or("openai")
                        .into(),
                )];
                if let Some(w) = window {
                    attrs.push(("context_window", w.into()));
                }
                if let Some(l) = limit {
                    attrs.push(("auto_compact_token_limit", l.into()));
                }
                out.push(event("conversation_starts", time, attrs, &model));
            }
            ("event_msg", "user_message") => {
                let text = payload.get("message").and_then(Value::as_str).unwrap_or("");
                let attrs = vec![
                    ("prompt_length", chars(text).to_string().into()),
                    ("prompt", "[REDACTED]".into()),
                ];
                out.push(event("user_prompt", time, attrs, &model));
                response = None;
            }
            ("response_item", t) if t.ends_with("_call") || t == "reasoning" || t == "message" => {
                let role = payload.get("role").and_then(Value::as_str);
                if t == "message" && role != Some("assistant") {
                    continue;
                }
                if let Some(id) = payload.get("call_id").and_then(Value::as_str) {
                    let name = payload.get("name").and_then(Value::as_str).unwrap_or(t);
                    let args = match payload.get("arguments").or_else(|| payload.get("input")) {
                        Some(Value::String(s)) => s.clone(),
                        Some(v) => v.to_string(),
                        None => String::new(),
                    };
                    if calls.len() == 256 {
                        calls.remove(0);
                    }
                    calls.push((id.to_owned(), name.to_owned(), args));
                }
                response = Some((out.len(), time));
            }
            ("response_item", t) if t.ends_with("_output") => {
                let id = payload.get("call_id").and_then(Value::as_str).unwrap_or("");
                let (name, args) = calls
                    .iter()
                    .rev()
                    .find(|(c, _, _)| c == id)
                    .map(|(_, n, a)| (n.clone(), a.clone()))
                    .unwrap_or_default();
                let output = match payload.get("output") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                let attrs = vec![
                    ("tool_name", name.into()),
                    ("call_id", id.into()),
                    ("arguments", args.into()),
                    ("success", "true".into()),
                    ("output", output.into()),
                ];
                out.push(event("tool_result", time, attrs, &model));
            }
            ("event_msg", "token_count") => {
                let Some(info) = payload.get("info").filter(|i| i.is_object()) else {
                    continue;
                };
                let last = |k: &str| u64_at(info, &["last_token_usage", k]);
                let input = last("input_tokens").unwrap_or(0);
                let t = u64_at(info, &["total_token_usage", "total_tokens"]);
                let repeat = t.is_some() && t == total;
                if t.is_some() {
                    total = t;
                }
                if input == 0 || repeat {
                    continue;
                }
                let attrs = vec![
                    ("event.kind", "response.completed".into()),
                    ("input_token_count", input.to_string().into()),
                    (
                        "output_token_count",
                        last("output_tokens").unwrap_or(0).to_string().into(),
                    ),
                    (
                        "cached_token_count",
                        last("cached_input_tokens").unwrap_or(0).into(),
                    ),
                    (
                        "reasoning_token_count",
                        last("reasoning_output_tokens").unwrap_or(0).into(),
                    ),
                    ("tool_token_count", "0".into()),
                ];
                let (at, when) = response.take().unwrap_or((out.len(), time));
                out.insert(at, event("sse_event", when, attrs, &model));
            }
            _ => {}
        }
    }
    out
}
