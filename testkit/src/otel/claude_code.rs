//! Claude Code's events for a session transcript (`~/.claude/projects/…/<session>.jsonl`), in
//! the transcript's order, each stamped with its line's `timestamp`:
//! - a main `user` line that is a prompt (text, not `isMeta`, not a compaction's summary, no
//!   `tool_result`) → `claude_code.user_prompt`, `prompt_length` = the prompt text's characters
//!   (Unicode scalars; Claude Code counts UTF-16 units, the same outside the astral planes);
//! - each `tool_result` block → `claude_code.tool_result`, `tool_result_size_bytes` = the bytes
//!   of its content serialised (a string's UTF-8 bytes, anything else its compact JSON);
//! - each main response (one per `message.id`, its first line's `usage`; `<synthetic>` lines
//!   and all-zero usage are no request) → `claude_code.api_request` with `query_source`
//!   `repl_main_thread`, `model`, `input_tokens`, `output_tokens`, `cache_read_tokens`,
//!   `cache_creation_tokens`; a sub-agent's (an `agent_progress` line's nested message, or a
//!   sidechain line) → the same with `query_source` `agent:<agentId>`;
//! - `system`/`compact_boundary` → `claude_code.compaction` with `trigger`, `success` `"true"`,
//!   `pre_tokens` = `compactMetadata.preTokens`, `post_tokens` = `compactMetadata.postTokens`
//!   where the transcript has it (Claude Code ≥ ~2.1.1xx: its own estimate of the messages after
//!   the compaction, re-attached files included). Older transcripts have none, and those Claude
//!   Code versions exported no compaction event: it is derived as Claude Code computes it, ⌈chars
//!   / 4⌉ of what the transcript shows after the boundary — the summary's content and the
//!   `attachment` lines before the next request — which for those versions lacks what they
//!   re-attached unseen (the restore the transcript path models with its prior).
//! - every event carries `session.id`, `app.version` (the line's `version`), `event.name` (the
//!   short name), `event.timestamp` and `event.sequence` (from 0 in the session); the resource
//!   is `service.name` `claude-code`, `service.version` the transcript's `version`; the scope
//!   `com.anthropic.claude_code.events`; the body the full event name.

use serde_json::{Value, json};

use super::json::{str_at, u64_at};
use super::time::{Clock, format_time_ms};
use super::{Attr, OtelAgent, OtelEvent, chars};

/// `⌈chars / 4⌉` of a value's compact JSON text: the estimate Claude Code makes of a message.
pub(super) fn quarter(v: &Value) -> u64 {
    chars(&v.to_string()).div_ceil(4)
}

/// Claude Code's events for a transcript (see the module's doc).
pub fn claude_code_events(lines: &[(usize, Value)]) -> Vec<OtelEvent> {
    let mut out: Vec<OtelEvent> = Vec::new();
    let mut clock = Clock::default();
    let mut session = String::new();
    let mut version = String::new();
    let mut seen_ids: Vec<String> = Vec::new();
    let mut seq = 0u64;
    for (k, (index, line)) in lines.iter().enumerate() {
        let time = clock.at(line);
        if let Some(s) = line.get("sessionId").and_then(Value::as_str) {
            session = s.to_owned();
        }
        if let Some(v) = line.get("version").and_then(Value::as_str) {
            version = v.to_owned();
        }
        let mut push = |name: &str, attrs: Vec<(&str, Attr)>| {
            let mut attributes: Vec<(String, Attr)> = vec![
                ("session.id".into(), session.as_str().into()),
                ("app.version".into(), version.as_str().into()),
                ("event.name".into(), name.into()),
                ("event.timestamp".into(), format_time_ms(time).into()),
                ("event.sequence".into(), seq.into()),
            ];
            attributes.extend(attrs.into_iter().map(|(k, v)| (k.to_owned(), v)));
            out.push(OtelEvent {
                agent: OtelAgent::ClaudeCode,
                session: session.clone(),
                name: format!("claude_code.{name}"),
                time_ns: time,
                sequence: Some(seq),
                attributes,
                resource: vec![
                    ("service.name".into(), "claude-code".into()),
                    ("service.version".into(), version.as_str().into()),
                ],
                scope: ("com.anthropic.claude_code.events".into(), version.clone()),
                line: *index,
            });
            seq += 1;
        };
        let sidechain = line.get("isSidechain") == Some(&Value::Bool(true));
        let kind = line.get("type").and_then(Value::as_str).unwrap_or("");
        let msg = line.get("message").filter(|m| m.is_object());
        match (kind, msg) {
            ("user", Some(m)) if !sidechain => {
                if line.get("isCompactSummary") == Some(&Value::Bool(true)) {
                    continue;
                }
                let meta = line.get("isMeta") == Some(&Value::Bool(true));
                match m.get("content") {
                    Some(Value::String(text)) if !meta => {
                        push("user_prompt", vec![("prompt_length", chars(text).into())])
                    }
                    Some(Value::Array(blocks)) => {
                        let mut text = 0;
                        let mut results = 0;
                        for b in blocks {
                            match b.get("type").and_then(Value::as_str) {
                                Some("tool_result") => {
                                    results += 1;
                                    let size = match b.get("content") {
                                        Some(Value::String(s)) => s.len() as u64,
                                        Some(c) => c.to_string().len() as u64,
                                        None => 0,
                                    };
                                    let mut attrs = vec![
                                        ("tool_result_size_bytes", size.into()),
                                        ("success", "true".into()),
                                    ];
                                    if b.get("is_error") == Some(&Value::Bool(true)) {
                                        attrs[1].1 = "false".into();
                                    }
                                    if let Some(id) = b.get("tool_use_id").and_then(Value::as_str) {
                                        attrs.push(("tool_use_id", id.into()));
                                    }
                                    push("tool_result", attrs);
                                }
                                Some("text") => {
                                    text += b.get("text").and_then(Value::as_str).map_or(0, chars)
                                }
                                _ => {}
                            }
                        }
                        if results == 0 && !meta && text > 0 {
                            push("user_prompt", vec![("prompt_length", text.into())]);
                        }
                    }
                    _ => {}
                }
            }
            ("assistant", Some(m)) => {
                let parent = sidechain.then(|| {
                    let agent = line.get("agentId").and_then(Value::as_str).unwrap_or("");
                    format!("agent:{agent}")
                });
                request(&mut push, &mut seen_ids, m, parent);
            }
            ("progress", _) if str_at(line, &["data", "type"]) == Some("agent_progress") => {
                let nested = line
                    .pointer("/data/message/message")
                    .filter(|m| m.is_object());
                if let Some(m) = nested.filter(|m| m.get("role") == Some(&json!("assistant"))) {
                    let agent = str_at(line, &["data", "agentId"]).unwrap_or("");
                    request(&mut push, &mut seen_ids, m, Some(format!("agent:{agent}")));
                }
            }
            ("system", _)
                if !sidechain
                    && line.get("subtype").and_then(Value::as_str) == Some("compact_boundary") =>
            {
                let meta = line.get("compactMetadata").cloned().unwrap_or(Value::Null);
                let post = u64_at(&meta, &["postTokens"]).unwrap_or_else(|| after(&lines[k + 1..]));
                let mut attrs = vec![("success", "true".into())];
                if let Some(t) = meta.get("trigger").and_then(Value::as_str) {
                    attrs.push(("trigger", t.into()));
                }
                if let Some(p) = u64_at(&meta, &["preTokens"]) {
                    attrs.push(("pre_tokens", p.into()));
                }
                attrs.push(("post_tokens", post.into()));
                push("compaction", attrs);
            }
            _ => {}
        }
    }
    out
}

/// What Claude Code would count after a compaction whose transcript names no `postTokens`:
/// ⌈chars / 4⌉ of the summary's content and the attachment lines before the next request or
/// prompt.
fn after(lines: &[(usize, Value)]) -> u64 {
    let mut tokens = 0;
    for (_, l) in lines {
        match l.get("type").and_then(Value::as_str) {
            Some("user") if l.get("isCompactSummary") == Some(&Value::Bool(true)) => {
                tokens += l.pointer("/message/content").map_or(0, quarter)
            }
            Some("attachment") => tokens += l.get("attachment").map_or(0, quarter),
            Some("assistant") | Some("user") => break,
            Some("system") if l.get("subtype") == Some(&json!("compact_boundary")) => break,
            _ => {}
        }
    }
    tokens
}

/// One response's `api_request`, once per `message.id`.
fn request(
    push: &mut impl FnMut(&str, Vec<(&str, Attr)>),
    seen: &mut Vec<String>,
    m: &Value,
    parent: Option<String>,
) {
    let Some(usage) = m.get("usage").filter(|u| u.is_object()) else {
        return;
    };
    // Each API request exports its own usage: on an advisor's turn the transcript writes the
    // sum of its iterations, and the main request is the last of its own (`message`, or
    // `fallback_message` after a refusal).
    let usage = usage
        .get("iterations")
        .and_then(Value::as_array)
        .and_then(|its| {
            its.iter().rev().find(|i| {
                matches!(
                    i.get("type").and_then(Value::as_str),
                    Some("message" | "fallback_message")
                )
            })
        })
        .unwrap_or(usage);
    let model = m.get("model").and_then(Value::as_str).unwrap_or("");
    if model.starts_with('<') {
        return;
    }
    let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (input, read, created) = (
        n("input_tokens"),
        n("cache_read_input_tokens"),
        n("cache_creation_input_tokens"),
    );
    if input + read + created == 0 {
        return;
    }
    if let Some(id) = m.get("id").and_then(Value::as_str) {
        if seen.iter().any(|s| s == id) {
            return;
        }
        // A response's lines come together: the last few ids are enough to know a repeat.
        if seen.len() == 64 {
            seen.remove(0);
        }
        seen.push(id.to_owned());
    }
    let source = parent.unwrap_or_else(|| "repl_main_thread".to_owned());
    push(
        "api_request",
        vec![
            ("model", model.into()),
            ("input_tokens", input.into()),
            ("output_tokens", n("output_tokens").into()),
            ("cache_read_tokens", read.into()),
            ("cache_creation_tokens", created.into()),
            ("query_source", source.into()),
        ],
    );
}
