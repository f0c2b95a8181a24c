//! contract §6 invariants 1–5 of the frames view, and the §5 accounting identity, over generated
//! logs (`agent_fold_testkit::GenLog`, the generator the fuzz targets use) of many seeds, natively.

use std::collections::BTreeMap;

use crate::common::frames::*;
use crate::common::*;
use agent_fold_core::testing::compact_counters;
use agent_fold_testkit::{Delta, Drawn, GenFrame, GenLog};
use serde_json::Value;

const SEEDS: u64 = 300;
/// Frames per generated log (over up to 4 sessions).
const FRAMES: usize = 40;
const COUNTER: &str = "thinking/tokens";

/// The param sets the seeds take in turn.
const PARAMS: [Params; 4] = [
    &[],
    &[("subagents", "keep")],
    &[("malformed", "drop")],
    &[("subagents", "keep"), ("malformed", "drop")],
];

/// The generated log in one session, its malformed records turned into counters: runs long
/// enough for folds to meet.
fn one_session(mut log: GenLog) -> GenLog {
    for f in &mut log.frames {
        match f {
            GenFrame::Counter { session, .. }
            | GenFrame::Other { session, .. }
            | GenFrame::Sub { session, .. } => *session = 0,
            GenFrame::Malformed { bytes, .. } => {
                *f = GenFrame::Counter {
                    session: 0,
                    delta: Delta::Small(*bytes),
                    stamped: true,
                    folded: None,
                }
            }
        }
    }
    log
}

/// One fresh instance over `pages`, the outputs per invocation.
fn fold_pages(params: Params, pages: &[Vec<Rec>]) -> Vec<Vec<Rec>> {
    native_pages(&mut processor(params, None), pages)
        .into_iter()
        .map(|o| o.expect("no failure without malformed=fail"))
        .collect()
}

/// One fresh instance, one invocation.
fn fold_once(params: Params, records: &[Rec]) -> Vec<Rec> {
    fold_pages(params, &[records.to_vec()]).remove(0)
}

fn is_counter(o: &serde_json::Map<String, Value>) -> bool {
    o.get("type").and_then(Value::as_str) == Some(COUNTER)
}

/// Per session: Σ `estimated_tokens_delta` (as integers; a bad one passes unchanged, so any
/// reading of it that is the same in and out will do) and Σ counters, by `folded_frames`, of
/// main counters.
fn tallies(records: &[Rec]) -> BTreeMap<Vec<u8>, (u128, u128)> {
    let mut t = BTreeMap::new();
    for r in records {
        let Some(o) = object(r) else { continue };
        if !is_counter(&o) || is_subagent(&o) {
            continue;
        }
        let e: &mut (u128, u128) = t.entry(session_of(r)).or_default();
        e.0 += o
            .get("estimated_tokens_delta")
            .and_then(Value::as_u64)
            .unwrap_or(0) as u128;
        e.1 += folded_frames_of(&o, COUNTER).unwrap_or(1) as u128;
    }
    t
}

/// The records that are no counter and are not removed before the fold under `params`, with
/// their keys, in order.
fn non_counters(params: Params, records: &[Rec]) -> Vec<Rec> {
    let drop_bad = param(params, "malformed", "pass") == "drop";
    let drop_subs = param(params, "subagents", "drop") == "drop";
    records
        .iter()
        .filter(|r| match object(r) {
            None => !drop_bad,
            Some(o) => !is_counter(&o) && (!drop_subs || !is_subagent(&o)),
        })
        .cloned()
        .collect()
}

/// Invariants 1 and 2, the accounting identity and the order of what passes, on one
/// invocation.
fn check_invocation(seed: u64, params: Params, input: &[Rec], output: &[Rec]) {
    check_accounting(params, input, output);
    check_in_order(input, output, COUNTER);
    assert_eq!(
        tallies(input),
        tallies(output),
        "seed {seed}: conservation of Σ delta and Σ counters\nin:\n{}out:\n{}",
        render(input),
        render(output)
    );
    assert_eq!(
        render(&non_counters(params, input)),
        render(&non_counters(params, output)),
        "seed {seed}: every non-counter frame passes byte-identical, in order"
    );
}

#[test]
fn invariants_1_to_4_and_accounting_over_generated_logs() {
    let mut folded = 0;
    let mut records_seen = 0;
    for seed in 0..SEEDS {
        let params = PARAMS[seed as usize % PARAMS.len()];
        // Odd seeds: mostly foldable counters.
        let log = match seed % 2 {
            0 => gen_log(seed, FRAMES),
            _ => heal(gen_log(seed, FRAMES), 4),
        };
        let input = gen_records(&log);
        records_seen += input.len();

        // The whole log as one invocation.
        let whole = fold_once(params, &input);
        check_invocation(seed, params, &input, &whole);
        folded += whole
            .iter()
            .filter(|r| folded_frames(r, COUNTER).is_some())
            .count();

        // (3) Idempotence: folding the folded page changes nothing.
        assert_eq!(
            render(&fold_once(params, &whole)),
            render(&whole),
            "seed {seed}: folding a folded page"
        );

        // (4) Batch-cut invariance, over the generator's cuts and over invocations of 1 and 2.
        let mut splits: Vec<Vec<Vec<Rec>>> = vec![
            log.batches(input.len())
                .into_iter()
                .map(|r| input[r].to_vec())
                .collect(),
        ];
        splits.push(split(&input, 1));
        splits.push(split(&input, 2));
        for (n, pages) in splits.iter().enumerate() {
            let outs = fold_pages(params, pages);
            for (page, out) in pages.iter().zip(&outs) {
                // Every check on the generator's cuts; the accounting on the others.
                if n == 0 {
                    check_invocation(seed, params, page, out);
                } else {
                    check_accounting(params, page, out);
                }
            }
            let concat: Vec<Rec> = outs.concat();
            assert_eq!(
                render(&fold_once(params, &concat)),
                render(&whole),
                "seed {seed}: fold(concat(outputs over {} invocations)) != fold(whole)",
                pages.len()
            );
        }
    }
    // The generator reaches the cases that matter.
    assert_eq!(records_seen, FRAMES * SEEDS as usize);
    assert!(folded > 2 * SEEDS as usize, "only {folded} folds");
}

/// A session's log as the page API takes it: objects as they are, anything else (not JSON,
/// not an object) as a value that is no object, a main non-counter there as in the stream.
fn as_value(r: &Rec) -> Value {
    serde_json::from_slice(&r.value)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&r.value).into_owned()))
}

/// The generated log split by session (contract §1), each in log order.
fn sessions(input: &[Rec]) -> BTreeMap<Vec<u8>, Vec<Rec>> {
    let mut by = BTreeMap::<Vec<u8>, Vec<Rec>>::new();
    for r in input {
        by.entry(session_of(r)).or_default().push(r.clone());
    }
    by
}

/// Which of `page`'s positions each output of `compact_counters` stands at: outputs are in
/// order, each equal to its input or a fold standing at its newest counter (same `id`).
fn positions(page: &[Value], out: &[Value]) -> Vec<usize> {
    let mut at = 0;
    out.iter()
        .map(|o| {
            let i = (at..page.len())
                .find(|&i| {
                    page[i] == *o || (o.get("id").is_some() && page[i].get("id") == o.get("id"))
                })
                .expect("each output stands for an input, in order");
            at = i + 1;
            i
        })
        .collect()
}

/// The folds of the page `log[cut..end]`, as intervals of log positions of the original
/// counters each covers.
fn folded_spans(log: &[Value], cut: usize, end: usize) -> Vec<(usize, usize)> {
    let page = log[cut..end].to_vec();
    let mut out = page.clone();
    compact_counters(&mut out);
    let main_counter = |v: &Value| {
        v.get("type").and_then(Value::as_str) == Some(COUNTER)
            && !v
                .get("extras")
                .and_then(|e| e.get("parent_tool_use_id"))
                .is_some_and(Value::is_string)
    };
    let units = |v: &Value| {
        v.get("folded_frames")
            .and_then(Value::as_u64)
            .filter(|n| *n >= 1)
            .unwrap_or(1)
    };
    let pos = positions(&page, &out);
    let mut spans = Vec::new();
    let mut prev = None;
    for (o, &j) in out.iter().zip(&pos) {
        if *o != page[j] {
            // A fold: every main counter after the previous output, through this one.
            let from = prev.map_or(0, |p| p + 1);
            let members: Vec<usize> = (from..=j).filter(|&p| main_counter(&page[p])).collect();
            assert!(members.len() >= 2, "a fold of {} counters", members.len());
            let frames: u64 = members.iter().map(|&p| units(&page[p])).sum();
            assert_eq!(
                o["folded_frames"], frames,
                "folded_frames counts its counters"
            );
            spans.push((cut + members[0], cut + j));
        }
        prev = Some(j);
    }
    spans
}

#[test]
fn invariant_5_folds_of_pages_with_different_front_cuts_never_cross() {
    let mut compared = 0;
    let mut nested = 0;
    for seed in 0..SEEDS / 2 {
        let log = heal(one_session(gen_log(seed, FRAMES)), 6);
        let values: Vec<Value> = gen_records(&log).iter().map(as_value).collect();
        let mut spans = std::collections::BTreeSet::new();
        // Every front cut; the whole rest of the log, and its first half (a back cut too, so
        // that runs cut short by a page's end fold into shorter spans).
        let len = values.len();
        for cut in 0..len {
            spans.extend(folded_spans(&values, cut, len));
            spans.extend(folded_spans(&values, cut, cut + (len - cut) / 2));
        }
        let spans: Vec<(usize, usize)> = spans.into_iter().collect();
        for (i, a) in spans.iter().enumerate() {
            for b in &spans[i + 1..] {
                let nest = (a.0 <= b.0 && b.1 <= a.1) || (b.0 <= a.0 && a.1 <= b.1);
                let disjoint = a.1 < b.0 || b.1 < a.0;
                assert!(nest || disjoint, "seed {seed}: folds {a:?} and {b:?} cross");
                compared += 1;
                nested += usize::from(nest);
            }
        }
    }
    assert!(
        compared > SEEDS as usize,
        "only {compared} pairs of folds compared"
    );
    assert!(
        nested > SEEDS as usize / 4,
        "only {nested} pairs of distinct nested folds"
    );
}

#[test]
fn page_api_and_stream_agree_on_one_session_page() {
    for seed in 0..SEEDS {
        let log = match seed % 2 {
            0 => gen_log(seed, FRAMES),
            _ => heal(gen_log(seed, FRAMES), 4),
        };
        for (session, page) in sessions(&gen_records(&log)) {
            let streamed = fold_once(&[], &page);
            let mut values: Vec<Value> = page.iter().map(as_value).collect();
            compact_counters(&mut values);
            let streamed_values: Vec<Value> = streamed.iter().map(as_value).collect();
            assert_eq!(
                streamed_values,
                values,
                "seed {seed}, session {:?}",
                String::from_utf8_lossy(&session)
            );
            // Byte for byte: the generator writes compact JSON, as serde_json does.
            for (r, v) in streamed.iter().zip(&values) {
                if v.is_object() {
                    assert_eq!(
                        String::from_utf8_lossy(&r.value),
                        v.to_string(),
                        "seed {seed}"
                    );
                }
            }
        }
    }
}
