//! The pressure view (contract §3): per session, apply each main frame once (the cursor makes
//! re-deliveries no-ops) and say what a session shows whenever a figure changes. Where a
//! session's state is kept is the caller's business: a step takes the session, if there is one.

mod change;
mod records;
mod saved;
mod session;
mod surface;

pub(crate) use records::{error_record, pressure_record};
pub(crate) use saved::Fields;
pub(crate) use session::{Figures, Names, Params, Refusal, Session};
pub use surface::{Corrupt, Node, Plan, Replaces, Surface};

use change::Change;

use crate::config::{Config, Input};
use crate::frame::Frame;

/// Claude Code compacts on its own at its window less this much (its documented default).
pub(crate) const CLAUDE_CODE_RESERVE: u64 = 33_000;

/// The params the projection reads.
pub(crate) struct Projector {
    params: Params,
}

/// What one frame did to its session.
pub(crate) enum Outcome {
    /// Nothing: a re-delivery, or a frame that changes no figure and has no place in the log.
    Ignored,
    /// Refused whole (validate, then commit): the session is as it was.
    Refused { seq: Option<u64>, why: Refusal },
    /// Applied to the session given.
    Applied,
    /// The session's first applied frame: the session it made.
    Created { session: Box<Session> },
}

impl Projector {
    pub(crate) fn new(config: &Config) -> Projector {
        let claude = matches!(config.input, Input::ClaudeCode | Input::ClaudeStream);
        Projector {
            params: Params {
                capacity: config.capacity,
                projection: config.projection,
                compact_at: config.compact_at,
                restore_prior: config.compact_restore,
                restore_named: config.restore_named,
                learn_restore: config.learn_restore,
                window_reserve: claude.then_some(CLAUDE_CODE_RESERVE),
                max_nodes: config.max_nodes,
            },
        }
    }

    /// Whether the view reads a frame at all: a sub-agent's frame is the sub-agent's own context.
    pub(crate) fn reads(v: &Frame) -> bool {
        !v.is_subagent()
    }

    /// What a session shows.
    pub(crate) fn figures(&self, s: &Session) -> Figures {
        s.figures(&self.params)
    }

    /// Applies a main frame to its session (`None`: the session has no state yet;
    /// `returning`: it had, and lost it to eviction). When the frame makes the session or
    /// changes what it shows (contract §3.6), `shows` is handed the frame's `seq`, what the
    /// session shows now and the names it carries, by reference: a frame that changes nothing
    /// (most: counters) builds no figures to hand back.
    pub(crate) fn step(
        &self,
        session: Option<&mut Session>,
        returning: bool,
        v: &Frame,
        shows: impl FnOnce(u64, &Figures, &Names),
    ) -> Outcome {
        if let (Some(s), Some(seq)) = (session.as_deref(), v.seq())
            && s.is_redelivery(seq)
        {
            return Outcome::Ignored;
        }
        // Two calls of one body: the frame that only moves the cursor (most: counters) runs
        // one with no change in it at all, and never builds one.
        match Change::read(v) {
            Err(why) => Outcome::Refused { seq: v.seq(), why },
            Ok(Some(c)) => self.apply(session, returning, c.seq, Some(&c), shows),
            Ok(None) => match v.seq() {
                Some(seq) => self.apply(session, returning, seq, None, shows),
                None => Outcome::Ignored,
            },
        }
    }

    /// [`Projector::step`] once the change is read: `seq` is the frame's.
    #[inline(always)]
    fn apply(
        &self,
        session: Option<&mut Session>,
        returning: bool,
        seq: u64,
        change: Option<&Change>,
        shows: impl FnOnce(u64, &Figures, &Names),
    ) -> Outcome {
        match session {
            Some(s) => {
                // A change that only moves the cursor (most frames: counters) shows nothing new,
                // unless the session is over `max_nodes` and the apply trims it.
                let quiet =
                    change.is_none_or(Change::inert) && s.surface.len() <= self.params.max_nodes;
                let before = (!quiet).then(|| self.figures(s));
                let renames = change.is_some_and(|c| c.renames(&s.names));
                if let Err(why) = s.apply(change, seq, self.params.max_nodes) {
                    return Outcome::Refused {
                        seq: Some(seq),
                        why,
                    };
                }
                if let Some(before) = before {
                    let now = self.figures(s);
                    if now != before || renames {
                        shows(seq, &now, &s.names);
                    }
                }
                Outcome::Applied
            }
            None => {
                let mut s = Box::new(Session::starting_at(seq, returning));
                if let Err(why) = s.apply(change, seq, self.params.max_nodes) {
                    return Outcome::Refused {
                        seq: Some(seq),
                        why,
                    };
                }
                shows(seq, &self.figures(&s), &s.names);
                Outcome::Created { session: s }
            }
        }
    }
}
