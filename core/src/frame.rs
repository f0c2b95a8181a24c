//! A frame seen through the few fields the views read (contract §1), borrowed from the record.
//!
//! One pass of the [`json`](crate::json) reader: the fields the fold and the projection read are
//! kept as raw JSON slices of the record; every other member is checked and skipped, never built.
//! A frame that is not changed is never re-serialised; a folded one is rewritten by splicing.

use std::borrow::Cow;
use std::ops::Range;

use crate::json::{self, Isa, Member};

/// The frame types the views and the adapters name (contract §1).
pub mod kind {
    pub const REQUEST_HEADER: &str = "request/header";
    pub const ASSISTANT_MESSAGE: &str = "assistant/message";
    pub const USER_MESSAGE: &str = "user/message";
    pub const TOOL_CALL: &str = "tool/call";
    pub const TOOL_RESULT: &str = "tool/result";
    pub const COMPACT_START: &str = "compact/start";
    pub const COMPACT_END: &str = "compact/end";
}

/// 2^53: the largest integer every JSON reader holds exactly, and the fold's ceiling.
pub const MAX_SAFE: u64 = 1 << 53;

/// The longest `agent` or `model` a header may name: a longer one is not a name (contract §1).
pub const NAME_BYTES: usize = 128;

/// A non-empty string of at most [`NAME_BYTES`] bytes.
fn short_name(s: Option<Cow<'_, str>>) -> Option<Cow<'_, str>> {
    s.filter(|s| !s.is_empty() && s.len() <= NAME_BYTES)
}

/// One field that may be absent, well-formed, or present with a value the spec refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Field<T> {
    #[default]
    Absent,
    Valid(T),
    Invalid,
}

/// Where the value of one of the three fields a fold rewrites stands in the record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    pub range: Option<Range<usize>>,
    /// The key occurs more than once: a fold would leave a stale copy beside its sum.
    pub repeated: bool,
}

/// A record that opens as `{"type":"<counter type>"`, as a counter most often does: the frames
/// view reads it on from past that member, which is all a walk from its start would find there (a
/// later `type` still wins, as any repeated key's last does).
#[derive(Debug, Clone)]
pub(crate) struct TypeHead {
    /// The first 16 bytes of `{"type":"`, the counter type and `"`, as two words.
    words: [u64; 2],
    /// The bytes after them: as many as the counter type has past its sixth (`thinking/tokens`
    /// leaves 9, told in two word compares).
    rest: json::Needle,
    rest_len: usize,
}

/// Where a reading of a record starts: at its start, or past the counter type it opens with
/// (only [`TypeHead::after`] tells that).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Resume(usize);

impl Resume {
    pub(crate) const START: Resume = Resume(0);
}

impl TypeHead {
    /// `None` for a counter type that is empty or holds a byte JSON must escape (`"`, `\`, a
    /// control character), whose quoted bytes then are no string's as it stands, and for one
    /// whose head is shorter than 16 bytes (a type of fewer than 6).
    pub(crate) fn new(counter_type: &str) -> Option<TypeHead> {
        let ct = counter_type.as_bytes();
        let plain = !ct.is_empty() && ct.iter().all(|&c| c >= 0x20 && c != b'"' && c != b'\\');
        let head = [b"{\"type\":\"", ct, b"\""].concat();
        (plain && head.len() >= 16).then(|| TypeHead {
            words: [json::word(&head, 0), json::word(&head, 8)],
            rest: json::Needle::new(&head[16..]),
            rest_len: head.len() - 16,
        })
    }

    /// Past the head, where `b` opens with it; else the start.
    #[inline(always)]
    pub(crate) fn after(&self, b: &[u8]) -> Resume {
        let end = 16 + self.rest_len;
        let opens = b.len() >= end
            && json::word(b, 0) == self.words[0]
            && json::word(b, 8) == self.words[1]
            && self.rest.is(&b[16..end]);
        Resume(if opens { end } else { 0 })
    }
}

/// The top-level members the frame reader knows (contract §1), by name: the fields the views
/// read, and `id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Name {
    /// `id`: carried, never read (contract §1); named so that the walk takes it without a
    /// string scan.
    Id,
    Type,
    Seq,
    Timestamp,
    Delta,
    FoldedFrames,
    FoldedFrom,
    Extras,
    SessionId,
    Message,
    MessageChars,
    Usage,
    System,
    Tools,
    ContextWindow,
    Replaces,
    Rewrite,
    Trigger,
    PreTokens,
    AutoCompactTokens,
    CompactReserve,
    CompactRestore,
    AnchorSeq,
    RestoreShown,
    RestoreTokens,
    RestoreBeyond,
    Agent,
    Model,
}

impl Name {
    /// The member a key names, if a view reads it: the key's length picks the few names it
    /// may be, each compared a word at a time against a constant (every member of every
    /// record comes here; a table of names walked in a loop compares them as data instead).
    #[inline(always)]
    fn of(key: &[u8]) -> Option<Name> {
        use Name::*;
        macro_rules! by_length {
            ($($len:literal => [$($name:literal => $field:ident),+]),+ $(,)?) => {
                match key.len() {
                    $($len => {
                        $(if json::same(key, $name) {
                            return Some($field);
                        })+
                        None
                    })+
                    _ => None,
                }
            };
        }
        by_length! {
            2 => [b"id" => Id],
            3 => [b"seq" => Seq],
            4 => [b"type" => Type],
            5 => [b"usage" => Usage, b"tools" => Tools, b"agent" => Agent, b"model" => Model],
            6 => [b"extras" => Extras, b"system" => System],
            7 => [b"message" => Message, b"trigger" => Trigger, b"rewrite" => Rewrite],
            8 => [b"replaces" => Replaces],
            9 => [b"timestamp" => Timestamp, b"preTokens" => PreTokens],
            10 => [b"session_id" => SessionId, b"anchor_seq" => AnchorSeq],
            11 => [b"folded_from" => FoldedFrom],
            13 => [
                b"folded_frames" => FoldedFrames,
                b"message_chars" => MessageChars,
                b"restore_shown" => RestoreShown
            ],
            14 => [
                b"context_window" => ContextWindow,
                b"restore_tokens" => RestoreTokens,
                b"restore_beyond" => RestoreBeyond
            ],
            15 => [b"compact_reserve" => CompactReserve, b"compact_restore" => CompactRestore],
            19 => [b"auto_compact_tokens" => AutoCompactTokens],
            22 => [b"estimated_tokens_delta" => Delta],
        }
    }
}

/// What set a compaction off, as its `compact/start` names it (`trigger`, contract §1): the
/// agent on its own, or the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Trigger {
    Auto,
    Manual,
}

impl Trigger {
    /// `"auto"` or `"manual"`; any other word names none.
    pub fn named(word: &str) -> Option<Trigger> {
        match word {
            "auto" => Some(Trigger::Auto),
            "manual" => Some(Trigger::Manual),
            _ => None,
        }
    }

    /// The word a record writes.
    pub fn word(self) -> &'static str {
        match self {
            Trigger::Auto => "auto",
            Trigger::Manual => "manual",
        }
    }
}

/// The fields of one frame that the views read, borrowed from the record.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Frame<'a> {
    bytes: &'a [u8],
    kind: Option<Cow<'a, str>>,
    seq: Option<u64>,
    stamp: Option<&'a str>,
    delta: Option<u64>,
    folded_frames: Field<u64>,
    folded_from: Field<&'a str>,
    subagent: bool,
    /// `session_id` as its raw JSON text when a string, and whether it holds no escape: read
    /// into text only when asked (a keyed record never asks).
    session_id: Option<(&'a str, bool)>,
    message: Option<&'a str>,
    message_chars: Option<u64>,
    usage: Option<&'a str>,
    system: Option<&'a str>,
    tools: Option<&'a str>,
    context_window: Option<u64>,
    replaces: Option<&'a str>,
    /// `rewrite` is `true`: the replacement is the log's own request list rewritten, not a
    /// compaction.
    rewrite: bool,
    trigger: Option<Trigger>,
    pre_tokens: Option<u64>,
    auto_compact_tokens: Option<u64>,
    compact_reserve: Option<u64>,
    compact_restore: Option<u64>,
    anchor_seq: Option<u64>,
    restore_shown: bool,
    restore_tokens: Option<u64>,
    /// `restore_beyond` is `false`: the prior adds nothing at this compaction.
    nothing_beyond: bool,
    agent: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
    delta_place: Place,
    from_place: Place,
    frames_place: Place,
}

impl<'a> Frame<'a> {
    /// Reads a record; `None` when it is not a JSON object (contract §1).
    #[inline]
    pub fn parse(bytes: &'a [u8]) -> Option<Frame<'a>> {
        Frame::parse_on(bytes, Isa::best())
    }

    /// [`Frame::parse`] with its string scan on a given instruction set (differential tests).
    pub fn parse_on(bytes: &'a [u8], isa: Isa) -> Option<Frame<'a>> {
        Frame::parse_with::<true>(bytes, isa)
    }

    /// A record as the fold reads it (contract §2): its kind, stamp, the three fold fields,
    /// `extras` and `session_id`; the fields only the pressure view reads, `seq` among them,
    /// are left unread.
    #[inline]
    pub fn parse_fold(bytes: &'a [u8]) -> Option<Frame<'a>> {
        Frame::parse_with::<false>(bytes, Isa::best())
    }

    /// [`Frame::parse_fold`] into this frame, which only this has read records into: the fold's
    /// fields are cleared and read again, the rest were never set (a frame handed back by value
    /// writes all of its fields out for every record). `false`, its fields unspecified, when the
    /// record is not a JSON object. From `resume` (see [`TypeHead`]).
    pub(crate) fn read_fold(&mut self, bytes: &'a [u8], resume: Resume) -> bool {
        self.clear_fold(bytes);
        self.read_fold_members(bytes, resume)
    }

    /// The fields [`Frame::read_fold`] reads, back to their defaults.
    #[inline(always)]
    fn clear_fold(&mut self, bytes: &'a [u8]) {
        debug_assert!(
            self.seq.is_none() && self.message.is_none() && self.context_window.is_none(),
            "a frame read in full is read again as the fold reads it"
        );
        self.bytes = bytes;
        self.kind = None;
        self.stamp = None;
        self.delta = None;
        self.folded_frames = Field::Absent;
        self.folded_from = Field::Absent;
        self.subagent = false;
        self.session_id = None;
        self.delta_place = Place::default();
        self.from_place = Place::default();
        self.frames_place = Place::default();
    }

    /// [`Frame::parse`] into this frame: every field back to its default, then this record's
    /// read into it where it stands (a frame handed back by value writes all of its fields out
    /// again). `false`, its fields unspecified, when the record is not a JSON object.
    pub(crate) fn read_all(&mut self, bytes: &'a [u8]) -> bool {
        *self = Frame {
            bytes,
            ..Frame::default()
        };
        self.read_members::<true>(bytes, 0, Isa::best())
    }

    /// The fold's fields of the record from `resume`, the type it opens with taken as it
    /// stands where `resume` is past it (one walk for both, inlined once).
    #[inline(always)]
    fn read_fold_members(&mut self, bytes: &'a [u8], resume: Resume) -> bool {
        if resume.0 != 0 {
            // `TypeHead::after` found `{"type":"`, the counter type and `"` there.
            let inside = &bytes[9..resume.0 - 1];
            debug_assert!(bytes.starts_with(b"{\"type\":\"") && bytes[resume.0 - 1] == b'"');
            debug_assert!(std::str::from_utf8(inside).is_ok());
            // SAFETY: those bytes are the counter type's, a `str` (see `TypeHead::new`).
            self.kind = Some(Cow::Borrowed(unsafe {
                std::str::from_utf8_unchecked(inside)
            }));
        }
        self.read_members::<false>(bytes, resume.0, Isa::best())
    }

    /// `ALL`: every field the views read; else the fold's alone (a generic, so that each
    /// reading is a walk of its own).
    fn parse_with<const ALL: bool>(bytes: &'a [u8], isa: Isa) -> Option<Frame<'a>> {
        let mut v = Frame {
            bytes,
            ..Frame::default()
        };
        // Inlined into the walk: a call per member would pass the member through memory. Its
        // own walk, not `read_members`: through it, the views' walks were inlined otherwise
        // and cost 4% more fuel a small record (measured).
        // SAFETY: `Name::of` names only the fields' names: ASCII letters and `_`.
        unsafe {
            json::object_known(
                bytes,
                0,
                isa,
                Name::of,
                #[inline(always)]
                |m, name| v.set::<ALL>(bytes, m, name),
            )
        }?;
        Some(v)
    }

    /// `bytes`' members into this frame's fields (`ALL`: every field the views read; else the
    /// fold's alone), from `resume` (0, or past a first member: see [`json::object_known`]);
    /// `false` when `bytes` is no JSON object.
    #[expect(
        clippy::redundant_closure,
        reason = "the closure carries #[inline(always)]; the function item is not inlined"
    )]
    #[inline(always)]
    fn read_members<const ALL: bool>(&mut self, bytes: &'a [u8], resume: usize, isa: Isa) -> bool {
        // The name match and the member's reading inlined into the walk (a call per key cost
        // more, docs/bench.md).
        // SAFETY: `Name::of` names only the fields' names: ASCII letters and `_`; `resume` is
        // 0, or past a first member (a `Resume`, see `TypeHead::after`).
        unsafe {
            json::object_known(
                bytes,
                resume,
                isa,
                #[inline(always)]
                |key| Name::of(key),
                #[inline(always)]
                |m, name| self.set::<ALL>(bytes, m, name),
            )
        }
        .is_some()
    }

    /// Records one top-level member; the last of a repeated key wins.
    #[inline(always)]
    fn set<const ALL: bool>(&mut self, bytes: &'a [u8], m: Member<'a>, name: Option<Name>) {
        let raw = m.value;
        // A key the walk named is that name; one without an escape is its name as it stands:
        // no `Cow` to make and drop.
        let field = if name.is_some() {
            name
        } else if m.escaped {
            Name::of(m.name().as_bytes())
        } else {
            Name::of(m.key.as_bytes())
        };
        let Some(field) = field else {
            return;
        };
        match field {
            Name::Id => {}
            Name::Type => self.kind = m.string(),
            Name::Timestamp => self.stamp = json::is_string(raw).then_some(raw),
            Name::Delta => {
                mark(bytes, &mut self.delta_place, raw);
                self.delta = json::uint(raw).filter(|d| *d <= MAX_SAFE);
            }
            Name::FoldedFrames => {
                mark(bytes, &mut self.frames_place, raw);
                self.folded_frames = match json::uint(raw) {
                    Some(n) if (1..=MAX_SAFE).contains(&n) => Field::Valid(n),
                    _ => Field::Invalid,
                };
            }
            Name::FoldedFrom => {
                mark(bytes, &mut self.from_place, raw);
                self.folded_from = if json::is_string(raw) {
                    Field::Valid(raw)
                } else {
                    Field::Invalid
                };
            }
            // Only `parent_tool_use_id` of `extras` is read: any other key there changes nothing.
            Name::Extras => self.subagent = json::has_string(raw, "parent_tool_use_id"),
            Name::SessionId => {
                self.session_id = json::is_string(raw).then_some((raw, m.plain));
            }
            // The fold reads none of the rest (contract §2).
            _ if !ALL => {}
            Name::Seq => self.seq = json::uint(raw),
            Name::Message => self.message = Some(raw),
            Name::MessageChars => self.message_chars = json::uint(raw).filter(|n| *n <= MAX_SAFE),
            Name::Usage => self.usage = raw.starts_with('{').then_some(raw),
            Name::System => self.system = Some(raw),
            Name::Tools => self.tools = Some(raw),
            Name::ContextWindow => self.context_window = json::uint(raw).filter(|w| *w >= 1),
            Name::Replaces => self.replaces = (raw != "null").then_some(raw),
            Name::Rewrite => self.rewrite = raw == "true",
            Name::Trigger => self.trigger = m.string().as_deref().and_then(Trigger::named),
            Name::PreTokens => self.pre_tokens = json::uint(raw).filter(|n| *n >= 1),
            Name::AutoCompactTokens => {
                self.auto_compact_tokens = json::uint(raw).filter(|n| *n >= 1)
            }
            Name::CompactReserve => self.compact_reserve = json::uint(raw),
            Name::CompactRestore => self.compact_restore = json::uint(raw),
            Name::AnchorSeq => self.anchor_seq = json::uint(raw),
            Name::RestoreShown => self.restore_shown = raw == "true",
            Name::RestoreTokens => self.restore_tokens = json::uint(raw),
            Name::RestoreBeyond => self.nothing_beyond = raw == "false",
            Name::Agent => self.agent = short_name(m.string()),
            Name::Model => self.model = short_name(m.string()),
        }
    }

    /// The record's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// `type`, when it is a string.
    pub fn kind(&self) -> Option<&str> {
        self.kind.as_deref()
    }
    /// Whether this frame is a counter of the given type.
    pub fn is_counter(&self, counter_type: &json::Needle) -> bool {
        self.kind().is_some_and(|k| counter_type.is(k.as_bytes()))
    }
    /// `seq`, when it is an integer ≥ 0.
    pub fn seq(&self) -> Option<u64> {
        self.seq
    }
    /// `timestamp` as raw JSON text, when it is a string.
    pub fn stamp(&self) -> Option<&'a str> {
        self.stamp
    }
    /// `estimated_tokens_delta`, when it is an integer in 0..=2^53.
    pub fn delta(&self) -> Option<u64> {
        self.delta
    }
    /// `folded_frames`: valid when an integer in 1..=2^53.
    pub fn folded_frames(&self) -> Field<u64> {
        self.folded_frames
    }
    /// `folded_from` as raw JSON text: valid when a string.
    pub fn folded_from(&self) -> Field<&'a str> {
        self.folded_from
    }
    /// `extras.parent_tool_use_id` is a string: the frame is a sub-agent's (contract §1).
    pub fn is_subagent(&self) -> bool {
        self.subagent
    }
    /// `session_id`, when it is a string.
    pub fn session_id(&self) -> Option<Cow<'a, str>> {
        let (raw, plain) = self.session_id?;
        let m = Member {
            key: "",
            escaped: false,
            value: raw,
            plain,
        };
        m.string()
    }
    /// `agent`, when a string of at most [`NAME_BYTES`] bytes: the agent a header names.
    pub fn agent(&self) -> Option<&str> {
        self.agent.as_deref()
    }
    /// `model`, when a string of at most [`NAME_BYTES`] bytes: the model a header names.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }
    /// `message`, raw, when present.
    pub fn message(&self) -> Option<&'a str> {
        self.message
    }
    /// `message_chars`, when an integer in 0..=2^53: content of that many characters that the
    /// log measured but does not carry (telemetry gives sizes, not text: contract §1, §3.1).
    pub fn message_chars(&self) -> Option<u64> {
        self.message_chars
    }
    /// `usage`, raw, when it is an object.
    pub fn usage(&self) -> Option<&'a str> {
        self.usage
    }
    /// `system`, raw, when present.
    pub fn system(&self) -> Option<&'a str> {
        self.system
    }
    /// `tools`, raw, when present.
    pub fn tools(&self) -> Option<&'a str> {
        self.tools
    }
    /// `context_window`, when an integer ≥ 1.
    pub fn context_window(&self) -> Option<u64> {
        self.context_window
    }
    /// `replaces`, raw, when present and not null.
    pub fn replaces(&self) -> Option<&'a str> {
        self.replaces
    }
    /// With `replaces`: `rewrite` is `true`, the span is what the agent's own requests no longer
    /// carry as they did (a request that lists its messages rewritten), not a compaction
    /// (contract §3.1).
    pub fn rewrite(&self) -> bool {
        self.rewrite
    }
    /// On `compact/start`: `preTokens` when `trigger` is `"auto"`, the level an automatic
    /// compaction fired at (an integer ≥ 1).
    pub fn auto_compaction(&self) -> Option<u64> {
        self.pre_tokens
            .filter(|_| self.trigger == Some(Trigger::Auto))
    }
    /// On `compact/start`: what set the compaction off, when its `trigger` names one.
    pub fn trigger(&self) -> Option<Trigger> {
        self.trigger
    }
    /// On `compact/start`: the context's size when the compaction began (`preTokens`), when an
    /// integer ≥ 1, whatever set it off.
    pub fn pre_tokens(&self) -> Option<u64> {
        self.pre_tokens
    }
    /// On `request/header`: the agent's own compaction threshold, when an integer ≥ 1.
    pub fn auto_compact_tokens(&self) -> Option<u64> {
        self.auto_compact_tokens
    }
    /// On `request/header`: how far below its window the agent compacts on its own, when an
    /// integer ≥ 0 (contract §3, How far to the compaction).
    pub fn compact_reserve(&self) -> Option<u64> {
        self.compact_reserve
    }
    /// On `request/header`: what the session's agent puts back unseen at a compaction, the
    /// prior `rebased` adds until the session learns its own, when an integer ≥ 0 (contract
    /// §3.4; param `compact_restore`, when given, stands over it).
    pub fn compact_restore(&self) -> Option<u64> {
        self.compact_restore
    }
    /// On a sampled `assistant/message`: the seq of the last frame the sampled request
    /// carried, when an integer ≥ 0 (contract §3, sample).
    pub fn anchor_seq(&self) -> Option<u64> {
        self.anchor_seq
    }
    /// On `compact/start`: `restore_shown` is `true`, the log writes what the agent puts back
    /// after this compaction (contract §3.4).
    pub fn restore_shown(&self) -> bool {
        self.restore_shown
    }
    /// On `compact/start`: `restore_tokens`, what the agent's own rule puts back that its log
    /// does not show, priced by the adapter from what the log showed before (contract §3.4).
    pub fn restore_tokens(&self) -> Option<u64> {
        self.restore_tokens
    }
    /// On `compact/start`: unless `restore_beyond` is `false`, something the log does not
    /// price may come back beyond `restore_tokens` (the prior stands for it); `false`: the log
    /// showed nothing the agent puts back beyond it (contract §3.4).
    pub fn restore_beyond(&self) -> bool {
        !self.nothing_beyond
    }
    /// Where `estimated_tokens_delta`, `folded_from` and `folded_frames` stand.
    pub fn places(&self) -> [&Place; 3] {
        [&self.delta_place, &self.from_place, &self.frames_place]
    }
}

fn mark(bytes: &[u8], place: &mut Place, raw: &str) {
    let start = raw.as_ptr() as usize - bytes.as_ptr() as usize;
    place.repeated |= place.range.is_some();
    place.range = Some(start..start + raw.len());
}

/// Named integer fields of a small object (`usage`, `replaces`): absent, an integer ≥ 0 (see
/// `json::uint`), or invalid; the last of a repeated key wins, other keys change nothing.
pub fn object_uints<const N: usize>(raw: &str, names: [&str; N]) -> Option<[Field<u64>; N]> {
    if !raw.starts_with('{') {
        return None;
    }
    let mut out = [Field::Absent; N];
    for m in json::members(raw) {
        if let Some(i) = names.iter().position(|n| m.is(n)) {
            out[i] = json::uint(m.value).map_or(Field::Invalid, Field::Valid);
        }
    }
    Some(out)
}

/// The provider's prompt size from a `usage` object: `input_tokens` +
/// `cache_read_input_tokens` + `cache_creation_input_tokens`; missing or bad fields count 0.
pub fn usage_tokens(usage: &str) -> u64 {
    let fields = object_uints(
        usage,
        [
            "input_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ],
    )
    .unwrap_or_default();
    prompt_sum(&fields)
}

/// The sum of the `usage` fields read (see [`usage_tokens`]), a missing or bad one counting 0.
pub(crate) fn prompt_sum(fields: &[Field<u64>]) -> u64 {
    fields.iter().fold(0u64, |s, f| match f {
        Field::Valid(n) => s.saturating_add(*n),
        _ => s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_what_it_needs() {
        let rec = br#"{"type":"thinking/tokens","id":"c1","seq":4,"timestamp":"t1","estimated_tokens_delta":5,"big":[1,{"a":[2]}],"extras":{"parent_tool_use_id":null}}"#;
        let v = Frame::parse(rec).unwrap();
        assert!(v.is_counter(&json::Needle::new(b"thinking/tokens")));
        assert_eq!(v.seq(), Some(4));
        assert_eq!(v.stamp(), Some("\"t1\""));
        assert_eq!(v.delta(), Some(5));
        assert!(!v.is_subagent());
        let r = v.places()[0].range.clone().unwrap();
        assert_eq!(&rec[r], b"5");
    }

    #[test]
    fn refuses_what_is_not_an_object() {
        for bad in crate::json::NOT_OBJECTS {
            assert!(Frame::parse(bad).is_none(), "{bad:?}");
        }
        assert!(Frame::parse(b" {} \n").is_some());
    }

    #[test]
    fn field_types_are_checked() {
        let v = Frame::parse(
            br#"{"type":1,"seq":-1,"timestamp":5,"estimated_tokens_delta":1.0,"folded_frames":0,"folded_from":null}"#,
        )
        .unwrap();
        assert_eq!(v.kind(), None);
        assert_eq!(v.seq(), None);
        assert_eq!(v.stamp(), None);
        assert_eq!(v.delta(), None);
        assert_eq!(v.folded_frames(), Field::Invalid);
        assert_eq!(v.folded_from(), Field::Invalid);
        let v = Frame::parse(br#"{"estimated_tokens_delta":9007199254740993}"#).unwrap();
        assert_eq!(v.delta(), None);
    }

    #[test]
    fn a_measure_is_an_integer_up_to_2_53() {
        let chars = |raw: &str| {
            let text = format!(r#"{{"message_chars":{raw}}}"#);
            Frame::parse(text.as_bytes()).unwrap().message_chars()
        };
        assert_eq!(chars("0"), Some(0));
        assert_eq!(chars("9007199254740992"), Some(MAX_SAFE));
        for bad in ["9007199254740993", "-1", "1.0", "\"4\"", "null", "{}"] {
            assert_eq!(chars(bad), None, "{bad}");
        }
        let last = Frame::parse(br#"{"message_chars":4,"message_chars":"x"}"#).unwrap();
        assert_eq!(
            last.message_chars(),
            None,
            "the last of a repeated key wins"
        );
    }

    #[test]
    fn subagent_needs_a_string_parent_and_odd_keys_change_nothing() {
        let sub = |s: &[u8]| Frame::parse(s).unwrap().is_subagent();
        assert!(sub(br#"{"extras":{"parent_tool_use_id":"toolu_1"}}"#));
        assert!(sub(
            br#"{"extras":{"note\ud800":1,"parent_tool_use_id":"toolu_1"}}"#
        ));
        assert!(sub(br#"{"extras":{"parent_tool_use_\u0069d":"t"}}"#));
        assert!(!sub(br#"{"extras":{"parent_tool_use_id":7}}"#));
        assert!(!sub(br#"{"extras":"x"}"#));
        assert!(!sub(br#"{"parent_tool_use_id":"toolu_1"}"#));
        let v = Frame::parse(br#"{"k\ud800":1,"type":"user/message","seq":3}"#).unwrap();
        assert_eq!((v.kind(), v.seq()), (Some("user/message"), Some(3)));
    }

    /// `extras.parent_tool_use_id` is the last one of the last `extras`, for repeated, nested,
    /// spaced, escaped and non-object forms, on every instruction set; and what is no JSON
    /// inside `extras` is no frame.
    #[test]
    fn subagent_is_the_last_parent_member_as_the_iterator_reads_it() {
        let cases: [&[u8]; 15] = [
            br#"{"extras":{"parent_tool_use_id":"t"},"extras":{}}"#,
            br#"{"extras":{},"extras":{"parent_tool_use_id":"t"}}"#,
            br#"{"extras":{"parent_tool_use_id":"t"},"extras":"x"}"#,
            br#"{"extras":{"parent_tool_use_id":"t","parent_tool_use_id":null}}"#,
            br#"{"extras":{"parent_tool_use_id":null,"parent_tool_use_id":"t"}}"#,
            br#"{"extras":{"a":{"parent_tool_use_id":"t"},"b":[1,{"c":"d"}]}}"#,
            br#"{"extras":{"a":{"parent_tool_use_id":"t"}},"parent_tool_use_id":"t"}"#,
            b"{ \"extras\" : { \"parent_tool_use_id\" : \"t\" , \"z\" : 1 } }",
            br#"{"extr\u0061s":{"parent_tool_use_id":"t"}}"#,
            br#"{"extras":{"x":1,"parent_tool_use_id":"t"}}"#,
            br#"{"extras":{ }}"#,
            br#"{"extras":[{"parent_tool_use_id":"t"}]}"#,
            br#"{"extras":{"parent_tool_use_id":"\u0074"}}"#,
            br#"{"extras":{"parent_tool_use_\u0069d":"t","z":[]}}"#,
            br#"{"extras":{"parent_tool_use_id":"t"},"extras":{"q":true}}"#,
        ];
        let bad: [&[u8]; 5] = [
            br#"{"extras":{"parent_tool_use_id":"t",}}"#,
            br#"{"extras":{"parent_tool_use_id":"t"}"#,
            br#"{"extras":{"parent_tool_use_id" "t"}}"#,
            br#"{"extras":{parent_tool_use_id:"t"}}"#,
            b"{\"extras\":{\"p\":\"\xff\"}}",
        ];
        for isa in Isa::available() {
            for case in cases {
                let v = Frame::parse_on(case, isa).unwrap();
                let text = std::str::from_utf8(case).unwrap();
                let extras = json::members(text)
                    .filter(|m| m.is("extras"))
                    .last()
                    .map(|m| m.value);
                let again = extras
                    .and_then(|e| json::get(e, "parent_tool_use_id"))
                    .is_some_and(json::is_string);
                assert_eq!(v.is_subagent(), again, "{text} on {isa:?}");
            }
            for case in bad {
                assert!(Frame::parse_on(case, isa).is_none(), "{case:?}");
            }
        }
    }

    #[test]
    fn escaped_keys_and_values_are_read() {
        let v =
            Frame::parse(br#"{"typ\u0065":"thinking\/tokens","session_id":"a\"b\udc00"}"#).unwrap();
        assert_eq!(v.kind(), Some("thinking/tokens"));
        assert_eq!(v.session_id().as_deref(), Some("a\"b\u{FFFD}"));
    }

    #[test]
    fn object_fields() {
        let [a, b, c] = object_uints(r#"{"a":1,"b":"x","x\ud800":5}"#, ["a", "b", "c"]).unwrap();
        assert_eq!((a, b, c), (Field::Valid(1), Field::Invalid, Field::Absent));
        assert!(object_uints("[]", ["a"]).is_none());
    }

    #[test]
    fn the_folds_reading_is_the_full_reading_without_seq() {
        let records = [
            r#"{"type":"thinking/tokens","seq":7,"timestamp":"t","estimated_tokens_delta":3}"#,
            r#"{"seq":12,"type":"user/message","message":{"role":"user","content":"hi"}}"#,
            r#"{"type":"request/header","seq":0,"context_window":200000,"agent":"codex"}"#,
            r#"{"type":"x","seq":"not a number","extras":{"parent_tool_use_id":"t"}}"#,
            r#"{"type":"thinking/tokens","session_id":"s","folded_frames":2,"folded_from":"t0","timestamp":"t","estimated_tokens_delta":3,"estimated_tokens_delta":4}"#,
        ];
        for r in records {
            let full = Frame::parse(r.as_bytes()).expect("an object");
            let fold = Frame::parse_fold(r.as_bytes()).expect("an object");
            assert_eq!(fold.seq(), None, "{r}");
            assert_eq!(fold.context_window(), None, "{r}");
            assert_eq!(fold.message(), None, "{r}");
            let read = |v: &Frame<'_>| {
                format!(
                    "{:?}",
                    (
                        v.kind(),
                        v.stamp(),
                        v.delta(),
                        v.folded_frames(),
                        v.folded_from(),
                        v.is_subagent(),
                        v.session_id(),
                        v.places(),
                    )
                )
            };
            assert_eq!(read(&fold), read(&full), "{r}");
        }
        assert!(Frame::parse_fold(b"{\"seq\":1,").is_none());
    }

    /// For counter types of every length a head is made for, and around each, records that
    /// open with the head or nearly: read from past it where it says so, as from the start.
    #[test]
    fn a_record_read_past_its_counter_type_reads_as_from_its_start() {
        assert!(TypeHead::new("abcde").is_none(), "a head under 16 bytes");
        assert!(
            TypeHead::new("a\"b/tokens").is_none(),
            "a quote in the type"
        );
        assert!(
            TypeHead::new("a\\b/tokens").is_none(),
            "a backslash in the type"
        );
        assert!(
            TypeHead::new("a\nb/tokens").is_none(),
            "a control character in the type"
        );
        let types = [
            "abcdef",
            "thinking/tokens",
            "é/ünïcode-ticks",
            "a-long-counter-type/of-bytes",
        ];
        for ct in types {
            let head = TypeHead::new(ct).expect("a plain type of six bytes or more");
            let other = format!("{}x", &ct[..ct.len() - 1]);
            for (kind, rest) in [
                (ct, r#","timestamp":"t","estimated_tokens_delta":3}"#),
                (ct, r#" , "timestamp" : "t" }"#),
                (ct, "}"),
                (ct, ""),
                (ct, ",}"),
                (ct, r#","type":"user/message"}"#),
                (ct, r#"}{}"#),
                (other.as_str(), r#","timestamp":"t"}"#),
            ] {
                let r = format!(r#"{{"type":"{kind}"{rest}"#);
                let b = r.as_bytes();
                let resume = head.after(b);
                assert_eq!(resume != Resume::START, kind == ct, "{r}");
                let fresh = Frame::parse_fold(b);
                let mut frame = Frame::default();
                assert_eq!(frame.read_fold(b, resume), fresh.is_some(), "{r}");
                if let Some(fresh) = fresh {
                    assert_eq!(frame, fresh, "{r}");
                }
            }
        }
    }

    #[test]
    fn a_frame_read_again_holds_only_the_new_records_fields() {
        let records = [
            r#"{"type":"thinking/tokens","session_id":"s","folded_frames":2,"folded_from":"t0","timestamp":"t","estimated_tokens_delta":3,"extras":{"parent_tool_use_id":"p"}}"#,
            r#"{"type":"user/message","message":{"role":"user","content":"hi"}}"#,
            r#"{"type":"thinking/tokens","timestamp":"t2","estimated_tokens_delta":1}"#,
            r#"not json"#,
            r#"{"type":"thinking/tokens","timestamp":"t3","estimated_tokens_delta":2,"estimated_tokens_delta":5}"#,
            r#"{}"#,
            r#"{"type":"thinking/tokens"}"#,
            r#"{"type":"thinking/tokens" , "timestamp":"t4" }"#,
            r#"{"type":"thinking/tokens""#,
            r#"{"type":"thinking/tokens",}"#,
            r#"{"type":"thinking/tokens","type":"user/message"}"#,
            r#"{"type":"thinking/tokens"}x"#,
        ];
        let head = TypeHead::new("thinking/tokens").expect("a head of 16 bytes or more");
        let mut again = Frame::default();
        for r in records {
            let fresh = Frame::parse_fold(r.as_bytes());
            // From the start, and from past the type where the record opens with it.
            let past = head.after(r.as_bytes());
            assert_eq!(
                past != Resume::START,
                r.starts_with(r#"{"type":"thinking/tokens""#),
                "{r}"
            );
            for resume in [Resume::START, past] {
                let read = again.read_fold(r.as_bytes(), resume);
                assert_eq!(read, fresh.is_some(), "{r} from {resume:?}");
                if let Some(fresh) = &fresh {
                    assert_eq!(&again, fresh, "{r} from {resume:?}");
                }
            }
        }
    }

    #[test]
    fn a_frame_read_again_in_full_holds_only_the_new_records_fields() {
        let records = [
            r#"{"type":"request/header","id":"h","session_id":"s","seq":0,"timestamp":"t0","system":"sys","tools":[1],"context_window":200000,"auto_compact_tokens":150000,"compact_reserve":13000,"compact_restore":1400,"agent":"codex","model":"m"}"#,
            r#"{"type":"user/message","seq":1,"message":{"role":"user"},"message_chars":12}"#,
            r#"{"type":"assistant/message","seq":2,"usage":{"input_tokens":5},"anchor_seq":1,"extras":{"parent_tool_use_id":"p"}}"#,
            r#"{"type":"compact/start","seq":3,"trigger":"auto","preTokens":9,"restore_shown":true}"#,
            r#"{"type":"compact/end","seq":4,"replaces":{"from_seq":1,"to_seq":2}}"#,
            r#"{"type":"thinking/tokens","seq":5,"timestamp":"t","estimated_tokens_delta":3,"folded_frames":2,"folded_from":"t0"}"#,
            r#"[1]"#,
            r#"{"seq":6}"#,
            r#"{}"#,
            r#"{"typ\u0065":"x","id":"y"}"#,
        ];
        let mut again = Frame::default();
        for r in records.iter().chain(records.iter().rev()) {
            let fresh = Frame::parse(r.as_bytes());
            assert_eq!(again.read_all(r.as_bytes()), fresh.is_some(), "{r}");
            if let Some(fresh) = fresh {
                assert_eq!(again, fresh, "{r}");
            }
        }
    }
}
