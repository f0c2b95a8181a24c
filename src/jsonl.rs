//! Agent logs as JSONL: one line, one record value; the key is the line's `session_id`.

use agent_fold_core::{Frame, session_key};

use crate::record::Rec;

/// One line as a record: its key is its frame's `session_id` string; a line that is not a
/// JSON object, or has none, has no key.
pub fn line_record(line: &[u8]) -> Rec {
    let frame = Frame::parse(line);
    let key = frame
        .as_ref()
        .filter(|f| f.session_id().is_some())
        .map(|f| session_key(None, Some(f)).into_owned());
    Rec {
        key,
        value: line.to_vec(),
    }
}

/// The lines of a JSONL text (a trailing `\r` kept off, empty lines skipped).
pub fn lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    text.split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty())
}

/// Every non-empty line of a JSONL text, as records.
pub fn records(text: &[u8]) -> Vec<Rec> {
    lines(text).map(line_record).collect()
}
