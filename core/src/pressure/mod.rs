//! The pressure view (contract §3): per session, apply each main frame once (the cursor makes
//! re-deliveries no-ops) and say what a session shows whenever a figure changes. Where a
//! session's state is kept is the caller's business: a step takes the session, if there is one.

mod checkpoint;
mod records;
mod session;
mod surface;

pub(crate) use checkpoint::Fields;
pub(crate) use records::{error_record, pressure_record};
pub(crate) use session::{Figures, Params, Refusal, Session};
pub use surface::{Corrupt, Node, Plan, Replaces, Surface};

use session::Change;

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
    /// Applied to the session given; `now`: what it shows, when that changed.
    Applied { now: Option<Figures> },
    /// The session's first applied frame: the session it made, and what it shows.
    Created { session: Box<Session>, now: Figures },
}

impl Projector {
    pub fn new(config: &Config) -> Projector {
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
    pub fn reads(v: &Frame) -> bool {
        !v.is_subagent()
    }

    /// What a session shows.
    pub fn figures(&self, s: &Session) -> Figures {
        s.figures(&self.params)
    }

    /// Applies a main frame to its session (`None`: the session has no state yet;
    /// `returning`: it had, and lost it to eviction).
    pub fn step(&self, session: Option<&mut Session>, returning: bool, v: &Frame) -> Outcome {
        if let (Some(s), Some(seq)) = (session.as_deref(), v.seq())
            && s.is_redelivery(seq)
        {
            return Outcome::Ignored;
        }
        let change = match Change::read(v) {
            Ok(change) => change,
            Err(why) => return Outcome::Refused { seq: v.seq(), why },
        };
        let Some(seq) = v.seq() else {
            return Outcome::Ignored;
        };
        match session {
            Some(s) => {
                // A change that only moves the cursor (most frames: counters) shows nothing new,
                // unless the session is over `max_nodes` and the apply trims it.
                let quiet = change.as_ref().is_none_or(Change::inert)
                    && s.surface.len() <= self.params.max_nodes;
                let before = (!quiet).then(|| self.figures(s));
                match s.apply(change.as_ref(), seq, self.params.max_nodes) {
                    Err(why) => Outcome::Refused {
                        seq: Some(seq),
                        why,
                    },
                    Ok(()) => Outcome::Applied {
                        now: before.and_then(|before| {
                            let now = self.figures(s);
                            (now != before).then_some(now)
                        }),
                    },
                }
            }
            None => {
                let mut s = Session::starting_at(seq, returning);
                match s.apply(change.as_ref(), seq, self.params.max_nodes) {
                    Err(why) => Outcome::Refused {
                        seq: Some(seq),
                        why,
                    },
                    Ok(()) => Outcome::Created {
                        now: self.figures(&s),
                        session: Box::new(s),
                    },
                }
            }
        }
    }
}
