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
//! - Compaction: `system`/`compact_boundary` becomes `compact/start` (with `restore_shown` once
//!   the session's log writes what comes back: an `attachment` line was seen, or the boundary
//!   carries `postTokens`); the `user` line with `isCompactSummary` that follows becomes the
//!   `user/message` whose `replaces` spans the surface it replaced, then a `compact/end`.
//! - The window and the compaction reserve: before a main assistant line, a `request/header`
//!   whenever what the model name, the readings or the `version` say of them changed
//!   ([`claude::announce`]).
//! - Everything else (hook and bash progress, file-history snapshots, other system lines,
//!   types to come) passes through as `claude-code/<type>[/<subtype>]`.

use super::build::{Adapting, Id, content_chars, fingerprint};
use super::census::{self, Treatment};
use super::claude;
use super::line::{Line, at, str_at};
use crate::frame::kind::{COMPACT_END, COMPACT_START, REQUEST_HEADER, USER_MESSAGE};

/// The frame type of an `attachment` line.
const ATTACHMENT: &str = "claude-code/attachment";

pub(crate) fn adapt(cx: &mut Adapting, line: &Line) {
    let stamp = line.get("timestamp");
    let uuid = line.str_raw("uuid");
    let id = || uuid.map_or(Id::Numbered, Id::Raw);
    let agent = line.str("agentId");
    let sidechain = line.is_true("isSidechain");
    let parent = sidechain.then(|| match (&agent, line.str("parentToolUseID")) {
        (Some(a), _) => format!("agent-{a}"),
        (None, Some(p)) => p.into_owned(),
        (None, None) => "sidechain".to_owned(),
    });
    let parent = parent.as_deref();
    if parent.is_none() {
        claude::not_in_log(cx, stamp);
        if !cx.st.sent.on
            && line
                .str("version")
                .is_some_and(|v| claude::writes_requests(&v))
        {
            cx.st.sent.on = true;
        }
    }
    let kind = line.str("type").unwrap_or_default();
    match &*kind {
        "assistant" | "user" if line.object("message").is_some() => {
            let msg = line.object("message").unwrap_or("{}");
            if kind == "user" && !sidechain && line.is_true("isCompactSummary") {
                let mut f = cx.frame(USER_MESSAGE, id(), stamp, None);
                f.extra_str("source_type", "user")
                    .extra_raw("compact_summary", "true");
                if cx.st.sent.on {
                    // The request after it carries the summary and what is kept, each as it
                    // was sent: the replacement is the whole surface, and leaves nothing.
                    cx.st.keep = None;
                    f.extra_raw("held_for_request", "true");
                    cx.replace(f);
                    let sent = &mut cx.st.sent;
                    sent.reset = true;
                    sent.pending.clear();
                    sent.pending_id = None;
                } else {
                    cx.emit_replacement(f, at(Some(msg), "content").unwrap_or("null"));
                }
                let end_id = match line.str("uuid") {
                    Some(u) => Id::Text(format!("{u}#end")),
                    None => Id::Numbered,
                };
                let mut end = cx.frame(COMPACT_END, end_id, stamp, None);
                end.extra_str("source_type", "user");
                cx.emit(end);
                return;
            }
            if kind == "assistant" && parent.is_none() {
                claude::announce(cx, msg, line.str("version").as_deref(), stamp);
            }
            if kind == "user" && parent.is_none() {
                claude::touched(cx, line.object("toolUseResult"));
            }
            let held = parent.is_none() && cx.st.sent.on;
            let reading = held && kind == "assistant" && claude::gives_reading(cx, msg);
            if reading && !cx.st.sent.requested {
                // The reading's request went unwritten: it carried what waits.
                unlogged_request(cx, stamp);
            }
            let mut f = claude::message(cx, &kind, msg, id(), stamp, parent, held);
            if held {
                let content = at(Some(msg), "content").unwrap_or("null");
                let same = match kind.as_ref() {
                    "assistant" => str_at(Some(msg), "id").map(|i| fingerprint(&i)),
                    _ => None,
                };
                cx.st.sent.wait(content_chars(content), same);
            }
            if reading {
                cx.st.sent.requested = false;
            }
            f.extra_str("source_type", &kind);
            if let Some(a) = &agent {
                f.extra_str("agent_id", a);
            }
            if line.is_true("isMeta") {
                f.extra_raw("is_meta", "true");
            }
            cx.emit(f);
        }
        "progress" => {
            let data = line.get("data");
            let data_type = str_at(data, "type");
            let nested = at(data, "message");
            let msg = at(nested, "message").filter(|m| m.starts_with('{'));
            match (data_type.as_deref(), msg) {
                (Some("agent_progress"), Some(msg)) => {
                    let data_agent = str_at(data, "agentId");
                    let call = match (line.str("parentToolUseID"), &data_agent) {
                        (Some(p), _) => p.into_owned(),
                        (None, Some(a)) => format!("agent-{a}"),
                        (None, None) => "agent".to_owned(),
                    };
                    let role = match str_at(nested, "type").as_deref() {
                        Some("assistant") => "assistant",
                        _ => "user",
                    };
                    let mut f = claude::message(cx, role, msg, id(), stamp, Some(&call), false);
                    f.extra_str("source_type", "progress/agent_progress");
                    if let Some(a) = &data_agent {
                        f.extra_str("agent_id", a);
                    }
                    if let Some(u) = at(nested, "uuid") {
                        f.extra_raw("nested_uuid", u);
                    }
                    cx.emit(f);
                }
                _ => {
                    cx.pass_through(line, data_type.as_deref(), id(), stamp, parent);
                }
            }
        }
        "system" if !sidechain && line.str("subtype").as_deref() == Some("compact_boundary") => {
            let meta = line.object("compactMetadata");
            let head = str_at(at(meta, "preservedSegment"), "headUuid");
            if let Some(h) = head {
                cx.st.keep_from(fingerprint(&h));
            }
            // Versions that write `postTokens` write what comes back as attachment lines.
            if at(meta, "postTokens").is_some() {
                cx.st.shows_restore = true;
            }
            let mut f = cx.frame(COMPACT_START, id(), stamp, None);
            claude::compaction(&mut f, meta, "preTokens");
            if cx.st.shows_restore {
                f.json("restore_shown", "true");
            } else {
                claude::restore_tokens(cx, &mut f);
            }
            f.extra_str("source_type", "system/compact_boundary");
            if let Some(m) = meta {
                f.extra_raw("compact_metadata", m);
            }
            cx.emit(f);
        }
        // What the agent attaches to the context (files read again after a compaction, skill
        // and tool listings, reminders): context the provider counts, so it joins the surface.
        "attachment" if line.object("attachment").is_some() => {
            if parent.is_none() {
                cx.st.shows_restore = true;
            }
            let attachment = line.object("attachment").unwrap_or("{}");
            let (_, treatment) = census::attachment_line(line);
            let mut f = cx.frame(ATTACHMENT, id(), stamp, parent);
            match treatment {
                // Shown to the user or kept by Claude Code, or priced with the request that
                // carries it: carried, never priced here.
                _ if treatment == Treatment::PassedOver || cx.st.sent.on => {
                    f.raw("attachment", attachment);
                }
                // A hook's output: what it adds to the context is its `content`.
                _ if str_at(Some(attachment), "type").as_deref() == Some("hook_success") => {
                    f.raw("message", at(Some(attachment), "content").unwrap_or("null"));
                }
                _ => {
                    f.raw("message", attachment);
                }
            }
            f.extra_str("source_type", "attachment");
            if let Some(t) = str_at(Some(attachment), "type") {
                f.extra_str("attachment_type", &t);
            }
            if treatment == Treatment::Unknown {
                f.extra_raw("unknown_kind", "true");
            }
            cx.emit(f);
        }
        "api-request-shape" if parent.is_none() => request_shape(cx, line, stamp),
        "api-request-blob" if parent.is_none() => {
            let message = line.object("message");
            if let Some(hash) = line.str("hash") {
                let chars = content_chars(at(message, "content").unwrap_or("null"));
                cx.st.sent.keep_blob(fingerprint(&hash), chars);
            }
            cx.pass_through(line, None, id(), stamp, parent);
        }
        "api-request" if parent.is_none() => request(cx, line, stamp),
        _ => {
            let sub = line.str("subtype");
            cx.pass_through(line, sub.as_deref(), id(), stamp, parent);
        }
    }
}

/// An `api-request-shape` line: the system prompt and tools the session's requests carry, a
/// `request/header` when they changed (contract §3.1: the envelope, measured).
fn request_shape(cx: &mut Adapting, line: &Line, stamp: Option<&str>) {
    let shape = line.object("shape");
    let print = line.str("shapeHash").map(|h| fingerprint(&h));
    if shape.is_none() || print.is_none_or(|p| cx.st.sent.shape == Some(p)) {
        return cx.pass_through(line, None, Id::Numbered, stamp, None);
    }
    cx.st.sent.on = true;
    cx.st.sent.shape = print;
    let mut h = cx.frame(REQUEST_HEADER, Id::Numbered, stamp, None);
    h.raw("system", at(shape, "system").unwrap_or("null"));
    h.raw("tools", at(shape, "tools").unwrap_or("null"));
    h.extra_str("source_type", "api-request-shape");
    cx.emit(h);
}

/// The seed of the fingerprint of a request's message hashes in order.
const LISTED: u64 = 0xcbf2_9ce4_8422_2325;

/// `seed` followed by the fingerprints of `hashes`, in order.
fn listed(seed: u64, hashes: &[u64]) -> u64 {
    hashes.iter().fold(seed, |chain, h| {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&chain.to_le_bytes());
        bytes[8..].copy_from_slice(&h.to_le_bytes());
        crate::hash::fnv1a(&bytes)
    })
}

/// An `api-request` line: the request Claude Code sent, as the messages it kept of the last
/// one (`keep`) and the hashes of those it added (`tail`). What it added joins the surface as
/// one node, each message priced as it was sent: a blob's, or the next transcript message
/// waiting. A request that lists the last one's messages again from the start (a new process
/// resuming) adds only what follows them; after a compaction, all of it.
fn request(cx: &mut Adapting, line: &Line, stamp: Option<&str>) {
    let keep = line.get("keep").and_then(crate::json::uint).unwrap_or(0);
    let tail: Vec<u64> = line
        .get("tail")
        .filter(|t| t.starts_with('['))
        .map(|t| {
            crate::json::elements(t)
                .filter_map(crate::json::string)
                .map(|h| fingerprint(&h))
                .collect()
        })
        .unwrap_or_default();
    let sent = &mut cx.st.sent;
    sent.on = true;
    let relisted = |n: u64, chain: u64| {
        keep == 0 && tail.len() as u64 >= n && listed(LISTED, &tail[..n as usize]) == chain
    };
    let (new_from, dropped, chain) = match sent.listed {
        _ if sent.reset => (0, 0, listed(LISTED, &tail)),
        Some((n, chain)) if keep == n => (0, 0, listed(chain, &tail)),
        Some((n, chain)) if relisted(n, chain) => (n as usize, 0, listed(LISTED, &tail)),
        Some((n, _)) => (0, n.saturating_sub(keep), listed(LISTED ^ keep, &tail)),
        None => (0, 0, listed(LISTED ^ keep, &tail)),
    };
    let mut waiting = std::mem::take(&mut sent.pending).into_iter();
    let mut unmatched = 0u64;
    let added: Vec<u64> = tail[new_from..]
        .iter()
        .map(|h| {
            sent.blob(*h).or_else(|| waiting.next()).unwrap_or_else(|| {
                unmatched += 1;
                0
            })
        })
        .collect();
    let chars: u64 = added.iter().sum();
    // What the request lists, message by message: what it kept of the last, and what it added.
    let kept = if sent.reset {
        0
    } else if dropped > 0 {
        keep
    } else {
        sent.listed.map_or(0, |(n, _)| n)
    };
    sent.sizes = match sent.sizes.take() {
        Some(mut sizes) if (kept as usize) <= sizes.len() || sent.listed.is_none() => {
            sizes.truncate(kept as usize);
            sizes.extend(&added);
            (sizes.len() <= crate::adapt::state::LISTED).then_some(sizes)
        }
        None if sent.listed.is_none() || sent.reset => Some(added.clone()),
        _ => None,
    };
    let rewrite = (dropped > 0)
        .then(|| sent.sizes.as_ref().map(|s| s.iter().sum::<u64>()))
        .flatten();
    sent.listed = Some((keep.saturating_add(tail.len() as u64), chain));
    sent.reset = false;
    sent.requested = true;
    sent.pending_id = None;
    let mut f = cx.frame(REQUEST_FRAME, Id::Numbered, stamp, None);
    match rewrite {
        Some(all) => {
            f.chars(all);
        }
        None if chars > 0 => {
            f.chars(chars);
        }
        None => {}
    }
    f.extra_str("source_type", "api-request");
    f.extra_raw("messages_added", &added.len().to_string());
    if unmatched > 0 {
        f.extra_raw("messages_unknown", &unmatched.to_string());
    }
    if dropped > 0 {
        f.extra_raw("messages_dropped", &dropped.to_string());
    }
    let edits = at(at(line.object("params"), "context_management"), "edits");
    let unmodelled = census::unmodelled_clearing(edits);
    if !unmodelled.is_empty() {
        f.extra_str("clearing_not_modelled", &unmodelled.join(","));
    }
    if rewrite.is_some() {
        cx.rewrite(f);
    } else {
        cx.emit(f);
    }
}

/// A reading whose request the log did not write (a log that writes its requests, but not
/// this one): what waits is what it carried, one node before the reading.
fn unlogged_request(cx: &mut Adapting, stamp: Option<&str>) {
    let chars: u64 = std::mem::take(&mut cx.st.sent.pending).iter().sum();
    cx.st.sent.pending_id = None;
    if chars == 0 {
        return;
    }
    let mut f = cx.frame(REQUEST_FRAME, Id::Numbered, stamp, None);
    f.chars(chars);
    f.extra_str("source_type", "unlogged-request");
    cx.emit(f);
}

/// The frame type of a request the surface follows (contract §1: a pass-through type).
const REQUEST_FRAME: &str = "claude-code/api-request";

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::adapt::{Input, adapt_logged, adapt_values};

    fn adapt(lines: &[Value]) -> Vec<Value> {
        adapt_logged(Input::ClaudeCode, lines)
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
        // seq 0 and 2 are the inferred headers (the envelope, then the window of model `m`).
        assert_eq!(seqs, [1, 3, 4, 5, 6]);
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
        assert_eq!(out[1]["seq"], 1, "after the session's inferred header");
        // A later line that names none belongs to the session before it.
        assert_eq!(out[2]["seq"], 2);
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
        assert_eq!(out[1]["id"], "s#2");
        assert_eq!(out[3]["type"], "compact/start");
        assert_eq!(out[3]["extras"]["compact_metadata"]["preTokens"], 5);
        assert_eq!(out[4]["type"], "user/message");
        assert_eq!(out[4]["replaces"], json!({"from_seq":1,"to_seq":4}));
        assert_eq!(out[5]["type"], "compact/end");
        assert_eq!(out[5]["id"], "sum#end");
        // The second compaction replaces the first summary through what followed it.
        assert_eq!(out[8]["replaces"], json!({"from_seq":6,"to_seq":8}));
    }

    #[test]
    fn lines_serde_json_refuses_are_adapted() {
        // A lone surrogate (tool output cut inside an emoji), deep nesting, a huge number.
        let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
        let lines = [
            r#"{"type":"user","sessionId":"s","uuid":"u0","message":{"role":"user","content":"cut \ud83d here"}}"#.to_owned(),
            format!(r#"{{"type":"user","sessionId":"s","uuid":"u1","x":{deep},"message":{{"role":"user","content":"deep"}}}}"#),
            r#"{"type":"assistant","sessionId":"s","uuid":"u2","x":1e400,"message":{"id":"m","role":"assistant","content":[],"usage":{"input_tokens":7}}}"#.to_owned(),
        ];
        let mut a = crate::adapt::Adapter::new(Input::ClaudeCode, 10);
        let frames = a.adapt_all(lines.iter().map(|l| (None, l.as_bytes())));
        // The session's inferred header, then a frame a line.
        assert_eq!(frames.len(), 4);
        let frames = &frames[1..];
        let text = String::from_utf8(frames[0].clone()).unwrap();
        // The lone surrogate reads, and is priced, as the U+FFFD it stands for.
        assert!(text.contains("\"message\":\"cut \u{FFFD} here\""), "{text}");
        assert!(crate::Frame::parse(&frames[1]).unwrap().message().is_some());
        assert_eq!(
            crate::Frame::parse(&frames[2]).unwrap().usage(),
            Some(r#"{"input_tokens":7}"#)
        );
    }

    #[test]
    fn thinking_is_priced_without_its_signature() {
        let out = adapt(&[
            assistant(
                "a1",
                "m1",
                json!({"type":"thinking","thinking":"hmm","signature":"RXF1YWxseSBsb25nIGJhc2U2NA=="}),
                3,
            ),
            assistant("a2", "m1", json!({"type":"text","text":"ok"}), 3),
        ]);
        assert_eq!(
            out[0]["message"],
            json!([{"type":"thinking","thinking":"hmm"}])
        );
        assert_eq!(out[1]["message"], json!([{"type":"text","text":"ok"}]));
    }

    #[test]
    fn attachments_join_the_surface() {
        let out = adapt(&[
            json!({"type":"user","sessionId":"s","uuid":"u0","message":{"role":"user","content":"hi"}}),
            json!({"type":"attachment","sessionId":"s","uuid":"at1","timestamp":"t",
                   "attachment":{"type":"file","filename":"a.rs","content":{"type":"text","file":{"content":"fn main() {}"}}}}),
        ]);
        assert_eq!(out[1]["type"], "claude-code/attachment");
        assert_eq!(out[1]["seq"], 2);
        assert_eq!(out[1]["message"]["filename"], "a.rs");
        assert_eq!(out[1]["extras"]["attachment_type"], "file");
        assert!(out[1].get("source").is_none());
    }

    #[test]
    fn a_compaction_keeps_what_it_preserves_and_says_its_level() {
        let out = adapt(&[
            json!({"type":"user","sessionId":"s","uuid":"u0","message":{"role":"user","content":"one"}}),
            assistant("a1", "m1", json!({"type":"text","text":"two"}), 3),
            json!({"type":"user","sessionId":"s","uuid":"u2","message":{"role":"user","content":"three"}}),
            assistant("a3", "m2", json!({"type":"text","text":"four"}), 4),
            json!({"type":"system","subtype":"compact_boundary","sessionId":"s","uuid":"b",
                   "compactMetadata":{"trigger":"auto","preTokens":155241,"preservedSegment":{"headUuid":"u2","anchorUuid":"sum","tailUuid":"a3"}}}),
            json!({"type":"user","sessionId":"s","uuid":"sum","isCompactSummary":true,"message":{"role":"user","content":"summary"}}),
            json!({"type":"system","subtype":"compact_boundary","sessionId":"s","uuid":"b2","compactMetadata":{"trigger":"manual","preTokens":9}}),
            json!({"type":"user","sessionId":"s","uuid":"sum2","isCompactSummary":true,"message":{"role":"user","content":"again"}}),
        ]);
        assert_eq!(out[4]["type"], "compact/start");
        assert_eq!(
            (&out[4]["trigger"], &out[4]["preTokens"]),
            (&json!("auto"), &json!(155241))
        );
        // u2 and a3 stay verbatim: the summary replaces u0..a1 only.
        assert_eq!(out[5]["replaces"], json!({"from_seq":1,"to_seq":3}));
        // The next compaction keeps nothing: it replaces the summary through what was kept.
        assert_eq!(out[7]["trigger"], "manual");
        assert_eq!(out[8]["replaces"], json!({"from_seq":7,"to_seq":5}));
    }

    #[test]
    fn a_kept_head_it_does_not_remember_replaces_everything() {
        let mut lines = vec![
            json!({"type":"user","sessionId":"s","uuid":"u0","message":{"role":"user","content":"x"}}),
        ];
        lines.push(
            json!({"type":"system","subtype":"compact_boundary","sessionId":"s","uuid":"b",
                          "compactMetadata":{"preservedSegment":{"headUuid":"unknown"}}}),
        );
        lines.push(json!({"type":"user","sessionId":"s","uuid":"sum","isCompactSummary":true,"message":{"role":"user","content":"s"}}));
        let out = adapt(&lines);
        assert!(out[1].get("trigger").is_none() && out[1].get("preTokens").is_none());
        assert_eq!(out[2]["replaces"], json!({"from_seq":1,"to_seq":1}));
    }

    /// What the log does not carry, and what its lines say of the window and the reserve, in
    /// headers the adapter infers: the envelope `null` before the session's first frame; before
    /// a main assistant line, the model, the window it names (1M once a reading is above 200k)
    /// and the reserve by version — each only when it changed, the window only when param
    /// `capacity` does not name it; the first header names the agent.
    #[test]
    fn the_session_says_what_its_log_does_not() {
        let line = |model: &str, version: &str, input: u64| {
            json!({"type":"assistant","sessionId":"s","uuid":format!("a{input}"),"version":version,
                   "message":{"id":format!("m{input}"),"role":"assistant","model":model,"content":[],
                              "usage":{"input_tokens":input}}})
        };
        let lines = [
            json!({"type":"user","sessionId":"s","uuid":"u0","version":"2.1.7","message":{"role":"user","content":"hi"}}),
            line("claude-sonnet-4-5-20250929", "2.1.7", 50_000),
            line("claude-sonnet-4-5-20250929", "2.1.7", 60_000),
            line("claude-sonnet-4-5-20250929", "2.1.45", 250_000),
            line("claude-opus-5", "2.1.45", 260_000),
        ];
        let headers: Vec<Value> = adapt_values(Input::ClaudeCode, &lines)
            .into_iter()
            .filter(|f| f["type"] == "request/header")
            .collect();
        assert_eq!(headers.len(), 4, "{headers:?}");
        assert_eq!(
            (&headers[0]["system"], &headers[0]["tools"]),
            (&Value::Null, &Value::Null)
        );
        assert_eq!(headers[0]["agent"], "claude-code");
        assert_eq!(headers[1]["model"], "claude-sonnet-4-5-20250929");
        assert!(
            headers[2].get("model").is_none(),
            "the same model is not named again"
        );
        // The 1M family needs no new window (the reading proved it), but a new model is named.
        assert_eq!(headers[3]["model"], "claude-opus-5");
        assert!(headers[3].get("context_window").is_none());
        assert_eq!(headers[0]["seq"], 0);
        assert_eq!(
            (
                &headers[1]["context_window"],
                &headers[1]["compact_reserve"]
            ),
            (&json!(200_000), &json!(45_000))
        );
        // A reading above 200k proves the larger window; 2.1.21 on reserves less.
        assert_eq!(
            (
                &headers[2]["context_window"],
                &headers[2]["compact_reserve"]
            ),
            (&json!(1_000_000), &json!(33_000))
        );
        assert!(
            headers
                .iter()
                .all(|h| h["extras"]["source_type"] == "inferred")
        );

        let config = crate::Config::from_params([("input", "claude-code"), ("capacity", "500000")]);
        let mut a = crate::Adapter::for_config(&config.unwrap());
        let texts: Vec<Vec<u8>> = lines
            .iter()
            .map(|l| serde_json::to_vec(l).unwrap())
            .collect();
        let frames = a.adapt_all(texts.iter().map(|t| (None, &t[..])));
        let windows = frames
            .iter()
            .filter(|f| String::from_utf8_lossy(f).contains("context_window"))
            .count();
        assert_eq!(windows, 0, "param `capacity` names the window");
    }

    #[test]
    fn a_compaction_says_when_the_log_shows_what_comes_back() {
        let boundary = |meta: Value| json!({"type":"system","subtype":"compact_boundary","sessionId":"s","uuid":"b","compactMetadata":meta});
        let user = json!({"type":"user","sessionId":"s","uuid":"u0","message":{"role":"user","content":"hi"}});
        let old = adapt(&[
            user.clone(),
            boundary(json!({"trigger":"auto","preTokens":9})),
        ]);
        assert!(old[1].get("restore_shown").is_none());
        let post = adapt(&[
            user.clone(),
            boundary(json!({"preTokens":9,"postTokens":5})),
        ]);
        assert_eq!(post[1]["restore_shown"], true);
        let attached = adapt(&[
            json!({"type":"attachment","sessionId":"s","uuid":"at","attachment":{"type":"hook_success"}}),
            user,
            boundary(json!({"preTokens":9})),
        ]);
        assert_eq!(attached[2]["restore_shown"], true);
    }

    /// Claude Code ≥ 2.1.23x writes `session_id` (the process's first transcript, after
    /// `/clear`) beside `sessionId` (this transcript's own): the transcript is one session, its
    /// `sessionId`, whatever another id field or the record's key says.
    #[test]
    fn a_transcript_is_the_session_its_session_id_names() {
        let line = |uuid: &str, other: &str| {
            json!({"type":"user","sessionId":"own","session_id":other,"uuid":uuid,
                   "message":{"role":"user","content":"hi"}})
            .to_string()
        };
        let mut a = crate::adapt::Adapter::new(Input::ClaudeCode, 10);
        let mut out = Vec::new();
        a.push(
            None,
            br#"{"type":"mode","mode":"normal","sessionId":"own"}"#,
            Some(0),
            &mut out,
        );
        for (i, other) in ["first", "first", "elsewhere"].iter().enumerate() {
            let l = line(&format!("u{i}"), other);
            a.push(
                Some(other.as_bytes()),
                l.as_bytes(),
                Some(i as i64 + 1),
                &mut out,
            );
        }
        assert_eq!(a.sessions(), 1, "one session");
        for f in &out {
            let v: Value = serde_json::from_slice(f).unwrap();
            assert_eq!(v["session_id"], "own", "{v}");
        }
        let seqs: Vec<u64> = out
            .iter()
            .map(|f| {
                serde_json::from_slice::<Value>(f).unwrap()["seq"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "one numbering: {seqs:?}"
        );
    }

    fn advised(input: u64, own: &[(&str, u64)]) -> Value {
        let iterations: Vec<Value> = own
            .iter()
            .map(|(t, n)| json!({"type":t,"input_tokens":1,"cache_read_input_tokens":n,"cache_creation_input_tokens":0,"output_tokens":5}))
            .collect();
        json!({"type":"assistant","sessionId":"s","uuid":format!("a{input}"),
               "message":{"id":format!("m{input}"),"role":"assistant","model":"claude-opus-4-6","content":[],
                          "usage":{"input_tokens":1,"cache_read_input_tokens":input,"cache_creation_input_tokens":0,
                                   "output_tokens":9,"iterations":iterations}}})
    }

    /// A turn with an advisor writes the sum of its own iterations at the top level; the reading
    /// is the last own iteration (the advisor's is another model's context). After a fallback
    /// the top level is the last iteration already, and stays as it is.
    #[test]
    fn a_reading_is_the_request_s_own_iteration() {
        let out = adapt(&[
            advised(
                218_000,
                &[
                    ("message", 109_000),
                    ("advisor_message", 149_000),
                    ("message", 110_000),
                ],
            ),
            advised(
                120_000,
                &[("message", 90_000), ("fallback_message", 120_000)],
            ),
            advised(130_000, &[]),
        ]);
        assert_eq!(out[0]["usage"]["cache_read_input_tokens"], 110_000);
        assert_eq!(out[0]["usage"]["input_tokens"], 1);
        assert!(out[0]["usage"].get("iterations").is_none());
        assert_eq!(out[0]["extras"]["usage_summed"], true);
        assert_eq!(
            out[0]["extras"]["usage"]["cache_read_input_tokens"],
            218_000
        );
        for f in &out[1..] {
            assert!(f["extras"].get("usage_summed").is_none(), "{f}");
            assert!(f["usage"]["cache_read_input_tokens"].as_u64().unwrap() >= 120_000);
        }
        // The summed figure proves no larger window either.
        let headers: Vec<Value> = adapt_values(
            Input::ClaudeCode,
            &[advised(
                218_000,
                &[
                    ("message", 109_000),
                    ("advisor_message", 149_000),
                    ("message", 110_000),
                ],
            )],
        )
        .into_iter()
        .filter(|f| f["type"] == "request/header" && f.get("context_window").is_some())
        .collect();
        assert_eq!(headers[0]["context_window"], 200_000);
    }

    fn tool_result(uuid: &str, result: Value) -> Value {
        json!({"type":"user","sessionId":"s","uuid":uuid,"toolUseResult":result,
               "message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}})
    }

    fn read_result(path: &str, content: &str, lines: u64, total: u64) -> Value {
        json!({"type":"text","file":{"filePath":path,"content":content,"numLines":lines,"startLine":1,"totalLines":total}})
    }

    /// What Claude Code's rule puts back, priced on the `compact/start` of a log that does not
    /// show it: the five files last read, edited or written, each whole when at most 5,000
    /// tokens (a larger one is a reference, and still one of the five); a file read only in
    /// part is not re-read and takes no place; a plan file comes back on its own.
    #[test]
    fn a_compaction_prices_the_files_the_rule_puts_back() {
        let small = format!("{}aaaa", "x".repeat(396));
        let big = "y\n".repeat(12_000);
        let price = |content: &str, lines: u64| {
            crate::estimate(serde_json::to_string(content).unwrap().as_bytes())
                + (lines * 7).div_ceil(4)
        };
        let mut lines = vec![
            json!({"type":"user","sessionId":"s","uuid":"u0","message":{"role":"user","content":"go"}}),
        ];
        for i in 0..4 {
            lines.push(tool_result(
                &format!("r{i}"),
                read_result(&format!("/p/old{i}.rs"), &small, 1, 1),
            ));
        }
        lines.extend([
            tool_result("e", json!({"filePath":"/p/edited.rs","oldString":"aaaa","newString":"bbbbbbbb","originalFile":small,"structuredPatch":[]})),
            tool_result("w", json!({"type":"create","filePath":"/p/new.rs","content":small})),
            tool_result("big", read_result("/p/big.rs", &big, 12_001, 12_001)),
            tool_result("part", read_result("/p/part.rs", &small, 10, 900)),
            tool_result("plan", json!({"type":"create","filePath":"/home/u/.claude/plans/a-plan.md","content":small})),
            tool_result("again", read_result("/p/old3.rs", &small, 1, 1)),
            json!({"type":"system","subtype":"compact_boundary","sessionId":"s","uuid":"b","compactMetadata":{"trigger":"auto","preTokens":9}}),
        ]);
        let out = adapt(&lines);
        let start = out.iter().find(|f| f["type"] == "compact/start").unwrap();
        // old3 (read again), big (a reference), new, edited, old2: the five most recent.
        let edited = small.replace("aaaa", "bbbbbbbb");
        let want = price(&small, 1) * 3 + price(&edited, 1);
        assert_eq!(start["restore_tokens"], want, "{start}");
        assert!(start.get("restore_shown").is_none());
        // The plan file it wrote comes back beyond the five: the prior stands for it.
        assert!(start.get("restore_beyond").is_none(), "{start}");
        // A log that shows what comes back prices none of it.
        let mut shown = lines.clone();
        shown.insert(1, json!({"type":"attachment","sessionId":"s","uuid":"at","attachment":{"type":"date_change","newDate":"d"}}));
        let out = adapt(&shown);
        let start = out.iter().find(|f| f["type"] == "compact/start").unwrap();
        assert!(start.get("restore_tokens").is_none() && start["restore_shown"] == true);
    }

    /// A compaction whose session showed no work Claude Code carries across it beyond the
    /// files (no to-do or task list, plan or invoked skill) says so (`restore_beyond: false`);
    /// any one of them, as its tool's result shows it, and it does not. A sub-agent's output
    /// (TaskOutput's `task`) or an emptied to-do list is not such work.
    #[test]
    fn a_compaction_says_whether_anything_comes_back_beyond_the_files() {
        let boundary = json!({"type":"system","subtype":"compact_boundary","sessionId":"s","uuid":"b","compactMetadata":{"trigger":"auto","preTokens":9}});
        let beyond = |results: &[Value]| {
            let mut lines = vec![
                json!({"type":"user","sessionId":"s","uuid":"u0","message":{"role":"user","content":"go"}}),
                tool_result("r", read_result("/p/a.rs", "fn a() {}", 1, 1)),
            ];
            lines.extend(
                results
                    .iter()
                    .enumerate()
                    .map(|(i, r)| tool_result(&format!("t{i}"), r.clone())),
            );
            lines.push(boundary.clone());
            let out = adapt(&lines);
            let start = out.iter().find(|f| f["type"] == "compact/start").unwrap();
            assert!(start["restore_tokens"].as_u64().unwrap() > 0, "{start}");
            match start.get("restore_beyond") {
                None => true,
                Some(Value::Bool(false)) => false,
                other => panic!("restore_beyond {other:?}"),
            }
        };
        let not_work = [
            json!({"retrieval_status":"success","task":{"task_id":"x","output":"done"}}),
            json!({"oldTodos":[{"content":"a","status":"completed"}],"newTodos":[]}),
            json!({"stdout":"ok","stderr":"","interrupted":false}),
        ];
        assert!(!beyond(&[]));
        assert!(!beyond(&not_work));
        for work in [
            json!({"oldTodos":[],"newTodos":[{"content":"a","status":"pending","activeForm":"A"}]}),
            json!({"task":{"id":"1","subject":"a task"}}),
            json!({"plan":"1. do it","isAgent":false,"filePath":"/home/u/.claude/plans/p.md"}),
            json!({"type":"create","filePath":"C:\\Users\\u\\.claude\\plans\\p.md","content":"plan"}),
            json!({"success":true,"commandName":"review"}),
        ] {
            assert!(beyond(&[not_work[0].clone(), work.clone()]), "{work}");
        }
    }

    /// Attachments reach the context or do not: a hook's success output only for the events
    /// that add context (and then its `content`), the display-only kinds never; a kind this
    /// build does not know is priced and said; so is an unknown line type, passed through.
    #[test]
    fn attachments_are_priced_where_they_reach_the_context() {
        let at = |uuid: &str, a: Value| json!({"type":"attachment","sessionId":"s","uuid":uuid,"attachment":a});
        let out = adapt(&[
            at(
                "h1",
                json!({"type":"hook_success","hookEvent":"PostToolUse","content":"","stdout":"{\"continue\":true}"}),
            ),
            at(
                "h2",
                json!({"type":"hook_success","hookEvent":"SessionStart","content":"remember this"}),
            ),
            at(
                "h3",
                json!({"type":"hook_system_message","content":"shown to you"}),
            ),
            at("n", json!({"type":"brand_new_reminder","text":"?"})),
            json!({"type":"brand-new-line","sessionId":"s","uuid":"x"}),
            json!({"type":"pr-link","sessionId":"s","uuid":"y"}),
        ]);
        assert!(
            out[0].get("message").is_none() && out[0]["attachment"]["hookEvent"] == "PostToolUse"
        );
        assert_eq!(out[1]["message"], "remember this");
        assert!(out[2].get("message").is_none());
        assert!(out[3]["message"].is_object());
        assert_eq!(out[3]["extras"]["unknown_kind"], true);
        assert_eq!(out[4]["type"], "claude-code/brand-new-line");
        assert_eq!(out[4]["extras"]["unknown_kind"], true);
        assert!(
            out[5]["extras"].get("unknown_kind").is_none(),
            "known, passed over"
        );
        for f in &out[..3] {
            assert!(f["extras"].get("unknown_kind").is_none(), "{f}");
        }
    }

    /// Claude Code ≥ 2.1.282 writes the requests it sends: the shape is the envelope; a
    /// transcript message waits for the request that carries it, and joins with it, priced as
    /// sent — a blob for what the transcript does not hold as sent (the first prompt wrapped in
    /// reminders, the system listings), the transcript's own message for the rest; a request
    /// that lists everything again (a new process resuming) adds only what follows; one that
    /// drops messages rewrites the surface, no compaction.
    #[test]
    fn a_log_that_writes_its_requests_prices_each_message_as_sent() {
        let v = "2.1.332";
        let user = |uuid: &str, text: &str| json!({"type":"user","sessionId":"s","uuid":uuid,"version":v,"message":{"role":"user","content":text}});
        let blob = |hash: &str, text: &str| json!({"type":"api-request-blob","sessionId":"s","hash":hash,"message":{"role":"user","content":[{"type":"text","text":text}]}});
        let request = |keep: u64, tail: &[&str]| {
            json!({"type":"api-request","sessionId":"s","keep":keep,"tail":tail,
                   "params":{"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]}}})
        };
        let answer = |uuid: &str, mid: &str, n: u64| {
            json!({"type":"assistant","sessionId":"s","uuid":uuid,"version":v,
                   "message":{"id":mid,"role":"assistant","model":"claude-opus-5-5","content":[{"type":"text","text":"ok"}],
                              "usage":{"input_tokens":n}}})
        };
        let sizes = |text: &str| {
            crate::adapt::build::content_chars(&json!([{"type":"text","text":text}]).to_string())
        };
        let out = adapt_values(
            Input::ClaudeCode,
            &[
                user("u1", "first prompt"),
                json!({"type":"attachment","sessionId":"s","uuid":"at","version":v,"attachment":{"type":"date","date":"d"},
                       "rendered":[{"content":"<system-reminder>date</system-reminder>"}]}),
                json!({"type":"api-request-shape","sessionId":"s","shapeHash":"h1",
                       "shape":{"system":[{"type":"text","text":"be brief"}],"tools":[{"name":"Read"}]}}),
                blob("b1", "reminders and the first prompt"),
                request(0, &["b1"]),
                answer("a1", "m1", 1000),
                user("u2", "second prompt"),
                request(1, &["m1hash", "u2hash"]),
                answer("a2", "m2", 1100),
                // A new process resuming lists it all again.
                json!({"type":"api-request-shape","sessionId":"s","shapeHash":"h1",
                       "shape":{"system":[{"type":"text","text":"be brief"}],"tools":[{"name":"Read"}]}}),
                user("u3", "third"),
                request(0, &["b1", "m1hash", "u2hash", "m2hash", "u3hash"]),
                answer("a3", "m3", 1200),
                // A request that dropped what it carried before.
                user("u4", "fourth"),
                request(1, &["m3hash", "u4hash"]),
            ],
        );
        let headers: Vec<&Value> = out
            .iter()
            .filter(|f| f["type"] == "request/header")
            .collect();
        assert!(
            headers
                .iter()
                .any(|h| h["system"][0]["text"] == "be brief" && h["tools"][0]["name"] == "Read")
        );
        assert_eq!(
            headers
                .iter()
                .filter(|h| h.get("tools").is_some_and(|t| t.is_array()))
                .count(),
            1,
            "the same shape once"
        );
        // Transcript messages carry no content of their own; attachments rendered into a blob
        // are priced with it.
        for f in out
            .iter()
            .filter(|f| f["type"] == "user/message" || f["type"] == "claude-code/attachment")
        {
            assert!(f.get("message").is_none(), "{f}");
        }
        let requests: Vec<&Value> = out
            .iter()
            .filter(|f| f["type"] == "claude-code/api-request")
            .collect();
        assert_eq!(requests.len(), 4);
        let text_chars = |t: &str| sizes(t);
        assert_eq!(
            requests[0]["message_chars"],
            text_chars("reminders and the first prompt")
        );
        // The answer m1 and the prompt u2, as the transcript holds them.
        let ok =
            crate::adapt::build::content_chars(&json!([{"type":"text","text":"ok"}]).to_string());
        assert_eq!(
            requests[1]["message_chars"],
            ok + crate::adapt::build::content_chars("\"second prompt\"")
        );
        assert_eq!(
            requests[2]["extras"]["messages_added"], 2,
            "{}",
            requests[2]
        );
        assert!(
            requests[3]["rewrite"] == true && requests[3].get("replaces").is_some(),
            "{}",
            requests[3]
        );
        assert_eq!(requests[3]["extras"]["messages_dropped"], 4);
    }

    /// The preserved messages of a turn compacted mid-way, written again after the boundary
    /// with a top level of zeros: no reading, whatever their iterations hold.
    #[test]
    fn a_preserved_line_of_zeros_is_no_reading() {
        let out = adapt(&[
            json!({"type":"assistant","sessionId":"s","uuid":"p","message":{"id":"m","role":"assistant",
            "content":[],"usage":{"input_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":0,
            "iterations":[{"type":"message","input_tokens":1,"cache_read_input_tokens":204_665,"output_tokens":3}]}}}),
        ]);
        assert!(out.iter().all(|f| f.get("usage").is_none()), "{out:?}");
    }

    /// A model refusal falls back to another model: the next assistant line names it, and the
    /// window is that model's, not the larger of the two.
    #[test]
    fn another_model_brings_its_own_window() {
        let line = |model: &str, n: u64| {
            json!({"type":"assistant","sessionId":"s","uuid":format!("a{n}"),"version":"2.1.232",
                   "message":{"id":format!("m{n}"),"role":"assistant","model":model,"content":[],
                              "usage":{"input_tokens":n}}})
        };
        let windows: Vec<Value> = adapt_values(Input::ClaudeCode, &[
            line("claude-opus-4-6[1m]", 50_000),
            json!({"type":"system","subtype":"model_refusal_fallback","sessionId":"s","uuid":"f"}),
            line("claude-sonnet-4-5", 51_000),
        ])
        .into_iter()
        .filter_map(|f| f.get("context_window").cloned())
        .collect();
        assert_eq!(windows, [json!(1_000_000), json!(200_000)]);
    }
}
