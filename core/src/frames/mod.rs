//! The frames view (contract §2): each invocation is a page per session; the only memory between
//! invocations is whether a session's last main frame was a non-counter.

pub(crate) mod fold;
mod page;

pub use page::{compact_counters, compact_counters_with};

use fold::{Fed, Part, RunState, Tally, splice};

use std::ops::Range;

use crate::config::{Config, Malformed, Subagents};
use crate::frame::{Field, Frame};
use crate::json;

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

/// What a fold takes from a frame, marked as the page reads it, so that making a folded frame
/// reads no record again: where its three fold fields' values stand (the newest counter's,
/// spliced), and where the stamp a fold starting at it keeps stands (the oldest's).
#[derive(Debug, Clone, Default)]
pub(crate) struct Marks {
    places: [Option<Range<usize>>; 3],
    oldest: Option<Range<usize>>,
}

impl Marks {
    /// The marks of a frame, as offsets in its record.
    pub fn of(v: &Frame) -> Marks {
        let at = |raw: &str| {
            let start = raw.as_ptr() as usize - v.bytes().as_ptr() as usize;
            start..start + raw.len()
        };
        let [d, f, c] = v.places();
        Marks {
            places: [d.range.clone(), f.range.clone(), c.range.clone()],
            oldest: oldest_stamp(v).map(at),
        }
    }
}

/// The params the fold reads, and the role each frame plays in it.
pub(crate) struct Folder {
    counter_type: json::Needle,
    subagents: Subagents,
    malformed: Malformed,
}

impl Folder {
    pub fn new(config: &Config) -> Folder {
        Folder {
            counter_type: json::Needle::new(config.counter_type.as_bytes()),
            subagents: config.subagents,
            malformed: config.malformed,
        }
    }

    /// A frame's role; `replay`: in `look_back`, where `malformed=fail` refuses nothing.
    pub fn role(&self, view: Option<&Frame>, replay: bool) -> Role {
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
    pub fn pass(&mut self) {
        self.acts.push(Act::Pass);
    }

    /// The next frame is removed.
    pub fn skip(&mut self) {
        self.acts.push(Act::Skip);
    }

    /// The next frame, a main frame of the session whose state is `st` (entry `id`).
    pub fn step(&mut self, role: Role, st: &mut RunState, id: Id) {
        let i = self.acts.len();
        self.acts.push(Act::Pass);
        let closed = match role {
            Role::Counter(t) => {
                let (fed, closed) = st.counter(i, t);
                if fed == Fed::InRun {
                    self.acts[i] = Act::Skip;
                    if st.part.as_ref().is_some_and(|p| p.members == 1) {
                        self.open.push(id);
                    }
                }
                closed
            }
            _ => st.other(),
        };
        if let Some(p) = closed {
            self.close(p);
        }
    }

    /// A session's state left the cache mid-page: its open part closes now.
    pub fn evicted(&mut self, mut st: RunState) {
        if let Some(p) = st.end_page() {
            self.close(p);
        }
    }

    /// A part of one is served as itself; a longer one becomes its folded frame.
    fn close(&mut self, p: Part) {
        self.acts[p.newest] = if p.members >= 2 {
            self.folds.push(p);
            Act::Fold(self.folds.len() as u32 - 1)
        } else {
            Act::Pass
        };
    }

    /// The page ends: open parts close (an id evicted and reused meanwhile holds no open part
    /// of this page's, and closing it again is a no-op), and each out goes to `f` in order as
    /// it is told (no list of them made).
    pub fn finish(mut self, mut state: impl FnMut(Id) -> Option<Part>, mut f: impl FnMut(Out)) {
        for id in std::mem::take(&mut self.open) {
            if let Some(p) = state(id) {
                self.close(p);
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
    },
}

/// A folded frame's bytes: its newest counter's, with the part's sums spliced in (the marks
/// are the two counters', as [`Marks::of`] took them from these very records).
pub(crate) fn folded(
    (newest, at_newest): (&[u8], &Marks),
    (oldest, at_oldest): (&[u8], &Marks),
    delta: u64,
    frames: u64,
) -> Vec<u8> {
    let from = at_oldest
        .oldest
        .clone()
        .and_then(|r| oldest.get(r))
        .unwrap_or(b"null");
    splice(newest, at_newest.places.clone(), delta, frames, from)
}
