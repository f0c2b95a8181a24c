//! What Claude Code transcripts and `claude -p` streams share: a message object
//! (`{"role", "content", "id", "usage", "model", …}`) becomes one frame.

use super::build::{Cx, Frame, Id};
use super::line::{at, is_object, str_at, uint_at};
use crate::frame::kind::{ASSISTANT_MESSAGE, TOOL_RESULT, USER_MESSAGE};
use crate::frame::usage_tokens;
use crate::json;

/// The frame type of a Claude message: content that is all `tool_result` blocks is a
/// `tool/result`.
pub(crate) fn kind(role: &str, content: &str) -> &'static str {
    if role == "assistant" {
        return ASSISTANT_MESSAGE;
    }
    let mut blocks = json::elements(content).peekable();
    let tool_results = content.starts_with('[')
        && blocks.peek().is_some()
        && blocks.all(|b| str_at(Some(b), "type").as_deref() == Some("tool_result"));
    if tool_results {
        TOOL_RESULT
    } else {
        USER_MESSAGE
    }
}

/// Whether a message's usage is a new provider reading: not all zero, and not the repeat of
/// the last reading's `message.id` (Claude Code writes one line per content block and repeats
/// the response's usage on each). Remembers the id when it is.
fn new_reading(last: &mut Option<String>, message_id: Option<&str>, usage: &str) -> bool {
    if usage_tokens(usage) == 0 {
        return false;
    }
    match message_id {
        Some(id) if last.as_deref() == Some(id) => false,
        Some(id) => {
            *last = Some(id.to_owned());
            true
        }
        None => true,
    }
}

/// Maps one Claude message object into a frame: `message` = its `content`, `usage` once per
/// `message.id`, repeats kept in `extras.usage`.
pub(crate) fn message(
    cx: &mut Cx,
    role: &str,
    msg: &str,
    id: Id,
    stamp: Option<&str>,
    parent: Option<&str>,
) -> Frame {
    let content = at(Some(msg), "content").unwrap_or("null");
    let mut f = cx.frame(kind(role, content), id, stamp, parent);
    f.content(content);
    if role == "assistant" {
        let message_id = str_at(Some(msg), "id");
        if let Some(usage) = at(Some(msg), "usage").filter(|u| is_object(u)) {
            let slot = if parent.is_some() {
                &mut cx.st.sub_message
            } else {
                &mut cx.st.main_message
            };
            if new_reading(slot, message_id.as_deref(), usage) {
                f.raw("usage", usage);
            } else {
                f.extra_raw("usage", usage);
            }
        }
        if let Some(m) = &message_id {
            f.extra_str("message_id", m);
        }
        if let Some(m) = at(Some(msg), "model") {
            f.extra_raw("model", m);
        }
    }
    f
}

/// A compaction boundary's `trigger` and its pre-compaction size (`preTokens` in a transcript's
/// `compactMetadata`, `pre_tokens` in a stream's `compact_metadata`) on its `compact/start`
/// frame, where the pressure view reads the level an automatic compaction fired at (contract §3).
pub(crate) fn compaction(f: &mut Frame, meta: Option<&str>, pre_tokens: &str) {
    if let Some(t) = at(meta, "trigger").filter(|t| crate::json::is_string(t)) {
        f.raw("trigger", t);
    }
    if let Some(n) = uint_at(meta, pre_tokens).filter(|n| *n >= 1) {
        f.uint("preTokens", n);
    }
}
