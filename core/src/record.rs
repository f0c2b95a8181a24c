//! Records in and out of an invocation, and the session a record belongs to.

use std::borrow::Cow;

use crate::frame::Frame;

/// The longest session key that keeps state (contract §1): a longer one is served without any.
pub const MAX_KEY_LEN: usize = 1024;

/// One record of an invocation: its key, if it has one, its value, and its offset in the
/// topic when known (an adapter tells a line delivered again by it).
#[derive(Debug, Clone, Copy)]
pub struct RecordIn<'a> {
    pub key: Option<&'a [u8]>,
    pub value: &'a [u8],
    pub offset: Option<i64>,
}

impl<'a> RecordIn<'a> {
    pub fn new(key: Option<&'a [u8]>, value: &'a [u8]) -> Self {
        RecordIn {
            key,
            value,
            offset: None,
        }
    }

    /// The record at `offset` in its topic.
    pub fn at(self, offset: i64) -> Self {
        RecordIn {
            offset: Some(offset),
            ..self
        }
    }
}

/// The session a frame belongs to: its record's key, else its `session_id` string, else the
/// empty session.
pub fn session_key<'a>(key: Option<&'a [u8]>, frame: Option<&Frame<'a>>) -> Cow<'a, [u8]> {
    if let Some(k) = key {
        return Cow::Borrowed(k);
    }
    match frame.and_then(|v| v.session_id()) {
        Some(Cow::Borrowed(s)) => Cow::Borrowed(s.as_bytes()),
        Some(Cow::Owned(s)) => Cow::Owned(s.into_bytes()),
        None => Cow::Borrowed(b""),
    }
}

/// One record out, in order. Untouched frames are named by their index, never copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Emit {
    /// Input record `i`, key and value, byte for byte.
    Pass(usize),
    /// Input record `i`'s key with a new value (a folded frame).
    Replace(usize, Vec<u8>),
    /// A record of the module's own (a derived record, or an adapted frame), keyed by its
    /// session; `at` is the input record it came from (its offset and timestamp carry over).
    New {
        at: usize,
        key: Vec<u8>,
        value: Vec<u8>,
    },
}

/// An invocation refused whole: nothing is emitted and no state changes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("record {index}: {message}")]
pub struct BatchError {
    /// Index of the offending record in the invocation.
    pub index: usize,
    pub message: String,
}

impl BatchError {
    /// The refusal of a record that is not a JSON object, under `malformed=fail`.
    pub fn not_an_object(index: usize) -> BatchError {
        BatchError {
            index,
            message: "agent-fold: the record is not a JSON object (malformed=fail)".into(),
        }
    }
}
