//! The frames view's checks: the contract §5 accounting identity, order, briefs for hand-written
//! assertions, and generated logs.

use agent_fold_testkit::{Delta, Drawn, GenFrame, GenLog};
use serde_json::Value;

use super::{Params, Rec, param, render};

/// A record's value as a JSON object, if it is one.
pub(crate) fn object(r: &Rec) -> Option<serde_json::Map<String, Value>> {
    match serde_json::from_slice::<Value>(&r.value) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// contract §1: `extras.parent_tool_use_id` is a string.
pub(crate) fn is_subagent(obj: &serde_json::Map<String, Value>) -> bool {
    obj.get("extras")
        .and_then(|e| e.get("parent_tool_use_id"))
        .is_some_and(Value::is_string)
}

/// contract §1: the record's session: its key, else its frame's `session_id` string, else `""`.
pub(crate) fn session_of(r: &Rec) -> Vec<u8> {
    if let Some(k) = &r.key {
        return k.clone();
    }
    object(r)
        .and_then(|o| o.get("session_id").and_then(Value::as_str).map(Into::into))
        .map(String::into_bytes)
        .unwrap_or_default()
}

/// `folded_frames`, when the record is a main counter of `counter_type` carrying a valid one
/// (an integer in 1..=2^53): a folded frame, which stands for that many counters.
pub(crate) fn folded_frames(r: &Rec, counter_type: &str) -> Option<u64> {
    folded_frames_of(object(r).as_ref()?, counter_type)
}

/// [`folded_frames`] of a parsed record.
pub(crate) fn folded_frames_of(
    o: &serde_json::Map<String, Value>,
    counter_type: &str,
) -> Option<u64> {
    if is_subagent(o) || o.get("type").and_then(Value::as_str) != Some(counter_type) {
        return None;
    }
    o.get("folded_frames")?
        .as_u64()
        .filter(|n| (1..=1u64 << 53).contains(n))
}

/// Asserts the contract §5 accounting identity of one frames-view invocation:
/// `records in = records out that are no folded frame + Σ folded_frames of folded frames out
///  − Σ folded_frames of folded frames in + folded frames in + sub-agent frames dropped +
///  malformed dropped`.
///
/// The `+ folded frames in` term is not in contract §5 as written; without it the identity fails
/// for any input that already carries a folded frame (one passing through unchanged counts 0
/// on the right). Each folded frame in is itself one record in.
pub(crate) fn check_accounting(params: Params, input: &[Rec], output: &[Rec]) {
    let counter_type = param(params, "counter_type", "thinking/tokens");
    let drop_subs = param(params, "subagents", "drop") == "drop";
    let drop_bad = param(params, "malformed", "pass") == "drop";
    let mut folded_in = 0i128;
    let mut frames_in = 0i128;
    let mut subs_dropped = 0i128;
    let mut bad_dropped = 0i128;
    for r in input {
        let o = object(r);
        match &o {
            None if drop_bad => bad_dropped += 1,
            Some(o) if drop_subs && is_subagent(o) => subs_dropped += 1,
            _ => {}
        }
        if let Some(f) = o.and_then(|o| folded_frames_of(&o, counter_type)) {
            folded_in += 1;
            frames_in += f as i128;
        }
    }
    let mut plain_out = 0i128;
    let mut frames_out = 0i128;
    for r in output {
        match folded_frames(r, counter_type) {
            Some(f) => frames_out += f as i128,
            None => plain_out += 1,
        }
    }
    let right = plain_out + frames_out + folded_in + subs_dropped + bad_dropped - frames_in;
    assert_eq!(
        input.len() as i128,
        right,
        "accounting: out {plain_out} plain + {frames_out} in folded frames, in {folded_in} folded \
         frames of {frames_in}, dropped {subs_dropped} sub-agent and {bad_dropped} malformed\n\
         in:\n{}out:\n{}",
        render(input),
        render(output)
    );
}

/// Whether bytes are one JSON object (what contract §1 calls a record, and not malformed).
pub(crate) fn is_json_object(bytes: &[u8]) -> bool {
    matches!(serde_json::from_slice::<Value>(bytes), Ok(Value::Object(_)))
}

/// One record in brief, for assertions written by hand: `id` (or the raw text of a record
/// that is no object), then ` Δ{estimated_tokens_delta}`, ` from {folded_from}` and
/// ` ×{folded_frames}` where present.
pub(crate) fn brief(r: &Rec) -> String {
    let Some(o) = object(r) else {
        return String::from_utf8_lossy(&r.value).into_owned();
    };
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    let mut s = o.get("id").map_or_else(|| "?".into(), text);
    if let Some(d) = o.get("estimated_tokens_delta") {
        s.push_str(&format!(" Δ{}", text(d)));
    }
    if let Some(f) = o.get("folded_from") {
        s.push_str(&format!(" from {}", text(f)));
    }
    if let Some(n) = o.get("folded_frames") {
        s.push_str(&format!(" ×{}", text(n)));
    }
    s
}

pub(crate) fn briefs(records: &[Rec]) -> Vec<String> {
    records.iter().map(brief).collect()
}

/// Asserts contract §2 "nothing else changes" on one invocation: the output is the input in order,
/// less removed records, each record byte for byte with its key, except folded frames — a
/// counter whose `id` is that of an input counter standing later than everything folded into
/// it. Returns, for each output record, the index of the input record it stands for.
pub(crate) fn check_in_order(input: &[Rec], output: &[Rec], counter_type: &str) -> Vec<usize> {
    // (is a counter, its id), parsed once per record.
    let info = |r: &Rec| match object(r) {
        Some(o) => (
            o.get("type").and_then(Value::as_str) == Some(counter_type),
            o.get("id").cloned(),
        ),
        None => (false, None),
    };
    let ins: Vec<(bool, Option<Value>)> = input.iter().map(info).collect();
    let mut at = 0;
    let mut map = Vec::with_capacity(output.len());
    for (j, out) in output.iter().enumerate() {
        let (out_counter, out_id) = info(out);
        let found = (at..input.len()).find(|&i| {
            let inp = &input[i];
            inp.key == out.key
                && (inp.value == out.value
                    || (out_counter && ins[i].0 && out_id.is_some() && ins[i].1 == out_id))
        });
        let Some(i) = found else {
            panic!(
                "output record {j} is not an input record after input {at}, nor a fold of one:\n{}\nin:\n{}out:\n{}",
                render(std::slice::from_ref(out)),
                render(input),
                render(output)
            );
        };
        map.push(i);
        at = i + 1;
    }
    map
}

/// A generated log (`testgen`, the fuzz targets' generator) of `frames` frames: the frames of
/// consecutive seeds, with the first one's key mode and the cuts of all.
pub(crate) fn gen_log(seed: u64, frames: usize) -> GenLog {
    let mut log = GenLog::from_seed(seed << 20, frames * 4 + 16);
    let mut k = 0;
    while log.frames.len() < frames {
        k += 1;
        let more = GenLog::from_seed((seed << 20) + k, frames * 4 + 16);
        log.frames.extend(more.frames);
        log.cuts.extend(more.cuts);
    }
    log.frames.truncate(frames);
    log
}

/// The generator's counters are mostly unfoldable (its deltas and fold fields explore the bad
/// cases), so runs that fold are rare. This keeps every `keep`-th counter as generated and
/// makes the others foldable (stamped, a small delta, a valid folded_frames/folded_from).
pub(crate) fn heal(mut log: GenLog, keep: usize) -> GenLog {
    let mut n = 0;
    for f in &mut log.frames {
        if let GenFrame::Counter {
            delta,
            stamped,
            folded,
            ..
        } = f
        {
            n += 1;
            if n % keep == 0 {
                continue;
            }
            *stamped = true;
            if !matches!(delta, Delta::Small(_)) {
                *delta = Delta::Small(n as u8);
            }
            if let Some((frames, from_ok)) = folded {
                *frames = (*frames).max(1);
                *from_ok = true;
            }
        }
    }
    log
}

/// A generated log's records.
pub(crate) fn gen_records(log: &GenLog) -> Vec<Rec> {
    log.records()
        .into_iter()
        .map(|(key, value)| Rec { key, value })
        .collect()
}
