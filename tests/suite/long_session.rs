//! A session that never ends (contract §3.7, `max_nodes`): past the bound its oldest messages
//! go and it is partial from there — `messageTokens` null, the projection what it was, a
//! replacement from a dropped message a front cut — natively and in the engine alike, in a
//! store a session of any length fits in, its checkpoints holding the bound.

use crate::common::pressure::values_of;
use crate::common::*;
use crate::harness::frame;
use agent_fold::module::Instance;
use agent_fold_core::Processor;
use serde_json::{Value, json};

/// One session `s`: a user message at every seq, a reading every 10th (growing with the
/// surface), and at `compact_at` a replacement of seqs 1 through `compact_at - 5`.
fn session(n: u64, compact_at: Option<u64>) -> Vec<Rec> {
    (0..n)
        .map(|seq| {
            let (kind, extra) = match seq {
                _ if Some(seq) == compact_at => (
                    "user/message",
                    json!({"replaces": {"from_seq": 1, "to_seq": seq - 5},
                           "message": {"role": "user", "content": "summary"}}),
                ),
                _ if seq % 10 == 9 => (
                    "assistant/message",
                    json!({"message": {"role": "assistant", "content": format!("ok {seq}")},
                           "usage": {"input_tokens": 3000 + 11 * seq}}),
                ),
                _ => (
                    "user/message",
                    json!({"message": {"role": "user", "content":
                        format!("message number {seq} of a session that never compacts")}}),
                ),
            };
            rec(Some("s"), frame("s", seq, kind, extra).trim_end())
        })
        .collect()
}

/// The pressure records of `records` natively and in the engine (asserted alike), in
/// invocations of 64.
fn pressure(params: Params, records: &[Rec]) -> Vec<Value> {
    let out: Vec<Rec> = run_both(params, None, &split(records, 64))
        .into_iter()
        .flat_map(|b| b.expect("no invocation fails"))
        .collect();
    values_of(&out)
}

#[test]
fn a_session_past_max_nodes_goes_on_partial_projecting_what_an_unbounded_one_does() {
    let records = session(2_000, Some(1_500));
    let bounded = pressure(
        &[
            ("emit", "pressure"),
            ("capacity", "200000"),
            ("max_nodes", "100"),
        ],
        &records,
    );
    let whole = pressure(&[("emit", "pressure"), ("capacity", "200000")], &records);
    assert!(
        bounded.iter().all(|v| v["type"] == "context/pressure"),
        "no errors: {:?}",
        bounded.iter().find(|v| v["type"] != "context/pressure")
    );
    let at = |out: &[Value], seq: u64| -> Value {
        out.iter()
            .rev()
            .find(|v| v["seq"].as_u64().is_some_and(|s| s <= seq))
            .cloned()
            .unwrap()
    };
    for seq in 0..2_000 {
        let (b, w) = (at(&bounded, seq), at(&whole, seq));
        if seq < 100 {
            // Within the bound: the very records.
            assert_eq!(b, w, "seq {seq}");
        } else if seq < 1_500 {
            assert_eq!(b["partial"], true, "seq {seq}: {b}");
            assert_eq!(b["messageTokens"], Value::Null, "seq {seq}: {b}");
            assert_eq!(
                (&b["pressureTokens"], &b["projectedTokens"]),
                (&w["pressureTokens"], &w["projectedTokens"]),
                "seq {seq}: what changed since the reading is what the whole surface says"
            );
        } else if seq < 1_509 {
            // The replacement starts below what the session still holds: a front cut, no
            // error, and no projection until the next reading.
            assert_eq!(b["projectedTokens"], Value::Null, "seq {seq}: {b}");
        } else {
            assert_eq!(b["pressureTokens"], w["pressureTokens"], "seq {seq}");
            assert!(b["projectedTokens"].is_u64(), "seq {seq}: {b}");
        }
    }
}

#[test]
fn a_bounded_session_checkpoints_its_bound_and_goes_on_as_if_never_stopped() {
    let params = [
        ("emit", "pressure"),
        ("capacity", "200000"),
        ("max_nodes", "50"),
    ];
    let records = session(3_000, None);
    let (head, tail) = records.split_at(1_234);
    let mut whole = processor(&params, None);
    let want = native_pages(&mut whole, &[head.to_vec(), tail.to_vec()]);
    let mut first = processor(&params, None);
    native_pages(&mut first, &[head.to_vec()]);
    let text = first.checkpoint();
    let cp: Value = serde_json::from_str(&text).unwrap();
    let surface = cp["sessions"][0]["surface"].as_array().unwrap();
    assert_eq!(surface.len(), 50, "the checkpoint holds the bound");
    let mut second = Processor::from_params(params).unwrap();
    second.restore(&text).unwrap();
    let got = native_pages(&mut second, &[tail.to_vec()]);
    assert_eq!(got[0], want[1]);
}

/// One session of a million messages at the default params, in a store of 24 MiB: without a
/// bound its surface alone (16 bytes a node, its arrays doubling) outgrows the store and the
/// engine traps; at `max_nodes`' default it holds.
#[test]
fn a_million_message_session_fits_a_small_store_at_the_default_bound() {
    let params = owned(&[("emit", "pressure"), ("capacity", "200000")]);
    let mut i = Instance::in_store(wasm(), &params, Some(24 << 20)).expect("the module loads");
    let n = 1_000_000u64;
    let mut last = Vec::new();
    for start in (0..n).step_by(10_000) {
        let page: Vec<Rec> = (start..start + 10_000)
            .map(|seq| {
                let line = if seq == n - 1 {
                    format!(
                        r#"{{"type":"assistant/message","session_id":"s","seq":{seq},"message":{{"role":"assistant","content":"m"}},"usage":{{"input_tokens":123456}}}}"#
                    )
                } else {
                    format!(
                        r#"{{"type":"user/message","session_id":"s","seq":{seq},"message":{{"role":"user","content":"m"}}}}"#
                    )
                };
                rec(Some("s"), &line)
            })
            .collect();
        let emitted = i
            .process(&page, start as i64)
            .unwrap_or_else(|e| panic!("at seq {start}: {e:#}"));
        last = emitted;
    }
    let end = values_of(&last)
        .pop()
        .expect("the last reading is answered");
    assert_eq!(
        (&end["seq"], &end["pressureTokens"], &end["partial"]),
        (
            &Value::from(n - 1),
            &Value::from(123_456),
            &Value::Bool(true)
        ),
        "{end}"
    );
}
