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
//!   it changes.
//! - `compacted` becomes `compact/start` and the `user/message` carrying the
//!   `replacement_history` whose `replaces` spans the surface; `event_msg`/`context_compacted`
//!   becomes `compact/end`.
//! - `turn_context`, the UI's `event_msg`s (copies of response items) and anything else pass
//!   through as `codex/<type>[/<payload type>]`.
//!
//! Codex writes a response's items before its `token_count`, so a sample is anchored after
//! its own response joined the surface: until the next reading the projection leaves out that
//! response (its output tokens). The accuracy report measures what that costs.

use serde_json::{Map, Value, json};

use super::{Cx, State, kind_of, str_at};

pub(crate) fn adapt(cx: &mut Cx, mut line: Map<String, Value>) {
    let stamp = line.get("timestamp").cloned();
    let stamp = stamp.as_ref();
    let kind = str_at(&line, "type").unwrap_or("").to_owned();
    let payload_type = line
        .get("payload")
        .and_then(|p| p.get("type"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let payload_is_object = line.get("payload").is_some_and(Value::is_object);
    match (kind.as_str(), payload_type.as_deref()) {
        ("session_meta", _) if payload_is_object => session_meta(cx, line, stamp),
        ("response_item", Some(t)) => {
            let kind = match t {
                "message" => None,
                "reasoning" => Some("assistant/reasoning"),
                "function_call" | "custom_tool_call" | "local_shell_call" | "web_search_call"
                | "tool_search_call" => Some("tool/call"),
                "function_call_output"
                | "custom_tool_call_output"
                | "local_shell_call_output"
                | "tool_search_output" => Some("tool/result"),
                _ => {
                    let kind = kind_of(&line, Some(t));
                    return cx.pass_through(&kind, None, stamp, None, line);
                }
            };
            let Some(Value::Object(mut item)) = line.remove("payload") else {
                return;
            };
            let (kind, message) = match kind {
                Some(k) => (k.to_owned(), Value::Object(item.clone())),
                None => {
                    let role = str_at(&item, "role").unwrap_or("user").to_owned();
                    let content = item.remove("content").unwrap_or(Value::Null);
                    (format!("{role}/message"), content)
                }
            };
            let mut f = cx.frame(&kind, None, stamp, None);
            f.set("message", message);
            f.extra("source_type", format!("response_item/{t}").into());
            if let Some(p) = item.get("phase") {
                f.extra("phase", p.clone());
            }
            if let Some(c) = item.get("call_id") {
                f.extra("call_id", c.clone());
            }
            cx.emit(f);
        }
        ("compacted", _) if payload_is_object => {
            let mut start = cx.frame("compact/start", None, stamp, None);
            start.extra("source_type", "compacted".into());
            cx.emit(start);
            let Some(Value::Object(mut payload)) = line.remove("payload") else {
                return;
            };
            let summary = payload.remove("message");
            let mut f = cx.frame("user/message", None, stamp, None);
            f.extra("source_type", "compacted".into());
            let message = match payload.remove("replacement_history") {
                Some(h) => {
                    if let Some(s) = summary {
                        f.extra("summary", s);
                    }
                    h
                }
                None => summary.unwrap_or(Value::Null),
            };
            cx.emit_replacement(f, message);
        }
        ("event_msg", Some("token_count")) => token_count(cx, line, stamp),
        ("event_msg", Some("task_started")) => {
            let window = line
                .get("payload")
                .and_then(|p| p.get("model_context_window"))
                .and_then(Value::as_u64)
                .filter(|w| *w >= 1);
            match window {
                Some(w) => {
                    cx.st.window = Some(w);
                    let mut f = cx.frame("request/header", None, stamp, None);
                    f.set("context_window", w.into());
                    f.extra("source_type", "event_msg/task_started".into());
                    f.source(line);
                    cx.emit(f);
                }
                None => {
                    let kind = kind_of(&line, payload_type.as_deref());
                    cx.pass_through(&kind, None, stamp, None, line);
                }
            }
        }
        ("event_msg", Some("context_compacted")) => {
            let mut f = cx.frame("compact/end", None, stamp, None);
            f.extra("source_type", "event_msg/context_compacted".into());
            cx.emit(f);
        }
        _ => {
            let kind = kind_of(&line, payload_type.as_deref());
            cx.pass_through(&kind, None, stamp, None, line);
        }
    }
}

fn session_meta(cx: &mut Cx, mut line: Map<String, Value>, stamp: Option<&Value>) {
    let id = line
        .get("payload")
        .and_then(|p| p.get("id"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(id) = id {
        if cx.st.session_id.as_ref().is_some_and(|s| *s != id) {
            // Another rollout in the same stream: a new session.
            *cx.st = State::default();
        }
        cx.st.session_id = Some(id.clone());
        cx.session = Some(id);
    }
    let system = line
        .get_mut("payload")
        .and_then(Value::as_object_mut)
        .and_then(|p| p.remove("base_instructions"));
    let mut f = cx.frame("request/header", None, stamp, None);
    if let Some(s) = system {
        f.set("system", s);
    }
    f.extra("source_type", "session_meta".into());
    f.source(line);
    cx.emit(f);
}

fn token_count(cx: &mut Cx, line: Map<String, Value>, stamp: Option<&Value>) {
    let info = line
        .get("payload")
        .and_then(|p| p.get("info"))
        .filter(|i| i.is_object());
    let n = |o: Option<&Value>, k: &str| o.and_then(|o| o.get(k)).and_then(Value::as_u64);
    let last = info.and_then(|i| i.get("last_token_usage"));
    let input = n(last, "input_tokens").unwrap_or(0);
    let cached = n(last, "cached_input_tokens").unwrap_or(0).min(input);
    let output = n(last, "output_tokens");
    let reasoning = n(last, "reasoning_output_tokens");
    let total = n(
        info.and_then(|i| i.get("total_token_usage")),
        "total_tokens",
    );
    let window = n(info, "model_context_window").filter(|w| *w >= 1);

    if let Some(w) = window.filter(|w| cx.st.window != Some(*w)) {
        cx.st.window = Some(w);
        let mut h = cx.frame("request/header", None, stamp, None);
        h.set("context_window", w.into());
        h.extra("source_type", "event_msg/token_count".into());
        cx.emit(h);
    }
    let repeat = total.is_some() && total == cx.st.total;
    if total.is_some() {
        cx.st.total = total;
    }
    if input == 0 || repeat {
        let kind = kind_of(&line, Some("token_count"));
        return cx.pass_through(&kind, None, stamp, None, line);
    }
    let mut f = cx.frame("assistant/message", None, stamp, None);
    let mut usage = json!({
        "input_tokens": input - cached,
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": 0,
    });
    if let Some(o) = output {
        usage["output_tokens"] = o.into();
    }
    f.set("usage", usage);
    f.extra("source_type", "event_msg/token_count".into());
    if let Some(r) = reasoning {
        f.extra("reasoning_output_tokens", r.into());
    }
    f.source(line);
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
}
