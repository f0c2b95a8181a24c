//! Target `fold_invariants`: contract §6 invariants 1–5 over generated logs.

use std::collections::HashMap;
use std::ops::Range;

use agent_fold_core::testing::compact_counters_with;
use agent_fold_core::{Config, Frame, Malformed, Processor, RecordIn, Subagents, session_key};
use serde_json::{Value, json};

use super::frames::{frames_of, main_counter};
use super::{assert_look_back_matches, check_frames_invocation, inputs, materialise, pick, replay};
use crate::{Drawn, GenLog, GenRecord};

/// One invocation of a fresh processor over `recs`.
fn fold_once(config: &Config, recs: &[GenRecord]) -> Vec<GenRecord> {
    let records = inputs(recs);
    let out = Processor::new(config)
        .process(&records)
        .expect("malformed=pass/drop never fails an invocation");
    check_frames_invocation(config, &records, &out);
    materialise(&records, &out)
}

fn frames_config(p: u8) -> Config {
    let subagents = pick(p, 1, Subagents::Drop, Subagents::Keep);
    Config {
        subagents,
        malformed: pick(p, 2, Malformed::Pass, Malformed::Drop),
        ..Config::default()
    }
}

/// Per session: Σ `estimated_tokens_delta` and Σ counters (by `folded_frames`) of main counters.
fn counter_sums(config: &Config, recs: &[GenRecord]) -> HashMap<Vec<u8>, (u128, u128)> {
    let mut sums: HashMap<Vec<u8>, (u128, u128)> = HashMap::new();
    for r in inputs(recs) {
        let v = Frame::parse(r.value);
        if main_counter(config, v.as_ref()) {
            let v = v.expect("a counter parsed");
            let s = sums
                .entry(session_key(r.key, Some(&v)).into_owned())
                .or_default();
            s.0 += v.delta().unwrap_or(0) as u128;
            s.1 += frames_of(&v) as u128;
        }
    }
    sums
}

/// The records that are no main counter, in order (sub-agent and malformed records removed
/// when the config drops them).
fn non_counters(config: &Config, recs: &[GenRecord]) -> Vec<GenRecord> {
    recs.iter()
        .filter(|(_, v)| match Frame::parse(v) {
            None => config.malformed != Malformed::Drop,
            Some(v) if v.is_subagent() => config.subagents == Subagents::Keep,
            Some(v) => v.kind() != Some(config.counter_type.as_str()),
        })
        .cloned()
        .collect()
}

/// The log with every malformed record replaced by a main non-counter object with an id, so
/// that the page API (which reads `serde_json::Value`s) sees every frame.
fn objects_only(recs: &[GenRecord]) -> Vec<GenRecord> {
    recs.iter()
        .enumerate()
        .map(|(n, (k, v))| match Frame::parse(v) {
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
    compact_counters_with(&mut out, config);
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

fn normalised(bytes: &[u8]) -> String {
    let v: Value = serde_json::from_slice(bytes).expect("generated frames are JSON");
    v.to_string()
}

/// `fold_invariants`: a generated log ([`GenLog`], after one params byte: bit 0 sub-agents
/// keep, bit 1 malformed drop), replayed in the invocations its `batches` cut, meets contract §6
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

    let cut = replay(
        &mut Processor::new(&config),
        &records,
        log.batches(recs.len()),
        |_, page, out| check_frames_invocation(&config, page, out),
    );
    let whole = fold_once(&config, &recs);
    assert_look_back_matches(&config, &records, &log.batches(recs.len()));

    for (name, out) in [("cut run", &cut), ("whole log", &whole)] {
        // 1. Conservation.
        let sums = counter_sums(&config, &recs);
        assert_eq!(counter_sums(&config, out), sums, "conservation, {name}");
        // 2. Non-counters byte-identical, in order.
        let others = non_counters(&config, &recs);
        assert_eq!(non_counters(&config, out), others, "non-counters, {name}");
    }
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
        let v = Frame::parse(r.value).expect("objects only");
        let s = by_session
            .entry(session_key(r.key, Some(&v)).into_owned())
            .or_default();
        s.0.push(serde_json::from_slice(r.value).expect("generated frames are JSON"));
    }
    for (k, v) in &streamed {
        let r = RecordIn::new(k.as_deref(), v);
        let view = Frame::parse(v).expect("objects only");
        let s = by_session
            .get_mut(&*session_key(r.key, Some(&view)))
            .expect("a known session");
        s.1.push(normalised(v));
    }
    for (page, stream) in by_session.values() {
        let mut folded = page.clone();
        compact_counters_with(&mut folded, &config);
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
