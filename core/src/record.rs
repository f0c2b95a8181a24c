//! Records in and out of an invocation, as the adapters hand them over.

use std::borrow::Cow;
use std::fmt;

use crate::frame::FrameView;

/// One record of an invocation: its key, if it has one, and its value.
#[derive(Debug, Clone, Copy)]
pub struct RecordIn<'a> {
    pub key: Option<&'a [u8]>,
    pub value: &'a [u8],
}

impl<'a> RecordIn<'a> {
    pub fn new(key: Option<&'a [u8]>, value: &'a [u8]) -> Self {
        RecordIn { key, value }
    }

    /// The session a record belongs to: its key, else its frame's `session_id` string, else
    /// the empty session.
    pub fn session(&self, view: Option<&FrameView<'a>>) -> Cow<'a, [u8]> {
        if let Some(k) = self.key {
            return Cow::Borrowed(k);
        }
        match view.and_then(|v| v.session_id.as_ref()) {
            Some(Cow::Borrowed(s)) => Cow::Borrowed(s.as_bytes()),
            Some(Cow::Owned(s)) => Cow::Owned(s.clone().into_bytes()),
            None => Cow::Borrowed(b""),
        }
    }
}

/// One record out, in order. Untouched frames are named by their index, never copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Emit {
    /// Input record `i`, key and value, byte for byte.
    Pass(usize),
    /// Input record `i`'s key with a new value (a folded frame).
    Replace(usize, Vec<u8>),
    /// A derived record (pressure view), keyed by its session; `at` is the input record it
    /// was derived from (its offset and timestamp carry over).
    New {
        at: usize,
        key: Vec<u8>,
        value: Vec<u8>,
    },
}

/// An invocation refused whole: nothing is emitted and no state changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchError {
    /// Index of the offending record in the invocation.
    pub index: usize,
    pub message: String,
}

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "record {}: {}", self.index, self.message)
    }
}

impl std::error::Error for BatchError {}
