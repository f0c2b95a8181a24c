//! Gemini CLI chats (`~/.gemini/tmp/<project hash>/chats/`), in either of the forms it writes:
//!
//! - the saved-chat document `{sessionId, projectHash, startTime, lastUpdated, messages[],
//!   summary?}`, rewritten whole as the session grows: one record each time it is written, its
//!   messages applied after the last one applied ([`document::resume`]), so each once;
//! - the JSONL recording of newer releases: a header line naming the session
//!   (`sessionId`, `projectHash`), then one message a line; a message written again (the same
//!   `id` as the last applied) is an update and passes through.
//!
//! A message is `{id, timestamp, type, content, …}`:
//! - `user` becomes a `user/message` (`content` as its `message`);
//! - `gemini` is a request's answer: its `tokens.input` is the prompt's size (cached content
//!   included, `tokens.cached` the cached part), the reading; all-zero `tokens` are no reading
//!   (a message whose request was not counted, not a reset). The answer's text is its
//!   `message`; each of its `toolCalls` a `tool/call` (name and args) and a `tool/result` (the
//!   `result` parts the model is sent), after the reading;
//! - `info`, `error` and anything else never reach the model: passed through.
//!
//! The window is the model's (`tokenLimit`), the compression point half of it
//! (`DEFAULT_COMPRESSION_TOKEN_THRESHOLD`): [`window`], [`compress_at`]. The document marks no
//! compression: a reading that fell below [`document::FALLEN`] of the one before is one, and
//! becomes a compaction re-based on that reading (its OTel `chat_compression` event is the
//! exact path, `input=otel`).

use super::build::{Adapting, FrameBuf, Id, fingerprint};
use super::census;
use super::document::{self, Said, Usage};
use super::line::{Line, at, str_at, uint_at};
use crate::frame::kind::{
    ASSISTANT_MESSAGE, COMPACT_END, COMPACT_START, TOOL_CALL, TOOL_RESULT, USER_MESSAGE,
};
use crate::json;

/// The agent, as headers name it (contract §1).
pub(crate) const GEMINI_CLI: &str = "gemini-cli";

/// Gemini CLI's window by model (`tokenLimit`, google-gemini/gemini-cli@5411f113
/// `packages/core/src/core/tokenLimits.ts`): 256,000 for the Gemma 4 models, else
/// `DEFAULT_TOKEN_LIMIT`, 1,048,576.
pub(crate) fn window(model: &str) -> u64 {
    if model.starts_with("gemma-4") {
        256_000
    } else {
        1_048_576
    }
}

/// Where Gemini CLI compresses its history by default: half the window
/// (`DEFAULT_COMPRESSION_TOKEN_THRESHOLD` = 0.5 of `tokenLimit(model)`,
/// `packages/core/src/context/chatCompressionService.ts`; a setting can move it, and neither
/// the log nor the telemetry says so).
pub(crate) fn compress_at(window: u64) -> u64 {
    window / 2
}

/// The session a chat names: its `sessionId` (the document's, or the recording's header).
pub(crate) fn session_of(line: &Line) -> Option<String> {
    line.str("sessionId").map(|s| s.into_owned())
}

pub(crate) fn adapt(cx: &mut Adapting, line: &Line) {
    if let Some(messages) = line.get("messages").filter(|m| m.starts_with('[')) {
        let list: Vec<&str> = json::elements(messages).collect();
        let prints: Vec<u64> = list
            .iter()
            .map(|m| fingerprint(&str_at(Some(m), "id").unwrap_or_default()))
            .collect();
        if cx.st.next_seq == 0 {
            // The session opens naming the model its first answer names.
            let model = list
                .iter()
                .find(|m| str_at(Some(m), "type").as_deref() == Some("gemini"))
                .and_then(|m| str_at(Some(m), "model"));
            announce(cx, line.get("startTime"), model.as_deref());
        }
        let from = document::resume(cx.st, &prints);
        for (i, raw) in list.iter().enumerate().skip(from) {
            if let Some(m) = Line::read(raw.as_bytes()) {
                message(cx, &m);
            }
            document::applied(cx.st, i, prints[i]);
        }
        return;
    }
    if let Some(set) = line.object("$set") {
        return match at(Some(set), "messages").filter(|m| m.starts_with('[')) {
            Some(messages) => history(cx, line, messages),
            None => cx.pass_through(line, Some("$set"), Id::Numbered, None, None),
        };
    }
    let id = line.str("id");
    match (line.str("type").as_deref(), id) {
        (Some(_), Some(id)) if document::is_last_applied(cx.st, &id) => late_reading(cx, line),
        (Some(_), Some(id)) => {
            message(cx, line);
            document::applied_next(cx.st, &id);
        }
        _ if census::is_gemini_chat(line) => announce(cx, line.get("startTime"), None),
        _ => cx.pass_through(line, None, Id::Numbered, line.get("timestamp"), None),
    }
}

/// A recording's `$set` of the whole history (Gemini CLI ≥ 0.39): what the next request
/// carries from now, every message as it will be sent (its `content` parts). One that brings a
/// `<state_snapshot>` summary the history did not hold is a compression (the history it
/// replaces, `compact/start` with the last reading as its level, the log showing all that comes
/// back); any other rewrites the surface (a resume's history written again, tool outputs
/// masked: contract §3.1); the bare session context a process opens with, after a history, is
/// the next `$set`'s to replace.
fn history(cx: &mut Adapting, line: &Line, messages: &str) {
    let list: Vec<&str> = json::elements(messages).collect();
    let last = list
        .last()
        .map(|m| fingerprint(&str_at(Some(m), "id").unwrap_or_default()));
    if list.len() <= 1 && cx.st.applied.is_some_and(|(n, _)| n > 1) {
        return cx.pass_through(line, Some("$set"), Id::Numbered, None, None);
    }
    let chars: u64 = list
        .iter()
        .map(|m| crate::adapt::build::content_chars(at(Some(m), "content").unwrap_or("null")))
        .sum();
    // The newest summary the history holds (a later compression keeps the earlier one's).
    let snapshot = list.iter().rev().find_map(|m| {
        let content = at(Some(m), "content")?;
        let text = json::elements(content)
            .find_map(|p| str_at(Some(p), "text"))
            .or_else(|| json::string(content))?;
        text.trim_start()
            .starts_with("<state_snapshot>")
            .then(|| fingerprint(&str_at(Some(m), "id").unwrap_or_default()))
    });
    let stamp = None;
    match snapshot.filter(|s| cx.st.snapshot_id != Some(*s)) {
        Some(s) => {
            cx.st.snapshot_id = Some(s);
            let mut start = cx.frame(COMPACT_START, Id::Numbered, stamp, None);
            start.string(
                "trigger",
                if cx.st.asked_compress {
                    "manual"
                } else {
                    "auto"
                },
            );
            if let Some(before) = cx.st.total {
                start.uint("preTokens", before);
            }
            start.json("restore_shown", "true");
            start.extra_str("source_type", "$set/messages");
            cx.emit(start);
            let mut f = cx.frame(USER_MESSAGE, Id::Numbered, stamp, None);
            f.chars(chars);
            f.extra_str("source_type", "$set/messages");
            cx.replace(f);
            let mut end = cx.frame(COMPACT_END, Id::Numbered, stamp, None);
            end.extra_str("source_type", "$set/messages");
            cx.emit(end);
            // The reading after is the compressed history's, no fall to infer a compression from.
            cx.st.total = None;
        }
        None => {
            let mut f = cx.frame(HISTORY, Id::Numbered, stamp, None);
            f.chars(chars);
            f.extra_str("source_type", "$set/messages");
            if cx.st.surface.is_some() {
                cx.rewrite(f);
            } else {
                cx.emit(f);
            }
        }
    }
    cx.st.asked_compress = false;
    if let Some(p) = last {
        cx.st.applied = Some((list.len() as u64, p));
    }
}

/// The frame type of a history a recording writes whole (a pass-through type, contract §1).
const HISTORY: &str = "gemini-cli/history";

/// The header: the agent, and the model's window and compression point when it names one.
fn announce(cx: &mut Adapting, stamp: Option<&str>, model: Option<&str>) {
    let w = model.map(window);
    let said = Said {
        agent: GEMINI_CLI,
        model,
        window: w,
        threshold: w.map(compress_at),
    };
    document::announce(cx, stamp, said, "model table");
}

/// A message's `tokens` as a reading: `input` is the prompt, `cached` the part of it read from
/// the cache (none: a prompt of 0).
fn usage_of(tokens: Option<&str>) -> Usage {
    let input = uint_at(tokens, "input").unwrap_or(0);
    let cached = uint_at(tokens, "cached").unwrap_or(0).min(input);
    Usage {
        input: input - cached,
        cache_read: cached,
        cache_write: 0,
        output: uint_at(tokens, "output"),
    }
}

/// The last message written again (an update): its reading when it brings one the first write
/// did not (the tokens written once the answer is counted), else it passes through.
fn late_reading(cx: &mut Adapting, m: &Line) {
    let stamp = m.get("timestamp");
    let usage = usage_of(m.object("tokens"));
    let input = usage.prompt();
    let gemini = m.str("type").as_deref() == Some("gemini");
    if !gemini || input == 0 || cx.st.total == Some(input) {
        cx.pass_through(m, Some("update"), Id::Numbered, stamp, None);
    } else {
        let mut f = reading(cx, stamp, usage);
        f.extra_str("source_type", "gemini/update");
        cx.emit(f);
    }
    // A recording writes an answer's tool calls with it again once they ran: the calls join
    // what the next request carries; their results come as the user's message after.
    if gemini {
        tool_calls(cx, m, stamp, false);
    }
}

/// The frame of an answer whose tokens count its prompt (`usage.prompt()` ≥ 1), whichever
/// write of its message brings them: a reading that fell is a compression first.
fn reading(cx: &mut Adapting, stamp: Option<&str>, usage: Usage) -> FrameBuf {
    let input = usage.prompt();
    if let Some(before) = document::fell(cx.st, input) {
        compression(cx, stamp, before);
    }
    cx.st.total = Some(input);
    let mut f = cx.frame(ASSISTANT_MESSAGE, Id::Numbered, stamp, None);
    f.json("usage", &usage.json());
    f
}

/// One message, in its place.
fn message(cx: &mut Adapting, m: &Line) {
    let stamp = m.get("timestamp");
    match m.str("type").as_deref() {
        Some("user") => {
            let text = m.get("content").and_then(|c| {
                json::elements(c)
                    .find_map(|p| str_at(Some(p), "text"))
                    .or_else(|| json::string(c))
            });
            cx.st.asked_compress = text.is_some_and(|t| t.trim_start().starts_with("/compress"));
            let mut f = cx.frame(USER_MESSAGE, Id::Numbered, stamp, None);
            f.raw("message", m.get("content").unwrap_or("null"));
            f.extra_str("source_type", "user");
            cx.st.request.input(f.seq());
            cx.emit(f);
        }
        Some("gemini") => answer(cx, m, stamp),
        _ => cx.pass_through(m, None, Id::Numbered, stamp, None),
    }
}

/// A `gemini` message: the header when the model changed, the reading, the answer, its tool
/// calls and their results.
fn answer(cx: &mut Adapting, m: &Line, stamp: Option<&str>) {
    announce(cx, stamp, m.str("model").as_deref());
    let tokens = m.object("tokens");
    let usage = usage_of(tokens);
    let mut f = match usage.prompt() {
        0 => {
            let mut f = cx.frame(ASSISTANT_MESSAGE, Id::Numbered, stamp, None);
            if let Some(t) = tokens {
                f.extra_raw("tokens", t);
            }
            f
        }
        _ => reading(cx, stamp, usage),
    };
    cx.st.request.response();
    f.raw("message", m.get("content").unwrap_or("null"));
    f.extra_str("source_type", "gemini");
    if let Some(t) = uint_at(tokens, "thoughts") {
        f.extra_raw("thoughts_tokens", &t.to_string());
    }
    cx.emit(f);
    tool_calls(cx, m, stamp, true);
}

/// An answer's `toolCalls`: each a `tool/call` (name and args) and, with `results`, a
/// `tool/result` (the `result` parts the model is sent).
fn tool_calls(cx: &mut Adapting, m: &Line, stamp: Option<&str>, results: bool) {
    for call in m.get("toolCalls").map(json::elements).into_iter().flatten() {
        let mut c = cx.frame(TOOL_CALL, Id::Numbered, stamp, None);
        c.raw("message", at(Some(call), "args").unwrap_or("null"));
        if let Some(name) = at(Some(call), "name") {
            c.extra_raw("name", name);
        }
        if let Some(id) = at(Some(call), "id") {
            c.extra_raw("call_id", id);
        }
        cx.emit(c);
        if let Some(result) = at(Some(call), "result").filter(|_| results) {
            let mut r = cx.frame(TOOL_RESULT, Id::Numbered, stamp, None);
            r.raw("message", result);
            if let Some(id) = at(Some(call), "id") {
                r.extra_raw("call_id", id);
            }
            cx.st.request.input(r.seq());
            cx.emit(r);
        }
    }
}

/// A compression the chat does not mark, seen in its reading: `compact/start` with the level
/// before, the replacement over the whole surface (its size the reading that follows gives),
/// `compact/end`.
fn compression(cx: &mut Adapting, stamp: Option<&str>, before: u64) {
    let mut start = cx.frame(COMPACT_START, Id::Numbered, stamp, None);
    start.string("trigger", "auto");
    start.uint("preTokens", before);
    start.extra_str("source_type", "inferred: the reading fell");
    cx.emit(start);
    let mut f = cx.frame(USER_MESSAGE, Id::Numbered, stamp, None);
    f.extra_str("source_type", "inferred: the reading fell");
    cx.replace(f);
    let mut end = cx.frame(COMPACT_END, Id::Numbered, stamp, None);
    end.extra_str("source_type", "inferred: the reading fell");
    cx.emit(end);
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::adapt::{Input, adapt_values};

    fn gemini(id: &str, input: u64, cached: u64, model: &str) -> Value {
        json!({"id": id, "timestamp": "2026-01-15T20:51:52.837Z", "type": "gemini",
               "content": "ok", "model": model,
               "tokens": {"input": input, "output": 5, "cached": cached, "thoughts": 1, "tool": 0,
                          "total": input + 6},
               "toolCalls": [{"id": format!("c-{id}"), "name": "read_file", "args": {"p": "a"},
                              "result": [{"functionResponse": {"response": {"output": "x"}}}]}]})
    }

    fn doc(messages: Vec<Value>) -> Value {
        json!({"sessionId": "g1", "projectHash": "h", "startTime": "t", "lastUpdated": "t",
               "messages": messages})
    }

    fn readings(out: &[Value]) -> Vec<u64> {
        out.iter()
            .filter_map(|f| f.get("usage"))
            .map(|u| {
                u["input_tokens"].as_u64().unwrap() + u["cache_read_input_tokens"].as_u64().unwrap()
            })
            .collect()
    }

    /// Each message once, in order, however often the document is written; a reading is a
    /// message's own `tokens.input`, never an all-zero one; the window is the model's.
    #[test]
    fn a_document_written_again_applies_each_message_once() {
        let user = json!({"id": "u1", "timestamp": "t", "type": "user", "content": "hi"});
        let zero = json!({"id": "z", "timestamp": "t", "type": "gemini", "content": "",
                          "model": "gemini-2.5-flash",
                          "tokens": {"input": 0, "output": 0, "cached": 0, "thoughts": 0, "tool": 0, "total": 0}});
        let one = doc(vec![
            user.clone(),
            gemini("a", 12_207, 2_558, "gemini-2.5-flash"),
        ]);
        let two = doc(vec![
            user,
            gemini("a", 12_207, 2_558, "gemini-2.5-flash"),
            zero,
            gemini("b", 12_350, 11_820, "gemini-3-pro-preview"),
        ]);
        let out = adapt_values(Input::GeminiCli, &[one.clone(), one, two.clone(), two]);
        assert_eq!(readings(&out), [12_207, 12_350]);
        assert!(out.iter().all(|f| f["session_id"] == "g1"));
        let seqs: Vec<u64> = out.iter().map(|f| f["seq"].as_u64().unwrap()).collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1));
        let headers: Vec<&Value> = out
            .iter()
            .filter(|f| f["type"] == "request/header")
            .collect();
        assert_eq!(headers[0]["agent"], "gemini-cli");
        assert_eq!(headers[0]["context_window"], 1_048_576);
        assert_eq!(headers[0]["auto_compact_tokens"], 524_288);
        assert_eq!(
            headers[1]["model"], "gemini-3-pro-preview",
            "a switch is said"
        );
        let zero = out
            .iter()
            .find(|f| f["extras"]["tokens"]["total"] == 0)
            .unwrap();
        assert!(zero.get("usage").is_none());
        crate::adapt::document::assert_first_turn(&out);
    }

    /// The JSONL recording: a header, messages a line each, one written again (an update).
    #[test]
    fn a_recording_reads_line_by_line_and_an_update_passes() {
        let out = adapt_values(
            Input::GeminiCli,
            &[
                json!({"sessionId": "g2", "projectHash": "h", "startTime": "t"}),
                json!({"id": "u1", "timestamp": "t", "type": "user", "content": "hi"}),
                gemini("a", 1_000, 0, "gemini-2.5-pro"),
                gemini("a", 1_000, 0, "gemini-2.5-pro"),
                json!({"id": "i1", "timestamp": "t", "type": "info", "content": "update available"}),
                json!({"id": "b", "timestamp": "t", "type": "gemini", "content": "…", "model": "gemini-2.5-pro"}),
                gemini("b", 1_400, 1_000, "gemini-2.5-pro"),
            ],
        );
        assert_eq!(
            readings(&out),
            [1_000, 1_400],
            "an update's late tokens are read once"
        );
        assert_eq!(out[0]["type"], "request/header");
        assert!(out.iter().all(|f| f["session_id"] == "g2"));
        assert!(out.iter().any(|f| f["type"] == "gemini-cli/gemini/update"));
        let info = out.iter().find(|f| f["type"] == "gemini-cli/info").unwrap();
        assert!(
            info["extras"].get("unknown_kind").is_none(),
            "info is known"
        );
    }

    /// A reading that fell past 70% of the last is a compression: re-based on it.
    #[test]
    fn a_fallen_reading_is_a_compression() {
        let out = adapt_values(
            Input::GeminiCli,
            &[doc(vec![
                gemini("a", 600_000, 0, "gemini-2.5-pro"),
                gemini("b", 610_000, 0, "gemini-2.5-pro"),
                gemini("c", 180_000, 0, "gemini-2.5-pro"),
            ])],
        );
        let start = crate::adapt::document::assert_compaction(&out, 610_000);
        assert_eq!(out[start + 2]["type"], "compact/end");
        assert_eq!(out[start + 3]["usage"]["input_tokens"], 180_000);
    }

    /// A recording writes an answer before its tokens and again with them: a reading that fell
    /// is a compression there too.
    #[test]
    fn a_fallen_reading_a_late_write_brings_is_a_compression() {
        let out = adapt_values(
            Input::GeminiCli,
            &[
                json!({"sessionId": "g3", "projectHash": "h", "startTime": "t"}),
                gemini("a", 600_000, 0, "gemini-2.5-pro"),
                json!({"id": "b", "timestamp": "t", "type": "gemini", "content": "…", "model": "gemini-2.5-pro"}),
                gemini("b", 180_000, 0, "gemini-2.5-pro"),
            ],
        );
        assert_eq!(readings(&out), [600_000, 180_000]);
        let start = crate::adapt::document::assert_compaction(&out, 600_000);
        assert_eq!(out[start + 3]["extras"]["source_type"], "gemini/update");
    }
}
