//! Adapters: real agent logs in, agent-fold frames (contract §1) out.
//!
//! An agent's log line becomes zero or more frames, streaming, with a small state per session
//! ([`state`]). Lines are read by the one JSON reader: a line is adapted whenever it is a JSON
//! object, whatever serde_json would make of it, and no tree of it is built; a line that is
//! not one is handed on as it came, for the `malformed` param to decide. Why the adapters run
//! inside the module (param `input`) rather than as a chained module: `docs/adapters.md`.

mod build;
pub(crate) mod census;
mod claude;
mod claude_code;
mod claude_stream;
mod codex;
mod document;
mod gemini_cli;
mod line;
mod opencode;
mod otel;
pub(crate) mod state;

use std::borrow::Cow;

use build::Adapting;
pub(crate) use line::Line;
use state::{Placed, Track};

use crate::config::Input;
use crate::record::MAX_KEY_LEN;
use crate::state::checkpoint::{self, CheckpointError, Document, Members, STATE_VERSION};
use crate::state::lru::Lru;

impl Input {
    /// Guesses a log's format from one of its lines; `None` when the line does not tell.
    pub fn detect(line: &[u8]) -> Option<Input> {
        let l = Line::read(line)?;
        let kind = l.str("type");
        let kind = kind.as_deref().unwrap_or("");
        if kind == "otel/log" {
            return Some(Input::Otel);
        }
        if l.get("payload").is_some() && l.get("timestamp").is_some() {
            return Some(Input::Codex);
        }
        // Before Claude Code's: a Gemini CLI chat names its `sessionId` too.
        if census::is_gemini_chat(&l) {
            return Some(Input::GeminiCli);
        }
        if opencode::is_opencode(&l) {
            return Some(Input::OpenCode);
        }
        if l.get("sessionId").is_some()
            || matches!(kind, "file-history-snapshot" | "progress" | "summary")
        {
            return Some(Input::ClaudeCode);
        }
        if l.get("session_id").is_some()
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

    /// The session a line of this format names, when it names one: Claude Code's `sessionId`,
    /// a stream's `session_id`, a Codex rollout's `session_meta` id (the other lines of a
    /// rollout name none: they belong to the session of the file they are in).
    pub fn session_named(self, line: &[u8]) -> Option<String> {
        self.session_of(&Line::read(line)?)
    }

    /// The session a line names, in this format.
    fn session_of(self, line: &Line) -> Option<String> {
        match self {
            Input::ClaudeCode => line.str("sessionId").map(Cow::into_owned),
            Input::ClaudeStream => line.str("session_id").map(Cow::into_owned),
            Input::Codex => codex::session_of(line),
            Input::Otel => line.str("session").map(Cow::into_owned),
            Input::GeminiCli => gemini_cli::session_of(line),
            Input::OpenCode => opencode::session_of(line),
            Input::AgentFold => None,
        }
    }
}

/// Frames per line at most, with room to spare: a session that comes back after eviction
/// numbers its frames from `FRAMES_PER_LINE` × the lines seen, above anything it had.
const FRAMES_PER_LINE: u64 = 4;

/// What one line is, before any state changes: its frames' session, or not a JSON object.
pub(crate) enum LineRead<'a> {
    Object {
        line: Line<'a>,
        key: Vec<u8>,
        names: Option<String>,
        /// The JSON objects that followed the first on the same line, written without a newline
        /// between them (a log written at a resume): each adapted as a line of its own.
        more: Vec<Line<'a>>,
    },
    NotObject,
}

/// The most JSON objects one line may be read as: a line of more is not an agent's record.
const OBJECTS_PER_LINE: usize = 8;

/// A line that holds several JSON objects written back to back (`{…}{…}`, whitespace allowed
/// between): each one, when there are 2 to [`OBJECTS_PER_LINE`] and every one reads; else
/// `None` (the line is what it is, not a JSON object).
fn objects(bytes: &[u8]) -> Option<Vec<Line<'_>>> {
    object_spans(bytes, Line::read)
}

/// [`objects`], each part handed to `read` (`None` from it: the line is no such records).
fn object_spans<'a, T>(bytes: &'a [u8], read: impl Fn(&'a [u8]) -> Option<T>) -> Option<Vec<T>> {
    let mut stream =
        serde_json::Deserializer::from_slice(bytes).into_iter::<serde::de::IgnoredAny>();
    let mut parts = Vec::new();
    let mut start = 0;
    while let Some(value) = stream.next() {
        value.ok()?;
        let end = stream.byte_offset();
        if parts.len() == OBJECTS_PER_LINE {
            return None;
        }
        parts.push(read(&bytes[start..end])?);
        start = end;
    }
    (parts.len() >= 2).then_some(parts)
}

/// The records one line of a log holds as the adapters read it: the line, or, where it holds
/// 2 to `OBJECTS_PER_LINE` JSON objects written back to back (a log written at a resume),
/// each of them.
pub fn line_records(bytes: &[u8]) -> Vec<&[u8]> {
    if crate::json::is_object(bytes) {
        return vec![bytes];
    }
    object_spans(bytes, |part| crate::json::is_object(part).then_some(part))
        .unwrap_or_else(|| vec![bytes])
}

/// The lines an instance has read: their format, the session of the last one (a line that
/// names none and has no record key belongs to it), and how many it has seen.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lines {
    pub input: Input,
    /// Param `capacity` names the window: no inferred one is announced.
    pub window_known: bool,
    /// Param `compact_at` names the point the agent was configured to compact at (where it
    /// runs, read from its settings: contract §3.5); an adapter that tells an automatic
    /// compaction from one by hand by that point uses it where the log names none.
    pub compact_at: Option<u64>,
    pub last: Option<Vec<u8>>,
    pub lines: u64,
}

impl Lines {
    /// The lines of an instance of `config`: its input, and what its params say of the window
    /// and the compaction point.
    pub(crate) fn for_config(config: &crate::Config) -> Lines {
        Lines {
            input: config.input,
            window_known: config.capacity.is_some(),
            compact_at: match config.compact_at {
                crate::config::CompactAt::Tokens(t) => Some(t),
                _ => None,
            },
            ..Lines::default()
        }
    }

    /// Reads a line: its session is its record key, else the session it names, else the
    /// session of the line before (else the empty session).
    pub(crate) fn read<'a>(&self, key: Option<&[u8]>, bytes: &'a [u8]) -> LineRead<'a> {
        let (line, more) = match Line::read(bytes) {
            Some(line) => (line, Vec::new()),
            None => match objects(bytes) {
                Some(mut parts) => {
                    let more = parts.split_off(1);
                    (parts.pop().expect("two parts at least"), more)
                }
                None => return LineRead::NotObject,
            },
        };
        let names = self.input.session_of(&line);
        let key = match (key, &names) {
            // A Claude Code transcript line is in the session its `sessionId` names, whatever
            // its record's key says: a producer may key it by another id field (`session_id`,
            // which keeps the process's first transcript after `/clear`), and a transcript is
            // one session (contract §1).
            (_, Some(s)) if self.input == Input::ClaudeCode => s.as_bytes().to_vec(),
            (Some(k), _) => k.to_vec(),
            (None, Some(s)) => s.as_bytes().to_vec(),
            // Telemetry interleaves sessions: the record before says nothing of this one's.
            (None, None) if self.input == Input::Otel => Vec::new(),
            (None, None) => self.last.clone().unwrap_or_default(),
        };
        LineRead::Object {
            line,
            key,
            names,
            more,
        }
    }

    /// The numbering floor of a session that comes back after eviction.
    pub(crate) fn floor(&self) -> u64 {
        self.lines.saturating_mul(FRAMES_PER_LINE)
    }

    /// Adapts a read line with its session's track (none: a key over the limit, adapted with
    /// a throwaway state), appending its frames to `out`; returns how many.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn adapt(
        &mut self,
        track: Option<&mut Track>,
        line: &Line,
        more: &[Line],
        record_key: Option<&[u8]>,
        key: Vec<u8>,
        names: Option<String>,
        offset: Option<i64>,
        epoch: u64,
        out: &mut Vec<Vec<u8>>,
    ) -> usize {
        let mut scratch = Track::default();
        let long = key.len() > MAX_KEY_LEN;
        if !long {
            self.last = Some(key);
        }
        let placed = match track {
            Some(t) if !long => t.for_line(offset, epoch),
            _ => scratch.for_line(None, epoch),
        };
        let st = match placed {
            Placed::New(st) => {
                // Only a session's new lines count: a line delivered again changes nothing.
                if !long {
                    self.lines = self.lines.saturating_add(1 + more.len() as u64);
                }
                st
            }
            Placed::Redelivered(st) => st,
            Placed::Skip => return 0,
        };
        if let Some(s) = &names
            && st.session_id.as_ref() != Some(s)
        {
            st.session_id = Some(s.clone());
        }
        let session = names
            .or_else(|| st.session_id.clone())
            .or_else(|| record_key.map(|k| String::from_utf8_lossy(k).into_owned()));
        let before = out.len();
        let mut cx = Adapting {
            input: self.input,
            window_known: self.window_known,
            compact_at: self.compact_at,
            st,
            session,
            out,
            next_print: None,
        };
        for line in std::iter::once(line).chain(more) {
            match self.input {
                Input::ClaudeCode => claude_code::adapt(&mut cx, line),
                Input::ClaudeStream => claude_stream::adapt(&mut cx, line),
                Input::Codex => codex::adapt(&mut cx, line),
                Input::Otel => otel::adapt(&mut cx, line),
                Input::GeminiCli => gemini_cli::adapt(&mut cx, line),
                Input::OpenCode => opencode::adapt(&mut cx, line),
                Input::AgentFold => {}
            }
        }
        if !more.is_empty() {
            // Said in the stream: the line was read as several.
            let kind = format!("{}/split-line", self.input.name());
            let mut f = cx.frame(&kind, build::Id::Numbered, None, None);
            f.uint("records", 1 + more.len() as u64);
            f.extra_str(
                "note",
                "one line held several JSON records with no newline between them: each was read as a line",
            );
            cx.emit(f);
        }
        out.len() - before
    }
}

/// A streaming adapter on its own, for hosts that adapt a log before the module sees it:
/// one input line in, its frames out, per-session state in between, bounded by a cap.
pub struct Adapter {
    lines: Lines,
    sessions: Lru<Track>,
}

impl Adapter {
    /// An adapter holding state for at most `max_sessions` sessions (least recently used out).
    pub fn new(input: Input, max_sessions: usize) -> Adapter {
        Adapter {
            lines: Lines {
                input,
                ..Lines::default()
            },
            sessions: Lru::new(max_sessions),
        }
    }

    /// The adapter an instance of `config` runs: the same frames, numbered alike.
    pub fn for_config(config: &crate::Config) -> Adapter {
        let mut a = Adapter::new(config.input, config.max_sessions);
        a.lines = Lines::for_config(config);
        a
    }

    pub fn input(&self) -> Input {
        self.lines.input
    }

    /// How many sessions hold state.
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// Adapts one line (one record's value; `key` is the record's key; `offset` its place in
    /// the input, when known: a line at or below its session's last is a re-delivery),
    /// appending its frames to `out`. Returns how many it appended. A line that is not a JSON
    /// object (or any line, with `input=agent-fold`) is appended as it came.
    pub fn push(
        &mut self,
        key: Option<&[u8]>,
        line: &[u8],
        offset: Option<i64>,
        out: &mut Vec<Vec<u8>>,
    ) -> usize {
        if self.lines.input == Input::AgentFold {
            out.push(line.to_vec());
            return 1;
        }
        let LineRead::Object {
            line: l,
            key: k,
            names,
            more,
        } = self.lines.read(key, line)
        else {
            out.push(line.to_vec());
            return 1;
        };
        let floor = self.lines.floor();
        let track = if k.len() > MAX_KEY_LEN {
            None
        } else {
            let id = match self.sessions.peek(&k) {
                Some(id) => {
                    self.sessions.touch(id);
                    id
                }
                None => {
                    let returning = self.sessions.take_tombstone(&k);
                    self.sessions.insert(&k, Track::new(returning, floor)).0
                }
            };
            Some(self.sessions.get_mut(id))
        };
        self.lines
            .adapt(track, &l, &more, key, k, names, offset, 0, out)
    }

    /// Adapts a whole log (lines with their keys, offsets by position) at once.
    pub fn adapt_all<'a>(
        &mut self,
        lines: impl IntoIterator<Item = (Option<&'a [u8]>, &'a [u8])>,
    ) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for (k, l) in lines {
            self.push(k, l, None, &mut out);
        }
        out
    }

    /// The adapter's state as a checkpoint document.
    pub fn checkpoint(&self) -> String {
        let mut w = Members::default();
        w.uint("stateVersion", STATE_VERSION);
        w.opt_str("input", Some(self.lines.input.name()));
        w.uint("lines", self.lines.lines);
        w.raw("last", &checkpoint::key_json(self.lines.last.as_deref()));
        let mut list = String::new();
        checkpoint::write_sessions(&mut list, self.sessions.iter_oldest_first(), ());
        w.raw("sessions", &list);
        w.object()
    }

    /// Replaces the state with a checkpoint's (this build's, or a version 3 adapter document).
    /// On error the state is unchanged.
    pub fn restore(&mut self, text: &str) -> Result<(), CheckpointError> {
        // Version 3 adapter documents had no `stateVersion`.
        let doc = Document::read_with(text, Some(3))?;
        let found = doc.input.clone().unwrap_or_default();
        if found != self.lines.input.name() {
            return Err(CheckpointError::Input {
                found,
                reads: self.lines.input.name(),
            });
        }
        let mut sessions = Lru::new(self.sessions.cap());
        if let Some(list) = doc.sessions {
            checkpoint::read_sessions::<Track>(list, doc.version, (), |k, t| {
                sessions.insert(&k, t);
                Ok(())
            })?;
        }
        let last = match doc.last {
            Some(raw) => checkpoint::read_key(raw)?,
            None => None,
        };
        self.sessions = sessions;
        self.lines.last = last;
        self.lines.lines = doc.lines;
        Ok(())
    }
}

/// The adapters' tests: JSON lines of one format through a fresh adapter, frames back as JSON.
#[cfg(test)]
pub(crate) fn adapt_values(input: Input, lines: &[serde_json::Value]) -> Vec<serde_json::Value> {
    let mut a = Adapter::new(input, 100);
    let texts: Vec<Vec<u8>> = lines
        .iter()
        .map(|l| serde_json::to_vec(l).unwrap())
        .collect();
    a.adapt_all(texts.iter().map(|t| (None, &t[..])))
        .iter()
        .map(|f| {
            serde_json::from_slice(f)
                .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(f)))
        })
        .collect()
}

/// The frames of `lines`, less the headers the adapter infers (the session's envelope not in
/// the log, its window and reserve: `the_session_says_what_its_log_does_not`).
#[cfg(test)]
pub(crate) fn adapt_logged(input: Input, lines: &[serde_json::Value]) -> Vec<serde_json::Value> {
    adapt_values(input, lines)
        .into_iter()
        .filter(|f| f["extras"]["source_type"] != "inferred")
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// A line written at a resume holds two records with no newline between them: both are
    /// read (a reading among them is not lost), and a frame says so; a line of more records
    /// than a line may hold, or of one that does not read, is handed on as it came.
    #[test]
    fn records_written_back_to_back_are_read_each() {
        let meta = r#"{"timestamp":"t","type":"session_meta","payload":{"id":"cx"}}"#;
        let user = r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":"hi"}}"#;
        let reading = r#"{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":900,"cached_input_tokens":0},"total_token_usage":{"total_tokens":901}}}}"#;
        let started = r#"{"timestamp":"t","type":"event_msg","payload":{"type":"task_started","model_context_window":1000}}"#;
        let glued = format!("{reading}{started}");
        let mut a = Adapter::new(Input::Codex, 10);
        let mut out = Vec::new();
        for l in [meta, user] {
            a.push(None, l.as_bytes(), None, &mut out);
        }
        out.clear();
        a.push(None, glued.as_bytes(), None, &mut out);
        let kinds: Vec<String> = out
            .iter()
            .map(|f| crate::Frame::parse(f).unwrap().kind().unwrap().to_owned())
            .collect();
        assert_eq!(
            kinds,
            ["assistant/message", "request/header", "codex/split-line"]
        );
        assert_eq!(
            crate::Frame::parse(&out[0])
                .unwrap()
                .usage()
                .map(crate::usage_tokens),
            Some(900)
        );
        assert!(String::from_utf8_lossy(&out[2]).contains(r#""records":2"#));
        for bad in [
            format!("{reading} {reading}x"),
            reading.repeat(OBJECTS_PER_LINE + 1),
            format!("{reading}[1]"),
        ] {
            out.clear();
            assert_eq!(a.push(None, bad.as_bytes(), None, &mut out), 1, "{bad}");
            assert_eq!(out[0], bad.as_bytes());
        }
    }

    #[test]
    fn what_is_not_an_object_is_handed_on() {
        for input in [Input::ClaudeCode, Input::ClaudeStream, Input::Codex] {
            let mut a = Adapter::new(input, 10);
            let mut out = Vec::new();
            for bad in crate::json::NOT_OBJECTS {
                out.clear();
                assert_eq!(a.push(None, bad, None, &mut out), 1);
                assert_eq!(out, [bad.to_vec()]);
            }
        }
    }

    #[test]
    fn deep_nesting_is_adapted_not_a_panic() {
        let mut line = String::from(r#"{"type":"user","x":"#);
        line.push_str(&"[".repeat(100_000));
        line.push_str(&"]".repeat(100_000));
        line.push('}');
        let mut a = Adapter::new(Input::ClaudeCode, 10);
        let mut out = Vec::new();
        a.push(None, line.as_bytes(), None, &mut out);
        assert_eq!(out.len(), 1);
        assert!(crate::Frame::parse(&out[0]).is_some());
    }

    #[test]
    fn checkpoint_round_trips_and_refuses_a_session_twice() {
        let mut a = Adapter::new(Input::ClaudeCode, 10);
        a.adapt_all([
            (None, &br#"{"type":"user","sessionId":"s","uuid":"u1","message":{"role":"user","content":"hi"}}"#[..]),
            (None, br#"{"type":"assistant","sessionId":"s","uuid":"u2","message":{"id":"m1","role":"assistant","content":[],"usage":{"input_tokens":5}}}"#),
        ]);
        let cp = a.checkpoint();
        let mut b = Adapter::new(Input::ClaudeCode, 10);
        b.restore(&cp).unwrap();
        assert_eq!(b.checkpoint(), cp);
        let (u1, u2) = (build::fingerprint("u1"), build::fingerprint("u2"));
        assert_eq!(
            cp,
            format!(
                r#"{{"stateVersion":5,"input":"claude-code","lines":2,"last":{{"session":"s"}},"sessions":[{{"session":"s","nextSeq":3,"sessionId":"s","mainMessage":"m1","subMessage":null,"surface":[1,2],"window":null,"total":null,"compactLimit":null,"recent":[[{u1},1],[{u2},2]],"keep":null,"request":[null,null,false],"compactReserve":null,"showsRestore":false,"modelPrint":null,"restoresMore":false}}]}}"#
            )
        );
        // A checkpoint from before `restoresMore` was kept: the prior stands at the session's
        // next compaction, as it did then.
        let older = cp.replace(r#","restoresMore":false"#, "");
        assert_ne!(older, cp);
        let mut d = Adapter::new(Input::ClaudeCode, 10);
        d.restore(&older).unwrap();
        assert!(d.checkpoint().contains(r#""restoresMore":true"#));
        // A bounded list of the state may not grow through a checkpoint: refused in words.
        let files: Vec<String> = (0..6).map(|i| format!("[{i},1]")).collect();
        let grown = cp.replace(
            r#","restoresMore""#,
            &format!(r#","files":[{}],"restoresMore""#, files.join(",")),
        );
        let err = Adapter::new(Input::ClaudeCode, 10)
            .restore(&grown)
            .unwrap_err();
        assert!(
            err.to_string().contains("`files` holds at most 5 files"),
            "{err}"
        );
        let mut c = Adapter::new(Input::Codex, 10);
        assert!(matches!(c.restore(&cp), Err(CheckpointError::Input { .. })));
        // [a, b, a] under a cap of one: the first `a` is evicted before the second comes.
        let dup = r#"{"input":"claude-code","last":"a","sessions":[{"session":"a","nextSeq":100},{"session":"b","nextSeq":1},{"session":"a","nextSeq":7}]}"#;
        let mut one = Adapter::new(Input::ClaudeCode, 1);
        assert_eq!(
            one.restore(dup),
            Err(CheckpointError::Duplicate(b"a".to_vec()))
        );
        assert_eq!(one.sessions(), 0, "a refused checkpoint changes nothing");
        // A non-UTF-8 `last` survives a round trip.
        let bytes = r#"{"stateVersion":5,"input":"claude-code","lines":0,"last":{"sessionBytes":[255,1]},"sessions":[]}"#;
        let mut d = Adapter::new(Input::ClaudeCode, 1);
        d.restore(bytes).unwrap();
        assert_eq!(d.checkpoint(), bytes);
    }
}
