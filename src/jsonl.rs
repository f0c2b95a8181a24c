//! Agent logs as JSONL: one line, one record value; the key is the line's `session_id`.

use agent_fold_core::FrameView;

use crate::engine::Rec;

/// One line as a record: its key is its frame's `session_id` string; a line that is not a
/// JSON object, or has none, has no key.
pub fn line_record(line: &[u8]) -> Rec {
    let key =
        FrameView::parse(line).and_then(|v| v.session_id.map(|s| s.into_owned().into_bytes()));
    Rec {
        key,
        value: line.to_vec(),
    }
}

/// Every non-empty line of a JSONL text, as records (a trailing `\r` is kept off).
pub fn records(text: &[u8]) -> Vec<Rec> {
    text.split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty())
        .map(line_record)
        .collect()
}
