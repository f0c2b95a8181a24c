//! The frames view in a stream (SPEC §2): each invocation is a page per session; the only
//! memory between invocations is whether a session's last main frame was a non-counter.

use std::borrow::Cow;

use crate::config::{Config, Malformed, Subagents};
use crate::fold::{Fed, Part, RunState, Tally, splice};
use crate::frame::{FrameView, Slot};
use crate::lru::Lru;
use crate::record::{BatchError, Emit, RecordIn};

/// What the fold sees of one frame.
pub(crate) enum Role {
    /// A main frame that is no counter (or a malformed record under `malformed=pass`).
    Other,
    /// A main counter; `None` when it cannot be folded.
    Counter(Option<Tally>),
    /// A sub-agent frame under `subagents=keep`: in place, invisible to main runs.
    Aside,
    /// Removed before the fold: sub-agent frames under `drop`, malformed under `drop`/`fail`.
    Removed,
}

/// The fold's reading of a counter: `None` for one that ends the foldable part.
pub fn tally(v: &FrameView) -> Option<Tally> {
    if v.stamp.is_none() || v.delta_span.repeated || v.from_span.repeated || v.frames_span.repeated
    {
        return None;
    }
    let frames = match v.folded_frames {
        Slot::Absent => 1,
        Slot::Valid(n) => n,
        Slot::Invalid => return None,
    };
    if v.folded_from == Slot::Invalid {
        return None;
    }
    Some(Tally {
        delta: v.delta?,
        frames,
    })
}

/// The raw stamp a fold starting at this counter keeps: its `folded_from`, else its own.
fn oldest_stamp<'a>(v: &FrameView<'a>) -> &'a str {
    match v.folded_from {
        Slot::Valid(raw) => raw,
        _ => v.stamp.unwrap_or("null"),
    }
}

#[derive(Clone, Copy)]
enum Act {
    Pass,
    Skip,
    Fold(Part),
}

pub struct FramesView {
    rules: Rules,
    pub(crate) sessions: Lru<RunState>,
}

/// The params the fold reads.
struct Rules {
    counter_type: String,
    subagents: Subagents,
    malformed: Malformed,
}

impl Rules {
    fn role(&self, view: Option<&FrameView>, replay: bool) -> Role {
        match view {
            None => match self.malformed {
                Malformed::Pass => Role::Other,
                Malformed::Fail if !replay => Role::Other,
                _ => Role::Removed,
            },
            Some(v) if v.subagent => match self.subagents {
                Subagents::Drop => Role::Removed,
                Subagents::Keep => Role::Aside,
            },
            Some(v) if v.is_counter(&self.counter_type) => Role::Counter(tally(v)),
            Some(_) => Role::Other,
        }
    }

    /// What the fold needs of a record: its role and its session; and whether it parsed.
    fn seen<'a>(&self, rec: &RecordIn<'a>, replay: bool) -> (Seen<'a>, bool) {
        let view = FrameView::parse(rec.value);
        let role = self.role(view.as_ref(), replay);
        let key = match role {
            Role::Removed | Role::Aside => Cow::Borrowed(&b""[..]),
            _ => rec.session(view.as_ref()),
        };
        (Seen { role, key }, view.is_some())
    }
}

impl FramesView {
    pub fn new(config: &Config) -> Self {
        FramesView {
            rules: Rules {
                counter_type: config.counter_type.clone(),
                subagents: config.subagents,
                malformed: config.malformed,
            },
            sessions: Lru::new(config.max_sessions),
        }
    }

    /// One invocation: its records are, per session, one page.
    ///
    /// Each record is read once, as the fold reaches it, and only its role and session are
    /// kept; the two counters of a folded part are read again to splice. Under
    /// `malformed=fail` every record is read before the fold starts, so that a refused
    /// invocation changes no state.
    pub fn process(&mut self, records: &[RecordIn]) -> Result<Vec<Emit>, BatchError> {
        let acts = if self.rules.malformed == Malformed::Fail {
            let mut seen = Vec::with_capacity(records.len());
            for (index, rec) in records.iter().enumerate() {
                let (s, parsed) = self.rules.seen(rec, false);
                if !parsed {
                    return Err(BatchError {
                        index,
                        message: "agent-fold: the record is not a JSON object (malformed=fail)"
                            .into(),
                    });
                }
                seen.push(s);
            }
            fold(&mut self.sessions, seen.len(), seen.into_iter())
        } else {
            let rules = &self.rules;
            let seen = records.iter().map(|r| rules.seen(r, false).0);
            fold(&mut self.sessions, records.len(), seen)
        };
        let mut out = Vec::with_capacity(records.len());
        for (i, act) in acts.into_iter().enumerate() {
            match act {
                Act::Pass => out.push(Emit::Pass(i)),
                Act::Skip => {}
                Act::Fold(p) => {
                    let newest =
                        FrameView::parse(records[i].value).expect("a folded counter parsed");
                    let oldest =
                        FrameView::parse(records[p.oldest].value).expect("a folded counter parsed");
                    let spans = [
                        newest.delta_span.range.clone(),
                        newest.from_span.range.clone(),
                        newest.frames_span.range.clone(),
                    ];
                    out.push(Emit::Replace(
                        i,
                        splice(records[i].value, spans, &p, oldest_stamp(&oldest)),
                    ));
                }
            }
        }
        Ok(out)
    }

    /// Replays history into the per-session memory, emitting nothing.
    pub fn look_back(&mut self, records: &[RecordIn]) {
        let rules = &self.rules;
        let seen = records.iter().map(|r| rules.seen(r, true).0);
        fold(&mut self.sessions, records.len(), seen);
    }
}

/// The fold over one invocation's `n` records, in order.
fn fold<'a>(
    sessions: &mut Lru<RunState>,
    n: usize,
    seen: impl Iterator<Item = Seen<'a>>,
) -> Vec<Act> {
    let mut acts = vec![Act::Pass; n];
    let mut open = Vec::new();
    for (i, Seen { role, key }) in seen.enumerate() {
        if let Role::Removed = role {
            acts[i] = Act::Skip;
            continue;
        }
        if let Role::Aside = role {
            continue;
        }
        let slot = match sessions.touch(&key) {
            Some(slot) => slot,
            None => {
                let (slot, evicted) = sessions.insert(&key, RunState::default());
                if let Some(p) = evicted.and_then(|(_, mut st)| st.end_page()) {
                    close(&mut acts, p);
                }
                slot
            }
        };
        let st = sessions.get_mut(slot);
        let closed = match role {
            Role::Counter(t) => {
                let (fed, closed) = st.counter(i, t);
                if fed == Fed::Joined {
                    acts[i] = Act::Skip;
                    if st.part.as_ref().is_some_and(|p| p.members == 1) {
                        open.push(slot);
                    }
                }
                closed
            }
            _ => st.other(),
        };
        if let Some(p) = closed {
            close(&mut acts, p);
        }
    }
    for slot in open {
        if let Some(p) = sessions.get_mut(slot).end_page() {
            close(&mut acts, p);
        }
    }
    acts
}

/// One record as the fold sees it.
struct Seen<'a> {
    role: Role,
    key: Cow<'a, [u8]>,
}

/// A part of one is served as itself; a longer one becomes its folded frame.
fn close(acts: &mut [Act], p: Part) {
    acts[p.newest] = if p.members >= 2 {
        Act::Fold(p)
    } else {
        Act::Pass
    };
}
