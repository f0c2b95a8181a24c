//! `claude -p --output-format stream-json --verbose` (and `--include-partial-messages`).
//!
//! - `system`/`init` becomes the `request/header` (its `tools`; the rest of the line under
//!   `source`). The init names the tools only, so `toolsTokens` prices the names, not the
//!   schemas the provider is sent.
//! - `assistant` and `user` lines map as Claude Code's do (one frame per content block, the
//!   usage a sample once per `message.id`); a string `parent_tool_use_id` makes the frame a
//!   sub-agent dispatch's (`extras.parent_tool_use_id`).
//! - `stream_event` thinking deltas (`content_block_delta` with a `thinking_delta`) become
//!   `thinking/tokens` counters, `estimated_tokens_delta` = the estimate of the delta's text as
//!   a JSON string. The stream has no timestamps, so these counters are unstamped: the fold
//!   serves each as itself (SPEC §2).
//! - `result` lines, other stream events and anything else pass through as
//!   `claude-stream/<type>[/<subtype>]`.

use serde_json::{Map, Value};

use super::{Cx, claude_message, kind_of, str_at};
use crate::estimate::estimate;

pub(crate) fn adapt(cx: &mut Cx, mut line: Map<String, Value>) {
    let stamp = line.get("timestamp").cloned();
    let stamp = stamp.as_ref();
    let uuid = str_at(&line, "uuid").map(str::to_owned);
    let uuid = uuid.as_deref();
    let parent = str_at(&line, "parent_tool_use_id").map(str::to_owned);
    let parent = parent.as_deref();
    let kind = str_at(&line, "type").unwrap_or("").to_owned();
    let subtype = str_at(&line, "subtype").map(str::to_owned);
    match (kind.as_str(), subtype.as_deref()) {
        ("system", Some("init")) => {
            let mut f = cx.frame("request/header", uuid, stamp, parent);
            if let Some(t) = line.remove("tools") {
                f.set("tools", t);
            }
            f.extra("source_type", "system/init".into());
            if let Some(m) = line.get("model") {
                f.extra("model", m.clone());
            }
            f.source(line);
            cx.emit(f);
        }
        ("system", Some("compact_boundary")) => {
            let mut f = cx.frame("compact/start", uuid, stamp, parent);
            f.extra("source_type", "system/compact_boundary".into());
            f.source(line);
            cx.emit(f);
        }
        ("assistant" | "user", _) if line.get("message").is_some_and(Value::is_object) => {
            let Some(Value::Object(msg)) = line.remove("message") else {
                return;
            };
            let mut f = claude_message(cx, &kind, msg, uuid, stamp, parent);
            f.extra("source_type", kind.as_str().into());
            cx.emit(f);
        }
        ("stream_event", _) => {
            let event = line.get("event");
            let event_type = event
                .and_then(|e| e.get("type"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let thinking = event
                .filter(|_| event_type.as_deref() == Some("content_block_delta"))
                .and_then(|e| e.get("delta"))
                .filter(|d| d.get("type").and_then(Value::as_str) == Some("thinking_delta"))
                .and_then(|d| d.get("thinking"))
                .filter(|t| t.is_string());
            if let Some(text) = thinking {
                let delta = estimate(&serde_json::to_vec(text).unwrap_or_default());
                let index = event.and_then(|e| e.get("index")).cloned();
                let mut f = cx.frame("thinking/tokens", uuid, stamp, parent);
                f.set("estimated_tokens_delta", delta.into());
                f.extra("source_type", "stream_event/thinking_delta".into());
                if let Some(i) = index {
                    f.extra("index", i);
                }
                cx.emit(f);
            } else {
                let kind = kind_of(&line, event_type.as_deref());
                cx.pass_through(&kind, uuid, stamp, parent, line);
            }
        }
        _ => {
            let kind = kind_of(&line, subtype.as_deref());
            cx.pass_through(&kind, uuid, stamp, parent, line);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::adapt::{Input, adapt_values};

    fn adapt(lines: &[Value]) -> Vec<Value> {
        adapt_values(Input::ClaudeStream, lines)
    }

    #[test]
    fn init_dispatch_thinking_result() {
        let out = adapt(&[
            json!({"type":"system","subtype":"init","session_id":"s","uuid":"i","tools":["Task","Bash"],"model":"m"}),
            json!({"type":"stream_event","session_id":"s","uuid":"e1","parent_tool_use_id":null,
                   "event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think."}}}),
            json!({"type":"stream_event","session_id":"s","uuid":"e2","parent_tool_use_id":null,
                   "event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}}),
            json!({"type":"user","session_id":"s","uuid":"u1","parent_tool_use_id":"toolu_T",
                   "message":{"role":"user","content":[{"type":"text","text":"sub task"}]}}),
            json!({"type":"result","subtype":"success","session_id":"s","uuid":"r","usage":{"input_tokens":6}}),
        ]);
        assert_eq!(out[0]["type"], "request/header");
        assert_eq!(out[0]["tools"], json!(["Task", "Bash"]));
        assert!(out[0]["source"].get("tools").is_none());
        assert_eq!(out[1]["type"], "thinking/tokens");
        // "\"Let me think.\"" is 15 chars: 4 tokens.
        assert_eq!(out[1]["estimated_tokens_delta"], 4);
        assert!(out[1].get("timestamp").is_none());
        assert_eq!(
            out[2]["type"],
            "claude-stream/stream_event/content_block_delta"
        );
        assert_eq!(out[3]["extras"]["parent_tool_use_id"], "toolu_T");
        assert_eq!(out[4]["type"], "claude-stream/result/success");
        assert!(
            out[4].get("usage").is_none(),
            "a result's usage is no sample"
        );
        assert_eq!(out[4]["source"]["usage"]["input_tokens"], 6);
    }
}
