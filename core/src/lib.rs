//! agent-fold's core: the pure logic behind the SmartModule, with no Fluvio in it.
//!
//! Data flows one way: record bytes → [`FrameView`] → the fold ([`fold`], [`frames_view`]) or
//! the projection ([`surface`], [`pressure`], [`pressure_view`]) → record bytes. The
//! SmartModule, the host runner and the fuzz targets are thin adapters around [`Processor`].
//! With param `input` naming an agent's log format, [`adapt`] turns its lines into frames first.

pub mod adapt;
pub mod checkpoint;
pub mod config;
pub mod estimate;
pub mod fold;
pub mod frame;
pub mod frames_view;
pub mod lru;
pub mod page;
pub mod pressure;
pub mod pressure_view;
pub mod record;
pub mod surface;
#[cfg(feature = "testgen")]
pub mod testgen;

pub use adapt::{Adapter, Input};
pub use checkpoint::CheckpointError;
pub use config::{Config, Malformed, ParamError, Subagents, View};
pub use estimate::estimate;
pub use frame::FrameView;
pub use frames_view::FramesView;
pub use page::{compact_counters, compact_counters_as, compact_counters_with};
pub use pressure_view::{PressureView, STATE_VERSION};
pub use record::{BatchError, Emit, RecordIn};

/// One module instance: the view its params chose, that view's per-session state, and the
/// adapter that turns the records into frames first when param `input` names a log format.
pub struct Processor {
    view: Views,
    adapter: Option<Adapter>,
    malformed: Malformed,
}

enum Views {
    Frames(FramesView),
    Pressure(PressureView),
}

impl Processor {
    pub fn new(config: &Config) -> Self {
        let view = match config.view {
            View::Frames => Views::Frames(FramesView::new(config)),
            View::Pressure => Views::Pressure(PressureView::new(config)),
        };
        let adapter = (config.input != Input::AgentFold)
            .then(|| Adapter::new(config.input, config.max_sessions));
        Processor {
            view,
            adapter,
            malformed: config.malformed,
        }
    }

    /// A processor from `key=value` params, as `init` receives them.
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, ParamError> {
        Ok(Processor::new(&Config::from_params(params)?))
    }

    /// One invocation. On error nothing is emitted and no state changes.
    ///
    /// With `input=agent-fold` the records are frames, and untouched ones come back as
    /// [`Emit::Pass`] (zero-copy). With another `input` the invocation's records are adapted
    /// first and the view runs over the frames they became: every record out is then an
    /// [`Emit::New`] whose `at` is the input record it came from and whose key is that
    /// record's key, else its frame's `session_id` (empty when it has none); an error names
    /// the input record.
    pub fn process(&mut self, records: &[RecordIn]) -> Result<Vec<Emit>, BatchError> {
        if self.adapter.is_none() {
            return self.view.process(records);
        }
        // The view refuses an invocation (malformed=fail) only for a record that is not a
        // JSON object, which the adapter hands on as it came: check first, so that a refused
        // invocation leaves the adapter's state as it was.
        if self.malformed == Malformed::Fail
            && let Some(index) = records
                .iter()
                .position(|r| FrameView::parse(r.value).is_none())
        {
            return Err(BatchError {
                index,
                message: "agent-fold: the record is not a JSON object (malformed=fail)".into(),
            });
        }
        let (mut frames, origin) = self.adapt(records);
        let emits = {
            let ins: Vec<RecordIn> = frames
                .iter()
                .zip(&origin)
                .map(|(v, &i)| RecordIn::new(records[i].key, v))
                .collect();
            self.view.process(&ins).map_err(|mut e| {
                e.index = origin.get(e.index).copied().unwrap_or(e.index);
                e
            })?
        };
        let key_of = |i: usize, value: &[u8]| -> Vec<u8> {
            match records[origin[i]].key {
                Some(k) => k.to_vec(),
                None => FrameView::parse(value)
                    .and_then(|v| v.session_id.map(|s| s.into_owned().into_bytes()))
                    .unwrap_or_default(),
            }
        };
        Ok(emits
            .into_iter()
            .map(|e| match e {
                Emit::Pass(i) => {
                    let value = std::mem::take(&mut frames[i]);
                    Emit::New {
                        at: origin[i],
                        key: key_of(i, &value),
                        value,
                    }
                }
                Emit::Replace(i, value) => Emit::New {
                    at: origin[i],
                    key: key_of(i, &value),
                    value,
                },
                Emit::New { at, key, value } => Emit::New {
                    at: origin[at],
                    key,
                    value,
                },
            })
            .collect())
    }

    /// The frames an invocation's records become, each with the index of its record.
    fn adapt(&mut self, records: &[RecordIn]) -> (Vec<Vec<u8>>, Vec<usize>) {
        let mut frames = Vec::with_capacity(records.len());
        let mut origin = Vec::with_capacity(records.len());
        if let Some(a) = &mut self.adapter {
            for (i, r) in records.iter().enumerate() {
                let n = a.push(r.key, r.value, &mut frames);
                origin.extend(std::iter::repeat_n(i, n));
            }
        }
        (frames, origin)
    }

    /// Replays history into the state, emitting nothing.
    pub fn look_back(&mut self, records: &[RecordIn]) {
        if self.adapter.is_none() {
            return self.view.look_back(records);
        }
        let (frames, origin) = self.adapt(records);
        let ins: Vec<RecordIn> = frames
            .iter()
            .zip(&origin)
            .map(|(v, &i)| RecordIn::new(records[i].key, v))
            .collect();
        self.view.look_back(&ins);
    }

    /// How many sessions hold state.
    pub fn sessions(&self) -> usize {
        match &self.view {
            Views::Frames(v) => v.sessions.len(),
            Views::Pressure(v) => v.sessions.len(),
        }
    }

    /// The whole state as a JSON checkpoint (`stateVersion` 3); with an `input` to adapt, the
    /// adapter's state under `adapter`.
    pub fn checkpoint(&self) -> String {
        let mut doc = match &self.view {
            Views::Frames(v) => checkpoint::frames_to_json(&v.sessions),
            Views::Pressure(v) => checkpoint::pressure_to_json(&v.sessions),
        };
        if let (Some(a), Some(obj)) = (&self.adapter, doc.as_object_mut()) {
            obj.insert("adapter".into(), a.checkpoint());
        }
        doc.to_string()
    }

    /// Replaces the state with a checkpoint's. On error the state is unchanged.
    pub fn restore(&mut self, text: &str) -> Result<(), CheckpointError> {
        let (version, view, list) = checkpoint::read_document(text)?;
        let adapter = match &self.adapter {
            None => {
                if adapter_doc(text).is_some() {
                    return Err(CheckpointError(
                        "the checkpoint holds an adapter's state; this instance reads frames (input=agent-fold)".into(),
                    ));
                }
                None
            }
            Some(a) => {
                let Some(doc) = adapter_doc(text) else {
                    return Err(CheckpointError(format!(
                        "the checkpoint has no adapter state; this instance reads input={}",
                        a.input().name()
                    )));
                };
                let mut fresh = Adapter::new(a.input(), self.sessions_cap());
                fresh.restore(&doc)?;
                Some(fresh)
            }
        };
        self.restore_view(version, &view, &list)?;
        if adapter.is_some() {
            self.adapter = adapter;
        }
        Ok(())
    }

    fn sessions_cap(&self) -> usize {
        match &self.view {
            Views::Frames(v) => v.sessions.cap(),
            Views::Pressure(v) => v.sessions.cap(),
        }
    }

    fn restore_view(
        &mut self,
        version: u64,
        view: &str,
        list: &[serde_json::Value],
    ) -> Result<(), CheckpointError> {
        match &mut self.view {
            Views::Frames(v) => {
                if view != "frames" {
                    return Err(CheckpointError(format!(
                        "this is a {view} checkpoint; the instance serves frames"
                    )));
                }
                let mut sessions = lru::Lru::new(v.sessions.cap());
                let mut seen = std::collections::HashSet::new();
                for s in list {
                    let (key, st) = checkpoint::frames_session(s)?;
                    insert_fresh(&mut sessions, &mut seen, &key, st)?;
                }
                v.sessions = sessions;
            }
            Views::Pressure(v) => {
                if view != "pressure" {
                    return Err(CheckpointError(format!(
                        "this is a {view} checkpoint; the instance serves pressure"
                    )));
                }
                let mut sessions = lru::Lru::new(v.sessions.cap());
                let mut seen = std::collections::HashSet::new();
                for s in list {
                    let (key, st) = pressure::Session::from_checkpoint(s, Some(version))?;
                    insert_fresh(&mut sessions, &mut seen, &key, st)?;
                }
                v.sessions = sessions;
            }
        }
        Ok(())
    }
}

impl Views {
    fn process(&mut self, records: &[RecordIn]) -> Result<Vec<Emit>, BatchError> {
        match self {
            Views::Frames(v) => v.process(records),
            Views::Pressure(v) => v.process(records),
        }
    }

    fn look_back(&mut self, records: &[RecordIn]) {
        match self {
            Views::Frames(v) => v.look_back(records),
            Views::Pressure(v) => v.look_back(records),
        }
    }
}

/// The `adapter` member of a checkpoint document, when it has one.
fn adapter_doc(text: &str) -> Option<serde_json::Value> {
    let mut doc: serde_json::Value = serde_json::from_str(text).ok()?;
    doc.as_object_mut()?.remove("adapter")
}

/// Inserts a restored session. `seen` holds every key restored so far: a duplicate is refused
/// even when the cap already evicted its first copy (`peek` alone missed `[a, b, a]` under
/// `max_sessions=1`, restoring the second `a` silently).
fn insert_fresh<V>(
    sessions: &mut lru::Lru<V>,
    seen: &mut std::collections::HashSet<Vec<u8>>,
    key: &[u8],
    v: V,
) -> Result<(), CheckpointError> {
    if !seen.insert(key.to_vec()) {
        return Err(CheckpointError(format!(
            "session {:?} appears twice",
            String::from_utf8_lossy(key)
        )));
    }
    // Oldest first: when the checkpoint holds more sessions than the cap, the least
    // recently used are evicted, as they would have been.
    sessions.insert(key, v);
    Ok(())
}
