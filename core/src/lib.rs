//! agent-fold's core: the pure logic behind the SmartModule, with no Fluvio in it.
//!
//! Data flows one way: record bytes → [`FrameView`] → the fold ([`fold`], [`frames_view`]) or
//! the projection ([`surface`], [`pressure`], [`pressure_view`]) → record bytes. The
//! SmartModule, the host runner and the fuzz targets are thin adapters around [`Processor`].

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

pub use checkpoint::CheckpointError;
pub use config::{Config, Malformed, ParamError, Subagents, View};
pub use estimate::estimate;
pub use frame::FrameView;
pub use frames_view::FramesView;
pub use page::{compact_counters, compact_counters_as, compact_counters_with};
pub use pressure_view::{PressureView, STATE_VERSION};
pub use record::{BatchError, Emit, RecordIn};

/// One module instance: the view its params chose, and that view's per-session state.
pub enum Processor {
    Frames(FramesView),
    Pressure(PressureView),
}

impl Processor {
    pub fn new(config: &Config) -> Self {
        match config.view {
            View::Frames => Processor::Frames(FramesView::new(config)),
            View::Pressure => Processor::Pressure(PressureView::new(config)),
        }
    }

    /// A processor from `key=value` params, as `init` receives them.
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, ParamError> {
        Ok(Processor::new(&Config::from_params(params)?))
    }

    /// One invocation. On error nothing is emitted and no state changes.
    pub fn process(&mut self, records: &[RecordIn]) -> Result<Vec<Emit>, BatchError> {
        match self {
            Processor::Frames(v) => v.process(records),
            Processor::Pressure(v) => v.process(records),
        }
    }

    /// Replays history into the state, emitting nothing.
    pub fn look_back(&mut self, records: &[RecordIn]) {
        match self {
            Processor::Frames(v) => v.look_back(records),
            Processor::Pressure(v) => v.look_back(records),
        }
    }

    /// How many sessions hold state.
    pub fn sessions(&self) -> usize {
        match self {
            Processor::Frames(v) => v.sessions.len(),
            Processor::Pressure(v) => v.sessions.len(),
        }
    }

    /// The whole state as a JSON checkpoint (`stateVersion` 3).
    pub fn checkpoint(&self) -> String {
        match self {
            Processor::Frames(v) => checkpoint::frames_to_json(&v.sessions),
            Processor::Pressure(v) => checkpoint::pressure_to_json(&v.sessions),
        }
        .to_string()
    }

    /// Replaces the state with a checkpoint's. On error the state is unchanged.
    pub fn restore(&mut self, text: &str) -> Result<(), CheckpointError> {
        let (version, view, list) = checkpoint::read_document(text)?;
        match self {
            Processor::Frames(v) => {
                if view != "frames" {
                    return Err(CheckpointError(format!(
                        "this is a {view} checkpoint; the instance serves frames"
                    )));
                }
                let mut sessions = lru::Lru::new(v.sessions.cap());
                for s in &list {
                    let (key, st) = checkpoint::frames_session(s)?;
                    insert_fresh(&mut sessions, &key, st)?;
                }
                v.sessions = sessions;
            }
            Processor::Pressure(v) => {
                if view != "pressure" {
                    return Err(CheckpointError(format!(
                        "this is a {view} checkpoint; the instance serves pressure"
                    )));
                }
                let mut sessions = lru::Lru::new(v.sessions.cap());
                for s in &list {
                    let (key, st) = pressure::Session::from_checkpoint(s, Some(version))?;
                    insert_fresh(&mut sessions, &key, st)?;
                }
                v.sessions = sessions;
            }
        }
        Ok(())
    }
}

fn insert_fresh<V>(sessions: &mut lru::Lru<V>, key: &[u8], v: V) -> Result<(), CheckpointError> {
    if sessions.peek(key).is_some() {
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
