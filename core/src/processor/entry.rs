//! Everything one session holds — the frames view's memory, the pressure view's session, the
//! adapter's state — in one cache entry, evicted together; and its checkpoint members.

use serde::de::MapAccess;

use crate::adapt::state::Track;
use crate::config::View;
use crate::frames::fold::RunState;
use crate::pressure::{Fields, Session};
use crate::state::checkpoint::{
    self, CheckpointError, Checkpointed, Member, Members, STATE_VERSION,
};

/// Everything one session holds.
#[derive(Debug, Default)]
pub(crate) struct Entry {
    /// The frames view's memory.
    pub fold: RunState,
    /// The pressure view's session, once a frame of it applied.
    pub pressure: Option<Box<Session>>,
    /// The adapter's state, with an `input` to adapt.
    pub track: Option<Box<Track>>,
    /// Made after the session's state was evicted: it comes back partial.
    pub returning: bool,
}

impl Entry {
    pub(super) fn with_pressure(s: Box<Session>) -> Entry {
        Entry {
            pressure: Some(s),
            ..Entry::default()
        }
    }
}

/// What an entry's members hold as they are read.
#[derive(Default)]
pub(crate) struct EntryFields {
    after_other: Option<bool>,
    pressure: Fields,
    track: Option<Track>,
}

impl Checkpointed for Entry {
    type Builder = EntryFields;
    type Ctx = View;

    fn write(&self, w: &mut Members, view: View) {
        match view {
            View::Frames => w.bool("afterOther", self.fold.after_non_counter),
            View::Pressure => {
                if let Some(s) = &self.pressure {
                    s.write_members(w);
                }
            }
        }
        if let Some(t) = &self.track {
            let mut inner = Members::default();
            t.write(&mut inner, ());
            w.raw("adapter", &inner.object());
        }
    }

    fn read<'de, A: MapAccess<'de>>(b: &mut EntryFields, m: Member<A>) -> Result<bool, A::Error> {
        match m.name {
            "afterOther" => b.after_other = Some(m.read()?),
            "adapter" => b.track = Some(checkpoint::nested::<A, Track>(m.map, STATE_VERSION, ())?),
            _ => return Session::read_member(&mut b.pressure, m),
        }
        Ok(true)
    }

    fn finish(b: EntryFields, version: u64, view: View) -> Result<Entry, CheckpointError> {
        let track = b.track.map(Box::new);
        match view {
            View::Frames => match b.after_other {
                Some(after) => Ok(Entry {
                    fold: RunState {
                        after_non_counter: after,
                        part: None,
                    },
                    track,
                    ..Entry::default()
                }),
                None => Err(CheckpointError::Invalid(
                    "`afterOther` must be true or false".into(),
                )),
            },
            View::Pressure => {
                let pressure = Session::from_fields(b.pressure, version)?.map(Box::new);
                if pressure.is_none() && track.is_none() {
                    return Err(CheckpointError::Invalid(
                        "a pressure session has no state (`partial` and `surface` are missing)"
                            .into(),
                    ));
                }
                Ok(Entry {
                    pressure,
                    track,
                    ..Entry::default()
                })
            }
        }
    }
}
