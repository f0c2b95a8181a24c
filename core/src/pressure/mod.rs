//! The pressure view (SPEC §3): per session, apply each main frame once (the cursor makes
//! re-deliveries no-ops) and emit a `context/pressure` record whenever a figure changes.

mod checkpoint;
mod records;
mod session;
mod surface;

pub(crate) use checkpoint::Fields;
pub(crate) use session::Session;
pub use session::usage_tokens;
pub use surface::{Corrupt, Node, Plan, Replaces, Surface};

use session::{Change, Refusal};

use crate::config::{Config, Projection};
use crate::entry::Entry;
use crate::frame::Frame;
use crate::record::{Emit, MAX_KEY_LEN};
use crate::state::lru::{EntryId, Lru};

/// The params the projection reads.
pub(crate) struct Rules {
    capacity: Option<u64>,
    projection: Projection,
}

impl Rules {
    pub fn new(config: &Config) -> Rules {
        Rules {
            capacity: config.capacity,
            projection: config.projection,
        }
    }

    /// Applies one frame of session `key` to its state, recording what it says in `out` (none
    /// in `look_back`). `line`: the entry its log line made (an adapter keeps one per line);
    /// without one a session's entry is made only by a frame that applies, so that a refused,
    /// re-delivered or ignored frame leaves the state as it was, recency included (SPEC §6.7).
    pub fn apply(
        &self,
        sessions: &mut Lru<Entry>,
        at: usize,
        key: &[u8],
        line: Option<EntryId>,
        v: &Frame,
        out: Option<&mut Vec<Emit>>,
    ) {
        if v.is_subagent() {
            return;
        }
        if key.len() > MAX_KEY_LEN {
            if let Some(out) = out {
                out.push(records::error(
                    at,
                    key,
                    v.seq(),
                    &Refusal::LongKey(key.len()),
                ));
            }
            return;
        }
        let id = line.or_else(|| sessions.peek(key));
        let existing = id.and_then(|id| sessions.get(id).pressure.as_deref());
        if let (Some(s), Some(seq)) = (existing, v.seq())
            && s.is_redelivery(seq)
        {
            return;
        }
        let change = match Change::read(v) {
            Ok(change) => change,
            Err(refusal) => {
                if let Some(out) = out {
                    out.push(records::error(at, key, v.seq(), &refusal));
                }
                return;
            }
        };
        let Some(seq) = v.seq() else { return };
        let figures = |s: &Session| s.figures(self.capacity, self.projection);
        let (result, before, id) = match existing {
            Some(_) => {
                let id = id.expect("an existing session has an entry");
                let s = sessions
                    .get_mut(id)
                    .pressure
                    .as_deref_mut()
                    .expect("checked above");
                let before = figures(s);
                let result = s.apply(change.as_ref(), seq);
                if result.is_ok() && line.is_none() {
                    sessions.touch(id);
                }
                (result, Some(before), Some(id))
            }
            None => {
                let returning = match id {
                    Some(id) => sessions.get(id).returning,
                    None => sessions.has_tombstone(key),
                };
                let mut s = Session::starting_at(seq, returning);
                let result = s.apply(change.as_ref(), seq);
                let id = match (&result, id) {
                    (Err(_), id) => id,
                    (Ok(()), Some(id)) => {
                        let e = sessions.get_mut(id);
                        e.pressure = Some(Box::new(s));
                        e.returning = false;
                        Some(id)
                    }
                    (Ok(()), None) => {
                        sessions.take_tombstone(key);
                        Some(sessions.insert(key, Entry::with_pressure(s)).0)
                    }
                };
                (result, None, id)
            }
        };
        let Some(out) = out else { return };
        match result {
            Err(refusal) => out.push(records::error(at, key, Some(seq), &refusal)),
            Ok(()) => {
                let now = sessions
                    .get(id.expect("an applied frame has an entry"))
                    .pressure
                    .as_deref()
                    .map(figures);
                if let Some(now) = now
                    && before != Some(now)
                {
                    out.push(records::pressure(at, key, seq, v.stamp(), &now));
                }
            }
        }
    }
}
