//! OpenTelemetry log events (`input=otel`): one record per event that Claude Code, Codex or
//! Gemini CLI exported, as `agent-fold collect` writes them:
//!
//! ```text
//! {"type":"otel/log","session":"…","agent":"claude-code","event":"claude_code.api_request",
//!  "time":"2026-12-03T08:00:00.123456789Z","sequence":12,"attributes":{…},"resource":{…}}
//! ```
//!
//! Telemetry carries sizes, not text: what joins the context becomes frames with `message_chars`
//! (contract §1, §3.1). Counts are read from a JSON integer or a decimal string (Codex records
//! its counts as strings, JavaScript exporters send `intValue` as one); a text's size from the
//! string or from the `{"length": N}` the collector writes for one over 16 KiB.
//!
//! - The session's first frame is a `request/header` saying the log carries neither the system
//!   prompt nor the tools (`null`, contract §3.1), naming the `agent`, its restore prior
//!   (`compact_restore`, contract §3.4, for an agent one was fitted for) and what the record
//!   knows of the `model`, the window, Claude Code's compaction reserve and the agent's own
//!   compaction threshold (contract §3.5); a later header whenever one of those changes.
//! - A main-thread reading becomes an `assistant/message` whose `usage` is the request's prompt
//!   size (contract §3.2) and whose `message_chars` is the response, its output tokens × 4: the
//!   sample is taken before the frame's own node joins. Claude Code's `api_request` is the main
//!   thread's when `query_source` is absent, `repl_main_thread` or `main`; Gemini CLI's
//!   `api_response` when `role` is absent or `main`; every Codex `sse_event` whose `event.kind`
//!   is `response.completed`. Other requests (sub-agents, compaction summaries, titles, Gemini's
//!   utility calls) become sub-agent frames, never the main figure.
//! - Prompts and tool results become `user/message` and `tool/result` frames carrying their
//!   size as `message_chars`.
//! - A compaction (Claude Code's `compaction`, Gemini CLI's `chat_compression`) becomes
//!   `compact/start`, the replacement — a `user/message` whose `replaces` spans the whole
//!   surface and whose `message_chars` is the agent's own post-compaction size × 4 — and
//!   `compact/end`. That size counts what the agent put back (Claude Code's is its estimate of
//!   the messages after the compaction, re-attached files and hook output included:
//!   `docs/accuracy.md`; Gemini's counts the whole new history), so the start says
//!   `restore_shown` (contract §3.4). Codex exports no compaction event: its next reading
//!   corrects the figure.
//! - Everything else passes through as `otel/<event>`, its attributes copied when small, else
//!   as their size.

use std::borrow::Cow;

use super::build::{Adapting, Announced, FrameBuf, Id, fingerprint};
use super::line::{Line, at, opens_object, str_at};
use super::{claude, gemini_cli};
use crate::config::agent_restore_prior;
use crate::frame::MAX_SAFE;
use crate::frame::kind::{
    ASSISTANT_MESSAGE, COMPACT_END, COMPACT_START, REQUEST_HEADER, TOOL_RESULT, USER_MESSAGE,
};
use crate::json;
use crate::pressure::CLAUDE_CODE_RESERVE;

/// The agent whose event a record is: by its event name's prefix, else by the record's `agent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Agent {
    ClaudeCode,
    Codex,
    Gemini,
    Other,
}

impl Agent {
    fn of(event: &str, agent: Option<&str>) -> Agent {
        match event.split('.').next() {
            Some("claude_code") => Agent::ClaudeCode,
            Some("codex") => Agent::Codex,
            Some("gemini_cli") => Agent::Gemini,
            _ => match agent {
                Some("claude-code") => Agent::ClaudeCode,
                Some("codex") => Agent::Codex,
                Some("gemini-cli") => Agent::Gemini,
                _ => Agent::Other,
            },
        }
    }

    /// The agent's name, as the records and the restore priors spell it.
    fn name(self) -> Option<&'static str> {
        match self {
            Agent::ClaudeCode => Some("claude-code"),
            Agent::Codex => Some("codex"),
            Agent::Gemini => Some("gemini-cli"),
            Agent::Other => None,
        }
    }
}

/// One `otel/log` record, read.
struct Event<'l, 'a> {
    line: &'l Line<'a>,
    /// The full dotted event name.
    name: Cow<'a, str>,
    /// The event name without its agent's prefix (`api_request`).
    short: &'l str,
    attrs: Option<&'a str>,
    resource: Option<&'a str>,
    stamp: Option<&'a str>,
    agent: Agent,
    /// The record's `agent` (the exporter's `service.name`, as the collector names it).
    agent_name: Option<Cow<'a, str>>,
}

pub(crate) fn adapt(cx: &mut Adapting, line: &Line) {
    let kind = line.str("type");
    let event = line
        .str("event")
        .filter(|_| kind.as_deref() == Some("otel/log"));
    let logged = event.is_some();
    let name = event.unwrap_or_default();
    let agent_name = line.str("agent");
    let agent = Agent::of(&name, agent_name.as_deref());
    let short = match name.split_once('.') {
        Some((_, rest)) if agent != Agent::Other => rest,
        _ => &name,
    };
    // `attributes` and `resource` are objects; anything else reads as none.
    let ev = Event {
        line,
        name: name.clone(),
        short,
        attrs: line.object("attributes"),
        resource: line.object("resource"),
        stamp: line.get("time"),
        agent,
        agent_name,
    };
    if !logged {
        // Not a log event the collector wrote: said, never read (the session opens all the
        // same, when this is its first record).
        announce(cx, &ev, Said::default());
        let kind = kind.as_deref().unwrap_or("untyped");
        let kind = format!("otel/{}", kind.strip_prefix("otel/").unwrap_or(kind));
        return pass_through(cx, line, &kind, ev.stamp);
    }
    match agent {
        Agent::ClaudeCode => claude_code(cx, &ev),
        Agent::Codex => codex(cx, &ev),
        Agent::Gemini => gemini(cx, &ev),
        Agent::Other => announced_pass(cx, &ev, Said::default()),
    }
}

fn claude_code(cx: &mut Adapting, ev: &Event) {
    let a = ev.attrs;
    // The reserve by version, as a transcript's (contract §3.5); Claude Code's documented
    // default until a version says otherwise.
    let version = str_at(a, "app.version").or_else(|| str_at(ev.resource, "service.version"));
    let reserve = version
        .as_deref()
        .and_then(claude::compact_reserve)
        .or_else(|| cx.st.reserve.is_none().then_some(CLAUDE_CODE_RESERVE));
    let said = Said {
        reserve,
        ..Said::default()
    };
    match ev.short {
        "api_request" => {
            let usage = Usage {
                input: count(a, "input_tokens"),
                cache_read: count(a, "cache_read_tokens"),
                cache_creation: count(a, "cache_creation_tokens"),
                output: count(a, "output_tokens"),
            };
            match str_at(a, "query_source").as_deref() {
                None | Some("repl_main_thread") | Some("main") => {
                    let model = str_at(a, "model").filter(|m| !m.is_empty());
                    let window = claude::window(cx.st.window, model.as_deref(), usage.prompt());
                    announce(
                        cx,
                        ev,
                        Said {
                            model,
                            window,
                            ..said
                        },
                    );
                    reading(cx, ev, &usage, None);
                }
                Some(source) => {
                    announce(cx, ev, said);
                    reading(cx, ev, &usage, Some(&format!("query_source:{source}")));
                }
            }
        }
        "user_prompt" => measured(cx, ev, said, USER_MESSAGE, count(a, "prompt_length")),
        // Bytes, not characters: the same for ASCII, a little over for other text.
        "tool_result" => measured(
            cx,
            ev,
            said,
            TOOL_RESULT,
            count(a, "tool_result_size_bytes"),
        ),
        "compaction" if !is_false(a, "success") => {
            announce(cx, ev, said);
            let trigger = str_at(a, "trigger");
            compaction(
                cx,
                ev,
                trigger.as_deref(),
                count(a, "pre_tokens"),
                count(a, "post_tokens"),
            );
        }
        _ => announced_pass(cx, ev, said),
    }
}

fn codex(cx: &mut Adapting, ev: &Event) {
    let a = ev.attrs;
    // Every Codex event names the session's model.
    let said = Said::naming(a);
    match ev.short {
        "conversation_starts" => {
            let said = Said {
                window: count(a, "context_window"),
                threshold: count(a, "auto_compact_token_limit"),
                ..said
            };
            if !announce(cx, ev, said) {
                passed(cx, ev);
            }
        }
        "user_prompt" => measured(cx, ev, said, USER_MESSAGE, count(a, "prompt_length")),
        "tool_result" => measured(cx, ev, said, TOOL_RESULT, text_len(a, "output")),
        "sse_event" if str_at(a, "event.kind").as_deref() == Some("response.completed") => {
            announce(cx, ev, said);
            // `input_token_count` already counts `cached_token_count`: not added again.
            let usage = Usage {
                input: count(a, "input_token_count"),
                output: count(a, "output_token_count"),
                ..Usage::default()
            };
            reading(cx, ev, &usage, None);
        }
        _ => announced_pass(cx, ev, said),
    }
}

fn gemini(cx: &mut Adapting, ev: &Event) {
    let a = ev.attrs;
    match ev.short {
        "user_prompt" => measured(
            cx,
            ev,
            Said::default(),
            USER_MESSAGE,
            count(a, "prompt_length"),
        ),
        // What the tool returned to the model, in chars, when it was text.
        "tool_call" => measured(
            cx,
            ev,
            Said::default(),
            TOOL_RESULT,
            count(a, "content_length"),
        ),
        "api_response" => {
            // `input_token_count` is the prompt's count, cached content included.
            let usage = Usage {
                input: count(a, "input_token_count"),
                output: count(a, "output_token_count"),
                ..Usage::default()
            };
            match str_at(a, "role").as_deref() {
                None | Some("main") => {
                    let said = Said::naming(a);
                    let window = said.model.as_deref().map(gemini_cli::window);
                    let said = Said {
                        window,
                        threshold: window.map(gemini_cli::compress_at),
                        ..said
                    };
                    announce(cx, ev, said);
                    reading(cx, ev, &usage, None);
                }
                Some(role) => {
                    announce(cx, ev, Said::default());
                    reading(cx, ev, &usage, Some(&format!("role:{role}")));
                }
            }
        }
        // Gemini logs a compression that did not shrink the history too (a failed summary
        // logs the same count twice, an inflated one more after): only a smaller one applied.
        "chat_compression" => {
            announce(cx, ev, Said::default());
            match (count(a, "tokens_before"), count(a, "tokens_after")) {
                (Some(before), Some(after)) if after < before => {
                    compaction(cx, ev, None, Some(before), Some(after))
                }
                _ => passed(cx, ev),
            }
        }
        _ => announced_pass(cx, ev, Said::default()),
    }
}

/// What a record says of the session's requests.
#[derive(Default)]
struct Said<'a> {
    model: Option<Cow<'a, str>>,
    window: Option<u64>,
    /// Claude Code's compaction reserve (contract §3.5).
    reserve: Option<u64>,
    /// The agent's own compaction threshold (contract §3.5).
    threshold: Option<u64>,
}

impl<'a> Said<'a> {
    /// The model the attributes name (an empty name is none), and nothing else.
    fn naming(attrs: Option<&'a str>) -> Said<'a> {
        Said {
            model: str_at(attrs, "model").filter(|m| !m.is_empty()),
            ..Said::default()
        }
    }
}

/// The session's first frame, and whenever what a record says changed: a `request/header`
/// (contract §3.1, §3.5) naming the agent and what changed. Returns whether it wrote one.
fn announce(cx: &mut Adapting, ev: &Event, said: Said) -> bool {
    if cx.session.is_none() {
        // No session's requests: nothing to say of them.
        return false;
    }
    let opening = cx.st.next_seq == 0;
    let print = said.model.as_deref().map(fingerprint);
    let model = said.model.filter(|_| print != cx.st.model);
    let window = said
        .window
        .filter(|w| *w >= 1 && !cx.window_known && cx.st.window != Some(*w));
    let reserve = said.reserve.filter(|r| cx.st.reserve != Some(*r));
    let threshold = said
        .threshold
        .filter(|t| *t >= 1 && cx.st.compact_limit != Some(*t));
    if !opening && model.is_none() && window.is_none() && reserve.is_none() && threshold.is_none() {
        return false;
    }
    let mut h = cx.frame(REQUEST_HEADER, Id::Numbered, ev.stamp, None);
    if opening {
        // Telemetry never carries the system prompt or the tool list: unknown, not 0.
        h.json("system", "null").json("tools", "null");
    }
    let levels = Announced {
        window,
        reserve,
        auto_compact: threshold,
    };
    cx.announce(&mut h, levels);
    // The agent varies by session in one instance: its prior goes with the session.
    if let Some(prior) = opening
        .then(|| ev.agent.name().and_then(agent_restore_prior))
        .flatten()
    {
        h.uint("compact_restore", prior);
    }
    if let Some(name) = ev.agent_name.as_deref().or(ev.agent.name()) {
        h.string("agent", name);
    }
    if let Some(m) = &model {
        cx.st.model = print;
        h.string("model", m);
    }
    h.extra_str("source_type", "inferred");
    h.extra_str("event", &ev.name);
    cx.emit(h);
    true
}

/// A request's token counts, as the agent's event names them.
#[derive(Default)]
struct Usage {
    input: Option<u64>,
    cache_read: Option<u64>,
    cache_creation: Option<u64>,
    output: Option<u64>,
}

impl Usage {
    /// The prompt's size, as contract §3.2 sums it.
    fn prompt(&self) -> u64 {
        [self.input, self.cache_read, self.cache_creation]
            .into_iter()
            .flatten()
            .fold(0, u64::saturating_add)
    }

    /// The `usage` object, in the provider's names (contract §3.2).
    fn json(&self) -> String {
        let fields = [
            ("input_tokens", self.input),
            ("cache_read_input_tokens", self.cache_read),
            ("cache_creation_input_tokens", self.cache_creation),
            ("output_tokens", self.output),
        ];
        let named: Vec<String> = fields
            .iter()
            .filter_map(|(k, v)| v.map(|n| format!("\"{k}\":{n}")))
            .collect();
        format!("{{{}}}", named.join(","))
    }
}

/// A request's reading: an `assistant/message` whose `usage` is the sample (none when it counts
/// nothing: kept in `extras.usage`), and on the main thread its response, output tokens × 4
/// characters, joining the surface after the sample is taken (contract §3.2). `parent`: a
/// request off the main thread, a sub-agent frame that never moves the main figure.
fn reading(cx: &mut Adapting, ev: &Event, usage: &Usage, parent: Option<&str>) {
    let mut f = cx.frame(ASSISTANT_MESSAGE, Id::Numbered, ev.stamp, parent);
    if usage.prompt() > 0 {
        f.json("usage", &usage.json());
    } else {
        f.extra_raw("usage", &usage.json());
    }
    if let (None, Some(out)) = (parent, usage.output) {
        f.chars(as_chars(out));
    }
    if let Some(m) = at(ev.attrs, "model").filter(|m| json::is_string(m)) {
        f.extra_raw("model", m);
    }
    tag(&mut f, ev);
    cx.emit(f);
}

/// Content the event measured, after the header of what it said: a frame of `kind` with
/// `message_chars`; without a size, the event passes through (nothing joins the surface that the log did not measure).
fn measured(cx: &mut Adapting, ev: &Event, said: Said, kind: &str, chars: Option<u64>) {
    announce(cx, ev, said);
    let Some(n) = chars else {
        return passed(cx, ev);
    };
    let mut f = cx.frame(kind, Id::Numbered, ev.stamp, None);
    f.chars(n);
    tag(&mut f, ev);
    cx.emit(f);
}

/// A compaction: `compact/start` with its trigger and pre-compaction level (contract §3.5), the
/// replacement over the whole surface with the agent's post-compaction size (`message_chars` =
/// tokens × 4: one node of those tokens, priced as prose, contract §3.4), `compact/end`.
fn compaction(
    cx: &mut Adapting,
    ev: &Event,
    trigger: Option<&str>,
    pre: Option<u64>,
    post: Option<u64>,
) {
    let mut start = cx.frame(COMPACT_START, Id::Numbered, ev.stamp, None);
    if let Some(t) = trigger {
        start.string("trigger", t);
    }
    if let Some(p) = pre.filter(|p| *p >= 1) {
        start.uint("preTokens", p);
    }
    // The post-size counts what the agent put back: nothing comes back unseen.
    if post.is_some() {
        start.json("restore_shown", "true");
    }
    tag(&mut start, ev);
    cx.emit(start);
    let mut f = cx.frame(USER_MESSAGE, Id::Numbered, ev.stamp, None);
    if let Some(p) = post {
        f.chars(as_chars(p));
    }
    tag(&mut f, ev);
    cx.replace(f);
    let mut end = cx.frame(COMPACT_END, Id::Numbered, ev.stamp, None);
    tag(&mut end, ev);
    cx.emit(end);
}

/// Where a frame came from: the event, and its sequence number when the exporter gave one.
fn tag(f: &mut FrameBuf, ev: &Event) {
    f.extra_str("source_type", &ev.name);
    if let Some(s) = ev.line.get("sequence").filter(|s| json::uint(s).is_some()) {
        f.extra_raw("sequence", s);
    }
}

/// An event with no mapping, after the header of what it said: `otel/<event>`.
fn announced_pass(cx: &mut Adapting, ev: &Event, said: Said) {
    announce(cx, ev, said);
    passed(cx, ev);
}

/// The record passed through as a frame of kind `otel/<event name>`.
fn passed(cx: &mut Adapting, ev: &Event) {
    let kind = format!("otel/{}", ev.name);
    pass_through(cx, ev.line, &kind, ev.stamp);
}

/// A value copied into a pass-through frame's `source` whole up to this many bytes; a larger
/// one is written as its size.
const SMALL: usize = 1024;

/// A pass-through frame, the record as its `source`, cheaply: without `resource` (the same on
/// every record of a process), every value larger than [`SMALL`] — an attribute, or a member of
/// the record — written as its size: `{"length": chars}` for a string, as the collector writes
/// one over 16 KiB, `{"bytes": n}` for anything else.
fn pass_through(cx: &mut Adapting, line: &Line, kind: &str, stamp: Option<&str>) {
    let mut f = cx.frame(kind, Id::Numbered, stamp, None);
    let mut out = vec![b'{'];
    for m in line.members().iter().filter(|m| !m.is("resource")) {
        if out.len() > 1 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(m.key.as_bytes());
        out.extend_from_slice(b"\":");
        if m.is("attributes") && opens_object(m.value) {
            out.push(b'{');
            for (i, a) in json::members(m.value).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.push(b'"');
                out.extend_from_slice(a.key.as_bytes());
                out.extend_from_slice(b"\":");
                small(&mut out, a.value);
            }
            out.push(b'}');
        } else {
            small(&mut out, m.value);
        }
    }
    out.push(b'}');
    f.source_text(out);
    cx.emit(f);
}

/// A raw value, or its size when it is larger than [`SMALL`].
fn small(out: &mut Vec<u8>, raw: &str) {
    if raw.len() <= SMALL {
        json::canonical_into(out, raw);
    } else if let Some(s) = json::string(raw) {
        out.extend_from_slice(format!("{{\"length\":{}}}", s.chars().count()).as_bytes());
    } else {
        out.extend_from_slice(format!("{{\"bytes\":{}}}", raw.len()).as_bytes());
    }
}

/// An attribute read as a count: a JSON integer or a decimal string, in 0..=2^53.
fn count(attrs: Option<&str>, name: &str) -> Option<u64> {
    let raw = at(attrs, name)?;
    let n = match json::uint(raw) {
        Some(n) => n,
        None => json::uint(&json::string(raw)?)?,
    };
    (n <= MAX_SAFE).then_some(n)
}

/// A text attribute's size in characters: the string's, or the `length` the collector writes
/// for one over 16 KiB.
fn text_len(attrs: Option<&str>, name: &str) -> Option<u64> {
    let raw = at(attrs, name)?;
    if let Some(s) = json::string(raw) {
        return Some(s.chars().count() as u64);
    }
    opens_object(raw)
        .then(|| count(Some(raw), "length"))
        .flatten()
}

/// An attribute that says `false`, as a boolean or the string Claude Code writes.
fn is_false(attrs: Option<&str>, name: &str) -> bool {
    at(attrs, name) == Some("false") || str_at(attrs, name).as_deref() == Some("false")
}

/// Tokens as the characters the estimate prices at them (contract §3.1: ⌈chars / 4⌉).
fn as_chars(tokens: u64) -> u64 {
    tokens.saturating_mul(4).min(MAX_SAFE)
}

#[cfg(test)]
mod tests;
