//! Why a checkpoint is refused: the one error restoring reports.

use crate::record::MAX_KEY_LEN;

/// A checkpoint that cannot be restored, and why. On any of these the state is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    /// Not JSON, or a member of the wrong shape: what the reader said (with where it broke).
    #[error("checkpoint refused: {0}")]
    Invalid(String),
    /// No `stateVersion`.
    #[error("checkpoint refused: `stateVersion` is missing")]
    MissingVersion,
    /// A `stateVersion` this build does not read, as the JSON text found, and the newest it
    /// reads.
    #[error("checkpoint refused: stateVersion {found} is not one this build reads (1 to {latest})")]
    Version { found: String, latest: u64 },
    /// A checkpoint of the other view.
    #[error("checkpoint refused: this is a {found} checkpoint; the instance serves {serves}")]
    View { found: String, serves: &'static str },
    /// Adapter state for another log format.
    #[error(
        "checkpoint refused: the adapter state is for input={found}; this instance reads input={reads}"
    )]
    Input { found: String, reads: &'static str },
    /// The instance adapts a log format but the checkpoint has no adapter state.
    #[error(
        "checkpoint refused: the checkpoint has no adapter state; this instance reads input={reads}"
    )]
    NoAdapterState { reads: &'static str },
    /// The checkpoint holds an adapter's state but the instance reads frames.
    #[error(
        "checkpoint refused: the checkpoint holds an adapter's state; this instance reads frames (input=agent-fold)"
    )]
    UnexpectedAdapterState,
    /// A session listed twice.
    #[error("checkpoint refused: session {:?} appears twice", String::from_utf8_lossy(.0))]
    Duplicate(Vec<u8>),
    /// A session key over the limit.
    #[error("checkpoint refused: a session key is {0} bytes, over the limit of {MAX_KEY_LEN}")]
    KeyTooLong(usize),
    /// A surface lists a seq twice.
    #[error("checkpoint refused: a surface lists seq {0} twice")]
    RepeatedNode(u64),
    /// A surface's tokens add up past 2^64.
    #[error("checkpoint refused: a surface's tokens add up past 2^64")]
    Overflow,
}
