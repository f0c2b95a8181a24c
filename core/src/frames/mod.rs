//! The frames view (contract §2): each invocation is a page per session; the only memory between
//! invocations is whether a session's last main frame was a non-counter.

pub(crate) mod fold;
mod page;

pub use page::{compact_counters, compact_counters_with};

use fold::{Fed, Marks, Part, RunState, Span, Tally, splice};

use crate::config::{Config, Malformed, Subagents};
use crate::frame::{Field, Frame, Resume, TypeHead};
use crate::json::{self, Isa};

/// What the fold sees of one frame.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Role {
    /// A main frame that is no counter (or a malformed record under `malformed=pass`).
    Other,
    /// A main counter; `None` when it cannot be folded.
    Counter(Option<Tally>),
    /// A sub-agent frame under `subagents=keep`: in place, invisible to main runs.
    SubagentKept,
    /// Removed before the fold: sub-agent frames under `drop`, malformed under `drop`/`fail`.
    Removed,
}

/// The fold's reading of a counter: `None` for one that ends the foldable part.
fn tally(v: &Frame) -> Option<Tally> {
    if v.stamp().is_none() || v.places().iter().any(|p| p.repeated) {
        return None;
    }
    let frames = match v.folded_frames() {
        Field::Absent => 1,
        Field::Valid(n) => n,
        Field::Invalid => return None,
    };
    if v.folded_from() == Field::Invalid {
        return None;
    }
    Some(Tally {
        delta: v.delta()?,
        frames,
    })
}

/// The raw stamp a fold starting at this counter keeps: its `folded_from`, else its own.
fn oldest_stamp<'a>(v: &Frame<'a>) -> Option<&'a str> {
    match v.folded_from() {
        Field::Valid(raw) => Some(raw),
        _ => v.stamp(),
    }
}

/// Where a value of `v` stands in its record.
fn span(v: &Frame, raw: &str) -> Span {
    let start = raw.as_ptr() as usize - v.bytes().as_ptr() as usize;
    Span {
        start,
        end: start + raw.len(),
    }
}

/// Where a counter's three fold fields' values stand in its record.
fn places(v: &Frame) -> [Option<Span>; 3] {
    v.places().map(|p| {
        p.range.as_ref().map(|r| Span {
            start: r.start,
            end: r.end,
        })
    })
}

/// The params the fold reads, and the role each frame plays in it.
pub(crate) struct Folder {
    counter_type: json::Needle,
    /// How a counter that names its type first opens: read on from past it.
    type_head: Option<TypeHead>,
    /// What [`Folder::passes_unread`] looks for; `None` where it cannot answer (see there).
    unread: Option<Unread>,
    subagents: Subagents,
    malformed: Malformed,
}

impl Folder {
    pub(crate) fn new(config: &Config) -> Folder {
        Folder {
            counter_type: json::Needle::new(config.counter_type.as_bytes()),
            type_head: TypeHead::new(&config.counter_type),
            unread: Unread::new(config),
            subagents: config.subagents,
            malformed: config.malformed,
        }
    }

    /// Where the fold's reading of `b` starts: past the counter type it opens with, if it does.
    #[inline(always)]
    pub(crate) fn resume(&self, b: &[u8]) -> Resume {
        self.type_head
            .as_ref()
            .map_or(Resume::START, |h| h.after(b))
    }

    /// Whether a keyed record plays [`Role::Other`] whether or not it is a frame, so that the
    /// fold takes it unread: under `malformed=pass` a malformed record is served in place and
    /// ends its session's run (contract §4) as a main frame that is no counter does (§2).
    ///
    /// If the record is a frame, it is a main non-counter when its bytes hold neither
    /// `"extras"` nor the counter type between quotes as they stand, nor an escape `\u` or
    /// `\/`: those are the only escapes that can stand for a letter, a digit, `/` or any other
    /// byte a counter type may hold here (see [`Unread::new`]), so no key reads as `extras`
    /// and no string as the counter type.
    #[inline]
    pub(crate) fn passes_unread(&self, b: &[u8]) -> bool {
        let Some(u) = &self.unread else {
            return false;
        };
        // From the end: where a sub-agent frame's `extras` stands.
        let mut end = b.len();
        while let Some(at) = json::last_sought(Isa::best(), b, end, u.sought) {
            if b[at] == b'\\'
                || json::starts_with(&b[at..], b"\"extras\"")
                || at >= u.at && json::starts_with(&b[at - u.at..], &u.quoted)
            {
                return false;
            }
            end = at;
        }
        true
    }

    /// A frame's role; `replay`: in `look_back`, where `malformed=fail` refuses nothing.
    pub(crate) fn role(&self, view: Option<&Frame>, replay: bool) -> Role {
        match view {
            None => match self.malformed {
                Malformed::Pass => Role::Other,
                Malformed::Fail if !replay => Role::Other,
                _ => Role::Removed,
            },
            Some(v) if v.is_subagent() => match self.subagents {
                Subagents::Drop => Role::Removed,
                Subagents::Keep => Role::SubagentKept,
            },
            Some(v) if v.is_counter(&self.counter_type) => Role::Counter(tally(v)),
            Some(_) => Role::Other,
        }
    }
}

/// What [`Folder::passes_unread`] looks for: the escapes `\u` and `\/`, `"extras"` by its
/// first two bytes, and the counter type between quotes by two of its bytes (`at` into it),
/// a pair that is no two letters where it has one (`g/` of `"thinking/tokens"`): pairs of
/// letters are common in text, and each one found is a compare.
struct Unread {
    sought: json::Sought,
    quoted: Box<[u8]>,
    at: usize,
}

impl Unread {
    /// `None` under any `malformed` but `pass`, and for a counter type that holds a byte JSON
    /// must escape (`"`, `\\`, a control character): its strings' bytes are then never the
    /// counter type's own.
    fn new(config: &Config) -> Option<Unread> {
        let ct = config.counter_type.as_bytes();
        let plain = !ct.is_empty() && ct.iter().all(|&c| c >= 0x20 && c != b'"' && c != b'\\');
        if config.malformed != Malformed::Pass || !plain {
            return None;
        }
        let quoted: Box<[u8]> = [b"\"", ct, b"\""].concat().into();
        let letters = |k: usize| quoted[k..k + 2].iter().all(u8::is_ascii_alphanumeric);
        let at = (1..quoted.len() - 2)
            .find(|&k| !letters(k))
            .unwrap_or(quoted.len() - 2);
        Some(Unread {
            sought: json::Sought([*b"\\u", *b"\\/", *b"\"e", [quoted[at], quoted[at + 1]]]),
            quoted,
            at,
        })
    }
}

/// What becomes of one frame: a fold names its part in the page's `folds` (a part inline would
/// make every frame's act as large as a part).
#[derive(Clone, Copy)]
enum Act {
    Pass,
    Skip,
    Fold(u32),
}

/// What becomes of each frame of an invocation, decided as the fold reaches it.
/// One invocation's fold; `Id` names a session's state where the caller keeps it.
pub(crate) struct Page<Id> {
    acts: Vec<Act>,
    /// The parts folded so far, which `Act::Fold` names.
    folds: Vec<Part>,
    /// Sessions whose part was open when last seen: it closes at the page's end.
    open: Vec<Id>,
}

impl<Id> Default for Page<Id> {
    fn default() -> Self {
        Page {
            acts: Vec::new(),
            folds: Vec::new(),
            open: Vec::new(),
        }
    }
}

impl<Id: Copy> Page<Id> {
    /// The next frame leaves as it came.
    pub(crate) fn pass(&mut self) {
        self.acts.push(Act::Pass);
    }

    /// The next frame is removed.
    pub(crate) fn skip(&mut self) {
        self.acts.push(Act::Skip);
    }

    /// The next frame `v`, a main frame of the session whose state is `st` (entry `id`).
    pub(crate) fn step(&mut self, role: Role, v: Option<&Frame>, st: &mut RunState, id: Id) {
        let i = self.acts.len();
        self.acts.push(Act::Pass);
        let closed = match role {
            Role::Counter(t) => {
                let (fed, closed) = st.counter(i, t);
                // The part marks where its newest counter's fold fields stand, and its oldest
                // counter's stamp, as each joins it (a counter is a frame).
                if fed == Fed::InRun {
                    self.acts[i] = Act::Skip;
                    if let Some(p) = st.part.as_deref_mut() {
                        if let Some(v) = v {
                            p.marks.places = places(v);
                            if p.members == 1 {
                                p.marks.oldest = oldest_stamp(v).map(|raw| span(v, raw));
                            }
                        }
                        if p.members == 1 {
                            self.open.push(id);
                        }
                    }
                }
                closed
            }
            _ => st.other(),
        };
        if let Some(p) = closed {
            self.close(&p);
        }
    }

    /// A session's state left the cache mid-page: its open part closes now.
    pub(crate) fn evicted(&mut self, mut st: RunState) {
        if let Some(p) = st.end_page() {
            self.close(&p);
        }
    }

    /// A part of one is served as itself; a longer one becomes its folded frame.
    fn close(&mut self, p: &Part) {
        self.acts[p.newest] = if p.members >= 2 {
            self.folds.push(*p);
            Act::Fold(self.folds.len() as u32 - 1)
        } else {
            Act::Pass
        };
    }

    /// The page ends: open parts close (an id evicted and reused meanwhile holds no open part
    /// of this page's, and closing it again is a no-op), and each out goes to `f` in order as
    /// it is told (no list of them made).
    pub(crate) fn finish(
        mut self,
        mut state: impl FnMut(Id) -> Option<Box<Part>>,
        mut f: impl FnMut(Out),
    ) {
        for id in std::mem::take(&mut self.open) {
            if let Some(p) = state(id) {
                self.close(&p);
            }
        }
        for (i, act) in self.acts.into_iter().enumerate() {
            match act {
                Act::Pass => f(Out::Pass(i)),
                Act::Skip => {}
                Act::Fold(k) => {
                    let p = &self.folds[k as usize];
                    f(Out::Fold {
                        newest: i,
                        oldest: p.oldest,
                        delta: p.delta,
                        frames: p.frames,
                        marks: p.marks,
                    })
                }
            }
        }
    }
}

/// What a page gives: frame `i` as it came, or a fold standing where its newest counter stood.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Out {
    Pass(usize),
    Fold {
        newest: usize,
        oldest: usize,
        delta: u64,
        frames: u64,
        /// Where the fold's fields stand in the newest counter, its stamp in the oldest.
        marks: Marks,
    },
}

/// A folded frame's bytes: its newest counter's, with the part's sums spliced in (the marks
/// are the part's, taken from these very records as the page read them).
pub(crate) fn folded(
    newest: &[u8],
    oldest: &[u8],
    marks: &Marks,
    delta: u64,
    frames: u64,
) -> Vec<u8> {
    let from = marks
        .oldest
        .and_then(|r| oldest.get(r.start..r.end))
        .unwrap_or(b"null");
    splice(newest, marks.places, delta, frames, from)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records of every kind around the bytes the check looks for, each padded so that those
    /// bytes fall at every place of a block: taken unread only where the strict reading finds
    /// no frame or a main non-counter, and every plain main non-counter taken so.
    #[test]
    fn a_record_is_taken_unread_only_where_it_goes_as_a_main_non_counter() {
        let folder = Folder::new(&Config::default());
        let counter = json::Needle::new(b"thinking/tokens");
        let bodies = [
            (
                r#"{"type":"user/message","seq":1,"message":{"content":"PAD"}}"#,
                true,
            ),
            (
                r#"{"seq":1,"message":{"content":"PADextras","note":"extras"},"type":"tool/result"}"#,
                false,
            ),
            (
                r#"{"type":"user/message","x":"PAD","extras":{"parent_tool_use_id":"t"}}"#,
                false,
            ),
            (
                r#"{"type":"user/message","x":"PAD","extr\u0061s":{"parent_tool_use_id":"t"}}"#,
                false,
            ),
            (
                r#"{"type":"user/message","x":"PAD","type":"thinking/tokens"}"#,
                false,
            ),
            (
                r#"{"x":"PAD","type":"thinking\/tokens","timestamp":"t"}"#,
                false,
            ),
            (
                r#"{"x":"PAD","type":"thinking/tokens","timestamp":"t"}"#,
                false,
            ),
            (
                r#"{"type":"thinking/tokens","timestamp":"t","estimated_tokens_delta":1,"x":"PAD"}"#,
                false,
            ),
            (
                r#"{"type":"assistant/message","text":"a\nb\"c PAD","usage":{"input_tokens":3}}"#,
                true,
            ),
            (
                r#"{"type":"user/message","text":"the thinking tokens PAD example"}"#,
                true,
            ),
            (r#"{"type":"user/message" "x":"PAD"}"#, true),
            (r#"{"type":"user/message","x":"PAD"}trailing"#, true),
        ];
        for (body, plain) in bodies {
            for pad in 0..40 {
                let text = body.replace("PAD", &"p".repeat(pad));
                let b = text.as_bytes();
                let unread = folder.passes_unread(b);
                if unread && let Some(v) = Frame::parse(b) {
                    assert!(!v.is_subagent() && !v.is_counter(&counter), "{text}");
                }
                assert_eq!(unread, plain, "{text}");
            }
        }
        // Bytes that are no UTF-8: malformed, and taken unread as any malformed record is.
        assert!(folder.passes_unread(b"{\"type\":\"user/message\",\"x\":\"\xff\"}"));
    }

    /// Under any `malformed` but `pass`, or a counter type JSON must escape, nothing is.
    #[test]
    fn nothing_is_taken_unread_where_a_malformed_record_goes_otherwise() {
        let b = br#"{"type":"user/message","x":"y"}"#;
        for (malformed, counter_type) in [
            (Malformed::Drop, "thinking/tokens"),
            (Malformed::Fail, "thinking/tokens"),
            (Malformed::Pass, "a\"b"),
            (Malformed::Pass, ""),
        ] {
            let config = Config {
                malformed,
                counter_type: counter_type.into(),
                ..Config::default()
            };
            assert!(
                !Folder::new(&config).passes_unread(b),
                "{malformed:?} {counter_type}"
            );
        }
        assert!(Folder::new(&Config::default()).passes_unread(b));
    }
}
