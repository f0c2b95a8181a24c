//! Why a checkpoint is refused: the one error restoring reports.

use std::fmt;

use crate::record::MAX_KEY_LEN;

/// A checkpoint that cannot be restored, and why. On any of these the state is unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckpointError {
    /// Not JSON, or a member of the wrong shape: what the reader said.
    Invalid(String),
    /// No `stateVersion`.
    MissingVersion,
    /// A `stateVersion` this build does not read, as the JSON text found.
    Version(String),
    /// A checkpoint of the other view.
    View { found: String, serves: &'static str },
    /// Adapter state for another log format.
    Input { found: String, reads: &'static str },
    /// The instance adapts a log format but the checkpoint has no adapter state.
    NoAdapterState { reads: &'static str },
    /// The checkpoint holds an adapter's state but the instance reads frames.
    UnexpectedAdapterState,
    /// A session listed twice.
    Duplicate(Vec<u8>),
    /// A session key over the limit.
    KeyTooLong(usize),
    /// A surface lists a seq twice.
    RepeatedNode(u64),
    /// A surface's tokens add up past 2^64.
    Overflow,
}

impl fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("checkpoint refused: ")?;
        match self {
            CheckpointError::Invalid(why) => f.write_str(why),
            CheckpointError::MissingVersion => f.write_str("`stateVersion` is missing"),
            CheckpointError::Version(v) => {
                write!(f, "stateVersion {v} is not one this build reads (1 to 5)")
            }
            CheckpointError::View { found, serves } => {
                write!(f, "this is a {found} checkpoint; the instance serves {serves}")
            }
            CheckpointError::Input { found, reads } => write!(
                f,
                "the adapter state is for input={found}; this instance reads input={reads}"
            ),
            CheckpointError::NoAdapterState { reads } => {
                write!(f, "the checkpoint has no adapter state; this instance reads input={reads}")
            }
            CheckpointError::UnexpectedAdapterState => f.write_str(
                "the checkpoint holds an adapter's state; this instance reads frames (input=agent-fold)",
            ),
            CheckpointError::Duplicate(k) => {
                write!(f, "session {:?} appears twice", String::from_utf8_lossy(k))
            }
            CheckpointError::KeyTooLong(n) => {
                write!(f, "a session key is {n} bytes, over the limit of {MAX_KEY_LEN}")
            }
            CheckpointError::RepeatedNode(seq) => write!(f, "a surface lists seq {seq} twice"),
            CheckpointError::Overflow => f.write_str("a surface's tokens add up past 2^64"),
        }
    }
}

impl std::error::Error for CheckpointError {}
