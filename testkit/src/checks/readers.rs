//! The readers: the core's fast paths against the naive references (contract §1, §3).

use agent_fold_core::Isa;
use agent_fold_core::testing::{Field, Place, object_uints};
use agent_fold_core::{Frame, estimate, usage_tokens};

use super::show;
use crate::reference::{self, RefFrame};

fn range(base: &[u8], raw: &str) -> std::ops::Range<usize> {
    let start = raw.as_ptr() as usize - base.as_ptr() as usize;
    start..start + raw.len()
}

/// What the core's reading of a record says, in the reference's terms.
fn as_reference(value: &[u8], v: &Frame) -> RefFrame {
    let r = |raw: Option<&str>| raw.map(|s| range(value, s));
    let field = |f: Field<u64>| match f {
        Field::Absent => None,
        Field::Valid(n) => Some(Some(n)),
        Field::Invalid => Some(None),
    };
    let place = |p: &Place| (p.range.clone(), p.repeated);
    let [d, from, frames] = v.places();
    RefFrame {
        kind: v.kind().map(str::to_owned),
        seq: v.seq(),
        stamp: r(v.stamp()),
        delta: v.delta(),
        folded_frames: field(v.folded_frames()),
        folded_from: match v.folded_from() {
            Field::Absent => None,
            Field::Valid(raw) => Some(Some(range(value, raw))),
            Field::Invalid => Some(None),
        },
        subagent: v.is_subagent(),
        session_id: v.session_id().map(|s| s.to_string()),
        message: r(v.message()),
        message_chars: v.message_chars(),
        usage: r(v.usage()),
        system: r(v.system()),
        tools: r(v.tools()),
        context_window: v.context_window(),
        replaces: r(v.replaces()),
        places: [place(d), place(from), place(frames)],
        usage_tokens: v.usage().map(usage_tokens),
        span: v
            .replaces()
            .map(|raw| match object_uints(raw, ["from_seq", "to_seq"]) {
                Some([Field::Valid(a), Field::Valid(b)]) => Some((a, b)),
                _ => None,
            }),
    }
}

/// The record readers agree on one record: [`Frame::parse`] on every instruction set this CPU
/// runs (the vector string scans and the portable one wasm32 runs) accepts exactly what the
/// naive reference reader accepts and reads the same fields, the usage sum and the span
/// included; [`estimate`] agrees with the byte-at-a-time reference on UTF-8 text and on the raw
/// `message`, `system` and `tools` it prices.
pub fn check_readers(value: &[u8]) {
    let want = reference::frame(value);
    for isa in Isa::available() {
        let got = Frame::parse_on(value, isa).map(|v| as_reference(value, &v));
        assert_eq!(
            got,
            want,
            "Frame::parse on {isa:?} ≠ the reference reader on {}",
            show(value)
        );
    }
    if let Ok(text) = std::str::from_utf8(value) {
        assert_eq!(
            estimate(value),
            reference::estimate(text),
            "estimate of {}",
            show(value)
        );
    }
    if let Some(v) = Frame::parse(value) {
        for raw in [v.message(), v.system(), v.tools()].into_iter().flatten() {
            assert_eq!(
                estimate(raw.as_bytes()),
                reference::estimate(raw),
                "estimate of {}",
                show(raw.as_bytes())
            );
        }
    }
}
