//! agent-fold's core: the pure logic behind the SmartModule, with no Fluvio in it.
//!
//! Data flows one way: record bytes → [`Frame`] (read by the one JSON reader, `json`) → the
//! frames view (contract §2: counter runs folded, sub-agent dispatches dropped) or the pressure view
//! (contract §3: the surface, the provider's sample, the calibrated projection) → record bytes. With
//! param `input` naming an agent's log format, its lines are adapted to frames first. The
//! SmartModule, the host tools and the fuzz targets are thin adapters around [`Processor`].
//!
//! ```
//! use agent_fold_core::{Emit, Processor, RecordIn};
//!
//! let mut p = Processor::from_params([("emit", "frames")]).unwrap();
//! let page = [
//!     br#"{"type":"user/message","id":"u"}"#.as_slice(),
//!     br#"{"type":"thinking/tokens","id":"a","timestamp":"t1","estimated_tokens_delta":5}"#,
//!     br#"{"type":"thinking/tokens","id":"b","timestamp":"t2","estimated_tokens_delta":7}"#,
//! ];
//! let records: Vec<RecordIn> = page.iter().map(|v| RecordIn::new(None, v)).collect();
//! let out = p.process(&records).unwrap();
//! assert_eq!(out[0], Emit::Pass(0));
//! let Emit::Replace(2, folded) = &out[1] else { panic!() };
//! assert!(String::from_utf8_lossy(folded).contains(r#""estimated_tokens_delta":12"#));
//! ```

mod adapt;
mod config;
mod estimate;
mod frame;
mod frames;
mod hash;
mod json;
mod pressure;
mod processor;
mod record;
mod rng;
mod state;
pub mod time;

// What an adapter needs: the processor and its records, its params, the frame reader, the
// checkpoint's errors; and the few helpers the host shares with the module (one estimate, one
// hash, one generator).
pub use adapt::census::{LineKind, Treatment};
pub use adapt::{Adapter, line_records};
pub use config::{
    CompactAt, Config, Input, Malformed, PARAMS, Param, ParamError, Projection, Subagents, View,
    restore_prior,
};
pub use estimate::estimate;
pub use frame::{Frame, NAME_BYTES, Trigger, kind, usage_tokens};
pub use hash::{Fnv1a, fnv1a};
pub use json::{Isa, is_object};
#[cfg(feature = "probe")]
pub use processor::Probe;
pub use processor::Processor;
pub use record::{BatchError, Emit, MAX_KEY_LEN, RecordIn, session_key};
pub use rng::Rng;
pub use state::checkpoint::{CheckpointError, STATE_VERSION};

/// What the testkit's properties reach into and no adapter needs: the frame reader's fields,
/// the pressure view's surface and its plans, the reference fold of one page.
#[doc(hidden)]
pub mod testing {
    pub use crate::frame::{Field, MAX_SAFE, Place, object_uints};
    pub use crate::frames::{compact_counters, compact_counters_with};
    pub use crate::pressure::{Corrupt, Node, Plan, Replaces, Surface};
}
