//! What Claude Code transcripts and `claude -p` streams share: a message object
//! (`{"role", "content", "id", "usage", "model", …}`) becomes one frame.

use super::build::{Adapting, Announced, FrameBuf, Id, fingerprint};
use super::line::{at, opens_object, str_at, uint_at};
use crate::estimate::estimate;
use crate::frame::kind::{ASSISTANT_MESSAGE, REQUEST_HEADER, TOOL_RESULT, USER_MESSAGE};
use crate::frame::{NAME_BYTES, usage_tokens};

/// The agent Claude Code's logs (transcripts and streams) are, as headers name it (contract §1).
pub(crate) const CLAUDE_CODE: &str = "claude-code";
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

/// Whether a main message would give a new provider reading (see [`new_reading`]), without
/// remembering it.
pub(crate) fn gives_reading(cx: &Adapting, msg: &str) -> bool {
    let Some(logged) = at(Some(msg), "usage").filter(|u| opens_object(u)) else {
        return false;
    };
    let usage = request_usage(logged).unwrap_or(logged);
    let id = str_at(Some(msg), "id");
    usage_tokens(usage) != 0 && (id.is_none() || cx.st.main_message.as_deref() != id.as_deref())
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

/// The iteration types that are this conversation's own request: the main model's response,
/// and the fallback model's after a refusal. An advisor's (`advisor_message`) is another
/// model's context.
const OWN_ITERATIONS: [&str; 2] = ["message", "fallback_message"];

/// Where a message's `usage` is not the request's own context: Claude Code ≥ 2.1.2xx writes,
/// on a turn with an advisor, the sum of the turn's `usage.iterations` of type `message` at the
/// top level; the request's own reading is the last of its own iterations (contract §3,
/// sample). `Some(that iteration)` when its prompt differs from the top level's; `None` when
/// the top level is the reading (no iterations, or it equals the last, as after a fallback).
pub(crate) fn request_usage(usage: &str) -> Option<&str> {
    // A top level of zeros is no request's reading, whatever its iterations hold: Claude Code
    // ≥ 2.1.2xx writes the preserved messages of a turn compacted mid-way again after the
    // boundary so, the pre-compaction counts in `iterations[0]` (contract §3.2).
    if usage_tokens(usage) == 0 {
        return None;
    }
    let iterations = at(Some(usage), "iterations").filter(|i| i.starts_with('['))?;
    let own = json::elements(iterations)
        .filter(|it| {
            str_at(Some(it), "type")
                .as_deref()
                .is_some_and(|t| OWN_ITERATIONS.contains(&t))
        })
        .last()?;
    (usage_tokens(own) != usage_tokens(usage)).then_some(own)
}

/// An iteration's token counts as a flat `usage` object (its nested `cache_creation`
/// breakdown and its `type` left out).
fn flat_usage(iteration: &str) -> String {
    let mut out = String::from("{");
    for m in json::members(iteration) {
        if json::uint(m.value).is_none() {
            continue;
        }
        if out.len() > 1 {
            out.push(',');
        }
        out.push('"');
        out.push_str(m.key);
        out.push_str("\":");
        out.push_str(m.value);
    }
    out.push('}');
    out
}

/// Maps one Claude message object into a frame: `message` = its `content` (unless `held`: a
/// log that writes its requests prices it with the request that carries it), `usage` once per
/// `message.id`, repeats kept in `extras.usage`.
pub(crate) fn message(
    cx: &mut Adapting,
    role: &str,
    msg: &str,
    id: Id,
    stamp: Option<&str>,
    parent: Option<&str>,
    held: bool,
) -> FrameBuf {
    let content = at(Some(msg), "content").unwrap_or("null");
    let mut f = cx.frame(kind(role, content), id, stamp, parent);
    if held {
        f.extra_raw("held_for_request", "true");
    } else {
        f.content(content);
    }
    if role == "assistant" {
        let message_id = str_at(Some(msg), "id");
        if let Some(logged) = at(Some(msg), "usage").filter(|u| opens_object(u)) {
            let slot = if parent.is_some() {
                &mut cx.st.sub_message
            } else {
                &mut cx.st.main_message
            };
            let request = request_usage(logged);
            let usage = request.unwrap_or(logged);
            if new_reading(slot, message_id.as_deref(), usage) {
                match request {
                    // The turn's sum stays in the stream, beside the request's own usage.
                    Some(own) => {
                        f.json("usage", &flat_usage(own));
                        f.extra_raw("usage", logged);
                        f.extra_raw("usage_summed", "true");
                    }
                    None => {
                        f.raw("usage", logged);
                    }
                }
            } else {
                f.extra_raw("usage", logged);
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
pub(crate) fn compaction(f: &mut FrameBuf, meta: Option<&str>, pre_tokens: &str) {
    if let Some(t) = at(meta, "trigger").filter(|t| crate::json::is_string(t)) {
        f.raw("trigger", t);
    }
    if let Some(n) = uint_at(meta, pre_tokens).filter(|n| *n >= 1) {
        f.uint("preTokens", n);
    }
}

/// The most tokens of a file Claude Code re-reads whole after a compaction; a larger one
/// comes back as a one-line reference (`POST_COMPACT_MAX_TOKENS_PER_FILE`).
const RESTORE_FILE_TOKENS: u64 = 5_000;
/// The most it re-reads in all (`POST_COMPACT_TOKEN_BUDGET`).
const RESTORE_BUDGET: u64 = 50_000;
/// What a line of a file costs beside its text when Claude Code shows it to the model: its
/// number, right-aligned in six, and an arrow (`cat -n`'s form, as its Read results show it).
const LINE_NUMBER_CHARS: u64 = 7;

/// What Claude Code's rule puts back of the files the agent last touched (contract §3.4):
/// each of them whole when it is at most [`RESTORE_FILE_TOKENS`], within [`RESTORE_BUDGET`].
fn restored_files(files: &[(u64, u64)]) -> u64 {
    files
        .iter()
        .rev()
        .map(|(_, t)| *t)
        .filter(|t| *t <= RESTORE_FILE_TOKENS)
        .fold(0, |sum, t| {
            if sum + t <= RESTORE_BUDGET {
                sum + t
            } else {
                sum
            }
        })
}

/// A file the agent touched, as a main `user` line's `toolUseResult` shows it.
struct Touched {
    path: String,
    /// Its size as the model is shown it, in the estimate's tokens (contract §3.1): the text
    /// and a numbered line's prefix for each of its lines.
    tokens: u64,
    /// Only a part of it was read (an offset or a limit): the rule does not re-read it.
    partial: bool,
}

/// The file a main `user` line's `toolUseResult` says the agent read, edited or wrote, as it
/// stands after the tool: a Read's `file.content`, an Edit's `originalFile` with `oldString`
/// made `newString`, a Write's `content`. A plan file (`.claude/plans/`) is put back on its
/// own, not by this rule: none.
fn touched_file<'a>(result: &'a str) -> Option<Touched> {
    let r = Some(result);
    let text = |name: &str, of: Option<&'a str>| -> Option<&'a str> {
        at(of, name).filter(|v| crate::json::is_string(v))
    };
    // A JSON string's estimate, and how many lines it holds (its escaped newlines), each read
    // only where needed: a Read names its lines, an Edit's replaced strings need no count.
    let price = |raw: &str| estimate(raw.as_bytes());
    let lines = |raw: &str| raw.matches("\\n").count() as u64 + 1;
    let shown =
        |chars_tokens: u64, lines: u64| chars_tokens + (lines * LINE_NUMBER_CHARS).div_ceil(4);
    let (path, tokens, partial) = if let Some(file) = at(r, "file").filter(|f| f.starts_with('{')) {
        let path = str_at(Some(file), "filePath")?;
        let content = text("content", Some(file))?;
        let n = uint_at(Some(file), "numLines").unwrap_or_else(|| lines(content));
        let partial = uint_at(Some(file), "totalLines").is_some_and(|total| total > n);
        (path, shown(price(content), n), partial)
    } else {
        let path = str_at(r, "filePath")?;
        let tokens = match text("originalFile", r) {
            Some(original) => {
                let new = text("newString", r).map_or(0, price);
                let old = text("oldString", r).map_or(0, price);
                shown((price(original) + new).saturating_sub(old), lines(original))
            }
            None => {
                let content = text("content", r)?;
                shown(price(content), lines(content))
            }
        };
        (path, tokens, false)
    };
    if plan_file(&path) {
        return None;
    }
    Some(Touched {
        path: path.into_owned(),
        tokens,
        partial,
    })
}

/// A main `user` line's tool result (`toolUseResult` in a transcript, `tool_use_result` in a
/// stream): the file it read, edited or wrote is the most recently touched.
pub(crate) fn touched(cx: &mut Adapting, result: Option<&str>) {
    let Some(result) = result.filter(|r| r.starts_with('{')) else {
        return;
    };
    if let Some(t) = touched_file(result) {
        cx.st
            .touched(fingerprint(&t.path), (!t.partial).then_some(t.tokens));
    } else if !cx.st.restores_more && keeps_work(result) {
        cx.st.restores_more = true;
    }
}

/// A plan file (`~/.claude/plans/…`, with either separator): plan mode's plan, which Claude
/// Code puts back on its own at a compaction, not as one of the files its rule re-reads.
fn plan_file(path: &str) -> bool {
    path.contains("/.claude/plans/") || path.contains("\\.claude\\plans\\")
}

/// Whether a tool result shows work Claude Code carries across a compaction beyond the files
/// it re-reads (contract §3.4): a to-do list (TodoWrite's non-empty `newTodos`), a task
/// (TaskCreate's `task`; TaskOutput's `task` comes with `retrieval_status` and is a
/// sub-agent's), a plan (ExitPlanMode's `plan`, a file written under `.claude/plans/`), an
/// invoked skill (Skill's `commandName`).
fn keeps_work(result: &str) -> bool {
    let (mut task, mut retrieval) = (false, false);
    for m in crate::json::members(result) {
        match m.key {
            "newTodos" if m.value.starts_with('[') && m.value != "[]" => return true,
            "plan" | "commandName" if crate::json::is_string(m.value) => return true,
            "filePath" if crate::json::string(m.value).is_some_and(|p| plan_file(&p)) => {
                return true;
            }
            "task" => task = m.value.starts_with('{'),
            "retrieval_status" => retrieval = true,
            _ => {}
        }
    }
    task && !retrieval
}

/// A compaction's `restore_tokens`: what the rule puts back of the files the agent last
/// touched, for a log that does not show it, and `restore_beyond: false` when the session
/// showed no work the agent carries beyond them (contract §3.4).
pub(crate) fn restore_tokens(cx: &Adapting, f: &mut FrameBuf) {
    f.uint("restore_tokens", restored_files(&cx.st.files));
    if !cx.st.restores_more {
        f.json("restore_beyond", "false");
    }
}

/// Claude's context window by default.
const WINDOW: u64 = 200_000;
/// The larger window (a `[1m]` model, the 1M beta, or a model whose own window it is).
const WINDOW_1M: u64 = 1_000_000;

/// The window a model name says: 1M for a `[1m]` name and the models whose own window it is
/// (Opus 4.7 and later, the Claude 5 family, as Claude Code's changelog has them), else 200k;
/// `None` for no name or Claude Code's `<synthetic>` lines.
pub(crate) fn model_window(model: &str) -> Option<u64> {
    const NATIVE_1M: [&str; 4] = ["opus-4-7", "opus-4-8", "-5", "[1m]"];
    if model.is_empty() || model.starts_with('<') {
        return None;
    }
    let m = model.to_ascii_lowercase();
    let native = NATIVE_1M.iter().any(|n| match *n {
        // `claude-opus-5`, `claude-sonnet-5-…`: a family 5 model, not a date or a 4-5 minor.
        "-5" => m.split('-').nth(2) == Some("5"),
        n => m.contains(n),
    });
    Some(if native { WINDOW_1M } else { WINDOW })
}

/// How far below its window Claude Code compacts on its own, by version: the window less
/// 13,000 and the output it reserves for the summary — 32,000 before 2.1.21, at most 20,000
/// from it on (Claude Code's changelog, 2.1.21: "auto-compact triggering too early on models
/// with large output token limits"). `None` for a version it cannot read.
pub(crate) fn compact_reserve(version: &str) -> Option<u64> {
    let mut parts = version.split(['.', '-']).map(|p| p.parse::<u64>().ok());
    let (major, minor, patch) = (parts.next()??, parts.next()??, parts.next()??);
    Some(if (major, minor, patch) < (2, 1, 21) {
        45_000
    } else {
        33_000
    })
}

/// Whether a Claude Code version writes its requests (`api-request`, `api-request-shape`,
/// `api-request-blob` lines): 2.1.282 and later.
pub(crate) fn writes_requests(version: &str) -> bool {
    let mut parts = version.split(['.', '-']).map(|p| p.parse::<u64>().ok());
    match (parts.next(), parts.next(), parts.next()) {
        (Some(Some(major)), Some(Some(minor)), Some(Some(patch))) => {
            (major, minor, patch) >= (2, 1, 282)
        }
        _ => false,
    }
}

/// The window a session's model and reading say, beside the one announced `before`: the
/// largest of them (a reading above a window proves a larger one: 1M once above 200k).
pub(crate) fn window(before: Option<u64>, model: Option<&str>, reading: u64) -> Option<u64> {
    let named = model.and_then(model_window);
    let proven = (reading > WINDOW).then_some(WINDOW_1M);
    [before, named, proven].into_iter().flatten().max()
}

/// Before a main assistant message: a `request/header` saying what changed of the window (what
/// the model name says, or 1M once a reading is above 200k — unless param `capacity` names it)
/// and of the compaction reserve (by the agent's `version`), when anything did (contract §3).
pub(crate) fn announce(cx: &mut Adapting, msg: &str, version: Option<&str>, stamp: Option<&str>) {
    let reading = at(Some(msg), "usage")
        .filter(|u| opens_object(u))
        .map(|u| usage_tokens(request_usage(u).unwrap_or(u)))
        .unwrap_or(0);
    let model = str_at(Some(msg), "model");
    // The model, for the records to name (contract §3.6); `<synthetic>` lines name none.
    let named = model
        .as_deref()
        .filter(|m| !m.is_empty() && !m.starts_with('<') && m.len() <= NAME_BYTES);
    let print = named.map(fingerprint).filter(|p| cx.st.model != Some(*p));
    // Another model than the session's (a fallback after a refusal, a `/model` switch): its
    // own window, not the larger of the two.
    let before = match (print, cx.st.model) {
        (Some(_), Some(_)) => None,
        _ => cx.st.window,
    };
    let window = window(before, model.as_deref(), reading)
        .filter(|w| !cx.window_known && cx.st.window != Some(*w));
    let reserve = version
        .and_then(compact_reserve)
        .filter(|r| cx.st.reserve != Some(*r));
    if window.is_none() && reserve.is_none() && print.is_none() {
        return;
    }
    let mut h = cx.frame(REQUEST_HEADER, Id::Numbered, stamp, None);
    if let (Some(m), Some(_)) = (named, print) {
        cx.st.model = print;
        h.string("model", m);
    }
    let levels = Announced {
        window,
        reserve,
        ..Announced::default()
    };
    cx.announce(&mut h, levels);
    h.extra_str("source_type", "inferred");
    cx.emit(h);
}

/// Before a session's first frame: a `request/header` saying that the log carries neither the
/// system prompt nor the tool list (`null`): the breakdown shows them unknown, not 0 (contract
/// §3). A stream's `system/init` names its tools later.
pub(crate) fn not_in_log(cx: &mut Adapting, stamp: Option<&str>) {
    if cx.st.next_seq == 0 && cx.session.is_some() {
        let mut h = cx.frame(REQUEST_HEADER, Id::Numbered, stamp, None);
        h.json("system", "null").json("tools", "null");
        h.string("agent", CLAUDE_CODE);
        h.extra_str("source_type", "inferred");
        cx.emit(h);
    }
}
