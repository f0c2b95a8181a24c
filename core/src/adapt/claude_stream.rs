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
//!   serves each as itself (contract §2).
//! - `result` lines, other stream events and anything else pass through as
//!   `claude-stream/<type>[/<subtype>]`.

use super::build::{Adapting, Id, fingerprint};
use super::claude;
use super::line::{Line, at, str_at};
use crate::estimate::estimate;
use crate::frame::NAME_BYTES;
use crate::frame::kind::{COMPACT_START, REQUEST_HEADER};
use crate::json;

pub(crate) fn adapt(cx: &mut Adapting, line: &Line) {
    let stamp = line.get("timestamp");
    let uuid = line.str_raw("uuid");
    let id = || uuid.map_or(Id::Numbered, Id::Raw);
    let parent = line.str("parent_tool_use_id");
    let parent = parent.as_deref();
    if parent.is_none() {
        claude::not_in_log(cx, stamp);
    }
    let kind = line.str("type").unwrap_or_default();
    let subtype = line.str("subtype");
    match (&*kind, subtype.as_deref()) {
        ("system", Some("init")) => {
            let mut f = cx.frame(REQUEST_HEADER, id(), stamp, parent);
            if let Some(t) = line.get("tools") {
                f.raw("tools", t);
            }
            f.extra_str("source_type", "system/init");
            if let Some(m) = line
                .str("model")
                .filter(|m| !m.is_empty() && m.len() <= NAME_BYTES)
            {
                cx.st.model = Some(fingerprint(&m));
                f.string("model", &m);
            }
            f.source(line, &["tools"], &[]);
            cx.emit(f);
        }
        ("system", Some("compact_boundary")) => {
            let mut f = cx.frame(COMPACT_START, id(), stamp, parent);
            claude::compaction(&mut f, line.object("compact_metadata"), "pre_tokens");
            claude::restore_tokens(cx, &mut f);
            f.extra_str("source_type", "system/compact_boundary");
            f.source(line, &[], &[]);
            cx.emit(f);
        }
        ("assistant" | "user", _) if line.object("message").is_some() => {
            let msg = line.object("message").unwrap_or("{}");
            if kind == "assistant" && parent.is_none() {
                claude::announce(cx, msg, None, stamp);
            }
            if kind == "user" && parent.is_none() {
                claude::touched(cx, line.object("tool_use_result"));
            }
            let mut f = claude::message(cx, &kind, msg, id(), stamp, parent, false);
            f.extra_str("source_type", &kind);
            cx.emit(f);
        }
        ("stream_event", _) => {
            let event = line.get("event");
            let event_type = str_at(event, "type");
            let delta = at(event, "delta");
            let thinking = at(delta, "thinking").filter(|t| {
                event_type.as_deref() == Some("content_block_delta")
                    && str_at(delta, "type").as_deref() == Some("thinking_delta")
                    && json::is_string(t)
            });
            match thinking {
                Some(text) => {
                    let mut canonical = Vec::with_capacity(text.len());
                    json::canonical_into(&mut canonical, text);
                    let mut f = cx.frame("thinking/tokens", id(), stamp, parent);
                    f.uint("estimated_tokens_delta", estimate(&canonical));
                    f.extra_str("source_type", "stream_event/thinking_delta");
                    if let Some(i) = at(event, "index") {
                        f.extra_raw("index", i);
                    }
                    cx.emit(f);
                }
                None => {
                    cx.pass_through(line, event_type.as_deref(), id(), stamp, parent);
                }
            }
        }
        _ => {
            cx.pass_through(line, subtype.as_deref(), id(), stamp, parent);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::adapt::{Input, adapt_logged};

    fn adapt(lines: &[Value]) -> Vec<Value> {
        adapt_logged(Input::ClaudeStream, lines)
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
