//! What each kind of line of an agent's log is to its adapter (contract §1, `docs/adapters.md`):
//! read into frames the views use, priced (context the agent adds beside the messages, joining
//! the surface), passed over on purpose (it never reaches the model's context), or unknown to
//! this build. One table per format, which the adapters consult to say, in the stream, what
//! they did not understand (`extras.unknown_kind`), and `agent-fold inspect` counts.

use std::borrow::Cow;

use super::line::{Line, at, str_at};
use crate::config::Input;

/// What an adapter does with a kind of line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Treatment {
    /// Mapped to frames the views read: messages, readings, compactions, headers.
    Read,
    /// Context the agent adds beside the messages (an attachment): joins the surface.
    Priced,
    /// Passed through on purpose: it never reaches the model's context.
    PassedOver,
    /// Not known to this build: passed through (an attachment: priced) and said so.
    Unknown,
}

impl Treatment {
    /// The word `inspect` prints.
    pub fn word(self) -> &'static str {
        match self {
            Treatment::Read => "read",
            Treatment::Priced => "priced",
            Treatment::PassedOver => "passed over",
            Treatment::Unknown => "unknown",
        }
    }
}

/// One line's kind, in the words its format uses (`attachment/file`, `event_msg/token_count`,
/// `claude_code.api_request`), and what its adapter does with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineKind {
    pub kind: String,
    pub treatment: Treatment,
}

impl Input {
    /// A line's kind and treatment in this format; `None` when it is not a JSON object (or
    /// the format is agent-fold's own frames, which no adapter reads).
    pub fn census(self, line: &[u8]) -> Option<LineKind> {
        let line = Line::read(line)?;
        let (kind, treatment) = match self {
            Input::ClaudeCode => claude_code(&line),
            Input::ClaudeStream => claude_stream(&line),
            Input::Codex => codex(&line),
            Input::Otel => otel(&line),
            Input::GeminiCli => gemini_cli(&line),
            Input::OpenCode => opencode(&line),
            Input::AgentFold => return None,
        };
        Some(LineKind { kind, treatment })
    }

    /// What a record holds, kind by kind: one line's kind, or for a document (Gemini CLI's
    /// saved chat, `opencode export`) each of its messages' (and parts') kinds. Empty when it
    /// is not a JSON object.
    pub fn census_all(self, record: &[u8]) -> Vec<LineKind> {
        let Some(line) = Line::read(record) else {
            return Vec::new();
        };
        let Some(messages) = line
            .get("messages")
            .filter(|_| matches!(self, Input::GeminiCli | Input::OpenCode))
        else {
            return self.census(record).into_iter().collect();
        };
        let mut out = Vec::new();
        for m in crate::json::elements(messages) {
            let Some(ml) = Line::read(m.as_bytes()) else {
                continue;
            };
            let (kind, treatment) = match self {
                Input::GeminiCli => gemini_cli(&ml),
                _ => {
                    let info = ml.object("info").and_then(|i| Line::read(i.as_bytes()));
                    let parts = ml.get("parts").map(crate::json::elements);
                    for p in parts.into_iter().flatten() {
                        if let Some(pl) = Line::read(p.as_bytes()) {
                            let (kind, treatment) = opencode_part(&pl);
                            out.push(LineKind { kind, treatment });
                        }
                    }
                    match info {
                        Some(i) => opencode(&i),
                        None => ("message".to_owned(), Treatment::Unknown),
                    }
                }
            };
            out.push(LineKind { kind, treatment });
        }
        out
    }
}

/// The treatment of a line the adapter passes through: unknown unless the format's table
/// knows it (contract §1: the stream says what it did not understand).
pub(crate) fn passed_unknown(input: Input, line: &Line) -> bool {
    let treatment = match input {
        Input::ClaudeCode => claude_code(line).1,
        Input::ClaudeStream => claude_stream(line).1,
        Input::Codex => codex(line).1,
        Input::Otel => otel(line).1,
        Input::GeminiCli => gemini_cli(line).1,
        Input::OpenCode => opencode(line).1,
        Input::AgentFold => return false,
    };
    treatment == Treatment::Unknown
}

/// Whether a record is Gemini CLI's: a document or a recording's header (`sessionId` and
/// `projectHash`).
pub(crate) fn is_gemini_chat(line: &Line) -> bool {
    line.get("sessionId").is_some() && line.get("projectHash").is_some()
}

fn looked_up(name: &str, read: &[&str], passed: &[&str]) -> Treatment {
    if read.contains(&name) {
        Treatment::Read
    } else if passed.contains(&name) {
        Treatment::PassedOver
    } else {
        Treatment::Unknown
    }
}

fn joined(kind: &str, sub: Option<Cow<str>>) -> String {
    match sub {
        Some(s) => format!("{kind}/{s}"),
        None => kind.to_owned(),
    }
}

/// Claude Code transcript lines that are never context: the session's bookkeeping (file
/// history, titles, the last prompt, the permission mode, links, queue operations, the costs
/// so far, the tools a turn used), and the progress and system notices shown to the user only.
const CLAUDE_PASSED: [&str; 36] = [
    "cost-state",
    "tools-used",
    "file-history-snapshot",
    "file-history-delta",
    "summary",
    "custom-title",
    "ai-title",
    "last-prompt",
    "mode",
    "pr-link",
    "queue-operation",
    "bridge-session",
    "atis-latch",
    "frame-link",
    "tag",
    "agent-name",
    "progress/bash_progress",
    "progress/hook_progress",
    "progress/mcp_progress",
    "progress/waiting_for_task",
    "progress/query_update",
    "progress/search_results_received",
    "progress/skill_progress",
    "system/api_error",
    "system/local_command",
    "system/stop_hook_summary",
    "system/turn_duration",
    "system/away_summary",
    "system/informational",
    "system/bridge_status",
    "system/date_change",
    // The model it falls back to names itself on the next assistant line, which moves the
    // window (`claude::announce`).
    "system/model_refusal_fallback",
    "system/notification",
    "system/permission_retry",
    "system/hook_result",
    "system/scheduled_task_fire",
];

/// What Claude Code's adapter reads: messages, sub-agents' copies, compactions, and the
/// requests a log that writes them sends (their shape, their messages by hash, the request).
const CLAUDE_READ: [&str; 7] = [
    "user",
    "assistant",
    "progress/agent_progress",
    "system/compact_boundary",
    "api-request",
    "api-request-shape",
    "api-request-blob",
];

/// Attachments Claude Code sends the model (as system reminders and restored context).
const ATTACHMENTS_PRICED: [&str; 36] = [
    "environment",
    "model",
    "date",
    "session_context",
    "remote_session_change",
    "read_truncation_notice",
    "file",
    "compact_file_reference",
    "invoked_skills",
    "deferred_tools_delta",
    "agent_listing_delta",
    "mcp_instructions_delta",
    "task_reminder",
    "todo_reminder",
    "todo",
    "plan_file_reference",
    "plan_mode",
    "plan_mode_exit",
    "plan_mode_reentry",
    "hook_additional_context",
    "hook_blocking_error",
    "nested_memory",
    "skill_listing",
    "edited_text_file",
    "edited_image_file",
    "date_change",
    "auto_mode",
    "total_tokens_reminder",
    "queued_command",
    "critical_system_reminder",
    "selected_lines_in_ide",
    "opened_file_in_ide",
    "diagnostics",
    "directory",
    "output_style",
    "memory",
];

/// Attachments shown to the user or kept for Claude Code itself, never sent to the model (a
/// snapshot of the system prompt, kept to rebuild the request).
const ATTACHMENTS_PASSED: [&str; 7] = [
    "prompt_snapshot",
    "hook_system_message",
    "command_permissions",
    "hook_cancelled",
    "hook_non_blocking_error",
    "hook_error_during_execution",
    "hook_permission_decision",
];

/// An attachment line's treatment: one that carries its `rendered` text (Claude Code ≥
/// 2.1.282, which writes its requests) reaches the model inside a request's message, priced
/// with it (`api-request-blob`): the line itself is passed over.
pub(crate) fn attachment_line(line: &Line) -> (String, Treatment) {
    let (kind, treatment) = attachment(line.object("attachment").unwrap_or("{}"));
    match treatment {
        Treatment::Priced if line.get("rendered").is_some() => (kind, Treatment::PassedOver),
        t => (kind, t),
    }
}

/// The context edits a request asks the provider for that the meter does not model: any but
/// `clear_thinking` keeping every turn's thinking (Claude Code's own, which clears nothing).
pub(crate) fn unmodelled_clearing(edits: Option<&str>) -> Vec<String> {
    let Some(edits) = edits.filter(|e| e.starts_with('[')) else {
        return Vec::new();
    };
    crate::json::elements(edits)
        .filter_map(|e| {
            let kind = str_at(Some(e), "type")?.into_owned();
            let keeps_all = str_at(Some(e), "keep").as_deref() == Some("all");
            (!(kind.starts_with("clear_thinking") && keeps_all)).then_some(kind)
        })
        .collect()
}

/// The hook events whose successful output Claude Code adds to the context.
const CONTEXT_HOOKS: [&str; 2] = ["SessionStart", "UserPromptSubmit"];

/// An attachment's treatment: a hook's output reaches the context only for the events that
/// add context, and only when it says something.
pub(crate) fn attachment(attachment: &str) -> (String, Treatment) {
    let a = Some(attachment);
    let t = str_at(a, "type").unwrap_or(Cow::Borrowed("untyped"));
    let treatment = match &*t {
        "hook_success" => {
            let event = str_at(a, "hookEvent");
            let says = str_at(a, "content").is_some_and(|c| !c.is_empty());
            if says && event.is_some_and(|e| CONTEXT_HOOKS.contains(&&*e)) {
                Treatment::Priced
            } else {
                Treatment::PassedOver
            }
        }
        t if ATTACHMENTS_PRICED.contains(&t) => Treatment::Priced,
        t if ATTACHMENTS_PASSED.contains(&t) => Treatment::PassedOver,
        _ => Treatment::Unknown,
    };
    (format!("attachment/{t}"), treatment)
}

fn claude_code(line: &Line) -> (String, Treatment) {
    let kind = line.str("type").unwrap_or(Cow::Borrowed("untyped"));
    match &*kind {
        "attachment" => match line.object("attachment") {
            Some(_) => attachment_line(line),
            None => ("attachment".into(), Treatment::Unknown),
        },
        "progress" => {
            let name = joined("progress", str_at(line.get("data"), "type"));
            let t = looked_up(&name, &CLAUDE_READ, &CLAUDE_PASSED);
            (name, t)
        }
        _ => {
            let name = joined(&kind, line.str("subtype"));
            let t = looked_up(&name, &CLAUDE_READ, &CLAUDE_PASSED);
            (name, t)
        }
    }
}

fn claude_stream(line: &Line) -> (String, Treatment) {
    const READ: [&str; 6] = [
        "system/init",
        "system/compact_boundary",
        "assistant",
        "user",
        "result/success",
        "stream_event/content_block_delta",
    ];
    const PASSED: [&str; 12] = [
        "result/error_max_turns",
        "result/error_during_execution",
        "system/status",
        "system/hook_response",
        "system/api_retry",
        "stream_event/message_start",
        "stream_event/message_delta",
        "stream_event/message_stop",
        "stream_event/content_block_start",
        "stream_event/content_block_stop",
        "stream_event/ping",
        "tool_progress",
    ];
    let kind = line.str("type").unwrap_or(Cow::Borrowed("untyped"));
    let sub = match &*kind {
        "stream_event" => str_at(line.get("event"), "type"),
        _ => line.str("subtype"),
    };
    let name = joined(&kind, sub);
    let t = looked_up(&name, &READ, &PASSED);
    (name, t)
}

fn codex(line: &Line) -> (String, Treatment) {
    const READ: [&str; 18] = [
        "session_meta",
        "response_item/agent_message",
        "turn_context",
        "compacted",
        "response_item/message",
        "response_item/reasoning",
        "response_item/function_call",
        "response_item/custom_tool_call",
        "response_item/local_shell_call",
        "response_item/web_search_call",
        "response_item/tool_search_call",
        "response_item/function_call_output",
        "response_item/custom_tool_call_output",
        "response_item/local_shell_call_output",
        "response_item/tool_search_output",
        "event_msg/token_count",
        "event_msg/task_started",
        "event_msg/context_compacted",
    ];
    // The UI's events (copies of response items, command and patch progress, turn ends), and
    // the lines Codex ≥ 0.145 adds for itself: none is sent to the model.
    const PASSED: [&str; 37] = [
        "response_item/ghost_snapshot",
        // One response's usage, which the `token_count` after it carries as the reading.
        "token_usage_record",
        "event_msg/thread_settings_applied",
        "event_msg/thread_name_updated",
        "event_msg/raw_response_item",
        "event_msg/agent_message",
        "event_msg/agent_reasoning",
        "event_msg/agent_reasoning_raw_content",
        "event_msg/agent_reasoning_section_break",
        "event_msg/user_message",
        "event_msg/exec_command_begin",
        "event_msg/exec_command_end",
        "event_msg/exec_command_output_delta",
        "event_msg/patch_apply_begin",
        "event_msg/patch_apply_end",
        "event_msg/mcp_tool_call_begin",
        "event_msg/mcp_tool_call_end",
        "event_msg/web_search_begin",
        "event_msg/web_search_end",
        "event_msg/task_complete",
        "event_msg/turn_aborted",
        "event_msg/turn_diff",
        "event_msg/plan_update",
        "event_msg/view_image_tool_call",
        "event_msg/entered_review_mode",
        "event_msg/exited_review_mode",
        "event_msg/error",
        "event_msg/stream_error",
        "event_msg/background_event",
        "event_msg/item_started",
        "event_msg/item_completed",
        "event_msg/undo_started",
        "event_msg/undo_completed",
        "event_msg/deprecation_notice",
        "event_msg/shutdown_complete",
        "world_state",
        "inter_agent_communication_metadata",
    ];
    let kind = line.str("type").unwrap_or(Cow::Borrowed("untyped"));
    let sub = match &*kind {
        "response_item" | "event_msg" => str_at(line.object("payload"), "type"),
        _ => None,
    };
    let name = joined(&kind, sub);
    let t = looked_up(&name, &READ, &PASSED);
    (name, t)
}

/// Gemini CLI: a saved chat or a recording's header, and each message by its `type`: a user's
/// message and the model's answer are read; `info` and `error` notices are shown to the user only.
fn gemini_cli(line: &Line) -> (String, Treatment) {
    if line.get("messages").is_some() {
        return ("chat".to_owned(), Treatment::Read);
    }
    if is_gemini_chat(line) {
        return ("header".to_owned(), Treatment::Read);
    }
    // A recording's patches: `$set` of the whole `messages` (the history rewritten: at a
    // process's start, a resume, a compression, tool outputs masked) is read; of the session's
    // bookkeeping (`lastUpdated`, `sessionId`, a `summary` and `memoryScratchpad` written by
    // `--list-sessions`), passed over; `$rewindTo`, passed over (the history it cuts comes
    // again with the next `$set`).
    if let Some(set) = line.object("$set") {
        if at(Some(set), "messages").is_some() {
            return ("$set/messages".to_owned(), Treatment::Read);
        }
        let first = crate::json::members(set).next().map_or("", |m| m.key);
        return (format!("$set/{first}"), Treatment::PassedOver);
    }
    if line.get("$rewindTo").is_some() {
        return ("$rewindTo".to_owned(), Treatment::PassedOver);
    }
    let kind = line.str("type").unwrap_or(Cow::Borrowed("untyped"));
    let kind = format!("message/{kind}");
    let treatment = looked_up(
        &kind,
        &["message/user", "message/gemini"],
        &["message/info", "message/error", "message/warning"],
    );
    (kind, treatment)
}

/// OpenCode: an export, a message's info by its `role`, a part by its `type` ([`opencode_part`]).
fn opencode(line: &Line) -> (String, Treatment) {
    if line.get("messages").is_some() {
        return ("export".to_owned(), Treatment::Read);
    }
    if line.get("messageID").is_some() {
        return opencode_part(line);
    }
    let kind = format!(
        "message/{}",
        line.str("role").unwrap_or(Cow::Borrowed("untyped"))
    );
    let treatment = looked_up(&kind, &["message/user", "message/assistant"], &[]);
    (kind, treatment)
}

/// OpenCode's parts: text, files, tools and reasoning reach the model; the steps' bookkeeping
/// (their tokens repeat the message's), patches, snapshots, the agent and retry notes do not.
fn opencode_part(line: &Line) -> (String, Treatment) {
    let kind = format!(
        "part/{}",
        line.str("type").unwrap_or(Cow::Borrowed("untyped"))
    );
    let treatment = looked_up(
        &kind,
        &["part/text", "part/file", "part/tool", "part/reasoning"],
        &[
            "part/step-start",
            "part/step-finish",
            "part/patch",
            "part/snapshot",
            "part/agent",
            "part/retry",
            "part/compaction",
            "part/subtask",
        ],
    );
    (kind, treatment)
}

fn otel(line: &Line) -> (String, Treatment) {
    const READ: [&str; 12] = [
        "claude_code.api_request",
        "claude_code.user_prompt",
        "claude_code.tool_result",
        "claude_code.compaction",
        "codex.conversation_starts",
        "codex.user_prompt",
        "codex.tool_result",
        "codex.sse_event",
        "gemini_cli.user_prompt",
        "gemini_cli.tool_call",
        "gemini_cli.api_response",
        "gemini_cli.chat_compression",
    ];
    const PASSED: [&str; 14] = [
        "claude_code.api_error",
        "claude_code.tool_decision",
        "codex.api_request",
        "codex.tool_decision",
        "codex.websocket_request",
        "codex.websocket_event",
        "gemini_cli.config",
        "gemini_cli.api_request",
        "gemini_cli.api_error",
        "gemini_cli.flash_fallback",
        "gemini_cli.next_speaker_check",
        "gemini_cli.slash_command",
        "gemini_cli.file_operation",
        "gemini_cli.conversation_finished",
    ];
    // An event named without its agent's prefix takes the one its record's `agent` says.
    let event = line.str("event").unwrap_or(Cow::Borrowed("untyped"));
    let prefix = match line.str("agent").as_deref() {
        Some("claude-code") => "claude_code.",
        Some("codex") => "codex.",
        Some("gemini-cli") => "gemini_cli.",
        _ => "",
    };
    let name = match event.contains('.') {
        true => event.into_owned(),
        false => format!("{prefix}{event}"),
    };
    let t = looked_up(&name, &READ, &PASSED);
    (name, t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(input: Input, line: &str) -> (String, Treatment) {
        let k = input.census(line.as_bytes()).unwrap();
        (k.kind, k.treatment)
    }

    #[test]
    fn each_format_names_its_kinds_and_what_it_does_with_them() {
        use Treatment::*;
        let cc = Input::ClaudeCode;
        assert_eq!(
            of(cc, r#"{"type":"assistant","message":{}}"#),
            ("assistant".into(), Read)
        );
        assert_eq!(
            of(cc, r#"{"type":"system","subtype":"compact_boundary"}"#),
            ("system/compact_boundary".into(), Read)
        );
        assert_eq!(
            of(cc, r#"{"type":"progress","data":{"type":"bash_progress"}}"#),
            ("progress/bash_progress".into(), PassedOver)
        );
        assert_eq!(
            of(cc, r#"{"type":"attachment","attachment":{"type":"file"}}"#),
            ("attachment/file".into(), Priced)
        );
        assert_eq!(
            of(
                cc,
                r#"{"type":"attachment","attachment":{"type":"hook_success","hookEvent":"Stop","content":"x"}}"#
            ),
            ("attachment/hook_success".into(), PassedOver)
        );
        assert_eq!(
            of(
                cc,
                r#"{"type":"attachment","attachment":{"type":"hook_success","hookEvent":"UserPromptSubmit","content":"x"}}"#
            ),
            ("attachment/hook_success".into(), Priced)
        );
        assert_eq!(
            of(cc, r#"{"type":"atis-latch"}"#),
            ("atis-latch".into(), PassedOver)
        );
        assert_eq!(
            of(cc, r#"{"type":"nova","subtype":"x"}"#),
            ("nova/x".into(), Unknown)
        );
        assert_eq!(of(cc, r#"{"no":"type"}"#), ("untyped".into(), Unknown));
        let cx = Input::Codex;
        assert_eq!(
            of(
                cx,
                r#"{"type":"event_msg","payload":{"type":"token_count"}}"#
            ),
            ("event_msg/token_count".into(), Read)
        );
        assert_eq!(
            of(cx, r#"{"type":"world_state","payload":{}}"#),
            ("world_state".into(), PassedOver)
        );
        assert_eq!(
            of(
                cx,
                r#"{"type":"response_item","payload":{"type":"new_item"}}"#
            ),
            ("response_item/new_item".into(), Unknown)
        );
        assert_eq!(
            of(
                Input::ClaudeStream,
                r#"{"type":"stream_event","event":{"type":"message_stop"}}"#
            ),
            ("stream_event/message_stop".into(), PassedOver)
        );
        assert_eq!(
            of(
                Input::Otel,
                r#"{"type":"otel/log","agent":"codex","event":"sse_event"}"#
            ),
            ("codex.sse_event".into(), Read)
        );
        assert!(Input::ClaudeCode.census(b"not json").is_none());
        assert!(Input::AgentFold.census(b"{}").is_none());
    }
}
