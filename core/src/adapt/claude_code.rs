//! Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`, and the
//! sub-agents' `<session>/subagents/agent-*.jsonl`).
//!
//! - `assistant` and `user` lines: one frame each (Claude Code writes one line per content
//!   block): `assistant/message`, `user/message`, or `tool/result` when the content is all
//!   `tool_result` blocks; `message` = the message's `content`. The response's `usage`,
//!   repeated on each of its lines, is a sample once per `message.id` (the first line, so it
//!   is anchored before any of the response joins the surface); the repeats keep it in
//!   `extras.usage`.
//! - Sub-agents: a `progress` line with `data.type` `agent_progress` carries a copy of a
//!   sub-agent's message (with its own usage) while its `isSidechain` stays false: it becomes
//!   that message's frame with `extras.parent_tool_use_id` = the line's `parentToolUseID` (the
//!   Task call). Every `isSidechain: true` line (a sub-agent's own file) is a sub-agent frame
//!   too, its `parent_tool_use_id` `agent-<agentId>` (those lines name the agent, not the call).
//! - Compaction: `system`/`compact_boundary` becomes `compact/start`; the `user` line with
//!   `isCompactSummary` that follows becomes the `user/message` whose `replaces` spans the
//!   surface it replaced, then a `compact/end`.
//! - Everything else (hook and bash progress, file-history snapshots, other system lines,
//!   types to come) passes through as `claude-code/<type>[/<subtype>]`.

use serde_json::{Map, Value};

use super::{Cx, claude_message, kind_of, str_at};

pub(crate) fn adapt(cx: &mut Cx, mut line: Map<String, Value>) {
    let stamp = line.get("timestamp").cloned();
    let stamp = stamp.as_ref();
    let uuid = str_at(&line, "uuid").map(str::to_owned);
    let uuid = uuid.as_deref();
    let agent = str_at(&line, "agentId").map(str::to_owned);
    let sidechain = line.get("isSidechain") == Some(&Value::Bool(true));
    let parent = sidechain.then(|| match (&agent, str_at(&line, "parentToolUseID")) {
        (Some(a), _) => format!("agent-{a}"),
        (None, Some(p)) => p.to_owned(),
        (None, None) => "sidechain".to_owned(),
    });
    let parent = parent.as_deref();
    let kind = str_at(&line, "type").unwrap_or("").to_owned();
    match kind.as_str() {
        "assistant" | "user" if line.get("message").is_some_and(Value::is_object) => {
            let Some(Value::Object(mut msg)) = line.remove("message") else {
                return;
            };
            let summary = kind == "user"
                && !sidechain
                && line.get("isCompactSummary") == Some(&Value::Bool(true));
            if summary {
                let content = msg.remove("content").unwrap_or(Value::Null);
                let mut f = cx.frame("user/message", uuid, stamp, None);
                f.extra("source_type", "user".into())
                    .extra("compact_summary", true.into());
                cx.emit_replacement(f, content);
                let end_id = uuid.map(|u| format!("{u}#end"));
                let mut end = cx.frame("compact/end", end_id.as_deref(), stamp, None);
                end.extra("source_type", "user".into());
                cx.emit(end);
                return;
            }
            let mut f = claude_message(cx, &kind, msg, uuid, stamp, parent);
            f.extra("source_type", kind.as_str().into());
            if let Some(a) = agent {
                f.extra("agent_id", a.into());
            }
            if line.get("isMeta") == Some(&Value::Bool(true)) {
                f.extra("is_meta", true.into());
            }
            cx.emit(f);
        }
        "progress" => {
            let data_type = line
                .get("data")
                .and_then(|d| d.get("type"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let nested = line
                .get("data")
                .and_then(|d| d.get("message"))
                .filter(|m| m.get("message").is_some_and(Value::is_object))
                .is_some();
            if data_type.as_deref() == Some("agent_progress") && nested {
                let Some(Value::Object(mut data)) = line.remove("data") else {
                    return;
                };
                let Some(Value::Object(mut nested)) = data.remove("message") else {
                    return;
                };
                let Some(Value::Object(msg)) = nested.remove("message") else {
                    return;
                };
                let data_agent = str_at(&data, "agentId").map(str::to_owned);
                let call = str_at(&line, "parentToolUseID")
                    .map(str::to_owned)
                    .or_else(|| data_agent.as_ref().map(|a| format!("agent-{a}")))
                    .unwrap_or_else(|| "agent".to_owned());
                let role = match str_at(&nested, "type") {
                    Some("assistant") => "assistant",
                    _ => "user",
                };
                let mut f = claude_message(cx, role, msg, uuid, stamp, Some(&call));
                f.extra("source_type", "progress/agent_progress".into());
                if let Some(a) = data_agent {
                    f.extra("agent_id", a.into());
                }
                if let Some(u) = nested.remove("uuid") {
                    f.extra("nested_uuid", u);
                }
                cx.emit(f);
            } else {
                let kind = kind_of(&line, data_type.as_deref());
                cx.pass_through(&kind, uuid, stamp, parent, line);
            }
        }
        "system" if !sidechain && str_at(&line, "subtype") == Some("compact_boundary") => {
            let mut f = cx.frame("compact/start", uuid, stamp, None);
            f.extra("source_type", "system/compact_boundary".into());
            if let Some(m) = line.remove("compactMetadata") {
                f.extra("compact_metadata", m);
            }
            cx.emit(f);
        }
        _ => {
            let sub = str_at(&line, "subtype").map(str::to_owned);
            let kind = kind_of(&line, sub.as_deref());
            cx.pass_through(&kind, uuid, stamp, parent, line);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::adapt::{Input, adapt_values};

    fn adapt(lines: &[Value]) -> Vec<Value> {
        adapt_values(Input::ClaudeCode, lines)
    }

    fn assistant(uuid: &str, mid: &str, block: Value, input: u64) -> Value {
        json!({"type":"assistant","sessionId":"s","uuid":uuid,"timestamp":"t",
               "message":{"id":mid,"role":"assistant","model":"m","content":[block],
                          "usage":{"input_tokens":input,"cache_read_input_tokens":100,"cache_creation_input_tokens":10,"output_tokens":1}}})
    }

    #[test]
    fn usage_once_per_message_id() {
        let out = adapt(&[
            json!({"type":"user","sessionId":"s","uuid":"u0","message":{"role":"user","content":"hi"}}),
            assistant("a1", "m1", json!({"type":"text","text":"a"}), 3),
            assistant("a2", "m1", json!({"type":"tool_use","id":"t1"}), 3),
            json!({"type":"user","sessionId":"s","uuid":"u1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]},"toolUseResult":{"big":"copy"}}),
            assistant("a3", "m2", json!({"type":"text","text":"b"}), 4),
        ]);
        let kinds: Vec<&str> = out.iter().map(|f| f["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "user/message",
                "assistant/message",
                "assistant/message",
                "tool/result",
                "assistant/message"
            ]
        );
        assert!(out[1].get("usage").is_some());
        assert!(out[2].get("usage").is_none());
        assert_eq!(out[2]["extras"]["usage"]["input_tokens"], 3);
        assert!(out[4].get("usage").is_some());
        assert!(out[3].get("toolUseResult").is_none() && out[3].get("source").is_none());
        let seqs: Vec<u64> = out.iter().map(|f| f["seq"].as_u64().unwrap()).collect();
        assert_eq!(seqs, [0, 1, 2, 3, 4]);
        assert_eq!(out[0]["id"], "u0");
        assert_eq!(out[0]["session_id"], "s");
        assert_eq!(out[0]["message"], "hi");
    }

    #[test]
    fn sub_agents_in_both_disguises() {
        let out = adapt(&[
            json!({"type":"progress","sessionId":"s","uuid":"p1","isSidechain":false,"parentToolUseID":"toolu_T",
                   "data":{"type":"agent_progress","agentId":"a7","message":{"type":"assistant","uuid":"n1",
                   "message":{"id":"sm1","role":"assistant","content":[{"type":"text","text":"sub"}],"usage":{"input_tokens":9}}}}}),
            json!({"type":"progress","sessionId":"s","uuid":"p2","isSidechain":false,"parentToolUseID":"toolu_B",
                   "data":{"type":"bash_progress","output":"..."}}),
            json!({"type":"user","sessionId":"s","uuid":"c1","isSidechain":true,"agentId":"a7","message":{"role":"user","content":"task"}}),
            json!({"type":"progress","sessionId":"s","uuid":"c2","isSidechain":true,"agentId":"a7","parentToolUseID":"hook",
                   "data":{"type":"hook_progress"}}),
        ]);
        assert_eq!(out[0]["type"], "assistant/message");
        assert_eq!(out[0]["extras"]["parent_tool_use_id"], "toolu_T");
        assert_eq!(out[0]["extras"]["agent_id"], "a7");
        assert_eq!(out[0]["usage"]["input_tokens"], 9);
        // Bash progress belongs to the main agent's own tool call.
        assert_eq!(out[1]["type"], "claude-code/progress/bash_progress");
        assert!(out[1]["extras"].get("parent_tool_use_id").is_none());
        assert_eq!(out[2]["extras"]["parent_tool_use_id"], "agent-a7");
        assert_eq!(out[3]["type"], "claude-code/progress/hook_progress");
        assert_eq!(out[3]["extras"]["parent_tool_use_id"], "agent-a7");
    }

    #[test]
    fn a_line_of_no_session_has_no_seq() {
        let out = adapt(&[
            json!({"type":"file-history-snapshot","messageId":"x"}),
            json!({"type":"user","sessionId":"s","uuid":"u0","message":{"role":"user","content":"one"}}),
            json!({"type":"file-history-snapshot","messageId":"y"}),
        ]);
        assert!(out[0].get("seq").is_none() && out[0].get("session_id").is_none());
        assert_eq!(out[1]["seq"], 0);
        // A later line that names none belongs to the session before it.
        assert_eq!(out[2]["seq"], 1);
        assert_eq!(out[2]["session_id"], "s");
    }

    #[test]
    fn compaction_replaces_the_surface() {
        let out = adapt(&[
            json!({"type":"user","sessionId":"s","uuid":"u0","message":{"role":"user","content":"one"}}),
            json!({"type":"file-history-snapshot","messageId":"x"}),
            assistant("a1", "m1", json!({"type":"text","text":"two"}), 3),
            json!({"type":"system","subtype":"compact_boundary","sessionId":"s","uuid":"b","compactMetadata":{"preTokens":5}}),
            json!({"type":"user","sessionId":"s","uuid":"sum","isCompactSummary":true,"message":{"role":"user","content":"summary"}}),
            json!({"type":"user","sessionId":"s","uuid":"u9","message":{"role":"user","content":"after"}}),
            json!({"type":"system","subtype":"compact_boundary","sessionId":"s","uuid":"b2"}),
            json!({"type":"user","sessionId":"s","uuid":"sum2","isCompactSummary":true,"message":{"role":"user","content":"again"}}),
        ]);
        assert_eq!(out[1]["type"], "claude-code/file-history-snapshot");
        assert_eq!(out[1]["id"], "s#1");
        assert_eq!(out[3]["type"], "compact/start");
        assert_eq!(out[3]["extras"]["compact_metadata"]["preTokens"], 5);
        assert_eq!(out[4]["type"], "user/message");
        assert_eq!(out[4]["replaces"], json!({"from_seq":0,"to_seq":2}));
        assert_eq!(out[5]["type"], "compact/end");
        assert_eq!(out[5]["id"], "sum#end");
        // The second compaction replaces the first summary through what followed it.
        assert_eq!(out[8]["replaces"], json!({"from_seq":4,"to_seq":6}));
    }
}
