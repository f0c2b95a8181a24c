//! The frames view, one invocation: contract §2 and the §5 accounting identity.

use std::collections::HashMap;

use agent_fold_core::testing::{Field, MAX_SAFE};
use agent_fold_core::{
    Config, Emit, Frame, MAX_KEY_LEN, Malformed, RecordIn, Subagents, session_key,
};
use serde_json::Value;

use super::show;

/// Whether a record is a main counter of the config's type.
pub(super) fn main_counter(config: &Config, v: Option<&Frame>) -> bool {
    v.is_some_and(|v| !v.is_subagent() && v.kind() == Some(config.counter_type.as_str()))
}

/// How many original counters a counter stands for.
pub(super) fn frames_of(v: &Frame) -> u64 {
    match v.folded_frames() {
        Field::Valid(n) => n,
        _ => 1,
    }
}

/// Checks one successful frames-view invocation against its input:
/// - records come out in input order, each at most once, none invented;
/// - non-counters pass byte for byte; dropped sub-agent and malformed records are gone;
/// - every counter either passes, or is absorbed by (or is the newest of) a fold of ≥ 2
///   foldable counters of its session that closes within this invocation (never held back),
///   with nothing of its session emitted in between; a session key over the limit keeps no
///   state, so its counters pass;
/// - a folded frame is its newest counter with `estimated_tokens_delta`, `folded_from` and
///   `folded_frames` set to the part's sums, in place or appended in that order;
/// - the accounting identity of contract §5: for each fold
///   `members = folded_frames out − Σ (folded_frames in − 1)`, and in total
///   `records in = records out that are no folded frame + Σ folded_frames out −
///   Σ (folded_frames in − 1) + sub-agent frames dropped + malformed dropped`.
pub fn check_frames_invocation(config: &Config, records: &[RecordIn], out: &[Emit]) {
    let n = records.len();
    let views: Vec<Option<Frame>> = records.iter().map(|r| Frame::parse(r.value)).collect();
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
        let session = session_key(records[i].key, view).into_owned();
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
            Some(v) if v.is_subagent() => match config.subagents {
                Subagents::Drop => {
                    assert!(emitted[i].is_none(), "sub-agent record {i} not dropped");
                    sub_dropped += 1;
                }
                Subagents::Keep => assert!(passed, "kept sub-agent record {i} not passed"),
            },
            Some(v)
                if v.kind() != Some(config.counter_type.as_str())
                    || session.len() > MAX_KEY_LEN =>
            {
                assert!(
                    passed,
                    "record {i} (no counter, or a session key over the limit) not passed unchanged"
                );
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
        "contract §5 accounting: records in ≠ plain out {plain_out} + Σ folded_frames out {frames_out} \
         − Σ (folded_frames in − 1) {extra_in} + sub-agent dropped {sub_dropped} + malformed \
         dropped {malformed_dropped}"
    );
}

/// One folded frame against the counters it stands for (page indices `members`, oldest first).
/// Returns its `folded_frames` and Σ (folded_frames − 1) over its members.
fn check_fold(views: &[Option<Frame>], members: &[usize], bytes: &[u8]) -> (u128, u128) {
    let newest_at = *members.last().expect("the newest is a member");
    assert!(
        members.len() >= 2,
        "counter {newest_at} was rewritten, but a foldable part of one is served as itself"
    );
    let (mut delta, mut frames, mut extra) = (0u128, 0u128, 0u128);
    for &m in members {
        let v = views[m].as_ref().expect("a member parsed");
        assert!(
            v.stamp().is_some()
                && v.delta().is_some()
                && v.folded_frames() != Field::Invalid
                && v.folded_from() != Field::Invalid
                && v.places().iter().all(|p| !p.repeated),
            "counter {m} cannot be folded (unstamped, bad delta or fold fields) but was"
        );
        delta += v.delta().unwrap_or(0) as u128;
        frames += frames_of(v) as u128;
        extra += frames_of(v) as u128 - 1;
    }
    assert!(
        delta <= MAX_SAFE as u128 && frames <= MAX_SAFE as u128,
        "a fold carried its sums past 2^53"
    );
    let newest = views[newest_at].as_ref().expect("the newest parsed");
    let oldest = views[members[0]].as_ref().expect("the oldest parsed");
    let from = match oldest.folded_from() {
        Field::Valid(raw) => raw,
        _ => oldest.stamp().expect("checked above"),
    };
    let Some(folded) = Frame::parse(bytes) else {
        panic!("folded frame is not a JSON object: {}", show(bytes))
    };
    assert_eq!(folded.delta().map(u128::from), Some(delta), "folded delta");
    assert_eq!(
        folded.folded_frames(),
        Field::Valid(frames as u64),
        "folded_frames"
    );
    assert_eq!(folded.folded_from(), Field::Valid(from), "folded_from");
    assert_eq!(
        folded.stamp(),
        newest.stamp(),
        "a folded frame keeps the newest stamp"
    );
    assert_eq!(folded.kind(), newest.kind());
    assert_eq!(folded.session_id(), newest.session_id());
    assert!(!folded.is_subagent());

    // Every other field of the newest counter is kept, in order; the three fold fields are
    // replaced in place, else appended in the order delta, folded_from, folded_frames.
    if let (Ok(Value::Object(mut want)), Ok(Value::Object(got))) = (
        serde_json::from_slice::<Value>(newest.bytes()),
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
