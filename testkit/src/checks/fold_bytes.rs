//! Target `fold_bytes`: arbitrary records through [`Processor::process`], in invocations.

use agent_fold_core::{Config, Malformed, Processor, Projection, Subagents, View, is_object};

use super::{
    assert_round_trip, check_frames_invocation, check_pressure_invocation, check_readers, inputs,
    pick, restored, small_cap,
};
use crate::GenRecord;

/// Params from the first two bytes of a `fold_bytes` input.
pub fn fold_bytes_config(p0: u8, p1: u8) -> Config {
    let defaults = Config::default();
    Config {
        view: pick(p0, 1, View::Frames, View::Pressure),
        subagents: pick(p0, 2, Subagents::Drop, Subagents::Keep),
        malformed: [
            Malformed::Pass,
            Malformed::Drop,
            Malformed::Fail,
            Malformed::Pass,
        ][((p0 >> 2) & 3) as usize],
        max_sessions: small_cap(p0, 16, 5),
        counter_type: pick(p1, 4, defaults.counter_type.clone(), "user/message".into()),
        capacity: (p1 & 8 != 0).then_some(1000),
        projection: [
            Projection::Rebased,
            Projection::Calibrated,
            Projection::Fixed,
            Projection::Rebased,
        ][((p1 >> 4) & 3) as usize],
        ..defaults
    }
}

/// The invocations of a `fold_bytes` input: records are lines, an empty line ends an
/// invocation; with `keyed`, a record `KEY\x1fVALUE` carries a Fluvio key.
pub fn fold_bytes_invocations(body: &[u8], keyed: bool) -> Vec<Vec<GenRecord>> {
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
/// invocations (bit 1), counter type `user/message` (bit 2), a default capacity (bit 3),
/// `projection` (bits 4–5: rebased, calibrated, fixed, rebased); then records, one a line, an
/// empty line between invocations.
///
/// Never panics; every record meets [`check_readers`]; per invocation the frames view meets
/// [`check_frames_invocation`] (contract §5's identity), the pressure view's records agree with its
/// checkpoint; a refused invocation (`malformed=fail`) names the first malformed record and
/// changes nothing; checkpoints round-trip, and a processor restored from one between
/// invocations answers the same.
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
                let first = records.iter().position(|r| !is_object(r.value));
                assert_eq!(
                    Some(e.index),
                    first,
                    "the error names the first malformed record"
                );
                assert_eq!(after, before, "a refused invocation changed the state");
            }
            Ok(out) => {
                if config.malformed == Malformed::Fail {
                    assert!(records.iter().all(|r| is_object(r.value)));
                }
                match config.view {
                    View::Frames => check_frames_invocation(&config, &records, &out),
                    View::Pressure => {
                        check_pressure_invocation(&records, &out, &after, &config);
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
