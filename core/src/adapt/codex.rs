//! OpenAI Codex rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): lines of
//! `{"timestamp", "type", "payload"}`.
//!
//! - `session_meta` names the session (its `payload.id` becomes every frame's `session_id`) and
//!   becomes a `request/header` whose `system` is the base instructions.
//! - `response_item`s are the conversation the model is sent again: `message` (by role
//!   `user/message`, `assistant/message`, `developer/message`, …; `message` = its content),
//!   `reasoning` (`assistant/reasoning`), tool calls (`tool/call`) and their outputs
//!   (`tool/result`), the item as `message`.
//! - `event_msg`/`token_count` is the provider's reading: an `assistant/message` whose `usage`
//!   maps `last_token_usage` (`cached_input_tokens` is a subset of `input_tokens`, so
//!   `input_tokens` − cached → `input_tokens`, cached → `cache_read_input_tokens`: the sample
//!   sums to the provider's prompt size). `info: null`, all-zero readings and the repeat of the
//!   last reading (same `total_tokens`) are no samples and pass through. `model_context_window`
//!   (on `task_started` and `token_count`) becomes a `request/header`'s `context_window` when
//!   it changes; so does `model_auto_compact_token_limit` (on `session_meta` or `turn_context`,
//!   where a rollout names it) as the header's `auto_compact_tokens`.
//! - `compacted` becomes `compact/start` and the `user/message` carrying the
//!   `replacement_history` whose `replaces` spans the surface; `event_msg`/`context_compacted`
//!   becomes `compact/end`.
//! - `turn_context`, the UI's `event_msg`s (copies of response items) and anything else pass
//!   through as `codex/<type>[/<payload type>]`.
//!
//! Codex writes a response's items, and the tool outputs they asked for, before the
//! `token_count` of the request that made them: the sample carries `anchor_seq`, the last
//! input-side frame before that response began (a message to the model, a tool output, a
//! compaction's replacement), so that the pressure view anchors it to the surface its request
//! carried (contract §3, sample).

use super::build::{Adapting, Announced, FrameBuf, Id, fingerprint};
use super::line::{Line, at, opens_object, str_at, uint_at};
use super::state::AdaptState;
use crate::frame::NAME_BYTES;
use crate::frame::kind::{
    ASSISTANT_MESSAGE, COMPACT_END, COMPACT_START, REQUEST_HEADER, TOOL_CALL, TOOL_RESULT,
    USER_MESSAGE,
};

pub(crate) fn adapt(cx: &mut Adapting, line: &Line) {
    let stamp = line.get("timestamp");
    let kind = line.str("type").unwrap_or_default();
    let payload = line.object("payload");
    let payload_type = str_at(payload, "type");
    match (&*kind, payload_type.as_deref()) {
        ("session_meta", _) if payload.is_some() => session_meta(cx, line, stamp),
        ("response_item", Some(t)) => {
            let kind = match t {
                "message" => None,
                "reasoning" => Some("assistant/reasoning"),
                "function_call" | "custom_tool_call" | "local_shell_call" | "web_search_call"
                | "tool_search_call" => Some(TOOL_CALL),
                "function_call_output"
                | "custom_tool_call_output"
                | "local_shell_call_output"
                | "tool_search_output" => Some(TOOL_RESULT),
                // Another agent's message to this one (multi-agent): input it is sent.
                "agent_message" => Some("agent/message"),
                _ => {
                    return cx.pass_through(line, Some(t), Id::Numbered, stamp, None);
                }
            };
            let item = payload.unwrap_or("{}");
            let (kind, message) = match kind {
                Some(k) => (k.to_owned(), item),
                None => {
                    let role = str_at(Some(item), "role");
                    let kind = format!("{}/message", role.as_deref().unwrap_or("user"));
                    (kind, at(Some(item), "content").unwrap_or("null"))
                }
            };
            let mut f = cx.frame(&kind, Id::Numbered, stamp, None);
            // What the model wrote starts (or continues) a response; anything else is input
            // the next request carries.
            if kind == ASSISTANT_MESSAGE || kind == TOOL_CALL || kind == "assistant/reasoning" {
                if !cx.st.request.responding {
                    cx.st.before_response = cx.st.last_total.map(|t| (t, cx.st.since_chars));
                    cx.st.response_text = None;
                    cx.st.since_chars = 0;
                }
                if kind == ASSISTANT_MESSAGE {
                    cx.st.response_text = output_text(message);
                }
                cx.st.request.response();
            } else {
                cx.st.request.input(f.seq());
                // What Codex adds, estimated, to the last response's total before comparing
                // it with its threshold: what came in since the response (contract §3.5).
                cx.st.since_chars = cx
                    .st
                    .since_chars
                    .saturating_add(crate::estimate::counted(item.as_bytes()));
            }
            f.raw("message", message);
            f.extra_str("source_type", &format!("response_item/{t}"));
            if let Some(p) = at(Some(item), "phase") {
                f.extra_raw("phase", p);
            }
            if let Some(c) = at(Some(item), "call_id") {
                f.extra_raw("call_id", c);
            }
            cx.emit(f);
        }
        ("compacted", _) if payload.is_some() => {
            let mut start = cx.frame(COMPACT_START, Id::Numbered, stamp, None);
            // The level it began at, as Codex counts it against its threshold: the last
            // reading's total and the history written since, estimated (contract §3.5).
            // Automatic when no user's turn came between the last reading and it — unless
            // Codex cannot have fired there: under half its threshold, or under the threshold
            // with nothing written since the reading (at a turn's start Codex compares the
            // reading alone).
            // The compaction's own request, where its response (the summary) is the last one:
            // the level is the one before it.
            let summarised = cx.st.since_chars == 0
                && str_at(payload, "message")
                    .zip(cx.st.response_text)
                    .is_some_and(|(m, (print, len))| ends_with_text(&m, print, len));
            let (last_total, since_chars) = match cx.st.before_response {
                Some((t, c)) if summarised => (Some(t), c),
                _ => (cx.st.last_total, cx.st.since_chars),
            };
            let since = since_chars.div_ceil(4);
            match (last_total, cx.st.user_turn, cx.st.compact_limit) {
                (Some(total), false, Some(limit))
                    if total + since < limit / 2 || (since == 0 && total < limit) =>
                {
                    start
                        .string("trigger", "manual")
                        .uint("preTokens", total + since);
                }
                (Some(total), false, _) => {
                    start
                        .string("trigger", "auto")
                        .uint("preTokens", total + since);
                }
                (Some(total), true, _) => {
                    start.uint("preTokens", total + since);
                }
                (None, ..) => {}
            }
            cx.st.since_chars = 0;
            cx.st.before_response = None;
            cx.st.response_text = None;
            start.extra_str("source_type", "compacted");
            cx.emit(start);
            let summary = at(payload, "message");
            let mut f = cx.frame(USER_MESSAGE, Id::Numbered, stamp, None);
            f.extra_str("source_type", "compacted");
            let message = match at(payload, "replacement_history") {
                Some(h) => {
                    if let Some(s) = summary {
                        f.extra_raw("summary", s);
                    }
                    h
                }
                None => summary.unwrap_or("null"),
            };
            cx.st.request.input(f.seq());
            cx.emit_replacement(f, message);
        }
        ("event_msg", Some("token_count")) => token_count(cx, line, stamp),
        ("event_msg", Some("user_message")) => {
            cx.st.user_turn = true;
            cx.pass_through(line, payload_type.as_deref(), Id::Numbered, stamp, None);
        }
        ("event_msg", Some("task_started")) => {
            match uint_at(payload, "model_context_window").filter(|w| *w >= 1) {
                Some(w) => {
                    let mut f = window_header(cx, stamp, w, "event_msg/task_started");
                    f.source(line, &[], &[]);
                    cx.emit(f);
                }
                None => {
                    cx.pass_through(line, payload_type.as_deref(), Id::Numbered, stamp, None);
                }
            }
        }
        ("turn_context", _) => {
            // A header when the threshold or the model changed (the records name the model,
            // contract §3.6).
            if let Some(c) = compact_limit(payload) {
                cx.st.configured_limit = Some(c);
            }
            let limit = compact_limit(payload)
                .map(|c| cx.st.window.map_or(c, |w| threshold(w, Some(c))))
                .filter(|l| cx.st.compact_limit != Some(*l));
            let model = str_at(payload, "model").filter(|m| !m.is_empty() && m.len() <= NAME_BYTES);
            let print = model
                .as_deref()
                .map(fingerprint)
                .filter(|p| cx.st.model != Some(*p));
            if limit.is_none() && print.is_none() {
                return cx.pass_through(line, payload_type.as_deref(), Id::Numbered, stamp, None);
            }
            let mut f = cx.frame(REQUEST_HEADER, Id::Numbered, stamp, None);
            let levels = Announced {
                auto_compact: limit,
                ..Announced::default()
            };
            cx.announce(&mut f, levels);
            if let (Some(m), Some(_)) = (&model, print) {
                cx.st.model = print;
                f.string("model", m);
            }
            f.extra_str("source_type", "turn_context");
            f.source(line, &[], &[]);
            cx.emit(f);
        }
        ("event_msg", Some("context_compacted")) => {
            let mut f = cx.frame(COMPACT_END, Id::Numbered, stamp, None);
            f.extra_str("source_type", "event_msg/context_compacted");
            cx.emit(f);
        }
        _ => {
            cx.pass_through(line, payload_type.as_deref(), Id::Numbered, stamp, None);
        }
    }
}

/// Codex's automatic compaction threshold for the window a rollout logs: 90% of the model's
/// window, which the rollout logs as 95% of it (`effective_context_window_percent`), so 18/19
/// of what it logs; its configuration's `model_auto_compact_token_limit` only lowers it
/// (codex-rs, measured in the lab: 0.171 fires at 244,800 of a logged 258,400, at 90,000 of
/// a logged 95,000).
fn threshold(logged_window: u64, configured: Option<u64>) -> u64 {
    let own = (logged_window as u128 * 18 / 19) as u64;
    configured.map_or(own, |c| c.min(own))
}

/// The fingerprint and length in bytes of an assistant message's text (its `output_text`
/// parts, joined), when it has any.
fn output_text(content: &str) -> Option<(u64, u64)> {
    let text: String = crate::json::elements(content)
        .filter_map(|p| str_at(Some(p), "text"))
        .collect();
    (!text.is_empty()).then(|| (crate::hash::fnv1a(text.as_bytes()), text.len() as u64))
}

/// Whether `message` ends with the text of fingerprint `print` and `len` bytes.
fn ends_with_text(message: &str, print: u64, len: u64) -> bool {
    let bytes = message.as_bytes();
    usize::try_from(len)
        .ok()
        .and_then(|n| bytes.len().checked_sub(n))
        .is_some_and(|at| crate::hash::fnv1a(&bytes[at..]) == print)
}

/// A `request/header` announcing the window a line names, and the threshold it gives.
fn window_header(cx: &mut Adapting, stamp: Option<&str>, w: u64, source_type: &str) -> FrameBuf {
    let mut h = cx.frame(REQUEST_HEADER, Id::Numbered, stamp, None);
    // The limit the rollout names, else the one param `compact_at` says Codex was configured
    // with (its `config.toml`, read where it runs).
    let limit = threshold(w, cx.st.configured_limit.or(cx.compact_at));
    let levels = Announced {
        window: Some(w),
        auto_compact: (cx.st.compact_limit != Some(limit)).then_some(limit),
        ..Announced::default()
    };
    cx.announce(&mut h, levels);
    h.extra_str("source_type", source_type);
    h
}

/// The automatic compaction threshold a rollout's configuration names
/// (`model_auto_compact_token_limit`), when it names one.
fn compact_limit(payload: Option<&str>) -> Option<u64> {
    uint_at(payload, "model_auto_compact_token_limit").filter(|l| *l >= 1)
}

/// The session a Codex line names: its `session_meta`'s id.
pub(crate) fn session_of(line: &Line) -> Option<String> {
    if line.str("type").as_deref() != Some("session_meta") {
        return None;
    }
    str_at(line.object("payload"), "id").map(|s| s.into_owned())
}

/// The agent Codex rollouts are, as headers name it (contract §1).
pub(crate) const CODEX: &str = "codex";

fn session_meta(cx: &mut Adapting, line: &Line, stamp: Option<&str>) {
    let payload = line.object("payload");
    if let Some(id) = str_at(payload, "id") {
        if cx.st.session_id.as_deref().is_some_and(|s| s != id) {
            // Another rollout under the same record key: a new session.
            *cx.st = AdaptState {
                next_seq: 0,
                ..AdaptState::default()
            };
        }
        cx.st.session_id = Some(id.clone().into_owned());
        cx.session = Some(id.into_owned());
    }
    let mut f = cx.frame(REQUEST_HEADER, Id::Numbered, stamp, None);
    if let Some(s) = at(payload, "base_instructions") {
        f.raw("system", s);
    }
    cx.st.configured_limit = compact_limit(payload).or(cx.st.configured_limit);
    let levels = Announced {
        auto_compact: compact_limit(payload),
        ..Announced::default()
    };
    cx.announce(&mut f, levels);
    // A rollout never carries the tool list: unknown, not 0 (contract §3).
    f.json("tools", "null");
    f.string("agent", CODEX);
    f.extra_str("source_type", "session_meta");
    f.source(line, &[], &["base_instructions"]);
    cx.emit(f);
}

fn token_count(cx: &mut Adapting, line: &Line, stamp: Option<&str>) {
    let info = at(line.object("payload"), "info").filter(|i| opens_object(i));
    let last = at(info, "last_token_usage");
    let input = uint_at(last, "input_tokens").unwrap_or(0);
    let cached = uint_at(last, "cached_input_tokens").unwrap_or(0).min(input);
    let output = uint_at(last, "output_tokens");
    let reasoning = uint_at(last, "reasoning_output_tokens");
    let total = uint_at(at(info, "total_token_usage"), "total_tokens");
    let window = uint_at(info, "model_context_window").filter(|w| *w >= 1);

    if let Some(w) = window.filter(|w| cx.st.window != Some(*w)) {
        let h = window_header(cx, stamp, w, "event_msg/token_count");
        cx.emit(h);
    }
    let repeat = total.is_some() && total == cx.st.total;
    if total.is_some() {
        cx.st.total = total;
    }
    if input == 0 || repeat {
        return cx.pass_through(line, Some("token_count"), Id::Numbered, stamp, None);
    }
    cx.st.last_total = Some(uint_at(last, "total_tokens").unwrap_or(input + output.unwrap_or(0)));
    cx.st.user_turn = false;
    // Written by a provider that counts cache writes apart: a part of `input_tokens`, as the
    // cached part is.
    let written = uint_at(last, "cache_write_input_tokens")
        .unwrap_or(0)
        .min(input - cached);
    let mut f = cx.frame(ASSISTANT_MESSAGE, Id::Numbered, stamp, None);
    let mut usage = format!(
        "{{\"input_tokens\":{},\"cache_read_input_tokens\":{cached},\"cache_creation_input_tokens\":{written}",
        input - cached - written
    );
    if let Some(o) = output {
        usage.push_str(&format!(",\"output_tokens\":{o}"));
    }
    usage.push('}');
    f.json("usage", &usage);
    // Anchored to what its request carried: the response and tool outputs written since are
    // not in this reading.
    if let Some(carried) = cx.st.request.carried.take() {
        f.uint("anchor_seq", carried);
    }
    f.extra_str("source_type", "event_msg/token_count");
    if let Some(r) = reasoning {
        f.extra_raw("reasoning_output_tokens", &r.to_string());
    }
    f.source(line, &[], &[]);
    cx.emit(f);
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::adapt::{Input, adapt_values};

    fn adapt(lines: &[Value]) -> Vec<Value> {
        adapt_values(Input::Codex, lines)
    }

    fn tc(input: u64, cached: u64, total: u64) -> Value {
        json!({"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{
            "total_token_usage":{"input_tokens":input,"cached_input_tokens":cached,"output_tokens":1,"total_tokens":total},
            "last_token_usage":{"input_tokens":input,"cached_input_tokens":cached,"output_tokens":1,"total_tokens":input+1},
            "model_context_window":1000}}})
    }

    /// Codex's threshold from the window its rollout logs (90% of the model's, logged as 95%),
    /// capped by a configured one; a compaction's level is the last response's total and what
    /// came in since; automatic unless a user's turn came between, or Codex cannot have fired
    /// there.
    #[test]
    fn the_threshold_and_each_compaction_s_trigger_and_level() {
        let tc = |input: u64, total: u64| {
            json!({"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{
                "total_token_usage":{"total_tokens":total},
                "last_token_usage":{"input_tokens":input,"cached_input_tokens":0,"output_tokens":10,"total_tokens":input+10},
                "model_context_window":258_400}}})
        };
        let output = |chars: usize| json!({"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"x".repeat(chars)}});
        let call = json!({"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"exec","arguments":"{}","call_id":"c"}});
        let compacted = json!({"timestamp":"t","type":"compacted","payload":{"message":"summary","replacement_history":[]}});
        let out = adapt(&[
            json!({"timestamp":"t0","type":"session_meta","payload":{"id":"cx"}}),
            call.clone(),
            output(400),
            tc(240_000, 1),
            compacted.clone(),
            tc(20_000, 2),
            json!({"timestamp":"t","type":"event_msg","payload":{"type":"user_message","message":"go"}}),
            compacted.clone(),
            tc(30_000, 3),
            compacted,
        ]);
        let header = out
            .iter()
            .find(|f| f.get("auto_compact_tokens").is_some())
            .unwrap();
        assert_eq!(header["auto_compact_tokens"], 244_800);
        let starts: Vec<&Value> = out
            .iter()
            .filter(|f| f["type"] == "compact/start")
            .collect();
        let level = |f: &Value| f["preTokens"].as_u64();
        // Mid-turn: the total and the output since, estimated.
        assert_eq!(starts[0]["trigger"], "auto");
        assert!(level(starts[0]).unwrap() > 240_010 && level(starts[0]).unwrap() < 240_200);
        // A user's turn between: no trigger said.
        assert!(starts[1].get("trigger").is_none() && level(starts[1]) == Some(20_010));
        // Nothing since a reading under the threshold: by hand.
        assert_eq!(starts[2]["trigger"], "manual");
    }

    /// A limit the rollout does not name but param `compact_at` does (Codex's `config.toml`,
    /// read where it runs) is the threshold a compaction is told automatic by: one at 31,000
    /// mid-turn is Codex's own, not one by hand under half its default threshold.
    #[test]
    fn a_configured_limit_the_rollout_does_not_name_tells_the_trigger() {
        let config = crate::Config::from_params([
            ("input", "codex"),
            ("emit", "pressure"),
            ("compact_at", "30000"),
        ])
        .unwrap();
        let mut a = crate::adapt::Adapter::for_config(&config);
        let lines = [
            json!({"timestamp":"t0","type":"session_meta","payload":{"id":"cx"}}),
            json!({"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{
                "total_token_usage":{"total_tokens":31_000},
                "last_token_usage":{"input_tokens":30_990,"cached_input_tokens":0,"output_tokens":10,"total_tokens":31_000},
                "model_context_window":258_400}}}),
            json!({"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"x".repeat(400)}}),
            json!({"timestamp":"t","type":"compacted","payload":{"message":"summary","replacement_history":[]}}),
        ];
        let texts: Vec<Vec<u8>> = lines
            .iter()
            .map(|l| serde_json::to_vec(l).unwrap())
            .collect();
        let out: Vec<Value> = a
            .adapt_all(texts.iter().map(|t| (None, &t[..])))
            .iter()
            .map(|f| serde_json::from_slice(f).unwrap())
            .collect();
        let header = out
            .iter()
            .find(|f| f.get("auto_compact_tokens").is_some())
            .unwrap();
        assert_eq!(header["auto_compact_tokens"], 30_000);
        let start = out.iter().find(|f| f["type"] == "compact/start").unwrap();
        assert_eq!(start["trigger"], "auto", "{start}");
        // Without the param the same compaction is under half the default threshold: by hand.
        let plain = adapt(&lines);
        let start = plain.iter().find(|f| f["type"] == "compact/start").unwrap();
        assert_eq!(start["trigger"], "manual", "{start}");
    }

    /// Codex 0.171 writes the compaction's own response (the summary) and that request's
    /// usage just before `compacted`, which carries the summary after its handoff prefix: the
    /// level compared is the conversation's before it — the last response's total and the
    /// tool output since — not the summarising request's.
    #[test]
    fn the_summarising_request_s_usage_is_not_the_level() {
        let usage = |input: u64, output: u64| {
            json!({"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{
                "total_token_usage":{"total_tokens":input + output},
                "last_token_usage":{"input_tokens":input,"cached_input_tokens":0,"output_tokens":output,"total_tokens":input + output},
                "model_context_window":258_400}}})
        };
        let summary = "<summary>the files were read</summary>";
        let lines = [
            json!({"timestamp":"t0","type":"session_meta","payload":{"id":"cx","model_auto_compact_token_limit":30_000}}),
            json!({"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"exec","arguments":"{}","call_id":"c"}}),
            json!({"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"x".repeat(5_400)}}),
            usage(28_930, 40),
            json!({"timestamp":"t","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":summary}]}}),
            usage(28_683, 173),
            json!({"timestamp":"t","type":"compacted","payload":{"message":format!("Another model summarised: {summary}"),"replacement_history":[]}}),
        ];
        let out = adapt(&lines);
        let start = out.iter().find(|f| f["type"] == "compact/start").unwrap();
        assert_eq!(start["trigger"], "auto", "{start}");
        let level = start["preTokens"].as_u64().unwrap();
        assert!((30_000..30_400).contains(&level), "{start}");
        // A last response that is not the summary is the conversation's own: its usage stands.
        let mut other = lines.to_vec();
        other[6] = json!({"timestamp":"t","type":"compacted","payload":{"message":"another summary","replacement_history":[]}});
        let out = adapt(&other);
        let start = out.iter().find(|f| f["type"] == "compact/start").unwrap();
        assert_eq!(start["preTokens"], 28_856, "{start}");
    }

    #[test]
    fn samples_sum_to_the_prompt_and_skip_null_zero_and_repeats() {
        let out = adapt(&[
            json!({"timestamp":"t0","type":"session_meta","payload":{"id":"cx1","base_instructions":{"text":"be good"}}}),
            json!({"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":null}}),
            json!({"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}),
            tc(500, 400, 501),
            tc(500, 400, 501),
            tc(0, 0, 501),
        ]);
        let kinds: Vec<&str> = out.iter().map(|f| f["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "request/header",
                "codex/event_msg/token_count",
                "user/message",
                "request/header",
                "assistant/message",
                "codex/event_msg/token_count",
                "codex/event_msg/token_count"
            ]
        );
        assert_eq!(out[0]["system"], json!({"text":"be good"}));
        assert!(
            out[0]["source"]["payload"]
                .get("base_instructions")
                .is_none()
        );
        assert!(out.iter().all(|f| f["session_id"] == "cx1"));
        assert_eq!(out[2]["id"], "cx1#2");
        assert_eq!(out[3]["context_window"], 1000);
        assert_eq!(
            out[4]["usage"],
            json!({"input_tokens":100,"cache_read_input_tokens":400,"cache_creation_input_tokens":0,"output_tokens":1})
        );
    }

    #[test]
    fn compaction_and_a_second_rollout() {
        let out = adapt(&[
            json!({"timestamp":"t","type":"session_meta","payload":{"id":"cx1"}}),
            json!({"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":"a"}}),
            json!({"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"f","call_id":"c1","arguments":"{}"}}),
            json!({"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"o"}}),
            json!({"timestamp":"t","type":"compacted","payload":{"message":"sum","replacement_history":[{"type":"message","role":"user","content":"a"}]}}),
            json!({"timestamp":"t","type":"event_msg","payload":{"type":"context_compacted"}}),
            json!({"timestamp":"t","type":"session_meta","payload":{"id":"cx2"}}),
        ]);
        assert_eq!(out[2]["type"], "tool/call");
        assert_eq!(out[3]["type"], "tool/result");
        assert_eq!(out[4]["type"], "compact/start");
        assert_eq!(out[5]["type"], "user/message");
        assert_eq!(out[5]["replaces"], json!({"from_seq":1,"to_seq":3}));
        assert_eq!(out[5]["extras"]["summary"], "sum");
        assert_eq!(out[6]["type"], "compact/end");
        assert_eq!(out[7]["session_id"], "cx2");
        assert_eq!(out[7]["seq"], 0);
    }

    #[test]
    fn a_named_compaction_limit_reaches_a_header() {
        let out = adapt(&[
            json!({"timestamp":"t","type":"session_meta","payload":{"id":"cx1","model_auto_compact_token_limit":200000}}),
            json!({"timestamp":"t","type":"turn_context","payload":{"model":"m","model_auto_compact_token_limit":200000}}),
            json!({"timestamp":"t","type":"turn_context","payload":{"model":"m","model_auto_compact_token_limit":180000}}),
            json!({"timestamp":"t","type":"turn_context","payload":{"model":"m"}}),
        ]);
        assert_eq!(out[0]["auto_compact_tokens"], 200000);
        assert_eq!(out[0]["agent"], "codex");
        // The first turn names the model (its threshold is the session's already).
        assert_eq!(out[1]["type"], "request/header");
        assert_eq!(out[1]["model"], "m");
        assert!(out[1].get("auto_compact_tokens").is_none());
        assert_eq!(out[2]["type"], "request/header");
        assert_eq!(out[2]["auto_compact_tokens"], 180000);
        assert!(
            out[2].get("model").is_none(),
            "the same model is not named again"
        );
        assert_eq!(out[3]["type"], "codex/turn_context");
    }

    /// A reading comes after the response and the tool outputs of its request: it names the
    /// last input frame before that response began, and the next response starts afresh.
    #[test]
    fn a_reading_names_the_frame_its_request_carried() {
        let item = |p: Value| json!({"timestamp":"t","type":"response_item","payload":p});
        let out = adapt(&[
            json!({"timestamp":"t","type":"session_meta","payload":{"id":"cx1"}}),
            item(json!({"type":"message","role":"user","content":"a"})),
            item(json!({"type":"reasoning","summary":[]})),
            item(json!({"type":"function_call","name":"f","call_id":"c1","arguments":"{}"})),
            item(json!({"type":"function_call_output","call_id":"c1","output":"o"})),
            tc(500, 0, 501),
            item(json!({"type":"message","role":"assistant","content":"done"})),
            tc(600, 0, 601),
            tc(700, 0, 701),
        ]);
        let samples: Vec<&Value> = out.iter().filter(|f| f.get("usage").is_some()).collect();
        assert_eq!(
            out[0].get("tools"),
            Some(&Value::Null),
            "a rollout carries no tool list"
        );
        assert_eq!(samples.len(), 3);
        // The user message (seq 1) is what the first request carried; the second request
        // carried the tool output (seq 4); a third reading with no response since names none.
        assert_eq!(out[1]["seq"], 1);
        assert_eq!(samples[0]["anchor_seq"], 1);
        assert_eq!(samples[1]["anchor_seq"], 4);
        assert!(samples[2].get("anchor_seq").is_none());
    }

    /// A provider that counts cache writes apart (`cache_write_input_tokens`, Codex ≥ 0.145):
    /// a part of `input_tokens`, as the cached part is, so the reading is still the prompt.
    #[test]
    fn cache_writes_are_a_part_of_the_input() {
        let out = adapt(&[
            json!({"timestamp":"t0","type":"session_meta","payload":{"id":"cx"}}),
            json!({"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{
                "total_token_usage":{"total_tokens":900},
                "last_token_usage":{"input_tokens":800,"cached_input_tokens":500,"cache_write_input_tokens":200,"output_tokens":3}}}}),
        ]);
        let usage = &out
            .iter()
            .find(|f| f["type"] == "assistant/message")
            .unwrap()["usage"];
        assert_eq!(
            (
                &usage["input_tokens"],
                &usage["cache_read_input_tokens"],
                &usage["cache_creation_input_tokens"]
            ),
            (&json!(100), &json!(500), &json!(200))
        );
    }

    /// Codex ≥ 0.145 writes `session_meta` again on every resume, the same id: the same
    /// session, its numbering and surface going on.
    #[test]
    fn session_meta_again_is_the_same_session() {
        let meta =
            json!({"timestamp":"t0","type":"session_meta","payload":{"id":"cx","session_id":"cx"}});
        let user = |t: &str| json!({"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":t}]}});
        let out = adapt(&[meta.clone(), user("one"), meta, user("two")]);
        let seqs: Vec<u64> = out.iter().map(|f| f["seq"].as_u64().unwrap()).collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
        assert!(out.iter().all(|f| f["session_id"] == "cx"));
    }
}
