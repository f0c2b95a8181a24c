//! Adapters: real agent logs in, agent-fold frames (SPEC §1) out.
//!
//! People who would deploy agent-fold already have logs in their agents' own formats: Claude
//! Code session transcripts, `claude -p --output-format stream-json` streams, Codex rollouts.
//! An [`Adapter`] turns one line of such a log into zero or more frames, streaming, with a
//! small state per session: the next `seq`, the last `message.id` that gave a provider reading,
//! and the first and last `seq` of the surface a compaction would replace. Nothing is dropped:
//! a line the adapter has no mapping for becomes a pass-through frame (`<input>/<line type>`,
//! the line under `source`) that the views ignore, and a line that is not a JSON object is
//! handed on as it came, for the `malformed` param to decide.
//!
//! # One module with an `input` param, not a second module chained before it
//!
//! The adapters run inside the agent-fold SmartModule, chosen by the param
//! `input=agent-fold|claude-code|claude-stream|codex`, rather than as a second SmartModule
//! chained in front. One module is one artifact to build, version and deploy, and one
//! `--smartmodule agent-fold -e input=claude-code` on the consumer; the adapter's state (the
//! `seq` numbering, the `message.id` dedupe, the surface span a compaction replaces) lives in
//! the same instance, per consumer stream, as the views' state that depends on it, and
//! `look_back` rebuilds both from the same history in one pass. A chained module would keep
//! its own state in a separate instance that the views cannot see, and a deployment that
//! forgot it (or ordered it after agent-fold) would silently serve nothing useful. With
//! `input=agent-fold` (the default) nothing is adapted and the views keep their zero-copy path.
//!
//! # Frames
//!
//! Every frame is a compact JSON object, fields in this order: `type`, `id` (the line's `uuid`
//! where it has one, else `<session>#<seq>`: stable for a log read from its start), `seq`
//! (assigned per session in log order, from 0), `timestamp` (the line's, when a string),
//! `session_id`, then what the type carries (`message`, `usage`, `system`, `tools`,
//! `context_window`, `replaces`, `estimated_tokens_delta`), then `extras` (provenance, and
//! `parent_tool_use_id` on a sub-agent's frames), then `source` (the line, on pass-through and
//! envelope frames). A message frame carries the message's content as `message`, so the
//! estimate prices what the provider was sent; copies the provider never sees again
//! (Claude Code's `toolUseResult`, stream-json's `tool_use_result`) are not carried.
//!
//! A main frame with a `message` joins the surface; the adapter follows the same rule to know
//! the span a compaction replaces. Numbering is the adapter's: a consumer that meets a session
//! mid-stream (without look-back over its start) numbers it from 0 and counts only what it
//! saw in `messageTokens`; the projection, built from differences, is unaffected.

pub mod claude_code;
pub mod claude_stream;
pub mod codex;

use serde_json::{Map, Value, json};

use crate::checkpoint::CheckpointError;
use crate::lru::Lru;

/// The format of the records an instance reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Input {
    /// Frames as they are (SPEC §1): nothing is adapted.
    #[default]
    AgentFold,
    /// Claude Code session transcripts (`~/.claude/projects/…/<session>.jsonl`).
    ClaudeCode,
    /// `claude -p --output-format stream-json --verbose` output.
    ClaudeStream,
    /// OpenAI Codex rollouts (`~/.codex/sessions/…/rollout-*.jsonl`).
    Codex,
}

impl Input {
    pub const NAMES: [&'static str; 4] = ["agent-fold", "claude-code", "claude-stream", "codex"];

    pub fn parse(name: &str) -> Option<Input> {
        Some(match name {
            "agent-fold" => Input::AgentFold,
            "claude-code" => Input::ClaudeCode,
            "claude-stream" => Input::ClaudeStream,
            "codex" => Input::Codex,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Input::AgentFold => "agent-fold",
            Input::ClaudeCode => "claude-code",
            Input::ClaudeStream => "claude-stream",
            Input::Codex => "codex",
        }
    }

    /// Guesses a log's format from one of its lines; `None` when the line does not tell.
    pub fn detect(line: &[u8]) -> Option<Input> {
        let Ok(Value::Object(o)) = serde_json::from_slice::<Value>(line) else {
            return None;
        };
        let kind = o.get("type").and_then(Value::as_str).unwrap_or("");
        if o.contains_key("payload") && o.contains_key("timestamp") {
            return Some(Input::Codex);
        }
        if o.contains_key("sessionId")
            || matches!(kind, "file-history-snapshot" | "progress" | "summary")
        {
            return Some(Input::ClaudeCode);
        }
        if o.contains_key("session_id")
            && matches!(
                kind,
                "system" | "assistant" | "user" | "result" | "stream_event"
            )
        {
            return Some(Input::ClaudeStream);
        }
        if kind.contains('/') {
            return Some(Input::AgentFold);
        }
        None
    }
}

/// What the adapter remembers of one session: a handful of numbers and two ids.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    /// The next frame's `seq`.
    pub next_seq: u64,
    /// The session id the lines name (Codex: its `session_meta`), for the lines that do not.
    pub session_id: Option<String>,
    /// The `message.id` of the last main message that gave a provider reading.
    pub main_message: Option<String>,
    /// The same for sub-agent messages.
    pub sub_message: Option<String>,
    /// The `seq` of the first and last node of the surface (main frames with a `message`).
    pub surface: Option<(u64, u64)>,
    /// Codex: the last context window announced in a `request/header`.
    pub window: Option<u64>,
    /// Codex: `total_tokens` of the last `token_count` reading, to know a repeat.
    pub total: Option<u64>,
}

impl State {
    fn take_seq(&mut self) -> u64 {
        let s = self.next_seq;
        self.next_seq = self.next_seq.saturating_add(1);
        s
    }

    fn to_checkpoint(&self, key: &[u8]) -> Value {
        let mut o = Map::new();
        match std::str::from_utf8(key) {
            Ok(s) => o.insert("session".into(), s.into()),
            Err(_) => o.insert("sessionBytes".into(), key.to_vec().into()),
        };
        o.insert("nextSeq".into(), self.next_seq.into());
        o.insert("sessionId".into(), json!(self.session_id));
        o.insert("mainMessage".into(), json!(self.main_message));
        o.insert("subMessage".into(), json!(self.sub_message));
        o.insert("surface".into(), json!(self.surface.map(|(a, b)| [a, b])));
        o.insert("window".into(), json!(self.window));
        o.insert("total".into(), json!(self.total));
        Value::Object(o)
    }

    fn from_checkpoint(v: &Value) -> Result<(Vec<u8>, State), CheckpointError> {
        let bad = |what: &str| CheckpointError(format!("adapter session: {what}"));
        let o = v.as_object().ok_or_else(|| bad("not an object"))?;
        let key = if let Some(s) = o.get("session").and_then(Value::as_str) {
            s.as_bytes().to_vec()
        } else if let Some(b) = o.get("sessionBytes").and_then(Value::as_array) {
            b.iter()
                .map(|x| x.as_u64().and_then(|x| u8::try_from(x).ok()))
                .collect::<Option<Vec<u8>>>()
                .ok_or_else(|| bad("`sessionBytes` must be an array of bytes"))?
        } else {
            return Err(bad("neither `session` nor `sessionBytes`"));
        };
        let opt_str = |name: &str| -> Result<Option<String>, CheckpointError> {
            match o.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                _ => Err(bad(&format!("`{name}` must be a string or null"))),
            }
        };
        let opt_u64 = |name: &str| -> Result<Option<u64>, CheckpointError> {
            match o.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v
                    .as_u64()
                    .map(Some)
                    .ok_or_else(|| bad(&format!("`{name}` must be an integer ≥ 0 or null"))),
            }
        };
        let surface = match o.get("surface") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) if a.len() == 2 => match (a[0].as_u64(), a[1].as_u64()) {
                (Some(x), Some(y)) => Some((x, y)),
                _ => return Err(bad("`surface` must be [from_seq, to_seq]")),
            },
            _ => return Err(bad("`surface` must be [from_seq, to_seq] or null")),
        };
        Ok((
            key,
            State {
                next_seq: opt_u64("nextSeq")?.ok_or_else(|| bad("`nextSeq` is missing"))?,
                session_id: opt_str("sessionId")?,
                main_message: opt_str("mainMessage")?,
                sub_message: opt_str("subMessage")?,
                surface,
                window: opt_u64("window")?,
                total: opt_u64("total")?,
            },
        ))
    }
}

/// A streaming adapter: one input line in, its frames out, per-session state in between.
pub struct Adapter {
    input: Input,
    sessions: Lru<State>,
    /// The session of the last line: a line that names none (Claude Code's
    /// `file-history-snapshot`) and comes without a record key belongs to it.
    last_key: Option<Vec<u8>>,
}

impl Adapter {
    /// An adapter holding state for at most `max_sessions` sessions (least recently used out).
    pub fn new(input: Input, max_sessions: usize) -> Adapter {
        Adapter {
            input,
            sessions: Lru::new(max_sessions),
            last_key: None,
        }
    }

    pub fn input(&self) -> Input {
        self.input
    }

    /// How many sessions hold state.
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// Adapts one line (one record's value; `key` is the record's key), appending its frames
    /// to `out`. Returns how many it appended. A line that is not a JSON object (or any line,
    /// with `input=agent-fold`) is appended as it came.
    pub fn push(&mut self, key: Option<&[u8]>, line: &[u8], out: &mut Vec<Vec<u8>>) -> usize {
        let before = out.len();
        let obj = match self.input {
            Input::AgentFold => None,
            _ => match serde_json::from_slice::<Value>(line) {
                Ok(Value::Object(o)) => Some(o),
                _ => None,
            },
        };
        let Some(obj) = obj else {
            out.push(line.to_vec());
            return 1;
        };
        let id_field = match self.input {
            Input::ClaudeCode => Some("sessionId"),
            Input::ClaudeStream => Some("session_id"),
            Input::Codex | Input::AgentFold => None,
        };
        let line_session = id_field
            .and_then(|f| obj.get(f))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let state_key: Vec<u8> = match (key, &line_session) {
            (Some(k), _) => k.to_vec(),
            (None, Some(s)) => s.as_bytes().to_vec(),
            (None, None) => self.last_key.clone().unwrap_or_default(),
        };
        let slot = match self.sessions.touch(&state_key) {
            Some(slot) => slot,
            None => self.sessions.insert(&state_key, State::default()).0,
        };
        self.last_key = Some(state_key);
        let st = self.sessions.get_mut(slot);
        if let Some(s) = &line_session
            && st.session_id.as_ref() != Some(s)
        {
            st.session_id = Some(s.clone());
        }
        let session = line_session
            .or_else(|| st.session_id.clone())
            .or_else(|| key.map(|k| String::from_utf8_lossy(k).into_owned()));
        let mut cx = Cx {
            input: self.input,
            st,
            session,
            out,
        };
        match self.input {
            Input::ClaudeCode => claude_code::adapt(&mut cx, obj),
            Input::ClaudeStream => claude_stream::adapt(&mut cx, obj),
            Input::Codex => codex::adapt(&mut cx, obj),
            Input::AgentFold => unreachable!("handed on above"),
        }
        out.len() - before
    }

    /// Adapts a whole log (lines with their keys) at once.
    pub fn adapt_all<'a>(
        &mut self,
        lines: impl IntoIterator<Item = (Option<&'a [u8]>, &'a [u8])>,
    ) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for (k, l) in lines {
            self.push(k, l, &mut out);
        }
        out
    }

    /// The adapter's state as JSON: `{"input": …, "sessions": […]}`, least recently used first.
    pub fn checkpoint(&self) -> Value {
        let list: Vec<Value> = self
            .sessions
            .iter_oldest_first()
            .map(|(k, s)| s.to_checkpoint(k))
            .collect();
        let last = self
            .last_key
            .as_ref()
            .map(|k| String::from_utf8_lossy(k).into_owned());
        json!({"input": self.input.name(), "last": last, "sessions": list})
    }

    /// Replaces the state with a checkpoint's. On error the state is unchanged.
    pub fn restore(&mut self, v: &Value) -> Result<(), CheckpointError> {
        let input = v.get("input").and_then(Value::as_str).unwrap_or("");
        if input != self.input.name() {
            return Err(CheckpointError(format!(
                "the adapter checkpoint is for input={input}; this instance reads input={}",
                self.input.name()
            )));
        }
        let Some(list) = v.get("sessions").and_then(Value::as_array) else {
            return Err(CheckpointError(
                "adapter `sessions` must be an array".into(),
            ));
        };
        let mut sessions = Lru::new(self.sessions.cap());
        for s in list {
            let (key, st) = State::from_checkpoint(s)?;
            if sessions.peek(&key).is_some() {
                return Err(CheckpointError(format!(
                    "adapter session {:?} appears twice",
                    String::from_utf8_lossy(&key)
                )));
            }
            sessions.insert(&key, st);
        }
        self.sessions = sessions;
        self.last_key = v
            .get("last")
            .and_then(Value::as_str)
            .map(|s| s.as_bytes().to_vec());
        Ok(())
    }
}

/// `input_tokens + cache_read_input_tokens + cache_creation_input_tokens` of a usage object,
/// as the pressure view reads it.
fn usage_sum(usage: &Value) -> u64 {
    [
        "input_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ]
    .iter()
    .filter_map(|k| usage.get(*k).and_then(Value::as_u64))
    .fold(0u64, u64::saturating_add)
}

/// Whether a message's usage is a new provider reading: not all zero, and not the repeat of
/// the last reading's `message.id` (Claude Code writes one line per content block and repeats
/// the response's usage on each). Remembers the id when it is.
fn new_reading(last: &mut Option<String>, message_id: Option<&str>, usage: &Value) -> bool {
    if usage_sum(usage) == 0 {
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

/// The string at `key`, when it is one.
fn str_at<'m>(m: &'m Map<String, Value>, key: &str) -> Option<&'m str> {
    m.get(key).and_then(Value::as_str)
}

/// One line's adaptation: the session's state and where its frames go.
pub(crate) struct Cx<'a> {
    input: Input,
    st: &'a mut State,
    /// The frames' `session_id`.
    session: Option<String>,
    out: &'a mut Vec<Vec<u8>>,
}

/// A frame being built: its fields in the order they are written.
pub(crate) struct Frame {
    /// None for a frame of no known session: it has no place in any session's log.
    seq: Option<u64>,
    map: Map<String, Value>,
    extras: Map<String, Value>,
    source: Option<Value>,
    /// A sub-agent's frame: never joins the surface.
    sub: bool,
}

impl Frame {
    pub(crate) fn set(&mut self, key: &str, v: Value) -> &mut Frame {
        self.map.insert(key.to_owned(), v);
        self
    }

    pub(crate) fn extra(&mut self, key: &str, v: Value) -> &mut Frame {
        self.extras.insert(key.to_owned(), v);
        self
    }

    /// Carries the source line (or what is left of it), last.
    pub(crate) fn source(&mut self, line: Map<String, Value>) -> &mut Frame {
        self.source = Some(Value::Object(line));
        self
    }
}

impl Cx<'_> {
    /// A frame of `kind`, with the next `seq`; `id` defaults to `<session>#<seq>`. A line of
    /// no session (none named, no record key, no line before it named one) has no place in
    /// a session's log: its frame gets no `seq` (the pressure view ignores it) and no
    /// `session_id`.
    pub(crate) fn frame(
        &mut self,
        kind: &str,
        id: Option<&str>,
        stamp: Option<&Value>,
        parent: Option<&str>,
    ) -> Frame {
        let seq = self.st.take_seq();
        let mut map = Map::new();
        map.insert("type".into(), kind.into());
        let id = match id {
            Some(id) => id.to_owned(),
            None => format!("{}#{seq}", self.session.as_deref().unwrap_or("")),
        };
        map.insert("id".into(), id.into());
        let seq = self.session.is_some().then_some(seq);
        if let Some(seq) = seq {
            map.insert("seq".into(), seq.into());
        }
        if let Some(ts @ Value::String(_)) = stamp {
            map.insert("timestamp".into(), ts.clone());
        }
        if let Some(s) = &self.session {
            map.insert("session_id".into(), s.clone().into());
        }
        let mut extras = Map::new();
        if let Some(p) = parent {
            extras.insert("parent_tool_use_id".into(), p.into());
        }
        Frame {
            seq,
            map,
            extras,
            source: None,
            sub: parent.is_some(),
        }
    }

    /// Writes a frame. A main frame with a `message` joins the surface.
    pub(crate) fn emit(&mut self, f: Frame) {
        if let (false, true, Some(seq)) = (f.sub, f.map.contains_key("message"), f.seq) {
            self.st.surface = Some(match self.st.surface {
                Some((first, _)) => (first, seq),
                None => (seq, seq),
            });
        }
        let Frame {
            mut map,
            extras,
            source,
            ..
        } = f;
        if !extras.is_empty() {
            map.insert("extras".into(), Value::Object(extras));
        }
        if let Some(s) = source {
            map.insert("source".into(), s);
        }
        // Serialising a `Value` cannot fail: its keys are strings.
        self.out
            .push(serde_json::to_vec(&Value::Object(map)).unwrap_or_default());
    }

    /// Writes a compaction's replacement: a main `user/message` whose `replaces` spans the
    /// whole current surface (none when the surface is empty); after it, the surface is it.
    pub(crate) fn emit_replacement(&mut self, mut f: Frame, message: Value) {
        f.set("message", message);
        if let Some((from_seq, to_seq)) = self.st.surface {
            f.set("replaces", json!({"from_seq": from_seq, "to_seq": to_seq}));
        }
        let seq = f.seq;
        self.emit(f);
        if let Some(seq) = seq {
            self.st.surface = Some((seq, seq));
        }
    }

    /// A line with no mapping: a frame of type `<input>/<kind>` carrying the line as `source`.
    pub(crate) fn pass_through(
        &mut self,
        kind: &str,
        id: Option<&str>,
        stamp: Option<&Value>,
        parent: Option<&str>,
        line: Map<String, Value>,
    ) {
        let kind = format!("{}/{kind}", self.input.name());
        let mut f = self.frame(&kind, id, stamp, parent);
        f.source = Some(Value::Object(line));
        self.emit(f);
    }
}

/// `type`, with `/<sub>` when the line names a subtype: the pass-through frame's kind.
pub(crate) fn kind_of(line: &Map<String, Value>, sub: Option<&str>) -> String {
    let base = str_at(line, "type").unwrap_or("untyped");
    match sub {
        Some(s) => format!("{base}/{s}"),
        None => base.to_owned(),
    }
}

/// The frame type and `message` of a Claude message (`{"role", "content", …}`): content that
/// is all `tool_result` blocks is a `tool/result`.
pub(crate) fn claude_kind(role: &str, content: &Value) -> &'static str {
    match role {
        "assistant" => "assistant/message",
        _ => match content.as_array() {
            Some(blocks)
                if !blocks.is_empty()
                    && blocks
                        .iter()
                        .all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result")) =>
            {
                "tool/result"
            }
            _ => "user/message",
        },
    }
}

/// Maps one Claude message object (a transcript's or a stream's `message`) into a frame:
/// `message` = its `content`, `usage` once per `message.id`, repeats kept in `extras.usage`.
pub(crate) fn claude_message(
    cx: &mut Cx,
    role: &str,
    mut msg: Map<String, Value>,
    id: Option<&str>,
    stamp: Option<&Value>,
    parent: Option<&str>,
) -> Frame {
    let content = msg.remove("content").unwrap_or(Value::Null);
    let kind = claude_kind(role, &content);
    let mut f = cx.frame(kind, id, stamp, parent);
    f.set("message", content);
    if role == "assistant" {
        let message_id = msg.get("id").and_then(Value::as_str).map(str::to_owned);
        if let Some(usage) = msg.remove("usage").filter(Value::is_object) {
            let slot = if parent.is_some() {
                &mut cx.st.sub_message
            } else {
                &mut cx.st.main_message
            };
            if new_reading(slot, message_id.as_deref(), &usage) {
                f.set("usage", usage);
            } else {
                f.extra("usage", usage);
            }
        }
        if let Some(m) = message_id {
            f.extra("message_id", m.into());
        }
        if let Some(m) = msg.remove("model") {
            f.extra("model", m);
        }
    }
    f
}

/// The adapters' tests: JSON lines of one format through a fresh adapter, frames back as JSON.
#[cfg(test)]
pub(crate) fn adapt_values(input: Input, lines: &[Value]) -> Vec<Value> {
    let mut a = Adapter::new(input, 100);
    let texts: Vec<Vec<u8>> = lines
        .iter()
        .map(|l| serde_json::to_vec(l).unwrap())
        .collect();
    a.adapt_all(texts.iter().map(|t| (None, &t[..])))
        .iter()
        .map(|f| serde_json::from_slice(f).unwrap())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for n in Input::NAMES {
            assert_eq!(Input::parse(n).unwrap().name(), n);
        }
        assert_eq!(Input::parse("claude"), None);
    }

    #[test]
    fn detects_each_format() {
        let cc = br#"{"type":"user","sessionId":"s","message":{"role":"user","content":"hi"}}"#;
        let cs = br#"{"type":"system","subtype":"init","session_id":"s","tools":[]}"#;
        let cx = br#"{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}"#;
        let af = br#"{"type":"user/message","seq":0}"#;
        assert_eq!(Input::detect(cc), Some(Input::ClaudeCode));
        assert_eq!(Input::detect(cs), Some(Input::ClaudeStream));
        assert_eq!(Input::detect(cx), Some(Input::Codex));
        assert_eq!(Input::detect(af), Some(Input::AgentFold));
        assert_eq!(Input::detect(b"not json"), None);
    }

    #[test]
    fn what_is_not_an_object_is_handed_on() {
        for input in [Input::ClaudeCode, Input::ClaudeStream, Input::Codex] {
            let mut a = Adapter::new(input, 10);
            let mut out = Vec::new();
            for bad in [&b"not json"[..], b"[1,2]", b"\"s\"", b"{", b"\xff"] {
                out.clear();
                assert_eq!(a.push(None, bad, &mut out), 1);
                assert_eq!(out, [bad.to_vec()]);
            }
        }
    }

    #[test]
    fn deep_nesting_is_handed_on_not_a_panic() {
        let mut line = String::from(r#"{"type":"user","x":"#);
        line.push_str(&"[".repeat(100_000));
        line.push_str(&"]".repeat(100_000));
        line.push('}');
        let mut a = Adapter::new(Input::ClaudeCode, 10);
        let mut out = Vec::new();
        a.push(None, line.as_bytes(), &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn checkpoint_round_trips() {
        let mut a = Adapter::new(Input::ClaudeCode, 10);
        a.adapt_all([
            (None, &br#"{"type":"user","sessionId":"s","uuid":"u1","message":{"role":"user","content":"hi"}}"#[..]),
            (None, br#"{"type":"assistant","sessionId":"s","uuid":"u2","message":{"id":"m1","role":"assistant","content":[],"usage":{"input_tokens":5}}}"#),
        ]);
        let cp = a.checkpoint();
        let mut b = Adapter::new(Input::ClaudeCode, 10);
        b.restore(&cp).unwrap();
        assert_eq!(b.checkpoint(), cp);
        assert_eq!(
            cp["sessions"][0],
            json!({"session":"s","nextSeq":2,"sessionId":"s","mainMessage":"m1","subMessage":null,"surface":[0,1],"window":null,"total":null})
        );
        let mut c = Adapter::new(Input::Codex, 10);
        assert!(c.restore(&cp).unwrap_err().0.contains("input=claude-code"));
    }
}
