//! OpenTelemetry log streams derived from real agent logs, for `input=otel`'s tests: no captured
//! OTel streams exist, so the events an agent would have exported for a session are derived from
//! its own log, per the events its documentation lists (`docs/adapters.md`, "OpenTelemetry").
//!
//! **Claude Code** (a session transcript, `~/.claude/projects/…/<session>.jsonl`), events in the
//! transcript's order, each stamped with its line's `timestamp`:
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
//!
//! **Codex** (a rollout, `~/.codex/sessions/…/rollout-*.jsonl`):
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
//!
//! What goes out: [`export_requests`] batches the events as an SDK's batch processor exports them
//! — a request every 5 s of event time, at most 512 records each — into OTLP/JSON
//! `ExportLogsServiceRequest` bodies; [`collector_records`] gives the records `agent-fold collect`
//! writes for them (the `otel/log` shape, `docs/adapters.md`), so that core-level tests run
//! without the receiver; [`records_from_request`] is a plain receiver of those bodies, to hold
//! the two to each other.

use serde_json::{Map, Value, json};

/// An attribute's value, as OTLP types it.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    Str(String),
    Int(i64),
    Double(f64),
    Bool(bool),
}

impl From<&str> for Attr {
    fn from(s: &str) -> Attr {
        Attr::Str(s.to_owned())
    }
}

impl From<String> for Attr {
    fn from(s: String) -> Attr {
        Attr::Str(s)
    }
}

impl From<u64> for Attr {
    fn from(n: u64) -> Attr {
        Attr::Int(n.min(i64::MAX as u64) as i64)
    }
}

/// Which agent exported an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtelAgent {
    ClaudeCode,
    Codex,
}

impl OtelAgent {
    /// The agent as a collector record names it.
    pub fn name(self) -> &'static str {
        match self {
            OtelAgent::ClaudeCode => "claude-code",
            OtelAgent::Codex => "codex",
        }
    }
}

/// One event an agent would have exported.
#[derive(Debug, Clone, PartialEq)]
pub struct OtelEvent {
    pub agent: OtelAgent,
    pub session: String,
    /// The full dotted event name (`claude_code.api_request`).
    pub name: String,
    pub time_ns: u64,
    /// Claude Code's `event.sequence`.
    pub sequence: Option<u64>,
    pub attributes: Vec<(String, Attr)>,
    pub resource: Vec<(String, Attr)>,
    pub scope: (String, String),
    /// The index of the log line it was derived from (for tests that score it).
    pub line: usize,
}

impl OtelEvent {
    /// The attribute named `key`, if the event has it.
    pub fn attr(&self, key: &str) -> Option<&Attr> {
        self.attributes
            .iter()
            .find(|(n, _)| n == key)
            .map(|(_, v)| v)
    }
}

/// The lines of a JSONL log as JSON values, with their index; a line that does not parse is
/// read again with its lone surrogate escapes as U+FFFD (Claude Code cuts tool output inside
/// an emoji), and a line of several records written back to back is each of them.
pub fn read_jsonl(text: &str) -> Vec<(usize, Value)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let fixed;
        let line = if serde_json::from_str::<Value>(line).is_ok() {
            line
        } else {
            fixed = lone_surrogates_replaced(line);
            &fixed
        };
        for v in serde_json::Deserializer::from_str(line)
            .into_iter::<Value>()
            .map_while(Result::ok)
        {
            out.push((i, v));
        }
    }
    out
}

/// A JSON text with every `\uD800`–`\uDFFF` escape that is not half of a pair as `\uFFFD`.
fn lone_surrogates_replaced(line: &str) -> String {
    let b = line.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        (b.get(at) == Some(&b'\\') && b.get(at + 1) == Some(&b'u'))
            .then(|| line.get(at + 2..at + 6))
            .flatten()
            .and_then(|h| u16::from_str_radix(h, 16).ok())
    };
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            match unit(i) {
                Some(0xD800..=0xDBFF) if matches!(unit(i + 6), Some(0xDC00..=0xDFFF)) => {
                    out.push_str(&line[i..i + 12]);
                    i += 12;
                }
                Some(0xD800..=0xDFFF) => {
                    out.push_str("\\uFFFD");
                    i += 6;
                }
                _ => {
                    // An escape of one character after the backslash.
                    let end = (i + 2).min(b.len());
                    out.push_str(&line[i..end]);
                    i = end;
                }
            }
        } else {
            let c = line[i..].chars().next().unwrap_or('\u{FFFD}');
            out.push(c);
            i += c.len_utf8().max(1);
        }
    }
    out
}

/// The events of a log: a Claude Code transcript or a Codex rollout, told by its lines.
pub fn derive(text: &str) -> Vec<OtelEvent> {
    let lines = read_jsonl(text);
    let codex = lines
        .iter()
        .any(|(_, l)| l.get("payload").is_some() && l.get("timestamp").is_some());
    if codex {
        codex_events(&lines)
    } else {
        claude_code_events(&lines)
    }
}

/// The characters of a string (Unicode scalars).
fn chars(s: &str) -> u64 {
    s.chars().count() as u64
}

/// `⌈chars / 4⌉` of a value's compact JSON text: the estimate Claude Code makes of a message.
fn quarter(v: &Value) -> u64 {
    chars(&v.to_string()).div_ceil(4)
}

fn u64_at(v: &Value, path: &[&str]) -> Option<u64> {
    let mut at = v;
    for p in path {
        at = at.get(p)?;
    }
    at.as_u64()
}

fn str_at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v str> {
    let mut at = v;
    for p in path {
        at = at.get(p)?;
    }
    at.as_str()
}

/// A log's clock: each line's stamp, or the last one's when it has none (events never go back
/// before the log's first stamp).
#[derive(Default)]
struct Clock {
    now: u64,
}

impl Clock {
    fn at(&mut self, line: &Value) -> u64 {
        if let Some(t) = line
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(parse_time)
        {
            self.now = t;
        }
        self.now
    }
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

/// A string attribute over this many bytes reaches a record as `{"length": chars}`.
pub const MAX_STRING_BYTES: usize = 16 * 1024;

/// An attribute's value in a collector record.
fn flat(a: &Attr) -> Value {
    match a {
        Attr::Str(s) if s.len() > MAX_STRING_BYTES => json!({ "length": chars(s) }),
        Attr::Str(s) => json!(s),
        Attr::Int(n) => json!(n),
        Attr::Double(d) => json!(d),
        Attr::Bool(b) => json!(b),
    }
}

fn flat_map(attrs: &[(String, Attr)]) -> Value {
    let mut m = Map::new();
    for (k, v) in attrs {
        m.insert(k.clone(), flat(v));
    }
    Value::Object(m)
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

/// An RFC 3339 stamp as nanoseconds since the epoch (`agent_fold_core::time`, the one reader).
pub fn parse_time(s: &str) -> Option<u64> {
    agent_fold_core::time::parse(s).and_then(|n| u64::try_from(n).ok())
}

/// Nanoseconds since the epoch as an RFC 3339 UTC stamp with nine decimals.
pub fn format_time(ns: u64) -> String {
    agent_fold_core::time::format(ns)
}

/// The same, to the millisecond (JavaScript's `toISOString`, as `event.timestamp` carries it).
fn format_time_ms(ns: u64) -> String {
    let full = format_time(ns);
    format!("{}Z", &full[..full.len() - 7])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events derived from a log of `lines`.
    fn derived(lines: &[Value]) -> Vec<OtelEvent> {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        derive(&text)
    }

    fn names(events: &[OtelEvent]) -> Vec<&str> {
        events.iter().map(|e| e.name.as_str()).collect()
    }

    fn attr(e: &OtelEvent, key: &str) -> Option<Attr> {
        e.attr(key).cloned()
    }

    #[test]
    fn stamps_round_trip() {
        let t = parse_time("2026-02-18T03:44:30.694Z").unwrap();
        assert_eq!(format_time(t), "2026-02-18T03:44:30.694000000Z");
        assert_eq!(format_time_ms(t), "2026-02-18T03:44:30.694Z");
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_time("2000-03-01T00:00:01.5Z"),
            Some((951_868_800 + 1) * 1_000_000_000 + 500_000_000)
        );
        assert_eq!(parse_time("1969-12-31T23:59:59Z"), None, "before the epoch");
        assert_eq!(
            parse_time("2026-02-18T04:44:30.694+01:00"),
            Some(t),
            "an offset, read as the core reads it"
        );
    }

    #[test]
    fn lone_surrogates_read_as_replacement_characters() {
        let line = r#"{"a":"x\ud83d y","b":"\ud83d\ude00","c":"\\ud83d"}"#;
        let fixed = lone_surrogates_replaced(line);
        let v: Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(v["a"], "x\u{FFFD} y");
        assert_eq!(v["b"], "😀");
        assert_eq!(v["c"], "\\ud83d");
    }

    /// A small transcript: a prompt, a response over two lines (one request), a tool result,
    /// a sub-agent's response, a compaction with no `postTokens` (derived from its summary).
    #[test]
    fn a_transcript_becomes_claude_codes_events() {
        let lines = [
            json!({"type":"user","sessionId":"s","version":"2.1.45","timestamp":"2026-02-18T03:44:30.000Z","message":{"role":"user","content":"héllo"}}),
            json!({"type":"assistant","sessionId":"s","version":"2.1.45","timestamp":"2026-02-18T03:44:31.000Z","message":{"id":"m1","role":"assistant","model":"claude-opus-4-6","content":[{"type":"text","text":"a"}],"usage":{"input_tokens":3,"cache_read_input_tokens":100,"cache_creation_input_tokens":7,"output_tokens":9}}}),
            json!({"type":"assistant","sessionId":"s","version":"2.1.45","timestamp":"2026-02-18T03:44:31.100Z","message":{"id":"m1","role":"assistant","model":"claude-opus-4-6","content":[{"type":"tool_use","id":"t1"}],"usage":{"input_tokens":3,"cache_read_input_tokens":100,"cache_creation_input_tokens":7,"output_tokens":9}}}),
            json!({"type":"user","sessionId":"s","version":"2.1.45","timestamp":"2026-02-18T03:44:32.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"out"}]}}),
            json!({"type":"progress","sessionId":"s","timestamp":"2026-02-18T03:44:33.000Z","data":{"type":"agent_progress","agentId":"a7","message":{"type":"assistant","message":{"id":"sm1","role":"assistant","model":"claude-haiku-4-5","content":[],"usage":{"input_tokens":50}}}}}),
            json!({"type":"system","subtype":"compact_boundary","sessionId":"s","timestamp":"2026-02-18T03:44:40.000Z","compactMetadata":{"trigger":"auto","preTokens":155000}}),
            json!({"type":"user","sessionId":"s","isCompactSummary":true,"timestamp":"2026-02-18T03:44:40.000Z","message":{"role":"user","content":"s".repeat(398)}}),
            json!({"type":"attachment","sessionId":"s","timestamp":"2026-02-18T03:44:40.000Z","attachment":{"type":"file","content":"x".repeat(30)}}),
        ];
        let events = derived(&lines);
        assert_eq!(
            names(&events),
            [
                "claude_code.user_prompt",
                "claude_code.api_request",
                "claude_code.tool_result",
                "claude_code.api_request",
                "claude_code.compaction",
            ]
        );
        assert_eq!(attr(&events[0], "prompt_length"), Some(Attr::Int(5)));
        assert_eq!(
            attr(&events[1], "query_source"),
            Some("repl_main_thread".into())
        );
        assert_eq!(attr(&events[1], "cache_read_tokens"), Some(Attr::Int(100)));
        assert_eq!(
            attr(&events[2], "tool_result_size_bytes"),
            Some(Attr::Int(3))
        );
        assert_eq!(attr(&events[3], "query_source"), Some("agent:a7".into()));
        // The summary's 400 chars of JSON and the attachment's, a quarter each.
        let attachment = quarter(&json!({"type":"file","content":"x".repeat(30)}));
        assert_eq!(
            attr(&events[4], "post_tokens"),
            Some(Attr::Int(100 + attachment as i64))
        );
        let seqs: Vec<Option<u64>> = events.iter().map(|e| e.sequence).collect();
        assert_eq!(seqs, [Some(0), Some(1), Some(2), Some(3), Some(4)]);
        assert!(events.iter().all(|e| e.session == "s"));
    }

    /// A rollout: the reading goes where its response ended, before the tool outputs it asked
    /// for; counts are strings where Codex records them so.
    #[test]
    fn a_rollout_becomes_codexs_events() {
        let item = |t: &str, p: Value| {
            let mut p = p;
            p["type"] = json!(t);
            json!({"timestamp": "2026-06-30T08:34:45.000Z", "type": "response_item", "payload": p})
        };
        let lines = [
            json!({"timestamp":"2026-06-30T08:33:39.451Z","type":"session_meta","payload":{"id":"cx","cli_version":"0.142.4","originator":"codex-tui","model_provider":"openai"}}),
            json!({"timestamp":"2026-06-30T08:33:39.453Z","type":"event_msg","payload":{"type":"task_started","model_context_window":258400}}),
            json!({"timestamp":"2026-06-30T08:33:39.632Z","type":"turn_context","payload":{"model":"gpt-5.5"}}),
            json!({"timestamp":"2026-06-30T08:33:43.307Z","type":"event_msg","payload":{"type":"user_message","message":"do it"}}),
            item("reasoning", json!({})),
            item(
                "function_call",
                json!({"name":"shell","call_id":"c1","arguments":"{}"}),
            ),
            json!({"timestamp":"2026-06-30T08:34:46.507Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"done"}}),
            json!({"timestamp":"2026-06-30T08:34:46.524Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":19704,"cached_input_tokens":4480,"output_tokens":597,"reasoning_output_tokens":268},"total_token_usage":{"total_tokens":20301}}}}),
            json!({"timestamp":"2026-06-30T08:34:46.600Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":19704},"total_token_usage":{"total_tokens":20301}}}}),
        ];
        let events = derived(&lines);
        assert_eq!(
            names(&events),
            [
                "codex.conversation_starts",
                "codex.user_prompt",
                "codex.sse_event",
                "codex.tool_result",
            ]
        );
        assert_eq!(attr(&events[0], "context_window"), Some(Attr::Int(258_400)));
        assert_eq!(attr(&events[0], "model"), Some("gpt-5.5".into()));
        assert_eq!(attr(&events[1], "prompt_length"), Some("5".into()));
        assert_eq!(attr(&events[2], "input_token_count"), Some("19704".into()));
        assert_eq!(
            attr(&events[2], "cached_token_count"),
            Some(Attr::Int(4480))
        );
        assert_eq!(
            events[2].time_ns,
            parse_time("2026-06-30T08:34:45.000Z").unwrap()
        );
        assert_eq!(attr(&events[3], "tool_name"), Some("shell".into()));
        assert_eq!(attr(&events[3], "output"), Some("done".into()));
        assert!(events.iter().all(|e| e.session == "cx"));
        assert_eq!(events[0].resource[0].1, "codex-tui".into());
    }

    /// The bodies are OTLP/JSON as an exporter sends them, batched by 5 s of event time and
    /// 512 records; a plain receiver makes of them exactly the collector records; a long
    /// string reaches a record as its length.
    #[test]
    fn bodies_and_records_agree() {
        let event = |i: u64, secs: u64| OtelEvent {
            agent: OtelAgent::ClaudeCode,
            session: "s".into(),
            name: "claude_code.tool_result".into(),
            time_ns: secs * 1_000_000_000 + i,
            sequence: Some(i),
            attributes: vec![
                ("session.id".into(), "s".into()),
                ("event.name".into(), "tool_result".into()),
                ("event.sequence".into(), i.into()),
                ("tool_result_size_bytes".into(), (i * 10).into()),
                (
                    "note".into(),
                    "é".repeat(if i == 3 { 9_000 } else { 1 }).into(),
                ),
            ],
            resource: vec![("service.name".into(), "claude-code".into())],
            scope: ("com.anthropic.claude_code.events".into(), "2.1.45".into()),
            line: i as usize,
        };
        let mut events: Vec<OtelEvent> = (0..600).map(|i| event(i, 100)).collect();
        events.push(event(600, 104));
        events.push(event(601, 105));
        let bodies = export_requests(&events);
        let sizes: Vec<usize> = bodies
            .iter()
            .map(|b| {
                b["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
                    .as_array()
                    .unwrap()
                    .len()
            })
            .collect();
        assert_eq!(sizes, [512, 89, 1]);
        let r = &bodies[0]["resourceLogs"][0]["scopeLogs"][0]["logRecords"][1];
        assert_eq!(r["timeUnixNano"], "100000000001");
        assert_eq!(r["severityNumber"], 9);
        assert_eq!(r["body"]["stringValue"], "claude_code.tool_result");
        assert_eq!(r["attributes"][3]["value"]["intValue"], "10");
        let received: Vec<Value> = bodies.iter().flat_map(records_from_request).collect();
        let records = collector_records(&events);
        assert_eq!(received, records);
        assert_eq!(records[3]["attributes"]["note"], json!({"length": 9000}));
        assert_eq!(records[1]["attributes"]["tool_result_size_bytes"], 10);
        assert_eq!(records[1]["time"], "1970-01-01T00:01:40.000000001Z");
    }
}
