//! OpenCode sessions, in either of the forms it writes:
//!
//! - `opencode export <session>`: `{info, messages[]}`, each message `{info, parts[]}`; one
//!   record each time it is written, its messages applied after the last one applied
//!   ([`document::resume`]), so each once;
//! - its storage as a session runs (`~/.local/share/opencode/storage/`): a message's `info`
//!   (`message/<session>/<message>.json`: `{id, sessionID, role, tokens, …}`) and each of its
//!   parts (`part/<message>/<part>.json`: `{id, messageID, sessionID, type, …}`), one record a
//!   file as it is written.
//!
//! A user message's text and file parts become `user/message`s. An assistant message is one
//! request (one step): its `tokens` are the reading, the prompt `input + cache.read +
//! cache.write` (`total` and the session's own `tokens` are sums, never a reading); all-zero
//! tokens (an aborted message, `MessageAbortedError`, or one still running) are none. Its text
//! and reasoning parts become its `message`; a `tool` part a `tool/call` (`state.input`) and a
//! `tool/result` (`state.output`); `step-start`, `step-finish` (the same tokens again), `patch`,
//! `snapshot` never reach the model and pass through. An assistant message marked `summary` is
//! OpenCode's compaction: `compact/start` (the level before: the last reading), its text the
//! replacement, `compact/end`; its own tokens are the summarising request's, not a reading.
//!
//! The window is the model's where a table knows it (Claude's, Gemini's), else param
//! `capacity`; OpenCode's logs name no compaction point.

use super::build::{Adapting, Id, fingerprint};
use super::document::{self, Said, Usage};
use super::line::{Line, at, str_at, uint_at};
use super::state::ROLES;
use crate::frame::kind::{
    ASSISTANT_MESSAGE, COMPACT_END, COMPACT_START, TOOL_CALL, TOOL_RESULT, USER_MESSAGE,
};
use crate::json;

/// The agent, as headers name it (contract §1).
pub(crate) const OPENCODE: &str = "opencode";

/// The session an OpenCode record names: an export's `info.id`, a message's or a part's
/// `sessionID`.
pub(crate) fn session_of(line: &Line) -> Option<String> {
    if line.get("messages").is_some() {
        return str_at(line.object("info"), "id").map(|s| s.into_owned());
    }
    line.str("sessionID").map(|s| s.into_owned())
}

/// Whether a record is OpenCode's: an export (`info.id` of a `ses_` session beside
/// `messages`), or a storage message or part (`sessionID`, and `role` or `messageID`).
pub(crate) fn is_opencode(line: &Line) -> bool {
    let export = line.get("messages").is_some()
        && str_at(line.object("info"), "id").is_some_and(|id| id.starts_with("ses_"));
    let stored = line.get("sessionID").is_some()
        && (line.get("role").is_some() || line.get("messageID").is_some());
    export || stored
}

pub(crate) fn adapt(cx: &mut Adapting, line: &Line) {
    if let Some(messages) = line.get("messages").filter(|m| m.starts_with('[')) {
        let list: Vec<&str> = json::elements(messages).collect();
        let prints: Vec<u64> = list
            .iter()
            .map(|m| fingerprint(&str_at(at(Some(m), "info"), "id").unwrap_or_default()))
            .collect();
        let from = document::resume(cx.st, &prints);
        for (i, raw) in list.iter().enumerate().skip(from) {
            let info = at(Some(raw), "info");
            let parts: Vec<&str> = at(Some(raw), "parts")
                .map(json::elements)
                .into_iter()
                .flatten()
                .collect();
            if let Some(info) = info.and_then(|i| Line::read(i.as_bytes())) {
                message(cx, &info, &parts);
            }
            document::applied(cx.st, i, prints[i]);
        }
        return;
    }
    let stamp = None;
    if line.get("role").is_some() {
        // A message's info alone (storage): its reading once it has one, once.
        let id = line.str("id").unwrap_or_default();
        remember_role(cx, &id, line.str("role").as_deref() == Some("assistant"));
        let user = line.str("role").as_deref() == Some("user");
        if document::is_last_applied(cx.st, &id)
            || (!user && tokens_of(line.object("tokens")).is_none())
        {
            return cx.pass_through(line, None, Id::Numbered, stamp, None);
        }
        message(cx, line, &[]);
        return document::applied_next(cx.st, &id);
    }
    if line.get("messageID").is_some() {
        return part(cx, Part::Line(line), None);
    }
    cx.pass_through(line, None, Id::Numbered, stamp, None);
}

/// A part: an element of an export's `parts`, or a storage file read as a record.
enum Part<'a, 'l> {
    Raw(&'a str),
    Line(&'l Line<'a>),
}

impl<'a> Part<'a, '_> {
    fn get(&self, name: &str) -> Option<&'a str> {
        match self {
            Part::Raw(raw) => at(Some(raw), name),
            Part::Line(line) => line.get(name),
        }
    }

    fn kind(&self) -> Option<std::borrow::Cow<'a, str>> {
        json::string(self.get("type")?)
    }
}

/// A message's reading, when it has one (all-zero tokens have none).
fn tokens_of(tokens: Option<&str>) -> Option<Usage> {
    let cache = at(tokens, "cache");
    let usage = Usage {
        input: uint_at(tokens, "input").unwrap_or(0),
        cache_read: uint_at(cache, "read").unwrap_or(0),
        cache_write: uint_at(cache, "write").unwrap_or(0),
        output: uint_at(tokens, "output"),
    };
    (usage.prompt() > 0).then_some(usage)
}

/// The milliseconds OpenCode stamps with, as RFC 3339.
fn stamp_of(info: &Line) -> Option<String> {
    let ms = uint_at(info.object("time"), "created")?;
    // Whole milliseconds: written as OpenCode counts them.
    let stamp = crate::time::format(ms.saturating_mul(1_000_000));
    Some(format!("\"{}\"", stamp.replacen("000000Z", "Z", 1)))
}

/// Remembers who wrote message `id` (its parts, read on their own, follow it).
fn remember_role(cx: &mut Adapting, id: &str, assistant: bool) {
    let print = fingerprint(id);
    cx.st.roles.retain(|(p, _)| *p != print);
    cx.st.roles.push((print, assistant));
    if cx.st.roles.len() > ROLES {
        cx.st.roles.remove(0);
    }
}

/// One message: its info and its parts, in order.
fn message(cx: &mut Adapting, info: &Line, parts: &[&str]) {
    if let (Some(id), Some(role)) = (info.str("id"), info.str("role")) {
        remember_role(cx, &id, role == "assistant");
    }
    // Each of its nodes carries its id: a compaction that keeps the turns from it on names it,
    // and replaces every node before its first (a tool's result included).
    cx.next_print = info.str("id").map(|id| fingerprint(&id));
    let stamp = stamp_of(info);
    let stamp = stamp.as_deref();
    let model = info
        .str("modelID")
        .or_else(|| str_at(info.object("model"), "modelID"));
    let window = model.as_deref().and_then(known_window);
    let said = Said {
        agent: OPENCODE,
        model: model.as_deref(),
        window,
        threshold: None,
    };
    document::announce(cx, stamp, said, "model table");
    let texts = || {
        parts
            .iter()
            .filter(|p| matches!(str_at(Some(p), "type").as_deref(), Some("text")))
            .filter_map(|p| at(Some(p), "text"))
            .collect::<Vec<&str>>()
    };
    match info.str("role").as_deref() {
        Some("user") => {
            for p in parts {
                // A compaction that keeps the latest turns verbatim names the first message it
                // keeps: the replacement spans the surface up to it (contract §3.1).
                if str_at(Some(p), "type").as_deref() == Some("compaction") {
                    let auto = at(Some(p), "auto") == Some("true");
                    cx.st.compaction_trigger = Some(if auto {
                        crate::frame::Trigger::Auto
                    } else {
                        crate::frame::Trigger::Manual
                    });
                    if let Some(tail) = str_at(Some(p), "tail_start_id") {
                        cx.st.keep_from(fingerprint(&tail));
                    }
                }
                part(cx, Part::Raw(p), stamp);
            }
        }
        Some("assistant") if info.is_true("summary") => {
            let mut start = cx.frame(COMPACT_START, Id::Numbered, stamp, None);
            if let Some(t) = cx.st.compaction_trigger.take() {
                start.string("trigger", t.word());
            }
            if let Some(before) = cx.st.total {
                start.uint("preTokens", before);
            }
            // What OpenCode sends after is the summary, what it kept and what follows, all in
            // the session: nothing comes back unseen.
            start.json("restore_shown", "true");
            start.extra_str("source_type", "summary");
            cx.emit(start);
            let mut f = cx.frame(USER_MESSAGE, Id::Numbered, stamp, None);
            f.extra_str("source_type", "summary");
            if let Some(t) = info.object("tokens") {
                f.extra_raw("tokens", t);
            }
            cx.emit_replacement(f, &format!("[{}]", texts().join(",")));
            let mut end = cx.frame(COMPACT_END, Id::Numbered, stamp, None);
            end.extra_str("source_type", "summary");
            cx.emit(end);
        }
        Some("assistant") => {
            let usage = tokens_of(info.object("tokens"));
            let mut f = cx.frame(ASSISTANT_MESSAGE, Id::Numbered, stamp, None);
            match usage {
                Some(u) => {
                    cx.st.total = Some(u.prompt());
                    f.json("usage", &u.json());
                }
                None => {
                    if let Some(t) = info.object("tokens") {
                        f.extra_raw("tokens", t);
                    }
                }
            }
            if let Some(e) = info.object("error") {
                f.extra_raw("error", e);
            }
            cx.st.request.response();
            let texts = texts();
            if !texts.is_empty() {
                f.raw("message", &format!("[{}]", texts.join(",")));
            }
            f.extra_str("source_type", "assistant");
            cx.emit(f);
            for p in parts {
                if str_at(Some(p), "type").as_deref() != Some("text") {
                    part(cx, Part::Raw(p), stamp);
                }
            }
        }
        _ => cx.pass_through(info, None, Id::Numbered, stamp, None),
    }
}

/// One part: a tool's call and result, reasoning, a user's text or file; the rest passes.
fn part(cx: &mut Adapting, p: Part, stamp: Option<&str>) {
    let state = p.get("state");
    match p.kind().as_deref() {
        Some("tool") => {
            let mut c = cx.frame(TOOL_CALL, Id::Numbered, stamp, None);
            c.raw("message", at(state, "input").unwrap_or("null"));
            if let Some(name) = p.get("tool") {
                c.extra_raw("name", name);
            }
            cx.st.request.response();
            cx.emit(c);
            if let Some(out) = at(state, "output") {
                let mut r = cx.frame(TOOL_RESULT, Id::Numbered, stamp, None);
                r.raw("message", out);
                if let Some(id) = p.get("callID") {
                    r.extra_raw("call_id", id);
                }
                cx.st.request.input(r.seq());
                cx.emit(r);
            }
        }
        Some("reasoning") => {
            let mut f = cx.frame("assistant/reasoning", Id::Numbered, stamp, None);
            f.raw("message", p.get("text").unwrap_or("null"));
            cx.emit(f);
        }
        Some("text" | "file") => {
            // A part read on its own is the assistant's when its message was (storage).
            let by_assistant = matches!(p, Part::Line(_))
                && p.get("messageID")
                    .and_then(json::string)
                    .map(|id| fingerprint(&id))
                    .is_some_and(|print| cx.st.roles.contains(&(print, true)));
            let kind = if by_assistant {
                ASSISTANT_MESSAGE
            } else {
                USER_MESSAGE
            };
            let mut f = cx.frame(kind, Id::Numbered, stamp, None);
            f.raw(
                "message",
                p.get("text").or_else(|| p.get("url")).unwrap_or("null"),
            );
            f.extra_str("source_type", "part");
            cx.st.request.input(f.seq());
            cx.emit(f);
        }
        _ => match p {
            Part::Line(line) => cx.pass_through(line, None, Id::Numbered, stamp, None),
            Part::Raw(raw) => {
                if let Some(line) = Line::read(raw.as_bytes()) {
                    cx.pass_through(&line, None, Id::Numbered, stamp, None);
                }
            }
        },
    }
}

/// A model's window where a table the adapters hold knows it: Claude's and Gemini's; `None`
/// for the rest (param `capacity` then).
fn known_window(model: &str) -> Option<u64> {
    if model.starts_with("gemini") || model.starts_with("gemma") {
        return Some(super::gemini_cli::window(model));
    }
    if model.contains("claude") {
        return super::claude::model_window(model);
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::adapt::{Input, adapt_values};

    fn assistant(id: &str, input: u64, read: u64, parts: Vec<Value>) -> Value {
        json!({"info": {"id": id, "sessionID": "ses_1", "role": "assistant",
                        "modelID": "deepseek-v4-flash-free", "providerID": "opencode",
                        "time": {"created": 1786305135578u64},
                        "tokens": {"total": input + read + 10, "input": input, "output": 10,
                                   "reasoning": 0, "cache": {"read": read, "write": 0}}},
               "parts": parts})
    }

    fn export(messages: Vec<Value>) -> Value {
        json!({"info": {"id": "ses_1", "version": "1.18.15",
                        "tokens": {"input": 999_999, "output": 1, "cache": {"read": 5, "write": 0}}},
               "messages": messages})
    }

    /// A reading per assistant step (input + cache read + write), none from the session's
    /// totals or an aborted message; each message once however often the export is written.
    #[test]
    fn an_export_reads_one_reading_a_step_once() {
        let user = json!({"info": {"id": "m0", "sessionID": "ses_1", "role": "user",
                                   "time": {"created": 1786305135437u64},
                                   "model": {"providerID": "opencode", "modelID": "deepseek-v4-flash-free"}},
                          "parts": [{"type": "text", "text": "write a post"}]});
        let tool = json!({"type": "tool", "tool": "read", "callID": "c1",
                          "state": {"input": {"path": "a"}, "output": "contents"}});
        let aborted = json!({"info": {"id": "m2", "sessionID": "ses_1", "role": "assistant",
                                      "modelID": "deepseek-v4-flash-free",
                                      "error": {"name": "MessageAbortedError"},
                                      "tokens": {"input": 0, "output": 0, "reasoning": 0,
                                                 "cache": {"read": 0, "write": 0}}},
                             "parts": []});
        let one = export(vec![
            user.clone(),
            assistant("m1", 17_862, 1_920, vec![tool]),
        ]);
        let two = export(vec![
            user,
            assistant("m1", 17_862, 1_920, vec![]),
            aborted,
            assistant(
                "m3",
                8_612,
                68_480,
                vec![json!({"type": "text", "text": "done"})],
            ),
        ]);
        let out = adapt_values(Input::OpenCode, &[one.clone(), one, two.clone(), two]);
        let prompts: Vec<u64> = out
            .iter()
            .filter_map(|f| f.get("usage"))
            .map(|u| {
                [
                    "input_tokens",
                    "cache_read_input_tokens",
                    "cache_creation_input_tokens",
                ]
                .iter()
                .map(|k| u[k].as_u64().unwrap())
                .sum()
            })
            .collect();
        assert_eq!(prompts, [19_782, 77_092]);
        assert!(out.iter().all(|f| f["session_id"] == "ses_1"));
        // An unknown model: no window said.
        let h = &out[0];
        let said = (&h["type"], &h["agent"], h.get("context_window"));
        assert_eq!(said, (&json!("request/header"), &json!("opencode"), None));
        assert_eq!(out[0]["timestamp"], "2026-08-09T19:52:15.437Z");
        crate::adapt::document::assert_first_turn(&out);
        let aborted = out
            .iter()
            .find(|f| f["extras"]["error"].is_object())
            .unwrap();
        assert!(aborted.get("usage").is_none());
    }

    /// OpenCode's compaction (its summary message) replaces the surface; the next reading
    /// re-bases. A known model brings its window.
    #[test]
    fn a_summary_message_is_a_compaction() {
        let mut summary = assistant(
            "m2",
            90_000,
            0,
            vec![json!({"type": "text", "text": "sum"})],
        );
        summary["info"]["summary"] = json!(true);
        summary["info"]["modelID"] = json!("claude-sonnet-4-5");
        let mut first = assistant("m1", 100_000, 0, vec![json!({"type": "text", "text": "a"})]);
        first["info"]["modelID"] = json!("claude-sonnet-4-5");
        let mut after = assistant("m3", 12_000, 0, vec![]);
        after["info"]["modelID"] = json!("claude-sonnet-4-5");
        let out = adapt_values(Input::OpenCode, &[export(vec![first, summary, after])]);
        assert_eq!(out[0]["context_window"], 200_000);
        let start = crate::adapt::document::assert_compaction(&out, 100_000);
        assert_eq!(out[start + 2]["type"], "compact/end");
        let readings: Vec<&Value> = out.iter().filter(|f| f.get("usage").is_some()).collect();
        assert_eq!(readings.len(), 2, "the summary's own tokens are no reading");
    }

    /// Storage as a session runs: a message's info written while it runs (no tokens yet) and
    /// again when done gives its reading once; its parts come as files of their own.
    #[test]
    fn storage_files_read_as_they_are_written() {
        let running = json!({"id": "m1", "sessionID": "ses_9", "role": "assistant",
                             "modelID": "gpt-5", "time": {"created": 1786305135578u64},
                             "tokens": {"input": 0, "output": 0, "reasoning": 0,
                                        "cache": {"read": 0, "write": 0}}});
        let mut done = running.clone();
        done["tokens"] =
            json!({"input": 500, "output": 3, "reasoning": 0, "cache": {"read": 100, "write": 0}});
        let part = json!({"id": "p1", "messageID": "m1", "sessionID": "ses_9", "type": "tool",
                          "tool": "bash", "callID": "c", "state": {"input": {"cmd": "ls"}, "output": "a b"}});
        let text = json!({"id": "p2", "messageID": "m1", "sessionID": "ses_9", "type": "text",
                          "text": "all done"});
        let out = adapt_values(Input::OpenCode, &[running, part, done.clone(), done, text]);
        let said = out.iter().find(|f| f["message"] == "all done").unwrap();
        assert_eq!(
            said["type"], "assistant/message",
            "the assistant's text, by its message"
        );
        let usages: Vec<&Value> = out.iter().filter_map(|f| f.get("usage")).collect();
        assert_eq!(usages.len(), 1);
        assert_eq!(usages[0]["input_tokens"], 500);
        assert!(out.iter().any(|f| f["type"] == "tool/result"));
        assert!(out.iter().all(|f| f["session_id"] == "ses_9"));
    }
}
