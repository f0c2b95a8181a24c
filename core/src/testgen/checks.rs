//! The fuzz properties, one function per fuzz target (SPEC §5 and §6): each takes the fuzzer's
//! bytes and panics, saying which property broke, when one does.
//!
//! The fuzz targets are thin wrappers around these, and `tests/fuzz_regressions.rs` replays the
//! seed corpus and every minimised crash through them, so `cargo test` checks the same
//! properties the fuzzers do.

use std::collections::HashMap;
use std::ops::Range;

use arbitrary::{Arbitrary, Unstructured};
use serde_json::{Map, Value, json};

use super::{GenLog, GenSession, Rec, SeqPick};
use crate::Processor;
use crate::config::{
    Config, DEFAULT_COUNTER_TYPE, DEFAULT_MAX_SESSIONS, Malformed, Subagents, View,
};
use crate::frame::{FrameView, MAX_SAFE, Slot};
use crate::page::compact_counters_with;
use crate::record::{Emit, RecordIn};
use crate::surface::{Node, Plan, Span, Surface};

// ---------------------------------------------------------------------------------------------
// Shared helpers.

fn inputs(recs: &[Rec]) -> Vec<RecordIn<'_>> {
    recs.iter()
        .map(|(k, v)| RecordIn::new(k.as_deref(), v))
        .collect()
}

/// What an invocation emitted, as `(key, value)` records.
pub fn materialise(records: &[RecordIn], out: &[Emit]) -> Vec<Rec> {
    out.iter()
        .map(|e| match e {
            Emit::Pass(i) => (
                records[*i].key.map(<[u8]>::to_vec),
                records[*i].value.to_vec(),
            ),
            Emit::Replace(i, v) => (records[*i].key.map(<[u8]>::to_vec), v.clone()),
            Emit::New { key, value, .. } => (Some(key.clone()), value.clone()),
        })
        .collect()
}

fn show(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    if s.len() > 400 {
        format!("{}…", &s[..s.floor_char_boundary(400)])
    } else {
        s.into_owned()
    }
}

/// A fresh processor restored from `checkpoint`, which this build wrote.
fn restored(config: &Config, checkpoint: &str) -> Processor {
    let mut p = Processor::new(config);
    if let Err(e) = p.restore(checkpoint) {
        panic!("a checkpoint this build wrote is refused: {e}\n{checkpoint}");
    }
    p
}

/// Checkpoint → restore → checkpoint gives the same text.
fn assert_round_trip(config: &Config, checkpoint: &str) {
    let again = restored(config, checkpoint).checkpoint();
    assert_eq!(
        again, checkpoint,
        "restoring a checkpoint and writing it again changed it"
    );
}

/// `look_back` over the first invocation's records leaves the state `process` leaves (SPEC
/// §4: it replays records into the state without emitting), so the rest is answered alike.
fn assert_look_back_matches(config: &Config, records: &[RecordIn], batches: &[Range<usize>]) {
    let Some(first) = batches.first() else {
        return;
    };
    let mut processed = Processor::new(config);
    let mut replayed = Processor::new(config);
    processed
        .process(&records[first.clone()])
        .expect("malformed=pass/drop never fails");
    replayed.look_back(&records[first.clone()]);
    assert_eq!(
        replayed.checkpoint(),
        processed.checkpoint(),
        "look_back left another state than process"
    );
    let rest = &records[first.end..];
    assert_eq!(
        replayed.process(rest),
        processed.process(rest),
        "after look_back the rest was answered differently"
    );
}

/// One invocation of a fresh processor over `recs`.
fn fold_once(config: &Config, recs: &[Rec]) -> Vec<Rec> {
    let records = inputs(recs);
    let out = Processor::new(config)
        .process(&records)
        .expect("malformed=pass/drop never fails an invocation");
    check_frames_invocation(config, &records, &out);
    materialise(&records, &out)
}

fn main_counter(config: &Config, v: Option<&FrameView>) -> bool {
    v.is_some_and(|v| !v.subagent && v.is_counter(&config.counter_type))
}

/// How many original counters a counter stands for.
fn frames_of(v: &FrameView) -> u64 {
    match v.folded_frames {
        Slot::Valid(n) => n,
        _ => 1,
    }
}

// ---------------------------------------------------------------------------------------------
// The frames view, one invocation: SPEC §2 and the §5 accounting identity.

/// Checks one successful frames-view invocation against its input:
/// - records come out in input order, each at most once, none invented;
/// - non-counters pass byte for byte; dropped sub-agent and malformed records are gone;
/// - every counter either passes, or is absorbed by (or is the newest of) a fold of ≥ 2
///   foldable counters of its session that closes within this invocation (never held back),
///   with nothing of its session emitted in between;
/// - a folded frame is its newest counter with `estimated_tokens_delta`, `folded_from` and
///   `folded_frames` set to the part's sums, in place or appended in that order;
/// - the accounting identity of SPEC §5. "Σ folded_frames of folded frames in" is read as the
///   original counters the absorbed/replaced input counters stand for *beyond the one record
///   each is* (`folded_frames − 1`; 0 for a plain counter), so that for each fold
///   `members = folded_frames out − Σ (folded_frames in − 1)`, and in total:
///   `records in = records out that are no folded frame + Σ folded_frames out
///                 − Σ (folded_frames in − 1) + sub-agent frames dropped + malformed dropped`.
pub fn check_frames_invocation(config: &Config, records: &[RecordIn], out: &[Emit]) {
    let n = records.len();
    let views: Vec<Option<FrameView>> = records.iter().map(|r| FrameView::parse(r.value)).collect();
    let mut emitted: Vec<Option<&Emit>> = vec![None; n];
    let mut last: Option<usize> = None;
    for e in out {
        let i = match e {
            Emit::Pass(i) | Emit::Replace(i, _) => *i,
            Emit::New { .. } => panic!("the frames view emitted a derived record: {e:?}"),
        };
        assert!(i < n, "emit names record {i} of {n}");
        assert!(
            last.is_none_or(|l| i > l),
            "records out of order or repeated: {i} after {last:?}"
        );
        last = Some(i);
        emitted[i] = Some(e);
    }

    let mut pending: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
    let none_pending = |pending: &HashMap<Vec<u8>, Vec<usize>>, s: &[u8], i: usize| {
        if let Some(p) = pending.get(s) {
            assert!(
                p.is_empty(),
                "record {i} of session {:?} was emitted while counters {p:?} before it wait for a fold",
                show(s)
            );
        }
    };
    let (mut plain_out, mut frames_out, mut extra_in) = (0u128, 0u128, 0u128);
    let (mut sub_dropped, mut malformed_dropped) = (0u128, 0u128);

    for i in 0..n {
        let view = views[i].as_ref();
        let session = records[i].session(view).into_owned();
        let passed = matches!(emitted[i], Some(Emit::Pass(_)));
        match view {
            None => match config.malformed {
                Malformed::Drop => {
                    assert!(emitted[i].is_none(), "malformed record {i} not dropped");
                    malformed_dropped += 1;
                }
                Malformed::Pass | Malformed::Fail => {
                    assert!(passed, "malformed record {i} not passed unchanged");
                    none_pending(&pending, &session, i);
                }
            },
            Some(v) if v.subagent => match config.subagents {
                Subagents::Drop => {
                    assert!(emitted[i].is_none(), "sub-agent record {i} not dropped");
                    sub_dropped += 1;
                }
                Subagents::Keep => assert!(passed, "kept sub-agent record {i} not passed"),
            },
            Some(v) if !v.is_counter(&config.counter_type) => {
                assert!(passed, "non-counter record {i} not passed unchanged");
                none_pending(&pending, &session, i);
            }
            Some(_) => match emitted[i] {
                None => pending.entry(session).or_default().push(i),
                Some(Emit::Pass(_)) => none_pending(&pending, &session, i),
                Some(Emit::Replace(_, bytes)) => {
                    let mut members = pending.remove(&session).unwrap_or_default();
                    members.push(i);
                    let (frames, extra) = check_fold(&views, &members, bytes);
                    frames_out += frames;
                    extra_in += extra;
                    continue;
                }
                Some(Emit::New { .. }) => unreachable!("refused above"),
            },
        }
        if emitted[i].is_some() {
            plain_out += 1;
        }
    }
    for (s, p) in &pending {
        assert!(
            p.is_empty(),
            "counters {p:?} of session {:?} were held back: absorbed, but no folded frame came out",
            show(s)
        );
    }
    assert_eq!(
        n as u128,
        plain_out + frames_out - extra_in + sub_dropped + malformed_dropped,
        "SPEC §5 accounting: records in ≠ plain out {plain_out} + Σ folded_frames out {frames_out} \
         − Σ (folded_frames in − 1) {extra_in} + sub-agent dropped {sub_dropped} + malformed \
         dropped {malformed_dropped}"
    );
}

/// One folded frame against the counters it stands for (page indices `members`, oldest first).
/// Returns its `folded_frames` and Σ (folded_frames − 1) over its members.
fn check_fold(views: &[Option<FrameView>], members: &[usize], bytes: &[u8]) -> (u128, u128) {
    let newest_at = *members.last().expect("the newest is a member");
    assert!(
        members.len() >= 2,
        "counter {newest_at} was rewritten, but a foldable part of one is served as itself"
    );
    let (mut delta, mut frames, mut extra) = (0u128, 0u128, 0u128);
    for &m in members {
        let v = views[m].as_ref().expect("a member parsed");
        assert!(
            v.stamp.is_some()
                && v.delta.is_some()
                && v.folded_frames != Slot::Invalid
                && v.folded_from != Slot::Invalid
                && !v.delta_span.repeated
                && !v.from_span.repeated
                && !v.frames_span.repeated,
            "counter {m} cannot be folded (unstamped, bad delta or fold fields) but was"
        );
        delta += v.delta.unwrap_or(0) as u128;
        frames += frames_of(v) as u128;
        extra += frames_of(v) as u128 - 1;
    }
    assert!(
        delta <= MAX_SAFE as u128 && frames <= MAX_SAFE as u128,
        "a fold carried its sums past 2^53"
    );
    let newest = views[newest_at].as_ref().expect("the newest parsed");
    let oldest = views[members[0]].as_ref().expect("the oldest parsed");
    let from = match oldest.folded_from {
        Slot::Valid(raw) => raw,
        _ => oldest.stamp.expect("checked above"),
    };
    let Some(folded) = FrameView::parse(bytes) else {
        panic!("folded frame is not a JSON object: {}", show(bytes))
    };
    assert_eq!(folded.delta.map(u128::from), Some(delta), "folded delta");
    assert_eq!(
        folded.folded_frames,
        Slot::Valid(frames as u64),
        "folded_frames"
    );
    assert_eq!(folded.folded_from, Slot::Valid(from), "folded_from");
    assert_eq!(
        folded.stamp, newest.stamp,
        "a folded frame keeps the newest stamp"
    );
    assert_eq!(folded.kind, newest.kind);
    assert_eq!(folded.session_id, newest.session_id);
    assert!(!folded.subagent);

    // Every other field of the newest counter is kept, in order; the three fold fields are
    // replaced in place, else appended in the order delta, folded_from, folded_frames.
    if let (Ok(Value::Object(mut want)), Ok(Value::Object(got))) = (
        serde_json::from_slice::<Value>(newest.bytes),
        serde_json::from_slice::<Value>(bytes),
    ) {
        for name in ["estimated_tokens_delta", "folded_from", "folded_frames"] {
            want.insert(name.into(), got.get(name).cloned().unwrap_or(Value::Null));
        }
        let want: Vec<_> = want.iter().collect();
        let got: Vec<_> = got.iter().collect();
        assert_eq!(
            got, want,
            "a folded frame is its newest counter with three fields set"
        );
    }
    (frames, extra)
}

// ---------------------------------------------------------------------------------------------
// The pressure view: records, figures and the checkpoint agree.

/// One session of a pressure checkpoint, as the figures need it.
#[derive(Debug, Clone)]
struct CpSession {
    partial: bool,
    pressure: Option<u64>,
    anchor: Option<u64>,
    total: u128,
}

fn cp_key(obj: &Map<String, Value>) -> Vec<u8> {
    match (obj.get("session"), obj.get("sessionBytes")) {
        (Some(Value::String(s)), _) => s.as_bytes().to_vec(),
        (_, Some(Value::Array(b))) => b.iter().map(|b| b.as_u64().unwrap_or(0) as u8).collect(),
        _ => panic!("a written checkpoint session has no key: {obj:?}"),
    }
}

fn pressure_sessions(checkpoint: &str) -> HashMap<Vec<u8>, CpSession> {
    let doc: Value = serde_json::from_str(checkpoint).expect("a written checkpoint is JSON");
    assert_eq!(
        doc["stateVersion"], 3,
        "checkpoints are written as stateVersion 3"
    );
    let mut map = HashMap::new();
    for s in doc["sessions"].as_array().expect("sessions") {
        let obj = s.as_object().expect("a session object");
        let total = obj["surface"]
            .as_array()
            .expect("a surface")
            .iter()
            .map(|n| n[1].as_u64().expect("node tokens") as u128)
            .sum();
        map.insert(
            cp_key(obj),
            CpSession {
                partial: obj["partial"].as_bool().expect("partial"),
                pressure: obj["pressureTokens"].as_u64(),
                anchor: obj["anchorTokens"].as_u64(),
                total,
            },
        );
    }
    map
}

/// A `context/pressure` record's figures against its session's checkpoint (SPEC §6.6):
/// `messageTokens` = Σ surface node tokens (null when partial), `projectedTokens` =
/// max(0, pressure + messageTokens − anchor), null without a sample or anchor.
fn check_figures(record: &Value, s: &CpSession) {
    let total = u64::try_from(s.total).unwrap_or(u64::MAX);
    let message = if s.partial { Value::Null } else { total.into() };
    assert_eq!(
        record["messageTokens"], message,
        "messageTokens ≠ Σ surface nodes {total} (partial: {}): {record}",
        s.partial
    );
    let projected = match (s.pressure, s.anchor) {
        (Some(p), Some(a)) => {
            Value::from((p as i128 + total as i128 - a as i128).clamp(0, u64::MAX as i128) as u64)
        }
        _ => Value::Null,
    };
    assert_eq!(
        record["projectedTokens"], projected,
        "projectedTokens: {record}"
    );
    assert_eq!(
        record["pressureTokens"],
        s.pressure.map_or(Value::Null, Value::from),
        "pressureTokens: {record}"
    );
    assert_eq!(
        record.get("partial").is_some(),
        s.partial,
        "partial flag: {record}"
    );
}

/// Checks one pressure-view invocation: only derived records, in input order, keyed by the
/// session of the frame they answer, well-formed; the last `context/pressure` record of each
/// session that still holds state agrees with the checkpoint written after the invocation.
/// Returns the parsed records.
fn check_pressure_invocation(records: &[RecordIn], out: &[Emit], checkpoint: &str) -> Vec<Value> {
    let sessions = pressure_sessions(checkpoint);
    let mut last_at = 0;
    let mut latest: HashMap<Vec<u8>, Value> = HashMap::new();
    let mut parsed = Vec::with_capacity(out.len());
    for e in out {
        let Emit::New { at, key, value } = e else {
            panic!("the pressure view passed an input record through: {e:?}")
        };
        assert!(
            *at < records.len() && *at >= last_at,
            "record order: at {at}"
        );
        last_at = *at;
        let Some(v) = FrameView::parse(records[*at].value) else {
            panic!("a derived record answers a malformed record")
        };
        assert!(!v.subagent, "a derived record answers a sub-agent frame");
        assert_eq!(
            key.as_slice(),
            &*records[*at].session(Some(&v)),
            "a derived record's key is its session"
        );
        let rec: Value = serde_json::from_slice(value)
            .unwrap_or_else(|e| panic!("derived record is not JSON ({e}): {}", show(value)));
        assert_eq!(rec["stateVersion"], 3, "{rec}");
        assert_eq!(
            rec["session"],
            Value::from(String::from_utf8_lossy(key)),
            "{rec}"
        );
        match rec["type"].as_str() {
            Some("context/pressure") => {
                assert_eq!(
                    rec["seq"].as_u64(),
                    v.seq,
                    "a record carries its frame's seq"
                );
                assert_eq!(rec.get("timestamp").is_some(), v.stamp.is_some(), "{rec}");
                latest.insert(key.clone(), rec.clone());
            }
            Some("context/error") => {
                assert!(
                    rec["error"].as_str().is_some_and(|s| !s.is_empty()),
                    "{rec}"
                );
            }
            _ => panic!("unknown derived record: {rec}"),
        }
        parsed.push(rec);
    }
    for (key, rec) in &latest {
        if let Some(s) = sessions.get(key) {
            check_figures(rec, s);
        }
    }
    parsed
}

// ---------------------------------------------------------------------------------------------
// The readers: the fast paths against their definitions.

/// SPEC §3's estimate, one byte at a time: `ceil(chars / 4)`, chars = the scalar values of the
/// JSON text (UTF-8 continuation bytes belong to the scalar already counted), whitespace
/// outside strings excluded.
pub fn reference_estimate(json: &[u8]) -> u64 {
    crate::estimate::estimate_bytewise(json)
}

/// Every field two readings of one record hold (the bytes are the record's in both).
fn same_view(a: &Option<FrameView>, b: &Option<FrameView>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            (
                &a.kind,
                a.seq,
                a.stamp,
                a.delta,
                a.folded_frames,
                a.folded_from,
            ) == (
                &b.kind,
                b.seq,
                b.stamp,
                b.delta,
                b.folded_frames,
                b.folded_from,
            ) && (
                &a.session_id,
                a.subagent,
                a.message,
                a.usage,
                a.system,
                a.tools,
            ) == (
                &b.session_id,
                b.subagent,
                b.message,
                b.usage,
                b.system,
                b.tools,
            ) && (a.context_window, a.replaces) == (b.context_window, b.replaces)
                && (&a.delta_span, &a.from_span, &a.frames_span)
                    == (&b.delta_span, &b.from_span, &b.frames_span)
        }
        _ => false,
    }
}

/// The record readers agree on one record: [`FrameView::parse`] (the scanner, with the vector
/// string scan the CPU offers), its portable string scan, and the serde_json reference reader
/// accept the same records and read the same fields; [`crate::estimate`] agrees with
/// [`reference_estimate`] on UTF-8 text and on the raw `message`, `system`, `tools` it prices.
pub fn check_readers(value: &[u8]) {
    let best = FrameView::parse(value);
    let reference = FrameView::parse_serde(value);
    let portable = FrameView::parse_portable(value);
    assert!(
        same_view(&best, &reference),
        "FrameView::parse ≠ the serde_json reference reader on {}:\n{best:#?}\n{reference:#?}",
        show(value)
    );
    assert!(
        same_view(&portable, &reference),
        "the portable scan ≠ the serde_json reference reader on {}:\n{portable:#?}\n{reference:#?}",
        show(value)
    );
    if std::str::from_utf8(value).is_ok() {
        assert_eq!(
            crate::estimate(value),
            reference_estimate(value),
            "estimate of {}",
            show(value)
        );
    }
    if let Some(v) = &best {
        for raw in [v.message, v.system, v.tools].into_iter().flatten() {
            assert_eq!(
                crate::estimate(raw.as_bytes()),
                reference_estimate(raw.as_bytes()),
                "estimate of {}",
                show(raw.as_bytes())
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Target `fold_bytes`.

/// Params from the first two bytes of a `fold_bytes` input.
pub fn fold_bytes_config(p0: u8, p1: u8) -> Config {
    Config {
        view: if p0 & 1 == 0 {
            View::Frames
        } else {
            View::Pressure
        },
        subagents: if p0 & 2 == 0 {
            Subagents::Drop
        } else {
            Subagents::Keep
        },
        malformed: match (p0 >> 2) & 3 {
            1 => Malformed::Drop,
            2 => Malformed::Fail,
            _ => Malformed::Pass,
        },
        max_sessions: if p0 & 16 != 0 {
            1 + ((p0 >> 5) & 3) as usize
        } else {
            DEFAULT_MAX_SESSIONS
        },
        counter_type: if p1 & 4 != 0 {
            "user/message".into()
        } else {
            DEFAULT_COUNTER_TYPE.into()
        },
        capacity: (p1 & 8 != 0).then_some(1000),
        ..Config::default()
    }
}

/// The invocations of a `fold_bytes` input: records are lines, an empty line ends an
/// invocation; with `keyed`, a record `KEY\x1fVALUE` carries a Fluvio key.
pub fn fold_bytes_invocations(body: &[u8], keyed: bool) -> Vec<Vec<Rec>> {
    let mut out = Vec::new();
    let mut current = Vec::new();
    for line in body.split(|b| *b == b'\n') {
        if line.is_empty() {
            out.push(std::mem::take(&mut current));
            continue;
        }
        let rec = match line.iter().position(|b| *b == 0x1f) {
            Some(at) if keyed => (Some(line[..at].to_vec()), line[at + 1..].to_vec()),
            _ => (None, line.to_vec()),
        };
        current.push(rec);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// `fold_bytes`: arbitrary records through [`Processor::process`], in invocations.
///
/// Layout: byte 0 = view (bit 0: pressure), sub-agents (bit 1: keep), malformed (bits 2–3:
/// pass, drop, fail, pass), a small `max_sessions` (bit 4; 1 + bits 5–6), keyed records
/// (bit 7); byte 1 = the first invocation is `look_back` (bit 0), checkpoint and restore between
/// invocations (bit 1), counter type `user/message` (bit 2), a default capacity (bit 3); then
/// records, one a line, an empty line between invocations.
///
/// Never panics; every record meets [`check_readers`]; per invocation the frames view meets
/// [`check_frames_invocation`] (SPEC §5's
/// identity), the pressure view's records agree with its checkpoint; a refused invocation
/// (`malformed=fail`) names the first malformed record and changes nothing; checkpoints
/// round-trip, and a processor restored from one between invocations answers the same.
pub fn check_fold_bytes(data: &[u8]) {
    let Some((&[p0, p1], body)) = data.split_first_chunk::<2>() else {
        return;
    };
    let config = fold_bytes_config(p0, p1);
    let invocations = fold_bytes_invocations(body, p0 & 128 != 0);
    let mut main = Processor::new(&config);
    let mut twin = Processor::new(&config);
    for (n, recs) in invocations.iter().enumerate() {
        let records = inputs(recs);
        for r in &records {
            check_readers(r.value);
        }
        if n == 0 && p1 & 1 != 0 {
            main.look_back(&records);
            twin.look_back(&records);
            assert_eq!(main.checkpoint(), twin.checkpoint());
            continue;
        }
        let before = main.checkpoint();
        let result = main.process(&records);
        assert_eq!(
            result,
            twin.process(&records),
            "a processor restored from a checkpoint answered differently"
        );
        let after = main.checkpoint();
        match result {
            Err(e) => {
                assert_eq!(
                    config.malformed,
                    Malformed::Fail,
                    "only malformed=fail refuses: {e}"
                );
                let first = records
                    .iter()
                    .position(|r| FrameView::parse(r.value).is_none());
                assert_eq!(
                    Some(e.index),
                    first,
                    "the error names the first malformed record"
                );
                assert_eq!(after, before, "a refused invocation changed the state");
            }
            Ok(out) => {
                if config.malformed == Malformed::Fail {
                    assert!(records.iter().all(|r| FrameView::parse(r.value).is_some()));
                }
                match config.view {
                    View::Frames => check_frames_invocation(&config, &records, &out),
                    View::Pressure => {
                        check_pressure_invocation(&records, &out, &after);
                    }
                }
            }
        }
        assert_eq!(
            twin.checkpoint(),
            after,
            "a restored processor's state diverged"
        );
        assert_round_trip(&config, &after);
        if p1 & 2 != 0 {
            twin = restored(&config, &after);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Target `fold_invariants`.

fn frames_config(p: u8) -> Config {
    Config {
        subagents: if p & 1 == 0 {
            Subagents::Drop
        } else {
            Subagents::Keep
        },
        malformed: if p & 2 == 0 {
            Malformed::Pass
        } else {
            Malformed::Drop
        },
        ..Config::default()
    }
}

/// Per session: Σ `estimated_tokens_delta` and Σ counters (by `folded_frames`) of main counters.
fn counter_sums(config: &Config, recs: &[Rec]) -> HashMap<Vec<u8>, (u128, u128)> {
    let mut sums: HashMap<Vec<u8>, (u128, u128)> = HashMap::new();
    for r in inputs(recs) {
        let v = FrameView::parse(r.value);
        if main_counter(config, v.as_ref()) {
            let v = v.expect("a counter parsed");
            let s = sums.entry(r.session(Some(&v)).into_owned()).or_default();
            s.0 += v.delta.unwrap_or(0) as u128;
            s.1 += frames_of(&v) as u128;
        }
    }
    sums
}

/// The records that are no main counter, in order (sub-agent and malformed records removed
/// when the config drops them).
fn non_counters(config: &Config, recs: &[Rec]) -> Vec<Rec> {
    recs.iter()
        .filter(|(_, v)| match FrameView::parse(v) {
            None => config.malformed != Malformed::Drop,
            Some(v) if v.subagent => config.subagents == Subagents::Keep,
            Some(v) => !v.is_counter(&config.counter_type),
        })
        .cloned()
        .collect()
}

/// The log with every malformed record replaced by a main non-counter object with an id, so
/// that the page API (which reads `serde_json::Value`s) sees every frame.
fn objects_only(recs: &[Rec]) -> Vec<Rec> {
    recs.iter()
        .enumerate()
        .map(|(n, (k, v))| match FrameView::parse(v) {
            Some(_) => (k.clone(), v.clone()),
            None => (
                k.clone(),
                json!({"type": "gen/malformed", "id": format!("m{n}")})
                    .to_string()
                    .into_bytes(),
            ),
        })
        .collect()
}

/// The folds a page makes, as ranges of page indices (first counter ..= newest), found by
/// matching output ids to input ids. A fold's members are the main counters between the
/// previous main frame out and its newest; sub-agent frames kept in place (`subagents=keep`)
/// may stand among them, since they neither extend nor break a run.
fn page_folds(config: &Config, page: &[Value], base: usize) -> Vec<Range<usize>> {
    let mut out = page.to_vec();
    compact_counters_with(&mut out, &config.counter_type, config.subagents);
    let at: HashMap<&str, usize> = page
        .iter()
        .enumerate()
        .filter_map(|(i, v)| Some((v["id"].as_str()?, i)))
        .collect();
    let is_main_counter = |v: &Value| {
        v["type"].as_str() == Some(config.counter_type.as_str())
            && !v["extras"]["parent_tool_use_id"].is_string()
    };
    let is_sub = |v: &Value| v["extras"]["parent_tool_use_id"].is_string();
    let mut folds = Vec::new();
    let (mut prev, mut prev_main): (Option<usize>, Option<usize>) = (None, None);
    for v in &out {
        let id = v["id"].as_str().expect("generated frames have ids");
        let i = at[id];
        assert!(prev.is_none_or(|p| i > p), "page API output out of order");
        prev = Some(i);
        if is_sub(v) {
            continue;
        }
        if *v != page[i] {
            let lo = (prev_main.map_or(0, |p| p + 1)..i)
                .find(|&j| is_main_counter(&page[j]))
                .expect("a fold has members before its newest");
            folds.push(base + lo..base + i + 1);
        }
        prev_main = Some(i);
    }
    folds
}

fn cross(a: &Range<usize>, b: &Range<usize>) -> bool {
    (a.start < b.start && b.start < a.end && a.end < b.end)
        || (b.start < a.start && a.start < b.end && b.end < a.end)
}

/// Whether a derived record is a `context/error`.
fn is_error(bytes: &[u8]) -> bool {
    serde_json::from_slice::<Value>(bytes).is_ok_and(|v| v["type"] == "context/error")
}

fn normalised(bytes: &[u8]) -> String {
    let v: Value = serde_json::from_slice(bytes).expect("generated frames are JSON");
    v.to_string()
}

/// `fold_invariants`: a generated log ([`GenLog`], after one params byte: bit 0 sub-agents
/// keep, bit 1 malformed drop), replayed in the invocations its `batches` cut, meets SPEC §6
/// invariants 1–5:
/// 1. Σ delta and Σ counters (by `folded_frames`) of main counters are conserved per session,
///    for the cut run and for one invocation of the whole log;
/// 2. every record that is no main counter comes out byte-identical, in order, with its key;
/// 3. folding the whole log's output again (a fresh processor) changes nothing;
/// 4. folding the concatenated outputs of the cut run gives the whole log's output;
/// 5. pages of one session with different front (and back) cuts, folded by
///    `compact_counters`, never carry folds that cross; and the page API folds a session's
///    page exactly as one invocation of the stream does.
///
/// And `look_back` over the first invocation leaves the state `process` leaves.
pub fn check_fold_invariants(data: &[u8]) {
    let Some((&p, rest)) = data.split_first() else {
        return;
    };
    let Ok(log) = GenLog::from_bytes(rest) else {
        return;
    };
    let config = frames_config(p);
    let recs = log.records();
    let records = inputs(&recs);

    let mut proc = Processor::new(&config);
    let mut cut: Vec<Rec> = Vec::new();
    for b in log.batches(recs.len()) {
        let page = &records[b];
        let out = proc.process(page).expect("malformed=pass/drop never fails");
        check_frames_invocation(&config, page, &out);
        cut.extend(materialise(page, &out));
    }
    let whole = fold_once(&config, &recs);
    assert_look_back_matches(&config, &records, &log.batches(recs.len()));

    // 1. Conservation.
    let sums = counter_sums(&config, &recs);
    assert_eq!(counter_sums(&config, &cut), sums, "conservation, cut run");
    assert_eq!(
        counter_sums(&config, &whole),
        sums,
        "conservation, whole log"
    );
    // 2. Non-counters byte-identical, in order.
    let others = non_counters(&config, &recs);
    assert_eq!(non_counters(&config, &cut), others, "non-counters, cut run");
    assert_eq!(
        non_counters(&config, &whole),
        others,
        "non-counters, whole log"
    );
    // 3. Idempotence.
    assert_eq!(
        fold_once(&config, &whole),
        whole,
        "folding a folded log changed it"
    );
    // 4. Batch-cut invariance.
    assert_eq!(
        fold_once(&config, &cut),
        whole,
        "fold(concat(outputs)) ≠ fold(whole log)"
    );

    // 5. Nesting, and the page API agrees with the stream.
    let objects = objects_only(&recs);
    let streamed = fold_once(&config, &objects);
    let mut by_session: HashMap<Vec<u8>, (Vec<Value>, Vec<String>)> = HashMap::new();
    for r in inputs(&objects) {
        let v = FrameView::parse(r.value).expect("objects only");
        let s = by_session
            .entry(r.session(Some(&v)).into_owned())
            .or_default();
        s.0.push(serde_json::from_slice(r.value).expect("generated frames are JSON"));
    }
    for (k, v) in &streamed {
        let r = RecordIn::new(k.as_deref(), v);
        let view = FrameView::parse(v).expect("objects only");
        let s = by_session
            .get_mut(&*r.session(Some(&view)))
            .expect("a known session");
        s.1.push(normalised(v));
    }
    for (page, stream) in by_session.values() {
        let mut folded = page.clone();
        compact_counters_with(&mut folded, &config.counter_type, config.subagents);
        let folded: Vec<String> = folded.iter().map(Value::to_string).collect();
        assert_eq!(
            &folded, stream,
            "compact_counters ≠ one invocation of the stream"
        );

        let len = page.len();
        let mut windows: Vec<Range<usize>> = Vec::with_capacity(9);
        windows.push(0..len);
        for c in log.cuts.iter().take(4) {
            let a = *c as usize % (len + 1);
            windows.push(a..len);
            windows.push(a / 2..a);
        }
        let folds: Vec<Range<usize>> = windows
            .iter()
            .flat_map(|w| page_folds(&config, &page[w.clone()], w.start))
            .collect();
        for a in &folds {
            for b in &folds {
                assert!(!cross(a, b), "folds {a:?} and {b:?} of two pages cross");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Target `surface_ranges`.

/// A raw surface edit for [`Surface::plan`] / [`Surface::commit`].
#[derive(Arbitrary, Debug, Clone)]
pub enum RawOp {
    Append {
        gap: u8,
        tokens: u32,
    },
    Replace {
        from: SeqPick,
        to: SeqPick,
        gap: u8,
        tokens: u32,
    },
}

/// A raw surface session: whether it is partial, its first seq, its edits.
#[derive(Arbitrary, Debug, Clone)]
pub struct RawSurface {
    pub partial: bool,
    pub first_seq: u16,
    pub ops: Vec<RawOp>,
}

/// SPEC §3's compaction rule, written from the text: the plan a span should get.
fn model_plan(nodes: &[Node], floor: Option<u64>, span: Span, partial: bool) -> Option<Plan> {
    let pos = |seq: u64| nodes.iter().position(|n| n.seq == seq);
    let below = |seq: u64| floor.is_none_or(|f| seq < f);
    match (pos(span.from_seq), pos(span.to_seq)) {
        (Some(a), Some(b)) if a <= b => Some(Plan::Splice {
            start: a,
            end: b + 1,
        }),
        (None, Some(b)) if partial && below(span.from_seq) => Some(Plan::FrontCut { end: b + 1 }),
        (None, None)
            if partial
                && below(span.from_seq)
                && below(span.to_seq)
                && span.from_seq <= span.to_seq =>
        {
            Some(Plan::FrontCut { end: 0 })
        }
        _ => None,
    }
}

fn check_raw_surface(data: &[u8]) {
    let Ok(raw) = RawSurface::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let mut surface = Surface::default();
    let mut model: Vec<Node> = Vec::new();
    let mut floor: Option<u64> = None;
    let mut seen: Vec<u64> = Vec::new();
    let mut next = if raw.partial {
        raw.first_seq as u64 + 1
    } else {
        0
    };
    for op in &raw.ops {
        let (span, gap, tokens) = match op {
            RawOp::Append { gap, tokens } => (None, *gap, *tokens),
            RawOp::Replace {
                from,
                to,
                gap,
                tokens,
            } => {
                let pick = |p: &SeqPick| match p {
                    SeqPick::Node(i) if !seen.is_empty() => seen[*i as usize % seen.len()],
                    SeqPick::Node(i) => *i as u64,
                    SeqPick::Raw(r) => *r,
                    SeqPick::Huge => u64::MAX,
                };
                (
                    Some(Span {
                        from_seq: pick(from),
                        to_seq: pick(to),
                    }),
                    *gap,
                    *tokens,
                )
            }
        };
        let seq = next + gap as u64;
        next = seq + 1;
        let before = surface.clone();
        let plan = surface.plan(span, raw.partial);
        assert_eq!(surface, before, "plan changed the surface");
        let want = match span {
            None => Some(Plan::Append),
            Some(s) => model_plan(&model, floor, s, raw.partial),
        };
        assert_eq!(
            plan.as_ref().ok(),
            want.as_ref(),
            "plan for {span:?} over {model:?}"
        );
        let Ok(plan) = plan else { continue };
        let node = Node {
            seq,
            tokens: tokens as u64,
        };
        surface.commit(plan, node);
        floor.get_or_insert(seq);
        match plan {
            Plan::Append => model.push(node),
            Plan::Splice { start, end } => {
                model.splice(start..end, [node]);
            }
            Plan::FrontCut { end } => {
                model.splice(..end, [node]);
            }
        }
        seen.push(seq);
        assert_eq!(surface.nodes(), model.as_slice(), "surface nodes");
        assert_eq!(surface.floor(), floor, "floor");
        let sum: u128 = model.iter().map(|n| n.tokens as u128).sum();
        assert_eq!(
            surface.total() as u128,
            sum,
            "messageTokens ≠ Σ surface nodes"
        );
        assert_eq!(
            Surface::from_nodes(surface.nodes().to_vec(), surface.floor()).as_ref(),
            Some(&surface),
            "a surface rebuilt from its nodes differs"
        );
    }
}

fn pressure_config(p: u8) -> Config {
    Config {
        view: View::Pressure,
        capacity: (p & 2 != 0).then_some(200_000),
        ..Config::default()
    }
}

fn check_gen_session(p: u8, data: &[u8]) {
    let Ok(gs) = GenSession::from_bytes(data) else {
        return;
    };
    let config = pressure_config(p);
    let recs = gs.records();
    let records = inputs(&recs);

    // A: in the invocations the session's cuts make; each invocation delivered twice.
    let mut a = Processor::new(&config);
    let mut out_a: Vec<Rec> = Vec::new();
    for b in gs.batches(recs.len()) {
        let page = &records[b];
        let out = a.process(page).expect("malformed=pass never fails");
        let cp = a.checkpoint();
        check_pressure_invocation(page, &out, &cp);
        let emitted = materialise(page, &out);
        let again = a.process(page).expect("malformed=pass never fails");
        assert_eq!(
            a.checkpoint(),
            cp,
            "re-delivering an invocation changed the state"
        );
        for r in materialise(page, &again) {
            assert!(
                emitted.contains(&r) && is_error(&r.1),
                "re-delivery emitted a new record: {}",
                show(&r.1)
            );
        }
        assert_round_trip(&config, &cp);
        out_a.extend(emitted);
    }

    assert_look_back_matches(&config, &records, &gs.batches(recs.len()));

    // B: one frame per invocation, checking state after every frame.
    let mut b = Processor::new(&config);
    let mut out_b: Vec<Rec> = Vec::new();
    let mut latest: Option<Value> = None;
    for r in &records {
        let page = std::slice::from_ref(r);
        let before = b.checkpoint();
        let out = b.process(page).expect("malformed=pass never fails");
        let after = b.checkpoint();
        assert!(out.len() <= 1, "one frame, at most one record");
        for rec in check_pressure_invocation(page, &out, &after) {
            if rec["type"] == "context/error" {
                assert_eq!(after, before, "a refused frame changed the state: {rec}");
            } else {
                latest = Some(rec);
            }
        }
        // Figures stand between records: the last record still describes the state.
        if let (Some(rec), Some(s)) = (&latest, pressure_sessions(&after).get(&b"s"[..])) {
            check_figures(rec, s);
        }
        out_b.extend(materialise(page, &out));
    }
    assert_eq!(
        out_a, out_b,
        "batch cuts changed the pressure view's records"
    );
    assert_eq!(
        a.checkpoint(),
        b.checkpoint(),
        "batch cuts changed the state"
    );

    // Every earlier frame, delivered again: nothing new, nothing changed.
    let cp = b.checkpoint();
    let again = b.process(&records).expect("malformed=pass never fails");
    assert_eq!(
        b.checkpoint(),
        cp,
        "re-delivering the log changed the state"
    );
    for r in materialise(&records, &again) {
        assert!(
            out_b.contains(&r) && is_error(&r.1),
            "re-delivery emitted a new record: {}",
            show(&r.1)
        );
    }
}

/// `surface_ranges`: byte 0 bit 0 chooses raw [`Surface::plan`]/[`Surface::commit`] ops
/// (checked against SPEC §3's rule written from the text, Σ tokens after every edit) or a
/// [`GenSession`] through the pressure view (bit 1: a default capacity), where:
/// `messageTokens` = Σ surface nodes and `projectedTokens` follows from the checkpoint after
/// every frame; a refused frame (`context/error`) leaves the checkpoint byte-identical;
/// re-delivery is a no-op (no new record, same checkpoint); one frame per invocation and the
/// session's own cuts give the same records and state; checkpoints round-trip; `look_back`
/// over the first invocation leaves the state `process` leaves.
pub fn check_surface_ranges(data: &[u8]) {
    let Some((&p, rest)) = data.split_first() else {
        return;
    };
    if p & 1 == 0 {
        check_gen_session(p, rest);
    } else {
        check_raw_surface(rest);
    }
}

// ---------------------------------------------------------------------------------------------
// Target `checkpoint_restore`.

/// Frames that exercise a restored state: per session (at most 8), for the frames view two
/// stamped counters and a message; for the pressure view a message, a replacement of its
/// whole surface, a sample and a header above its cursor.
fn probe(view: View, checkpoint: &str) -> Vec<Rec> {
    let doc: Value = serde_json::from_str(checkpoint).expect("a written checkpoint is JSON");
    let mut out = Vec::new();
    for s in doc["sessions"].as_array().expect("sessions").iter().take(8) {
        let obj = s.as_object().expect("a session object");
        let key = Some(cp_key(obj));
        let mut push = |v: Value| out.push((key.clone(), v.to_string().into_bytes()));
        match view {
            View::Frames => {
                for n in 0..2 {
                    push(json!({"type": "thinking/tokens", "id": format!("p{n}"),
                        "timestamp": format!("t{n}"), "estimated_tokens_delta": 3}));
                }
                push(json!({"type": "user/message", "id": "p2", "message": "x"}));
            }
            View::Pressure => {
                let c = obj["cursor"].as_u64();
                let at = |k: u64| c.map_or(k, |c| c.saturating_add(k));
                let nodes = obj["surface"].as_array().expect("a surface");
                let ends = (nodes.first(), nodes.last());
                push(json!({"type": "user/message", "seq": at(1), "message": "hello there"}));
                if let (Some(first), Some(last)) = ends {
                    push(
                        json!({"type": "user/message", "seq": at(2), "message": "summary",
                        "replaces": {"from_seq": first[0], "to_seq": last[0]}}),
                    );
                }
                push(
                    json!({"type": "assistant/message", "seq": at(3), "message": "ok",
                    "usage": {"input_tokens": 100, "cache_read_input_tokens": 7}}),
                );
                push(
                    json!({"type": "request/header", "seq": at(4), "system": "s",
                    "context_window": 1000}),
                );
            }
        }
    }
    out
}

/// `checkpoint_restore`: byte 0 = view (bit 0: pressure) and a small `max_sessions` (bit 1;
/// 1 + bits 2–3); the rest (lossy UTF-8) is a checkpoint for [`Processor::restore`]. Either a
/// clear error that leaves the state as it was, or a state whose `checkpoint()` restores to the
/// same `checkpoint()` text, which the other view refuses, and which then processes frames
/// exactly as its restored copy does.
pub fn check_checkpoint_restore(data: &[u8]) {
    let Some((&p, rest)) = data.split_first() else {
        return;
    };
    let config = Config {
        view: if p & 1 == 0 {
            View::Frames
        } else {
            View::Pressure
        },
        max_sessions: if p & 2 != 0 {
            1 + ((p >> 2) & 3) as usize
        } else {
            DEFAULT_MAX_SESSIONS
        },
        ..Config::default()
    };
    let text = String::from_utf8_lossy(rest);

    // Some state first, so that "unchanged on error" means something.
    let warm: Vec<Rec> = [
        r#"{"type":"user/message","id":"w0","seq":0,"message":"hi"}"#,
        r#"{"type":"thinking/tokens","id":"w1","seq":1,"timestamp":"t1","estimated_tokens_delta":2}"#,
    ]
    .iter()
    .map(|v| (Some(b"warm".to_vec()), v.as_bytes().to_vec()))
    .collect();
    let mut proc = Processor::new(&config);
    proc.process(&inputs(&warm)).expect("a valid batch");
    let before = proc.checkpoint();

    match proc.restore(&text) {
        Err(e) => {
            assert!(!e.0.is_empty(), "an error says why");
            assert_eq!(
                proc.checkpoint(),
                before,
                "a refused checkpoint changed the state"
            );
        }
        Ok(()) => {
            let cp = proc.checkpoint();
            assert!(proc.sessions() <= config.max_sessions.max(1));
            let mut copy = restored(&config, &cp);
            assert_eq!(
                copy.checkpoint(),
                cp,
                "checkpoint → restore → checkpoint changed it"
            );
            let other_view = match config.view {
                View::Frames => View::Pressure,
                View::Pressure => View::Frames,
            };
            let mut other = Processor::new(&Config {
                view: other_view,
                ..config.clone()
            });
            assert!(
                other.restore(&cp).is_err(),
                "the other view took this checkpoint"
            );

            let recs = probe(config.view, &cp);
            let records = inputs(&recs);
            // The pressure view frame by frame, so that every state it passes through is
            // checkpointed; the frames view in one invocation, so that its counters can fold.
            let pages: Vec<&[RecordIn]> = match config.view {
                View::Frames => vec![&records[..]],
                View::Pressure => records.chunks(1).collect(),
            };
            for page in pages {
                let out = proc.process(page).expect("malformed=pass never fails");
                assert_eq!(
                    Ok(&out),
                    copy.process(page).as_ref(),
                    "a restored copy answered differently"
                );
                let after = proc.checkpoint();
                assert_eq!(copy.checkpoint(), after, "a restored copy's state diverged");
                match config.view {
                    View::Frames => check_frames_invocation(&config, page, &out),
                    View::Pressure => {
                        check_pressure_invocation(page, &out, &after);
                    }
                }
                assert_round_trip(&config, &after);
            }
        }
    }
}
