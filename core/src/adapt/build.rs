//! Frames written as they are built: compact JSON, fields in a fixed order (`type`, `id`,
//! `seq`, `timestamp`, `session_id`, what the type carries, `extras`, `source`), values copied
//! from the line in canonical form (see [`json::canonical_into`]).

use super::line::Line;
use super::state::AdaptState;
use crate::json;

/// Where a frame's `id` comes from.
pub(crate) enum Id<'a> {
    /// A string token of the line (quotes included).
    Raw(&'a str),
    /// A text of the adapter's.
    Text(String),
    /// `<session>#<seq>`: stable for a log read from its start.
    Numbered,
}

/// A frame being built.
pub(crate) struct FrameBuf {
    /// None for a frame of no known session: it has no place in any session's log.
    seq: Option<u64>,
    buf: Vec<u8>,
    extras: Vec<u8>,
    source: Option<Vec<u8>>,
    /// A sub-agent's frame: never joins the surface.
    sub: bool,
    has_message: bool,
    /// The fingerprint of the line's own id (a Claude `uuid`), when it has one.
    print: Option<u64>,
}

impl FrameBuf {
    /// The frame's `seq` (none for a frame of no known session).
    pub(super) fn seq(&self) -> Option<u64> {
        self.seq
    }

    fn key(buf: &mut Vec<u8>, name: &str) {
        if buf.len() > 1 {
            buf.push(b',');
        }
        json::write_string(buf, name.as_bytes());
        buf.push(b':');
    }

    /// A field whose value is a raw JSON value of the line.
    pub(super) fn raw(&mut self, name: &str, value: &str) -> &mut FrameBuf {
        FrameBuf::key(&mut self.buf, name);
        json::canonical_into(&mut self.buf, value);
        self.has_message |= name == "message";
        self
    }

    /// `message`: a Claude message's `content`, as the provider counts it. A thinking block's
    /// `signature` is an integrity check, not context: it is left out (contract §3, pricing).
    pub(super) fn content(&mut self, content: &str) -> &mut FrameBuf {
        FrameBuf::key(&mut self.buf, "message");
        self.has_message = true;
        write_content(&mut self.buf, content);
        self
    }

    /// A field whose value is JSON text the adapter wrote.
    pub(super) fn json(&mut self, name: &str, value: &str) -> &mut FrameBuf {
        FrameBuf::key(&mut self.buf, name);
        self.buf.extend_from_slice(value.as_bytes());
        self
    }

    pub(super) fn uint(&mut self, name: &str, n: u64) -> &mut FrameBuf {
        self.json(name, &n.to_string())
    }

    /// A field holding a string.
    pub(super) fn string(&mut self, name: &str, value: &str) -> &mut FrameBuf {
        FrameBuf::key(&mut self.buf, name);
        json::write_string(&mut self.buf, value.as_bytes());
        self
    }

    /// `message_chars`: content of `n` characters the log measured but does not carry. It joins
    /// the surface as a message does (contract §3.1).
    pub(super) fn chars(&mut self, n: u64) -> &mut FrameBuf {
        self.has_message = true;
        self.uint("message_chars", n)
    }

    /// An `extras` member whose value is a raw JSON value of the line.
    pub(super) fn extra_raw(&mut self, name: &str, value: &str) -> &mut FrameBuf {
        self.extras
            .push(if self.extras.is_empty() { b'{' } else { b',' });
        json::write_string(&mut self.extras, name.as_bytes());
        self.extras.push(b':');
        json::canonical_into(&mut self.extras, value);
        self
    }

    /// An `extras` member holding a string.
    pub(super) fn extra_str(&mut self, name: &str, value: &str) -> &mut FrameBuf {
        let mut s = Vec::with_capacity(value.len() + 2);
        json::write_string(&mut s, value.as_bytes());
        // SAFETY-free: `s` is JSON text we just wrote from a `&str`.
        self.extra_raw(name, std::str::from_utf8(&s).unwrap_or("null"))
    }

    /// Carries the source line, last, without the members named in `skip` and with `payload`
    /// (Codex) rewritten without `skip_payload`.
    pub(super) fn source(
        &mut self,
        line: &Line,
        skip: &[&str],
        skip_payload: &[&str],
    ) -> &mut FrameBuf {
        let mut out = vec![b'{'];
        for m in line.members() {
            if skip.iter().any(|s| m.is(s)) {
                continue;
            }
            if out.len() > 1 {
                out.push(b',');
            }
            out.push(b'"');
            out.extend_from_slice(m.key.as_bytes());
            out.extend_from_slice(b"\":");
            if !skip_payload.is_empty() && m.is("payload") && m.value.starts_with('{') {
                write_without(&mut out, m.value, skip_payload);
            } else {
                json::canonical_into(&mut out, m.value);
            }
        }
        out.push(b'}');
        self.source = Some(out);
        self
    }

    /// Carries a `source` the adapter wrote (a JSON object).
    pub(super) fn source_text(&mut self, object: Vec<u8>) -> &mut FrameBuf {
        self.source = Some(object);
        self
    }
}

/// A Claude message's `content` as a frame's `message` carries it: canonical, a thinking
/// block without its `signature`.
fn write_content(buf: &mut Vec<u8>, content: &str) {
    if !content.starts_with('[') {
        json::canonical_into(buf, content);
        return;
    }
    buf.push(b'[');
    for (i, block) in json::elements(content).enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        let thinking = block.starts_with('{')
            && json::get(block, "type").and_then(json::string).as_deref() == Some("thinking");
        if thinking {
            write_without(buf, block, &["signature"]);
        } else {
            json::canonical_into(buf, block);
        }
    }
    buf.push(b']');
}

/// The characters a Claude message's `content` counts as a frame's `message` would carry it
/// (the estimate's count, contract §3.1): what content held back for its request is priced at.
pub(crate) fn content_chars(content: &str) -> u64 {
    let mut buf = Vec::with_capacity(content.len());
    write_content(&mut buf, content);
    crate::estimate::counted(&buf)
}

/// An object value rewritten without some of its members.
fn write_without(out: &mut Vec<u8>, raw: &str, skip: &[&str]) {
    out.push(b'{');
    let mut first = true;
    for m in json::members(raw) {
        if skip.iter().any(|s| m.is(s)) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        out.push(b'"');
        out.extend_from_slice(m.key.as_bytes());
        out.extend_from_slice(b"\":");
        json::canonical_into(out, m.value);
    }
    out.push(b'}');
}

/// The levels a `request/header` announces (contract §1): the window, the reserve below it,
/// the automatic compaction's threshold.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Announced {
    pub window: Option<u64>,
    pub reserve: Option<u64>,
    pub auto_compact: Option<u64>,
}

/// One line's adaptation: the session's state and where its frames go.
pub(crate) struct Adapting<'s> {
    pub input: super::Input,
    /// Param `capacity` names the window: the adapter announces none it infers.
    pub window_known: bool,
    /// Param `compact_at`, where given ([`super::Lines::compact_at`]).
    pub compact_at: Option<u64>,
    pub st: &'s mut AdaptState,
    /// The frames' `session_id`.
    pub session: Option<String>,
    pub out: &'s mut Vec<Vec<u8>>,
    /// The id (its fingerprint) the main frames that join the surface belong to, where their
    /// own line names none (an OpenCode message's id, for each of its parts).
    pub next_print: Option<u64>,
}

impl Adapting<'_> {
    /// A frame of `kind` with the next `seq`. A line of no session (none named, no record key,
    /// no line before it named one) has no place in a session's log: its frame gets no `seq`
    /// (the pressure view ignores it) and no `session_id`.
    pub(super) fn frame(
        &mut self,
        kind: &str,
        id: Id,
        stamp: Option<&str>,
        parent: Option<&str>,
    ) -> FrameBuf {
        let seq = self.st.take_seq();
        let print = match id {
            Id::Raw(raw) => json::string(raw).map(|u| fingerprint(&u)),
            _ => None,
        };
        let mut buf = Vec::with_capacity(256);
        buf.push(b'{');
        FrameBuf::key(&mut buf, "type");
        json::write_string(&mut buf, kind.as_bytes());
        FrameBuf::key(&mut buf, "id");
        match id {
            Id::Raw(raw) => json::canonical_into(&mut buf, raw),
            Id::Text(t) => json::write_string(&mut buf, t.as_bytes()),
            Id::Numbered => {
                let id = format!("{}#{seq}", self.session.as_deref().unwrap_or(""));
                json::write_string(&mut buf, id.as_bytes());
            }
        }
        let seq = self.session.is_some().then_some(seq);
        if let Some(seq) = seq {
            FrameBuf::key(&mut buf, "seq");
            buf.extend_from_slice(seq.to_string().as_bytes());
        }
        if let Some(ts) = stamp.filter(|t| json::is_string(t)) {
            FrameBuf::key(&mut buf, "timestamp");
            json::canonical_into(&mut buf, ts);
        }
        if let Some(s) = &self.session {
            FrameBuf::key(&mut buf, "session_id");
            json::write_string(&mut buf, s.as_bytes());
        }
        let mut f = FrameBuf {
            seq,
            buf,
            extras: Vec::new(),
            source: None,
            sub: parent.is_some(),
            has_message: false,
            print,
        };
        if let Some(p) = parent {
            f.extra_str("parent_tool_use_id", p);
        }
        f
    }

    /// A header's levels, each where given: said in `h` and kept as what the session has
    /// announced, so that only a change is said again (contract §3.5).
    pub(super) fn announce(&mut self, h: &mut FrameBuf, levels: Announced) {
        if let Some(w) = levels.window {
            self.st.window = Some(w);
            h.uint("context_window", w);
        }
        if let Some(r) = levels.reserve {
            self.st.reserve = Some(r);
            h.uint("compact_reserve", r);
        }
        if let Some(t) = levels.auto_compact {
            self.st.compact_limit = Some(t);
            h.uint("auto_compact_tokens", t);
        }
    }

    /// Writes a frame. A main frame with a `message` joins the surface.
    pub(super) fn emit(&mut self, f: FrameBuf) {
        if let (false, true, Some(seq)) = (f.sub, f.has_message, f.seq) {
            self.st.surface = Some(match self.st.surface {
                Some((first, _)) => (first, seq),
                None => (seq, seq),
            });
            if let Some(p) = f.print.or(self.next_print) {
                self.st.remember(p, seq);
            }
        }
        let FrameBuf {
            mut buf,
            mut extras,
            source,
            ..
        } = f;
        if !extras.is_empty() {
            extras.push(b'}');
            FrameBuf::key(&mut buf, "extras");
            buf.extend_from_slice(&extras);
        }
        if let Some(s) = source {
            FrameBuf::key(&mut buf, "source");
            buf.extend_from_slice(&s);
        }
        buf.push(b'}');
        self.out.push(buf);
    }

    /// Writes a compaction's replacement: a main `user/message` whose `replaces` spans the
    /// surface (none when it is empty) up to what the compaction keeps verbatim, if the
    /// boundary named it ([`AdaptState::keep_from`]); after it, the surface is it and what was kept.
    pub(super) fn emit_replacement(&mut self, mut f: FrameBuf, message: &str) {
        f.raw("message", message);
        self.replace(f);
    }

    /// Writes a compaction's replacement whose content the frame already carries (a `message`,
    /// or the `message_chars` of a compaction whose post-size is known, none when unknown), as
    /// [`Adapting::emit_replacement`] does.
    pub(super) fn replace(&mut self, mut f: FrameBuf) {
        let kept = self.st.keep.take();
        let span = self.st.surface.map(|(first, last)| match kept {
            Some(k) => (first, k.before, Some(last)),
            None => (first, last, None),
        });
        if let Some((from_seq, to_seq, _)) = span {
            f.json(
                "replaces",
                &format!("{{\"from_seq\":{from_seq},\"to_seq\":{to_seq}}}"),
            );
        }
        let (seq, print) = (f.seq, f.print);
        self.emit(f);
        if let Some(seq) = seq {
            let last = span.and_then(|(_, _, kept_last)| kept_last).unwrap_or(seq);
            self.st.surface = Some((seq, last));
            self.st
                .replaced(print.map(|p| (p, seq)), kept.map(|k| k.head));
        }
    }

    /// Writes a frame whose node stands for the whole surface from here, the agent's own request
    /// list rewritten (`replaces` the surface, `rewrite`: no compaction, contract §3.1).
    pub(super) fn rewrite(&mut self, mut f: FrameBuf) {
        if let Some((from_seq, to_seq)) = self.st.surface {
            f.json(
                "replaces",
                &format!("{{\"from_seq\":{from_seq},\"to_seq\":{to_seq}}}"),
            );
            f.json("rewrite", "true");
        }
        let seq = f.seq;
        self.emit(f);
        if let Some(seq) = seq {
            self.st.surface = Some((seq, seq));
            self.st.recent.clear();
        }
    }

    /// A line with no mapping: a frame of type `<input>/<type>[/<sub>]` carrying the line as
    /// `source`.
    pub(super) fn pass_through(
        &mut self,
        line: &Line,
        sub: Option<&str>,
        id: Id,
        stamp: Option<&str>,
        parent: Option<&str>,
    ) {
        let base = line.str("type");
        let base = base.as_deref().unwrap_or("untyped");
        let kind = match sub {
            Some(s) => format!("{}/{base}/{s}", self.input.name()),
            None => format!("{}/{base}", self.input.name()),
        };
        let mut f = self.frame(&kind, id, stamp, parent);
        if super::census::passed_unknown(self.input, line) {
            f.extra_raw("unknown_kind", "true");
        }
        f.source(line, &[], &[]);
        self.emit(f);
    }
}

/// A line id's fingerprint: what the adapter remembers of recent nodes.
pub(crate) fn fingerprint(id: &str) -> u64 {
    crate::hash::fnv1a(id.as_bytes())
}
