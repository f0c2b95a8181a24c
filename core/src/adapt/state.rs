//! What an adapter remembers of one session: a handful of numbers and ids, and enough to
//! answer a re-delivered line without applying it twice.

use serde::de::MapAccess;

use crate::state::checkpoint::{CheckpointError, Checkpointed, Member, Members};

/// The per-session numbering and dedupe state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AdaptState {
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
    /// Codex: the last automatic compaction threshold announced in a `request/header`.
    pub compact_limit: Option<u64>,
    /// Codex: the threshold its configuration names (`model_auto_compact_token_limit`), which
    /// caps the one its window gives.
    pub configured_limit: Option<u64>,
    /// Codex: what the last reading's response totalled (`last_token_usage.total_tokens`), and
    /// whether a user's turn came since it: a compaction with none between is automatic.
    pub last_total: Option<u64>,
    pub user_turn: bool,
    /// Codex: the characters of the history items written since the last response began (what
    /// Codex adds, estimated, to that response's total before it compares it with its
    /// threshold).
    pub since_chars: u64,
    /// Codex: the level as it stood when the latest response began (`last_total` and
    /// `since_chars` then), and the fingerprint and length in bytes of that response's text.
    /// A response whose text the next `compacted` line ends with was the compaction's own
    /// request (Codex 0.171 writes its summary and that request's usage just before
    /// `compacted`): the level Codex compared with its threshold is the one before it.
    pub before_response: Option<(u64, u64)>,
    pub response_text: Option<(u64, u64)>,
    /// The latest surface nodes that came with a line id, in surface order: `(fingerprint of
    /// the id, seq)`, at most [`RECENT`]. A compaction that keeps its last messages verbatim
    /// names the first it keeps by id.
    pub recent: Vec<(u64, u64)>,
    /// What the next replacement keeps: set by a compaction boundary that names its kept
    /// messages, taken by the replacement that follows.
    pub keep: Option<KeptSpan>,
    /// Codex: where the request of the next reading began (see [`Request`]).
    pub request: Request,
    /// Claude Code: the compaction reserve announced in a `request/header` (by version).
    pub reserve: Option<u64>,
    /// Claude Code: the log writes what the agent puts back (an `attachment` line was seen, or
    /// a compaction boundary carried `postTokens`).
    pub shows_restore: bool,
    /// The fingerprint of the model the session's last header named.
    pub model: Option<u64>,
    /// Claude Code: the files the agent last read, edited or wrote, `(fingerprint of the
    /// path, the file's estimated tokens)`, the most recent last, at most [`RESTORE_FILES`]:
    /// what its rule re-reads at a compaction (contract §3.4).
    pub files: Vec<(u64, u64)>,
    /// Claude Code: the session showed work the agent carries across a compaction beyond the
    /// files (a to-do or task list, a plan, an invoked skill): something the log does not price
    /// may come back (contract §3.4).
    pub restores_more: bool,
    /// Gemini CLI, OpenCode: the messages applied, `(how many, fingerprint of the last one's
    /// id)`: a document written again applies only the messages after it (contract §1).
    pub applied: Option<(u64, u64)>,
    /// OpenCode storage: the latest messages' roles, `(fingerprint of the id, assistant)`, at
    /// most [`ROLES`]: a part file names its message, not who wrote it.
    pub roles: Vec<(u64, bool)>,
    /// Claude Code: what a log that writes its requests says of them ([`Sent`]).
    pub sent: Sent,
    /// Gemini CLI: the fingerprint of the last compression summary (`<state_snapshot>`) its
    /// history held.
    pub snapshot_id: Option<u64>,
    /// Gemini CLI: the latest prompt asked for `/compress` (the next compression is by hand).
    pub asked_compress: bool,
    /// OpenCode: what set off the compaction its latest `compaction` part announced.
    pub compaction_trigger: Option<crate::frame::Trigger>,
}

/// Claude Code ≥ 2.1.282 writes every request it sends: `api-request-shape` (the system
/// prompt and tools), `api-request-blob` (each message the transcript does not hold as it was
/// sent, by hash) and `api-request` (how many messages of the last request it kept, the
/// hashes of those it added). There the surface follows the requests: a transcript message
/// waits for the request that carries it, and joins the surface with it, priced (contract
/// §3.1); one that no request carries (its text went into a blob) never joins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Sent {
    /// The session's log writes its requests.
    pub on: bool,
    /// The characters of each transcript message since the last request, in order, at most
    /// [`PENDING`] (more are added to the last).
    pub pending: Vec<u64>,
    /// The fingerprint of the last pending assistant message's id: its further lines (one per
    /// content block) add to it.
    pub pending_id: Option<u64>,
    /// The blobs seen, `(fingerprint of the hash, characters)`, the most recent last, at most
    /// [`BLOBS`].
    pub blobs: Vec<(u64, u64)>,
    /// The last request's messages: how many, and the fingerprint of their hashes in order.
    pub listed: Option<(u64, u64)>,
    /// A compaction replaced the surface since the last request: all of the next is new.
    pub reset: bool,
    /// A request line came since the last reading (else the reading's own request is priced
    /// from what waits).
    pub requested: bool,
    /// The fingerprint of the request shape last announced.
    pub shape: Option<u64>,
    /// The characters of each message of the last request, in order, while it has at most
    /// [`LISTED`] (beyond, `None`: a request that drops messages is then priced by what it adds).
    pub sizes: Option<Vec<u64>>,
}

/// The messages of one request a session follows message by message.
pub(crate) const LISTED: usize = 20_000;

/// Transcript messages that wait for their request, at most.
pub(crate) const PENDING: usize = 64;
/// Blobs a session remembers by hash.
pub(crate) const BLOBS: usize = 64;

impl Sent {
    /// A transcript message of `chars` characters; an assistant's `id` (its fingerprint)
    /// continues the last one when it is the same.
    pub(crate) fn wait(&mut self, chars: u64, id: Option<u64>) {
        let continues = (id.is_some() && id == self.pending_id) || self.pending.len() == PENDING;
        match self.pending.last_mut() {
            Some(last) if continues => {
                *last = last.saturating_add(chars);
            }
            _ => self.pending.push(chars),
        }
        self.pending_id = id;
    }

    /// A blob's size, by the fingerprint of its hash.
    pub(crate) fn blob(&self, print: u64) -> Option<u64> {
        self.blobs
            .iter()
            .find(|(p, _)| *p == print)
            .map(|(_, c)| *c)
    }

    pub(crate) fn keep_blob(&mut self, print: u64, chars: u64) {
        if self.blob(print).is_some() {
            return;
        }
        if self.blobs.len() == BLOBS {
            self.blobs.remove(0);
        }
        self.blobs.push((print, chars));
    }
}

/// Message roles an OpenCode session remembers for its parts.
pub(crate) const ROLES: usize = 16;

/// How many of the files the agent last touched Claude Code re-reads after a compaction.
pub(crate) const RESTORE_FILES: usize = 5;

/// Codex writes a response's items, and the tool outputs they asked for, before the reading
/// of the request that made them: a reading is anchored to the last input-side frame before
/// its response began (contract §3, sample).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Request {
    /// The seq of the latest input-side frame (a message to the model, a tool output, a
    /// compaction's replacement).
    pub last_input: Option<u64>,
    /// The seq of the last input-side frame before the latest response began.
    pub carried: Option<u64>,
    /// A response is being written (its items came after the latest input).
    pub responding: bool,
}

impl Request {
    /// A frame of the model's response: the first after an input starts a response.
    pub(crate) fn response(&mut self) {
        if !self.responding {
            self.carried = self.last_input;
            self.responding = true;
        }
    }

    /// A frame the next request carries as input.
    pub(crate) fn input(&mut self, seq: Option<u64>) {
        if seq.is_some() {
            self.last_input = seq;
        }
        self.responding = false;
    }
}

/// The messages a compaction keeps verbatim: from the node of `head` (a seq) to the surface's
/// end; the replacement removes the nodes up to `before`, the node just before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeptSpan {
    pub before: u64,
    pub head: u64,
}

/// How many recent nodes a session remembers by id: a compaction that keeps more than this
/// many nodes is read as replacing them all (a figure a little low, never a corrupt span).
pub(crate) const RECENT: usize = 64;

impl AdaptState {
    pub(crate) fn take_seq(&mut self) -> u64 {
        let s = self.next_seq;
        self.next_seq = self.next_seq.saturating_add(1);
        s
    }

    /// The agent read, edited or wrote the file whose path has `print`; it has `tokens` now
    /// (none: it was read in part, and the rule does not re-read it).
    pub(crate) fn touched(&mut self, print: u64, tokens: Option<u64>) {
        self.files.retain(|(p, _)| *p != print);
        let Some(tokens) = tokens else {
            return;
        };
        if self.files.len() == RESTORE_FILES {
            self.files.remove(0);
        }
        self.files.push((print, tokens));
    }

    /// A node with an id joined the surface.
    pub(crate) fn remember(&mut self, print: u64, seq: u64) {
        if self.recent.len() == RECENT {
            self.recent.remove(0);
        }
        self.recent.push((print, seq));
    }

    /// A compaction boundary keeps the messages from the one whose id has `print` on; none
    /// when that node is not among the remembered ones (or is the first: nothing to replace
    /// before it), and then the replacement takes the whole surface.
    pub(crate) fn keep_from(&mut self, print: u64) {
        self.keep = match self.recent.iter().position(|&(p, _)| p == print) {
            Some(i) if i > 0 => Some(KeptSpan {
                before: self.recent[i - 1].1,
                head: self.recent[i].1,
            }),
            _ => None,
        };
    }

    /// A replacement landed: the surface is its node, then what it kept (from seq `head` on).
    pub(crate) fn replaced(&mut self, node: Option<(u64, u64)>, head: Option<u64>) {
        let kept = match head.and_then(|h| self.recent.iter().position(|&(_, s)| s == h)) {
            Some(i) => self.recent.split_off(i),
            None => Vec::new(),
        };
        self.recent.clear();
        self.recent.extend(node);
        self.recent.extend(kept);
        self.recent.truncate(RECENT);
    }
}

/// A session's adapter state with its place in the input: a line at or below `last_offset` was
/// adapted already. The state before this session's first line of the latest invocation is kept,
/// so that the invocation delivered again (an SPU runs a batch whose output did not fit through
/// the module a second time) is adapted again into the very same frames, and changes nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Track {
    pub state: AdaptState,
    pub last_offset: Option<i64>,
    snapshot: Option<Box<(i64, AdaptState)>>,
    snap_epoch: u64,
    replay: Option<Box<AdaptState>>,
}

/// How [`Track::for_line`] placed a line.
pub(crate) enum Placed<'t> {
    /// A new line: adapt it with this state.
    New(&'t mut AdaptState),
    /// A line delivered again: adapt it with this copy, to give its frames again.
    Redelivered(&'t mut AdaptState),
    /// A line delivered again that cannot be given again: nothing.
    Skip,
}

impl Track {
    /// A session's track when it first comes (`returning`: its state was evicted, so its
    /// numbering continues above anything it had: `floor`).
    pub(crate) fn new(returning: bool, floor: u64) -> Track {
        let mut t = Track::default();
        if returning {
            t.state.next_seq = floor;
        }
        t
    }

    /// Places a line at `offset` (none known: always new) in invocation `epoch`.
    pub(crate) fn for_line(&mut self, offset: Option<i64>, epoch: u64) -> Placed<'_> {
        let Some(o) = offset else {
            return Placed::New(&mut self.state);
        };
        if self.last_offset.is_none_or(|l| o > l) {
            if self.snap_epoch != epoch || self.snapshot.is_none() {
                self.snapshot = Some(Box::new((o, self.state.clone())));
                self.snap_epoch = epoch;
            }
            self.replay = None;
            self.last_offset = Some(o);
            return Placed::New(&mut self.state);
        }
        match self.snapshot.as_deref() {
            Some((from, snap)) if o >= *from => {
                if o == *from {
                    self.replay = Some(Box::new(snap.clone()));
                }
                match self.replay.as_deref_mut() {
                    Some(r) => Placed::Redelivered(r),
                    None => Placed::Skip,
                }
            }
            _ => Placed::Skip,
        }
    }
}

#[derive(Default)]
pub(crate) struct TrackFields {
    next_seq: Option<u64>,
    state: AdaptState,
    last_offset: Option<i64>,
    /// Absent in a checkpoint from before it was kept: the prior stands, as it did then.
    restores_more: Option<bool>,
}

impl Checkpointed for Track {
    type Builder = TrackFields;
    type Ctx = ();

    fn write(&self, w: &mut Members, (): ()) {
        let s = &self.state;
        w.uint("nextSeq", s.next_seq);
        w.opt_str("sessionId", s.session_id.as_deref());
        w.opt_str("mainMessage", s.main_message.as_deref());
        w.opt_str("subMessage", s.sub_message.as_deref());
        match s.surface {
            Some((a, b)) => w.raw("surface", &format!("[{a},{b}]")),
            None => w.raw("surface", "null"),
        }
        w.opt_uint("window", s.window);
        w.opt_uint("total", s.total);
        w.opt_uint("compactLimit", s.compact_limit);
        if s.configured_limit.is_some() {
            w.opt_uint("configuredLimit", s.configured_limit);
        }
        if s.last_total.is_some() {
            w.opt_uint("lastTotal", s.last_total);
            w.bool("userTurn", s.user_turn);
            w.uint("sinceChars", s.since_chars);
        }
        if let Some((t, c)) = s.before_response {
            w.raw("beforeResponse", &format!("[{t},{c}]"));
        }
        if let Some((p, n)) = s.response_text {
            w.raw("responseText", &format!("[{p},{n}]"));
        }
        let pairs: Vec<String> = s.recent.iter().map(|(p, q)| format!("[{p},{q}]")).collect();
        w.raw("recent", &format!("[{}]", pairs.join(",")));
        match s.keep {
            Some(k) => w.raw("keep", &format!("[{},{}]", k.before, k.head)),
            None => w.raw("keep", "null"),
        }
        let r = s.request;
        w.raw(
            "request",
            &format!(
                "[{},{},{}]",
                r.last_input.map_or("null".into(), |n| n.to_string()),
                r.carried.map_or("null".into(), |n| n.to_string()),
                r.responding
            ),
        );
        w.opt_uint("compactReserve", s.reserve);
        w.bool("showsRestore", s.shows_restore);
        w.opt_uint("modelPrint", s.model);
        if !s.files.is_empty() {
            let pairs: Vec<String> = s.files.iter().map(|(p, t)| format!("[{p},{t}]")).collect();
            w.raw("files", &format!("[{}]", pairs.join(",")));
        }
        w.bool("restoresMore", s.restores_more);
        if let Some((n, p)) = s.applied {
            w.raw("applied", &format!("[{n},{p}]"));
        }
        if !s.roles.is_empty() {
            let pairs: Vec<String> = s
                .roles
                .iter()
                .map(|(p, a)| format!("[{p},{}]", u64::from(*a)))
                .collect();
            w.raw("roles", &format!("[{}]", pairs.join(",")));
        }
        let sent = &s.sent;
        if sent.on {
            w.bool("sentOn", true);
            let list = |v: &[u64]| {
                let items: Vec<String> = v.iter().map(u64::to_string).collect();
                format!("[{}]", items.join(","))
            };
            w.raw("sentPending", &list(&sent.pending));
            w.opt_uint("sentPendingId", sent.pending_id);
            let pairs: Vec<String> = sent
                .blobs
                .iter()
                .map(|(p, c)| format!("[{p},{c}]"))
                .collect();
            w.raw("sentBlobs", &format!("[{}]", pairs.join(",")));
            if let Some((n, print)) = sent.listed {
                w.raw("sentListed", &format!("[{n},{print}]"));
            }
            w.bool("sentReset", sent.reset);
            w.bool("sentRequested", sent.requested);
            w.opt_uint("sentShape", sent.shape);
            if let Some(sizes) = &sent.sizes {
                w.raw("sentSizes", &list(sizes));
            }
        }
        if s.snapshot_id.is_some() {
            w.opt_uint("snapshotId", s.snapshot_id);
        }
        if s.asked_compress {
            w.bool("askedCompress", true);
        }
        if let Some(t) = s.compaction_trigger {
            w.opt_str("compactionTrigger", Some(t.word()));
        }
        if let Some(o) = self.last_offset {
            w.raw("lastOffset", &o.to_string());
        }
    }

    fn read<'de, A: MapAccess<'de>>(b: &mut TrackFields, m: Member<A>) -> Result<bool, A::Error> {
        match m.name {
            "nextSeq" => b.next_seq = Some(m.read()?),
            "sessionId" => b.state.session_id = m.read()?,
            "mainMessage" => b.state.main_message = m.read()?,
            "subMessage" => b.state.sub_message = m.read()?,
            "surface" => b.state.surface = m.read()?,
            "window" => b.state.window = m.read()?,
            "total" => b.state.total = m.read()?,
            "compactLimit" => b.state.compact_limit = m.read()?,
            "configuredLimit" => b.state.configured_limit = m.read()?,
            "lastTotal" => b.state.last_total = m.read()?,
            "userTurn" => b.state.user_turn = m.read()?,
            "sinceChars" => b.state.since_chars = m.read()?,
            "beforeResponse" => b.state.before_response = m.read()?,
            "responseText" => b.state.response_text = m.read()?,
            "recent" => b.state.recent = m.read_bounded(RECENT, "nodes")?,
            "keep" => {
                let keep: Option<(u64, u64)> = m.read()?;
                b.state.keep = keep.map(|(before, head)| KeptSpan { before, head });
            }
            "request" => {
                let (last_input, carried, responding): (Option<u64>, Option<u64>, bool) =
                    m.read()?;
                b.state.request = Request {
                    last_input,
                    carried,
                    responding,
                };
            }
            "compactReserve" => b.state.reserve = m.read()?,
            "showsRestore" => b.state.shows_restore = m.read()?,
            "modelPrint" => b.state.model = m.read()?,
            "files" => b.state.files = m.read_bounded(RESTORE_FILES, "files")?,
            "restoresMore" => b.restores_more = Some(m.read()?),
            "applied" => b.state.applied = m.read()?,
            "roles" => {
                // `[id fingerprint, 1 for the assistant's]`.
                let roles: Vec<(u64, u64)> = m.read_bounded(ROLES, "messages")?;
                b.state.roles = roles.into_iter().map(|(p, a)| (p, a == 1)).collect();
            }
            "sentOn" => b.state.sent.on = m.read()?,
            "sentPending" => b.state.sent.pending = m.read_bounded(PENDING, "messages")?,
            "sentPendingId" => b.state.sent.pending_id = m.read()?,
            "sentBlobs" => b.state.sent.blobs = m.read_bounded(BLOBS, "blobs")?,
            "sentListed" => b.state.sent.listed = m.read()?,
            "sentReset" => b.state.sent.reset = m.read()?,
            "sentRequested" => b.state.sent.requested = m.read()?,
            "sentShape" => b.state.sent.shape = m.read()?,
            "sentSizes" => b.state.sent.sizes = Some(m.read_bounded(LISTED, "messages")?),
            "snapshotId" => b.state.snapshot_id = m.read()?,
            "askedCompress" => b.state.asked_compress = m.read()?,
            "compactionTrigger" => {
                let t: Option<String> = m.read()?;
                b.state.compaction_trigger = t.as_deref().and_then(crate::frame::Trigger::named);
            }
            "lastOffset" => b.last_offset = m.read()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn finish(b: TrackFields, _version: u64, (): ()) -> Result<Track, CheckpointError> {
        let Some(next_seq) = b.next_seq else {
            return Err(CheckpointError::Invalid(
                "adapter session: `nextSeq` is missing".into(),
            ));
        };
        Ok(Track {
            state: AdaptState {
                next_seq,
                restores_more: b.restores_more.unwrap_or(true),
                ..b.state
            },
            last_offset: b.last_offset,
            ..Track::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adapt(p: Placed) -> Option<(bool, u64)> {
        match p {
            Placed::New(s) => Some((true, s.take_seq())),
            Placed::Redelivered(s) => Some((false, s.take_seq())),
            Placed::Skip => None,
        }
    }

    #[test]
    fn an_invocation_delivered_again_is_given_again_with_the_same_seqs() {
        let mut t = Track::new(false, 0);
        assert_eq!(adapt(t.for_line(Some(0), 1)), Some((true, 0)));
        assert_eq!(adapt(t.for_line(Some(1), 1)), Some((true, 1)));
        assert_eq!(adapt(t.for_line(Some(5), 2)), Some((true, 2)));
        assert_eq!(adapt(t.for_line(Some(6), 2)), Some((true, 3)));
        // The SPU runs invocation 2 again.
        assert_eq!(adapt(t.for_line(Some(5), 3)), Some((false, 2)));
        assert_eq!(adapt(t.for_line(Some(6), 3)), Some((false, 3)));
        // Then new lines continue the numbering where it was.
        assert_eq!(adapt(t.for_line(Some(9), 3)), Some((true, 4)));
        // A line older than the last invocation cannot be given again.
        assert_eq!(adapt(t.for_line(Some(1), 4)), None);
        // A returning session numbers above its floor.
        assert_eq!(
            adapt(Track::new(true, 40).for_line(Some(50), 1)),
            Some((true, 40))
        );
        assert_eq!(
            adapt(Track::new(false, 40).for_line(None, 1)),
            Some((true, 0))
        );
    }
}
