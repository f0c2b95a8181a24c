//! The pressure view (contract §3, §5), session by session: each named session runs natively and
//! as the built `.wasm` in fluvio-smartengine, in invocations of 1, 3 and all records, which
//! must agree byte for byte; then its figures are checked against hand-computed ones and its
//! records are pinned in `snapshots/pressure__<case>.snap`.
//!
//! Reading aid for the figures: `estimate(v) = ceil(chars / 4)` over `v`'s JSON text as it
//! stands; `text(n)` in this file is a JSON string of exactly `4n` chars (quotes included), so
//! it prices at `n`. In the briefs below: `P` pressureTokens, `J` projectedTokens, `C` capacity,
//! `O` contextOccupancy, `S` systemTokens, `T` toolsTokens, `M` messageTokens, `X` estimateScale
//! (shown when not 1), `K` compactAtTokens and `U` untilCompactTokens (shown when K is known),
//! `-` null.

use crate::common::pressure::*;
use agent_fold::module::Instance;
use agent_fold::module::native_process;
use agent_fold::record::Rec;
use serde_json::Value;

const P: &[(&str, &str)] = &[("emit", "pressure"), ("capacity", "100000")];
/// Room for two sessions: the third evicts the least recently used.
const TWO_SESSIONS: &[(&str, &str)] = &[
    ("emit", "pressure"),
    ("capacity", "1000"),
    ("max_sessions", "2"),
];

fn snap(name: &str, text: &str) {
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!(format!("pressure__{name}"), text);
    });
}

fn n(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// One output record as a one-line brief: `session@seq` then the figures, or the error.
fn brief(v: &Value) -> String {
    let at = format!("{}@{}", v["session"].as_str().unwrap(), n(&v["seq"]));
    match v["type"].as_str() {
        Some("context/pressure") => format!(
            "{at} P{} J{} C{} O{} S{} T{} M{}{}{}{}",
            n(&v["pressureTokens"]),
            n(&v["projectedTokens"]),
            n(&v["capacity"]),
            n(&v["contextOccupancy"]),
            n(&v["systemTokens"]),
            n(&v["toolsTokens"]),
            n(&v["messageTokens"]),
            if v["estimateScale"] == 1 {
                String::new()
            } else {
                format!(" X{}", v["estimateScale"])
            },
            if v["compactAtTokens"].is_null() {
                String::new()
            } else {
                format!(
                    " K{} U{}",
                    n(&v["compactAtTokens"]),
                    n(&v["untilCompactTokens"])
                )
            },
            if v["partial"] == true { " partial" } else { "" },
        ),
        Some("context/error") => format!("{at} error: {}", v["error"].as_str().unwrap()),
        other => panic!("unexpected record type {other:?}"),
    }
}

fn briefs(by: &[Vec<Rec>]) -> Vec<String> {
    values(by).iter().map(brief).collect()
}

/// Runs a named session everywhere, checks its briefs, snapshots it; returns its outputs.
fn case(name: &str, params: &[(&str, &str)], recs: &[Rec], expect: &[&str]) -> Vec<Vec<Rec>> {
    let by = run_everywhere(params, recs);
    assert_eq!(briefs(&by), expect, "case {name}");
    snap(name, &render(params, recs, &by));
    by
}

const CORRUPT: &str = "is not in the surface: the log is corrupt";
const BAD_SPAN: &str = "replacement span is malformed: `replaces` must be {\"from_seq\": integer ≥ 0, \"to_seq\": integer ≥ 0}";
const NO_SEQ: &str = "the frame carries context (a message, header or usage) but no valid seq: it cannot be placed on the surface";

#[test]
fn header_then_messages_then_a_sample() {
    let recs = frames(&[
        r#"{"type":"request/header","id":"h0","session_id":"s1","seq":0,"timestamp":"2026-11-29T10:00:00Z","system":"You are terse.","tools":[{"name":"Read"}]}"#,
        r#"{"type":"user/message","id":"u1","session_id":"s1","seq":1,"timestamp":"2026-11-29T10:00:01Z","message":{"role":"user","content":"Fix the build."}}"#,
        r#"{"type":"thinking/tokens","id":"c2","session_id":"s1","seq":2,"timestamp":"2026-11-29T10:00:02Z","estimated_tokens_delta":40}"#,
        r#"{"type":"assistant/message","id":"a3","session_id":"s1","seq":3,"timestamp":"2026-11-29T10:00:03Z","message":{"role":"assistant","content":"Run cargo build."},"usage":{"input_tokens":300,"cache_read_input_tokens":500,"cache_creation_input_tokens":20,"output_tokens":9}}"#,
        r#"{"type":"tool/result","id":"t4","session_id":"s1","seq":4,"timestamp":"2026-11-29T10:00:04Z","message":{"role":"tool","content":"error: cannot find -lssl"}}"#,
        r#"{"type":"assistant/message","id":"a5","session_id":"s1","seq":5,"message":"Install libssl-dev.","usage":{"input_tokens":900,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}"#,
    ]);
    // system "You are terse." 16 chars → 4; tools [{"name":"Read"}] 17 → 5;
    // messages 42 → 11, 49 → 13, 52 → 13, 21 → 6.
    // seq 3: pressure 300+500+20 = 820 anchored at 11 → 820 + 24 − 11 = 833.
    // seq 5: pressure 900 anchored at 37 → 900 + 43 − 37 = 906.
    let by = case(
        "header_messages_sample",
        P,
        &recs,
        &[
            "s1@0 P- J- C100000 O- S4 T5 M0",
            "s1@1 P- J- C100000 O- S4 T5 M11",
            "s1@3 P820 J833 C100000 O0.00833 S4 T5 M24",
            "s1@4 P820 J846 C100000 O0.00846 S4 T5 M37",
            "s1@5 P900 J906 C100000 O0.00906 S4 T5 M43",
        ],
    );
    let v = values(&by);
    assert_eq!(v[0]["timestamp"], "2026-11-29T10:00:00Z");
    assert!(
        v[4].get("timestamp").is_none(),
        "an unstamped frame's record has none"
    );
    assert!(v.iter().all(|r| r.get("partial").is_none()));
}

/// The seed's session up to its compaction, as every method shows it (one reading, then the
/// tool result it did not count), then what comes after, per method.
fn seed_briefs<'a>(after: &[&'a str]) -> Vec<&'a str> {
    let before = [
        "s-42@0 P- J- C100000 O- S18 T0 M0",
        "s-42@1 P- J- C100000 O- S18 T0 M2000",
        "s-42@2 P- J- C100000 O- S18 T0 M4269",
        "s-42@3 P4227 J4277 C100000 O0.04277 S18 T0 M4319",
        "s-42@4 P4227 J4323 C100000 O0.04323 S18 T0 M4365",
    ];
    before.iter().chain(after).copied().collect()
}

/// The seed's session: a header, two messages, a sample, a tool result, a compaction, a sample.
fn seed_run() -> Vec<Rec> {
    let sys = r#""You are a careful coding agent. Keep changes small and tested, always.""#;
    let line = |seq: u64, kind: &str, rest: String| {
        format!(
            r#"{{"type":"{kind}","session_id":"s-42","seq":{seq},"timestamp":"2026-11-29T10:00:{seq:02}Z"{rest}}}"#
        )
    };
    let lines = [
        line(0, "request/header", format!(r#","system":{sys}"#)),
        line(1, "user/message", format!(r#","message":{}"#, text(2000))),
        line(2, "tool/result", format!(r#","message":{}"#, text(2269))),
        line(
            3,
            "assistant/message",
            format!(
                r#","message":{},"usage":{{"input_tokens":12,"cache_read_input_tokens":4100,"cache_creation_input_tokens":115,"output_tokens":30}}"#,
                text(50)
            ),
        ),
        line(4, "tool/result", format!(r#","message":{}"#, text(46))),
        line(5, "compact/start", String::new()),
        line(
            6,
            "thinking/tokens",
            r#","estimated_tokens_delta":95"#.into(),
        ),
        line(7, "compact/end", String::new()),
        line(
            8,
            "user/message",
            format!(
                r#","message":{},"replaces":{{"from_seq":1,"to_seq":4}}"#,
                text(286)
            ),
        ),
        line(
            9,
            "assistant/message",
            format!(
                r#","message":{},"usage":{{"input_tokens":530,"output_tokens":4}}"#,
                text(10)
            ),
        ),
    ];
    lines.iter().map(|l| frame(l)).collect()
}

/// The seed's run: BEFORE compact pressure=4227 projected=4323, AFTER compact pressure=4227
/// projected=244, rows [18, 0, 4365] → [18, 0, 286]: the `calibrated` method, as the seed has it.
#[test]
fn compaction_after_a_sample_drops_the_projection_not_the_pressure() {
    let recs = seed_run();
    // system 72 chars → 18; no tools → 0. Surface 2000 + 2269 = 4269 when the sample
    // (12 + 4100 + 115 = 4227) is taken; +50 +46 → 4365, projected 4227 + 4365 − 4269 = 4323.
    // The replacement of seqs 1..=4 by a 286-token summary: 4227 + 286 − 4269 = 244.
    // The next sample (530) re-anchors at 286: 530 + 296 − 286 = 540.
    case(
        "compaction_after_sample",
        &[
            ("emit", "pressure"),
            ("capacity", "100000"),
            ("projection", "calibrated"),
        ],
        &recs,
        &seed_briefs(&[
            "s-42@8 P4227 J244 C100000 O0.00244 S18 T0 M286",
            "s-42@9 P530 J540 C100000 O0.0054 S18 T0 M296",
        ]),
    );
}

/// The seed's run under `rebased` (the default): its first reading (4,227 with 4,269 of surface)
/// implies a base of 0, under the envelope's own 18 (the system prompt), which stands instead;
/// the agent-fold input's restore prior is 0, so after the compaction the meter shows 18 + the
/// summary's 286 — where `calibrated` subtracted 4,269 priced tokens from 4,227 read. The next
/// reading re-anchors both alike.
#[test]
fn rebased_compaction_rebuilds_from_the_base() {
    case(
        "rebased_compaction",
        P,
        &seed_run(),
        &seed_briefs(&[
            "s-42@8 P4227 J304 C100000 O0.00304 S18 T0 M286",
            "s-42@9 P530 J540 C100000 O0.0054 S18 T0 M296",
        ]),
    );
    // A prior restore of 3,000 stands on the base until the next reading.
    case(
        "rebased_compaction_restore",
        &[
            ("emit", "pressure"),
            ("capacity", "100000"),
            ("compact_restore", "3000"),
        ],
        &seed_run(),
        &seed_briefs(&[
            "s-42@8 P4227 J3304 C100000 O0.03304 S18 T0 M286",
            "s-42@9 P530 J540 C100000 O0.0054 S18 T0 M296",
        ]),
    );
}

/// One session's readings and compaction frames: a header naming the agent's threshold, a
/// manual compaction, one whose level is not an integer, two automatic ones.
const LEVELS_LOG: [&str; 7] = [
    r#"{"type":"user/message","session_id":"a","seq":0,"message":"Start."}"#,
    r#"{"type":"assistant/message","session_id":"a","seq":1,"message":"Ok.","usage":{"input_tokens":40000}}"#,
    r#"{"type":"request/header","session_id":"a","seq":2,"auto_compact_tokens":180000}"#,
    r#"{"type":"compact/start","session_id":"a","seq":3,"trigger":"manual","preTokens":60000}"#,
    r#"{"type":"compact/start","session_id":"a","seq":4,"trigger":"auto","preTokens":"155241"}"#,
    r#"{"type":"compact/start","session_id":"a","seq":5,"trigger":"auto","preTokens":155241}"#,
    r#"{"type":"compact/start","session_id":"a","seq":6,"trigger":"auto","preTokens":156699}"#,
];

/// Where `compactAtTokens` comes from (contract §3.5): nothing known; the agent's own threshold
/// on a header; the session's last automatic compaction (a manual one, or one with a bad level,
/// changes nothing); the param over all of them; `none`.
#[test]
fn the_compaction_level_and_its_sources() {
    let recs = frames(&LEVELS_LOG);
    // "Start." 8 chars → 2, "Ok." 5 → 2: 40,000 read at 2, projected 40,002.
    case(
        "compact_at_sources",
        P,
        &recs,
        &[
            "a@0 P- J- C100000 O- S0 T0 M2",
            "a@1 P40000 J40002 C100000 O0.40002 S0 T0 M4",
            "a@2 P40000 J40002 C100000 O0.40002 S0 T0 M4 K180000 U139998",
            "a@5 P40000 J40002 C100000 O0.40002 S0 T0 M4 K155241 U115239",
            "a@6 P40000 J40002 C100000 O0.40002 S0 T0 M4 K156699 U116697",
        ],
    );
    case(
        "compact_at_param",
        &[
            ("emit", "pressure"),
            ("capacity", "100000"),
            ("compact_at", "30000"),
        ],
        &recs,
        &[
            "a@0 P- J- C100000 O- S0 T0 M2 K30000 U-",
            "a@1 P40000 J40002 C100000 O0.40002 S0 T0 M4 K30000 U0",
        ],
    );
    case(
        "compact_at_none",
        &[
            ("emit", "pressure"),
            ("capacity", "100000"),
            ("compact_at", "none"),
        ],
        &recs,
        &[
            "a@0 P- J- C100000 O- S0 T0 M2",
            "a@1 P40000 J40002 C100000 O0.40002 S0 T0 M4",
        ],
    );
}

#[test]
fn a_header_that_changes_only_the_tools() {
    let recs = frames(&[
        r#"{"type":"request/header","session_id":"h","seq":0,"system":"You are terse.","tools":[{"name":"Read"}],"context_window":8000}"#,
        r#"{"type":"user/message","session_id":"h","seq":1,"message":"Hi there"}"#,
        r#"{"type":"request/header","session_id":"h","seq":2,"tools":[{"name":"Read"},{"name":"Bash"}]}"#,
        r#"{"type":"request/header","session_id":"h","seq":3,"context_window":16000}"#,
        r#"{"type":"request/header","session_id":"h","seq":4}"#,
        r#"{"type":"request/header","session_id":"h","seq":5,"tools":[{"name":"Read"},{"name":"Bash"}]}"#,
        r#"{"type":"request/header","session_id":"h","seq":6,"system":"You are terse and exact."}"#,
    ]);
    // tools 17 chars → 5, then 33 → 9; system 16 → 4, then 26 → 7; "Hi there" 10 → 3.
    // Seqs 4 and 5 change no figure: no record.
    case(
        "header_tools_only",
        &[("emit", "pressure")],
        &recs,
        &[
            "h@0 P- J- C8000 O- S4 T5 M0",
            "h@1 P- J- C8000 O- S4 T5 M3",
            "h@2 P- J- C8000 O- S4 T9 M3",
            "h@3 P- J- C16000 O- S4 T9 M3",
            "h@6 P- J- C16000 O- S7 T9 M3",
        ],
    );
}

#[test]
fn a_corrupt_span_is_refused_and_changes_nothing() {
    let log = [
        r#"{"type":"user/message","session_id":"c","seq":0,"message":"Find the bug."}"#,
        r#"{"type":"assistant/message","session_id":"c","seq":1,"message":"Looking.","usage":{"input_tokens":150}}"#,
        r#"{"type":"tool/result","session_id":"c","seq":2,"message":"fold.rs:88"}"#,
        r#"{"type":"user/message","session_id":"c","seq":3,"message":"Summary.","replaces":{"from_seq":1,"to_seq":9}}"#,
        r#"{"type":"user/message","session_id":"c","seq":3,"message":"Summary.","replaces":{"from_seq":1,"to_seq":9}}"#,
        r#"{"type":"user/message","session_id":"c","seq":3,"message":"Summary.","replaces":{"from_seq":2,"to_seq":0}}"#,
        r#"{"type":"user/message","session_id":"c","seq":3,"message":"Summary.","replaces":{"from_seq":0,"to_seq":1}}"#,
        r#"{"type":"user/message","session_id":"c","seq":4,"message":"Again.","replaces":{"from_seq":0,"to_seq":2}}"#,
        r#"{"type":"user/message","session_id":"c","seq":4,"message":"Again.","replaces":{"from_seq":2,"to_seq":3}}"#,
        r#"{"type":"user/message","session_id":"c","seq":4,"message":"Again.","replaces":{"from_seq":3,"to_seq":2}}"#,
        r#"{"type":"user/message","session_id":"fresh","seq":0,"message":"Summary.","replaces":{"from_seq":0,"to_seq":0}}"#,
        r#"{"type":"user/message","session_id":"fresh","seq":1,"message":"Hello."}"#,
    ];
    let recs = frames(&log);
    // "Find the bug." 15 chars → 4, "Looking." 10 → 3, "fold.rs:88" 12 → 3, "Summary." 10 → 3,
    // "Again." 8 → 2, "Hello." 8 → 2. Sample 150 anchored at 4.
    // 0..1 → [3:3, 2:3]: 150 + 6 − 4 = 152. Surface order now 3, 2: 2..3 is reversed.
    // 3..2 → [4:2]: 150 + 2 − 4 = 148. A span on an empty complete surface is corrupt; the
    // session's first applied frame is then seq 1, so it is partial.
    case(
        "corrupt_span",
        P,
        &recs,
        &[
            "c@0 P- J- C100000 O- S0 T0 M4",
            "c@1 P150 J153 C100000 O0.00153 S0 T0 M7",
            "c@2 P150 J156 C100000 O0.00156 S0 T0 M10",
            &format!("c@3 error: replacement span 1..9 {CORRUPT}"),
            &format!("c@3 error: replacement span 1..9 {CORRUPT}"),
            &format!("c@3 error: replacement span 2..0 {CORRUPT}"),
            "c@3 P150 J152 C100000 O0.00152 S0 T0 M6",
            &format!("c@4 error: replacement span 0..2 {CORRUPT}"),
            &format!("c@4 error: replacement span 2..3 {CORRUPT}"),
            "c@4 P150 J148 C100000 O0.00148 S0 T0 M2",
            &format!("fresh@0 error: replacement span 0..0 {CORRUPT}"),
            "fresh@1 P- J- C100000 O- S- T- M- partial",
        ],
    );

    // Validate, then commit: each refused frame leaves the checkpoint as it was, and the
    // same frame delivered again gets the same error, byte for byte.
    let mut p = processor(P);
    let mut first_error: Option<Vec<Vec<u8>>> = None;
    for (i, r) in recs.iter().enumerate() {
        let before = p.checkpoint();
        let out = native_process(&mut p, std::slice::from_ref(r), i as i64).unwrap();
        let is_error = out.iter().any(|o| json(o)["type"] == "context/error");
        if is_error {
            assert_eq!(p.checkpoint(), before, "frame {i} refused, state unchanged");
            let again = native_process(&mut p, std::slice::from_ref(r), i as i64).unwrap();
            assert_eq!(lines(&again), lines(&out), "frame {i} again: same error");
            assert_eq!(p.checkpoint(), before);
            if i == 3 {
                first_error = Some(out.iter().map(|o| o.value.clone()).collect());
            }
        } else {
            assert_ne!(p.checkpoint(), before, "frame {i} applied");
        }
    }
    assert_eq!(
        String::from_utf8(first_error.unwrap().remove(0)).unwrap(),
        format!(
            r#"{{"type":"context/error","session":"c","seq":3,"error":"replacement span 1..9 {CORRUPT}","stateVersion":5}}"#
        )
    );
}

#[test]
fn a_malformed_replaces_is_refused() {
    let bad = [
        r#"[0,0]"#,
        r#""0..0""#,
        r#"5"#,
        r#"{}"#,
        r#"{"from_seq":0}"#,
        r#"{"to_seq":0}"#,
        r#"{"from_seq":-1,"to_seq":0}"#,
        r#"{"from_seq":0,"to_seq":-2}"#,
        r#"{"from_seq":0,"to_seq":1.5}"#,
        r#"{"from_seq":"0","to_seq":"0"}"#,
        r#"{"from_seq":0,"to_seq":18446744073709551616}"#,
    ];
    let mut lines =
        vec![r#"{"type":"user/message","session_id":"m","seq":0,"message":"Hello."}"#.to_string()];
    for b in bad {
        lines.push(format!(
            r#"{{"type":"user/message","session_id":"m","seq":1,"message":"Summary.","replaces":{b}}}"#
        ));
    }
    lines.push(r#"{"type":"user/message","session_id":"m","seq":1,"message":"Hello again.","replaces":{"from_seq":0,"to_seq":0,"by":"compact"}}"#.into());
    lines.push(
        r#"{"type":"user/message","session_id":"m","seq":2,"message":"ok","replaces":null}"#.into(),
    );
    let recs: Vec<Rec> = lines.iter().map(|l| frame(l)).collect();
    let mut expect = vec!["m@0 P- J- C100000 O- S0 T0 M2".to_string()];
    expect.extend(bad.iter().map(|_| format!("m@1 error: {BAD_SPAN}")));
    // "Hello again." 14 chars → 4 replaces node 0; a null `replaces` is no span: "ok" appends.
    expect.push("m@1 P- J- C100000 O- S0 T0 M4".into());
    expect.push("m@2 P- J- C100000 O- S0 T0 M5".into());
    let expect: Vec<&str> = expect.iter().map(String::as_str).collect();
    case("malformed_replaces", P, &recs, &expect);

    let mut p = processor(P);
    native_on(&mut p, &recs[..1], 0);
    let before = p.checkpoint();
    native_on(&mut p, &recs[1..1 + bad.len()], 0);
    assert_eq!(p.checkpoint(), before, "refused spans change nothing");
}

#[test]
fn redelivered_frames_emit_nothing() {
    let log = [
        r#"{"type":"request/header","session_id":"r","seq":0,"system":"You are terse."}"#,
        r#"{"type":"user/message","session_id":"r","seq":1,"message":"Find the bug."}"#,
        r#"{"type":"assistant/message","session_id":"r","seq":2,"message":"Looking.","usage":{"input_tokens":150}}"#,
        r#"{"type":"tool/result","session_id":"r","seq":3,"message":"fold.rs:88"}"#,
    ];
    let again = [
        log[1],
        log[2],
        r#"{"type":"request/header","session_id":"r","seq":0,"system":"changed"}"#,
        r#"{"type":"user/message","session_id":"r","seq":2,"message":"x","replaces":{"from_seq":7,"to_seq":9}}"#,
        r#"{"type":"user/message","session_id":"r","seq":3,"message":"different text at an applied seq"}"#,
    ];
    let tail = [
        r#"{"type":"user/message","session_id":"r","seq":4,"message":"Summary."}"#,
        r#"{"type":"user/message","session_id":"r","seq":4,"message":"Summary."}"#,
    ];
    let all: Vec<&str> = log.iter().chain(&again).chain(&tail).copied().collect();
    let recs = frames(&all);
    // A corrupt span at an old seq is a re-delivery, not an error.
    let by = case(
        "redelivered",
        P,
        &recs,
        &[
            "r@0 P- J- C100000 O- S4 T0 M0",
            "r@1 P- J- C100000 O- S4 T0 M4",
            "r@2 P150 J153 C100000 O0.00153 S4 T0 M7",
            "r@3 P150 J156 C100000 O0.00156 S4 T0 M10",
            "r@4 P150 J159 C100000 O0.00159 S4 T0 M13",
        ],
    );
    for (i, outs) in by.iter().enumerate() {
        let redelivery = (4..4 + again.len()).contains(&i) || i == all.len() - 1;
        assert_eq!(outs.is_empty(), redelivery, "frame {i}");
    }
    let mut p = processor(P);
    native_on(&mut p, &frames(&log), 0);
    let before = p.checkpoint();
    assert!(native_on(&mut p, &frames(&again), 1).is_empty());
    assert_eq!(p.checkpoint(), before);
}

#[test]
fn a_frame_with_context_but_no_seq_is_an_error() {
    let recs = frames(&[
        r#"{"type":"user/message","session_id":"n","seq":0,"message":"Hello."}"#,
        r#"{"type":"user/message","session_id":"n","message":"lost"}"#,
        r#"{"type":"request/header","session_id":"n","system":"x"}"#,
        r#"{"type":"assistant/message","session_id":"n","usage":{"input_tokens":5}}"#,
        r#"{"type":"user/message","session_id":"n","replaces":{"from_seq":0,"to_seq":0}}"#,
        r#"{"type":"user/message","session_id":"n","seq":"1","message":"x"}"#,
        r#"{"type":"user/message","session_id":"n","seq":-1,"message":"x"}"#,
        r#"{"type":"user/message","session_id":"n","seq":1.0,"message":"x"}"#,
        r#"{"type":"user/message","session_id":"n","seq":null,"message":"x"}"#,
        r#"{"type":"tool/use","session_id":"n"}"#,
        r#"{"type":"user/message","session_id":"new","message":"x"}"#,
        r#"{"type":"user/message","session_id":"n","seq":1,"message":"Hi there"}"#,
    ]);
    let mut expect = vec!["n@0 P- J- C100000 O- S0 T0 M2".to_string()];
    expect.extend((0..8).map(|_| format!("n@- error: {NO_SEQ}")));
    expect.push(format!("new@- error: {NO_SEQ}"));
    expect.push("n@1 P- J- C100000 O- S0 T0 M5".into());
    let expect: Vec<&str> = expect.iter().map(String::as_str).collect();
    let by = case("no_seq", P, &recs, &expect);
    assert!(
        by[9].is_empty(),
        "a frame with nothing to place needs no seq"
    );
    let v = values(&by);
    assert_eq!(v[1]["seq"], Value::Null);

    let mut p = processor(P);
    native_on(&mut p, &recs[..1], 0);
    let before = p.checkpoint();
    native_on(&mut p, &recs[1..11], 1);
    assert_eq!(p.checkpoint(), before, "no session created, none changed");
    assert_eq!(p.sessions(), 1);
}

#[test]
fn a_session_joined_mid_stream_is_partial() {
    let params = &[("emit", "pressure"), ("capacity", "1000")];
    let line = |seq: u64, kind: &str, rest: &str| {
        format!(r#"{{"type":"{kind}","session_id":"p","seq":{seq}{rest}}}"#)
    };
    let msg = |t: usize| format!(r#","message":{}"#, text(t));
    let read = |t, n| format!(r#"{},"usage":{{"input_tokens":{n}}}"#, msg(t));
    let rep = |t, from, to| {
        format!(
            r#"{},"replaces":{{"from_seq":{from},"to_seq":{to}}}"#,
            msg(t)
        )
    };
    let lines = [
        line(10, "user/message", &msg(5)),
        line(11, "assistant/message", &read(4, 600)),
        line(
            12,
            "request/header",
            r#","system":"You are terse.","tools":[{"name":"Read"}]"#,
        ),
        line(13, "tool/result", &msg(7)),
        line(14, "user/message", &rep(2, 3, 11)),
        line(15, "user/message", &msg(1)),
        line(16, "assistant/message", &read(3, 700)),
        line(17, "user/message", &rep(4, 0, 5)),
        line(18, "user/message", &rep(1, 12, 13)),
        line(18, "user/message", &rep(1, 3, 12)),
        line(18, "assistant/message", r#","usage":{"input_tokens":800}"#),
    ];
    let recs: Vec<Rec> = lines.iter().map(|l| frame(l)).collect();
    // First seq 10: partial. Sample 600 anchored at 5 (seen nodes only): 600 + 9 − 5 = 604.
    // +7 → 611. 3..11: 3 is below the first node seen (10), 11 is a node: nodes 10, 11 go,
    // the summary goes to the front → [14:2, 13:7], projection null, occupancy 600/1000.
    // Seq 15 changes no figure (no record). Sample 700 anchored at 2+7+1 = 10, +3:
    // 700 + 13 − 10 = 703. 0..5 is wholly below the first node: nothing removed, the node goes
    // in front, projection null again. 12..13: 12 is no node and not below 10: corrupt;
    // 3..12: to_seq is neither a node nor below 10: corrupt. Sample 800 at 17: 800.
    let by = case(
        "partial",
        params,
        &recs,
        &[
            "p@10 P- J- C1000 O- S- T- M- partial",
            "p@11 P600 J604 C1000 O0.604 S- T- M- partial",
            "p@12 P600 J604 C1000 O0.604 S4 T5 M- partial",
            "p@13 P600 J611 C1000 O0.611 S4 T5 M- partial",
            "p@14 P600 J- C1000 O0.6 S4 T5 M- partial",
            "p@16 P700 J703 C1000 O0.703 S4 T5 M- partial",
            "p@17 P700 J- C1000 O0.7 S4 T5 M- partial",
            &format!("p@18 error: replacement span 12..13 {CORRUPT}"),
            &format!("p@18 error: replacement span 3..12 {CORRUPT}"),
            "p@18 P800 J800 C1000 O0.8 S4 T5 M- partial",
        ],
    );
    assert!(
        values(&by).iter().all(|v| v["type"] == "context/error"
            || (v["partial"] == true && v["messageTokens"].is_null()))
    );
    let mut p = processor(params);
    native_on(&mut p, &recs, 0);
    let s = session_checkpoint(&p, "p").unwrap();
    assert_eq!(
        s["surface"],
        serde_json::json!([[17, 4], [14, 2], [13, 7], [15, 1], [16, 3]])
    );
    assert_eq!(s["anchorTokens"], 17);
}

#[test]
fn the_estimate_prices_text_as_it_stands() {
    let recs = frames(&[
        r#"{"type":"request/header","session_id":"u","seq":0,"system":"你是一个严谨的编程助手。"}"#,
        r#"{"type":"user/message","session_id":"u","seq":1,"message":"中文"}"#,
        r#"{"type":"user/message","session_id":"u","seq":2,"message":"\u4e2d\u6587"}"#,
        r#"{"type":"user/message","session_id":"u","seq":3,"message":"say \"hi\""}"#,
        r#"{"type":"user/message","session_id":"u","seq":4,"message":{ "a" : [ 1 , 2 ] }}"#,
        r#"{"type":"user/message","session_id":"u","seq":5,"message":"😀😀"}"#,
        r#"{"type":"user/message","session_id":"u","seq":6,"message":{"text":"中文 and 中文"}}"#,
    ]);
    // The system prompt: 12 CJK scalars + 2 quotes = 14 → 4. "中文": 4 chars → 1; the same
    // text escaped stands as 14 chars → 4; "say \"hi\"" is 12 chars → 3; whitespace outside
    // strings is not counted: {"a":[1,2]} 11 → 3; two emoji are 2 scalars: 4 → 1;
    // {"text":"中文 and 中文"} 20 → 5 (the spaces inside the string count).
    case(
        "estimate_cjk_escapes",
        P,
        &recs,
        &[
            "u@0 P- J- C100000 O- S4 T0 M0",
            "u@1 P- J- C100000 O- S4 T0 M1",
            "u@2 P- J- C100000 O- S4 T0 M5",
            "u@3 P- J- C100000 O- S4 T0 M8",
            "u@4 P- J- C100000 O- S4 T0 M11",
            "u@5 P- J- C100000 O- S4 T0 M12",
            "u@6 P- J- C100000 O- S4 T0 M17",
        ],
    );
}

#[test]
fn sub_agent_frames_are_ignored() {
    let recs = frames(&[
        r#"{"type":"user/message","session_id":"a","seq":0,"message":"Dispatch."}"#,
        r#"{"type":"user/message","session_id":"a","seq":1,"message":"sub task","extras":{"parent_tool_use_id":"toolu_1"}}"#,
        r#"{"type":"assistant/message","session_id":"a","seq":2,"message":"sub task","usage":{"input_tokens":9000},"extras":{"parent_tool_use_id":"toolu_1"}}"#,
        r#"{"type":"request/header","session_id":"a","seq":3,"system":"You are a sub-agent.","context_window":5,"extras":{"parent_tool_use_id":"toolu_1"}}"#,
        r#"{"type":"user/message","session_id":"a","message":"no seq","extras":{"parent_tool_use_id":"toolu_1"}}"#,
        r#"{"type":"user/message","session_id":"a","seq":4,"message":"x","replaces":{"from_seq":7,"to_seq":9},"extras":{"parent_tool_use_id":"toolu_1"}}"#,
        r#"{"type":"tool/result","session_id":"a","seq":1,"message":"Done.","extras":{"parent_tool_use_id":null}}"#,
        r#"{"type":"user/message","session_id":"a","seq":2,"message":"hi","extras":{"parent_tool_use_id":7}}"#,
        r#"{"type":"user/message","session_id":"subonly","seq":0,"message":"x","extras":{"parent_tool_use_id":"toolu_2"}}"#,
    ]);
    // Sub-agent frames neither price nor move the cursor: main seqs 1 and 2 still apply.
    // A null or non-string parent is a main frame. "Dispatch." 11 → 3, "Done." 7 → 2, "hi" 1.
    let by = case(
        "subagents_ignored",
        P,
        &recs,
        &[
            "a@0 P- J- C100000 O- S0 T0 M3",
            "a@1 P- J- C100000 O- S0 T0 M5",
            "a@2 P- J- C100000 O- S0 T0 M6",
        ],
    );
    assert!(by[1..6].iter().all(Vec::is_empty));
    let mut p = processor(P);
    native_on(&mut p, &recs, 0);
    assert_eq!(p.sessions(), 1, "a sub-agent's frames create no session");
}

#[test]
fn capacity_from_the_param_then_the_window() {
    let with = [("emit", "pressure"), ("capacity", "50000")];
    let k = frames(&[
        r#"{"type":"request/header","session_id":"k","seq":0,"system":"Hello."}"#,
        r#"{"type":"assistant/message","session_id":"k","seq":1,"usage":{"input_tokens":1000}}"#,
        r#"{"type":"request/header","session_id":"k","seq":2,"context_window":200000}"#,
        r#"{"type":"request/header","session_id":"k","seq":3,"context_window":0}"#,
        r#"{"type":"request/header","session_id":"k","seq":4,"context_window":"300000"}"#,
        r#"{"type":"request/header","session_id":"k","seq":5,"context_window":-1}"#,
        r#"{"type":"request/header","session_id":"k","seq":6,"context_window":1.5e5}"#,
        r#"{"type":"request/header","session_id":"k","seq":7,"system":"Hello."}"#,
    ]);
    // No window yet: the param's 50000; 1000/50000 = 0.02. The window wins: 1000/200000.
    // Windows that are no integer ≥ 1 are not windows; a header without one keeps 200000.
    let a = run_everywhere(&with, &k);
    assert_eq!(
        briefs(&a),
        [
            "k@0 P- J- C50000 O- S2 T0 M0",
            "k@1 P1000 J1000 C50000 O0.02 S2 T0 M0",
            "k@2 P1000 J1000 C200000 O0.005 S2 T0 M0",
        ]
    );
    let without = [("emit", "pressure")];
    let k2 = frames(&[
        r#"{"type":"assistant/message","session_id":"k","seq":0,"usage":{"input_tokens":1000}}"#,
        r#"{"type":"request/header","session_id":"k","seq":1,"context_window":4000}"#,
    ]);
    // No param, no window: capacity and occupancy are unknown until a header names one.
    let b = run_everywhere(&without, &k2);
    assert_eq!(
        briefs(&b),
        [
            "k@0 P1000 J1000 C- O- S0 T0 M0",
            "k@1 P1000 J1000 C4000 O0.25 S0 T0 M0",
        ]
    );
    snap(
        "capacity",
        &format!("{}\n{}", render(&with, &k, &a), render(&without, &k2, &b)),
    );
}

#[test]
fn malformed_records_pass_and_drop_alike() {
    let mut recs = frames(&[
        r#"{"type":"user/message","session_id":"w","seq":0,"message":"Hello."}"#,
        "not json",
        "[1,2]",
        r#"{"type":"user/message","session_id":"w","seq":1,"message":{"content":"truncated"#,
        r#""just a string""#,
        "null",
        r#"{"type":"user/message","session_id":"w","seq":1,"message":"Hi there"}"#,
        r#"{"type":"user/message","session_id":"w","seq":2} trailing"#,
        "{}",
    ]);
    recs.push(keyed(Some("w"), r#"{"seq":3,}"#));
    recs.push(Rec::new(Some(b"w"), b"\xff{\"seq\":3}"));
    let pass = [
        ("emit", "pressure"),
        ("capacity", "1000"),
        ("malformed", "pass"),
    ];
    let drop = [
        ("emit", "pressure"),
        ("capacity", "1000"),
        ("malformed", "drop"),
    ];
    let expect = ["w@0 P- J- C1000 O- S0 T0 M2", "w@1 P- J- C1000 O- S0 T0 M5"];
    let by_pass = case("malformed_records", &pass, &recs, &expect);
    let by_drop = run_everywhere(&drop, &recs);
    assert_eq!(
        by_pass, by_drop,
        "the pressure view ignores them either way"
    );
}

#[test]
fn malformed_fail_refuses_the_invocation_and_keeps_the_state() {
    let params = [("emit", "pressure"), ("malformed", "fail")];
    let good = frames(&[
        r#"{"type":"user/message","session_id":"w","seq":0,"message":"Hello."}"#,
        r#"{"type":"user/message","session_id":"w","seq":1,"message":"Hi there"}"#,
    ]);
    let batch = vec![good[0].clone(), frame("not json"), good[1].clone()];

    let mut p = processor(&params);
    let before = p.checkpoint();
    let err = native_process(&mut p, &batch, 40).unwrap_err().to_string();
    assert!(err.contains("offset 41"), "{err}");
    assert!(err.contains("malformed=fail"), "{err}");
    assert_eq!(
        p.checkpoint(),
        before,
        "a refused invocation changes nothing"
    );
    let after = native_process(&mut p, &good, 0).unwrap();

    let mut e = Instance::new(wasm(), &owned(&params), None).unwrap();
    let err = e.process(&batch, 40).unwrap_err().to_string();
    assert!(err.contains("malformed=fail"), "{err}");
    assert!(err.contains("41"), "the engine names the offset: {err}");
    assert_eq!(
        e.process(&good, 0).unwrap(),
        after,
        "and its state is unchanged too"
    );
    assert_eq!(
        briefs(&[after]),
        ["w@0 P- J- C- O- S0 T0 M2", "w@1 P- J- C- O- S0 T0 M5"]
    );
}

#[test]
fn usage_fields_missing_or_not_integers_count_zero() {
    let params = [("emit", "pressure"), ("capacity", "10000")];
    let recs = frames(&[
        r#"{"type":"assistant/message","session_id":"g","seq":0,"usage":{"input_tokens":100,"cache_read_input_tokens":"50","cache_creation_input_tokens":-3,"output_tokens":7}}"#,
        r#"{"type":"assistant/message","session_id":"g","seq":1,"usage":{}}"#,
        r#"{"type":"assistant/message","session_id":"g","seq":2,"usage":{"input_tokens":1.5,"cache_read_input_tokens":7,"cache_creation_input_tokens":null}}"#,
        r#"{"type":"assistant/message","session_id":"g","seq":3,"usage":{"cache_creation_input_tokens":20,"input_tokens":1e3,"cache_read_input_tokens":18446744073709551616}}"#,
        r#"{"type":"assistant/message","session_id":"g","seq":4,"usage":5}"#,
        r#"{"type":"assistant/message","session_id":"g","seq":5,"usage":null}"#,
        r#"{"type":"user/message","session_id":"g","seq":6,"message":"hi","usage":{"input_tokens":999}}"#,
    ]);
    // 100 ("50" and −3 count 0); {} is a sample of 0; 1.5 and null count 0: 7; 1e3 and a
    // number past 2^64 count 0: 20. A usage that is no object is no sample; a user/message's
    // usage is no sample: "hi" (1 token) joins, 20 + 1 − 0 = 21.
    case(
        "usage_fields",
        &params,
        &recs,
        &[
            "g@0 P100 J100 C10000 O0.01 S0 T0 M0",
            "g@1 P0 J0 C10000 O0.0 S0 T0 M0",
            "g@2 P7 J7 C10000 O0.0007 S0 T0 M0",
            "g@3 P20 J20 C10000 O0.002 S0 T0 M0",
            "g@6 P20 J21 C10000 O0.0021 S0 T0 M1",
        ],
    );
}

#[test]
fn huge_usage_saturates_without_a_trap() {
    let recs = frames(&[
        r#"{"type":"user/message","session_id":"g","seq":0,"message":"hi"}"#,
        r#"{"type":"assistant/message","session_id":"g","seq":1,"usage":{"input_tokens":18446744073709551615,"cache_read_input_tokens":18446744073709551615,"cache_creation_input_tokens":5}}"#,
        r#"{"type":"request/header","session_id":"g","seq":2,"context_window":18446744073709551615}"#,
    ]);
    let by = run_everywhere(P, &recs);
    let v = values(&by);
    assert_eq!(v[1]["pressureTokens"], u64::MAX);
    assert_eq!(v[1]["projectedTokens"], u64::MAX);
    assert_eq!(v[2]["contextOccupancy"], 1.0);
}

#[test]
fn an_evicted_session_comes_back_partial() {
    let recs = frames(&[
        r#"{"type":"user/message","session_id":"a","seq":0,"message":"Hello."}"#,
        r#"{"type":"user/message","session_id":"b","seq":0,"message":"Hello."}"#,
        r#"{"type":"user/message","session_id":"a","seq":1,"message":"Hi there"}"#,
        r#"{"type":"user/message","session_id":"c","seq":0,"message":"Hello."}"#,
        r#"{"type":"user/message","session_id":"b","seq":1,"message":"Hi there"}"#,
        r#"{"type":"user/message","session_id":"a","seq":2,"message":"ok"}"#,
        r#"{"type":"user/message","session_id":"b","seq":0,"message":"Hello."}"#,
        r#"{"type":"user/message","session_id":"c","seq":1,"message":"ok"}"#,
    ]);
    // Cap 2, least recently used out: c evicts b, b (back at seq 1, partial) evicts a, a
    // (back at seq 2, partial) evicts c; b's seq 0 is then a re-delivery; c comes back partial.
    case(
        "eviction",
        TWO_SESSIONS,
        &recs,
        &[
            "a@0 P- J- C1000 O- S0 T0 M2",
            "b@0 P- J- C1000 O- S0 T0 M2",
            "a@1 P- J- C1000 O- S0 T0 M5",
            "c@0 P- J- C1000 O- S0 T0 M2",
            "b@1 P- J- C1000 O- S- T- M- partial",
            "a@2 P- J- C1000 O- S- T- M- partial",
            "c@1 P- J- C1000 O- S- T- M- partial",
        ],
    );
    let mut p = processor(TWO_SESSIONS);
    native_on(&mut p, &recs, 1);
    assert_eq!(p.sessions(), 2);
}

#[test]
fn sessions_are_keyed_by_record_key_then_session_id() {
    let recs = vec![
        keyed(
            Some("K"),
            r#"{"type":"user/message","session_id":"s","seq":0,"message":"Hello."}"#,
        ),
        keyed(
            None,
            r#"{"type":"user/message","session_id":"s","seq":0,"message":"Hi there"}"#,
        ),
        keyed(None, r#"{"type":"user/message","seq":0,"message":"ok"}"#),
        keyed(
            Some("K"),
            r#"{"type":"user/message","session_id":"K","seq":0,"message":"again"}"#,
        ),
    ];
    case(
        "session_keys",
        P,
        &recs,
        &[
            "K@0 P- J- C100000 O- S0 T0 M2",
            "s@0 P- J- C100000 O- S0 T0 M3",
            "@0 P- J- C100000 O- S0 T0 M1",
        ],
    );
}

#[test]
fn deep_nesting_huge_records_and_huge_seqs_are_no_trap() {
    let depth = 100_000;
    let deep = format!(
        r#"{{"type":"user/message","session_id":"d","seq":0,"message":{}{}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    // 10 MiB: text(n) is 4n chars.
    let huge = format!(
        r#"{{"type":"tool/result","session_id":"d","seq":1,"message":{}}}"#,
        text(10 << 18)
    );
    let recs = frames(&[
        &deep,
        &huge,
        r#"{"type":"user/message","session_id":"d","seq":18446744073709551616,"message":"x"}"#,
        r#"{"type":"user/message","session_id":"d","seq":18446744073709551615,"message":"x"}"#,
        r#"{"type":"user/message","session_id":"d","seq":18446744073709551615,"message":"y"}"#,
        r#"{"type":"user/message","session_id":"d","seq":2,"message":"z"}"#,
    ]);
    // 2 × 100000 brackets → 50000; 10 MiB of one string → 2621440. A seq past 2^64 is no
    // seq; 2^64 − 1 is the last there is: whatever follows is a re-delivery.
    let by = run_everywhere(P, &recs);
    assert_eq!(
        briefs(&by),
        [
            "d@0 P- J- C100000 O- S0 T0 M50000",
            "d@1 P- J- C100000 O- S0 T0 M2671440",
            &format!("d@- error: {NO_SEQ}"),
            "d@18446744073709551615 P- J- C100000 O- S0 T0 M2671441",
        ]
    );
}

/// A frame that is refused, re-delivered or ignored is no use of its session: it leaves the
/// session's recency as it was (contract §3, §6.7: the state equals the state before the frame),
/// so it neither reorders the checkpoint nor saves the session from eviction.
#[test]
fn frames_that_change_nothing_leave_recency_alone() {
    let start = frames(&[
        r#"{"type":"user/message","session_id":"a","seq":0,"message":"Hello."}"#,
        r#"{"type":"user/message","session_id":"b","seq":0,"message":"Hello."}"#,
    ]);
    let nothing = [
        r#"{"type":"user/message","session_id":"a","seq":0,"message":"Hello."}"#,
        r#"{"type":"user/message","session_id":"a","seq":1,"message":"x","replaces":{"from_seq":5,"to_seq":6}}"#,
        r#"{"type":"user/message","session_id":"a","seq":1,"message":"x","replaces":[5,6]}"#,
        r#"{"type":"user/message","session_id":"a","message":"no seq"}"#,
        r#"{"type":"tool/use","session_id":"a"}"#,
        r#"{"type":"user/message","session_id":"a","seq":1,"message":"x","extras":{"parent_tool_use_id":"toolu_1"}}"#,
    ];
    let mut p = processor(TWO_SESSIONS);
    native_on(&mut p, &start, 0);
    let before = p.checkpoint();
    for n in nothing {
        native_on(&mut p, &[frame(n)], 0);
        assert_eq!(p.checkpoint(), before, "{n}");
    }
    // `a` is still the least recently used: `c` evicts it, and it comes back partial.
    let rest = frames(&[
        r#"{"type":"user/message","session_id":"c","seq":0,"message":"Hello."}"#,
        r#"{"type":"user/message","session_id":"a","seq":1,"message":"Hi there"}"#,
    ]);
    let mut all = start.clone();
    all.extend(nothing.iter().map(|n| frame(n)));
    all.extend(rest);
    let by = run_everywhere(TWO_SESSIONS, &all);
    let b = briefs(&by);
    assert_eq!(
        b[b.len() - 1],
        "a@1 P- J- C1000 O- S- T- M- partial",
        "{b:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Calibration (contract §3): each session learns what an estimated token is worth from its own
// clean sample intervals, once they add up to 1,000 estimated tokens.

/// A session's frames: `("u", n)` a user message of `n` tokens, `("a", p)` a reading of `p`,
/// `("r", n, from, to)` a replacement of `n` tokens.
/// A session from steps separated by spaces: `u600` a user message of 600 estimated tokens,
/// `a1000` an assistant reading of 1,000, `r1200:0-0` a message of 1,200 replacing seq 0..=0.
fn session(id: &str, steps: &str) -> Vec<Rec> {
    let lines: Vec<String> = steps
        .split(' ')
        .enumerate()
        .map(|(seq, step)| {
            let (kind, rest) = step.split_at(1);
            let (x, range) = rest.split_once(':').unwrap_or((rest, ""));
            let x: usize = x.parse().unwrap();
            let head = format!(r#""session_id":"{id}","seq":{seq}"#);
            match (kind, range.split_once('-')) {
                ("u", _) => format!(r#"{{"type":"user/message",{head},"message":{}}}"#, text(x)),
                ("a", _) => format!(
                    r#"{{"type":"assistant/message",{head},"usage":{{"input_tokens":{x}}}}}"#
                ),
                (_, Some((from, to))) => format!(
                    r#"{{"type":"user/message",{head},"message":{},"replaces":{{"from_seq":{from},"to_seq":{to}}}}}"#,
                    text(x)
                ),
                _ => panic!("step {step}"),
            }
        })
        .collect();
    frames(&lines.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn calibration_kicks_in_after_a_thousand_estimated_tokens() {
    // The provider grows 800 for every 600 the estimate sees: 4/3, once 1,200 are seen.
    let recs = session("k", "u600 a1000 u600 a1800 u600 a2600 u600 u300");
    case(
        "calibration_kicks_in",
        P,
        &recs,
        &[
            "k@0 P- J- C100000 O- S0 T0 M600",
            "k@1 P1000 J1000 C100000 O0.01 S0 T0 M600",
            "k@2 P1000 J1600 C100000 O0.016 S0 T0 M1200",
            // 600 estimated, 800 read: counted, not yet enough.
            "k@3 P1800 J1800 C100000 O0.018 S0 T0 M1200",
            "k@4 P1800 J2400 C100000 O0.024 S0 T0 M1800",
            // 1,200 estimated, 1,600 read: the scale is 4/3.
            "k@5 P2600 J2600 C100000 O0.026 S0 T0 M1800 X1.333",
            "k@6 P2600 J3400 C100000 O0.034 S0 T0 M2400 X1.333",
            "k@7 P2600 J3800 C100000 O0.038 S0 T0 M2700 X1.333",
        ],
    );
    // The fixed method is the seed's: the same readings, the estimate as it is.
    let fixed = [
        ("emit", "pressure"),
        ("capacity", "100000"),
        ("projection", "fixed"),
    ];
    let v = values(&run_everywhere(&fixed, &recs));
    assert_eq!(
        (&v[6]["projectedTokens"], &v[6]["estimateScale"]),
        (&Value::from(3200), &Value::from(1))
    );
}

#[test]
fn calibration_is_clamped_to_a_quarter_and_four() {
    let steps = |big: u64| {
        format!(
            "u600 a1000 u600 a{} u600 a{} u600",
            1000 + big,
            1000 + 2 * big
        )
    };
    let mut recs = session("hi", &steps(6000));
    recs.extend(session("lo", &steps(60)));
    case(
        "calibration_clamped",
        P,
        &recs,
        &[
            "hi@0 P- J- C100000 O- S0 T0 M600",
            "hi@1 P1000 J1000 C100000 O0.01 S0 T0 M600",
            "hi@2 P1000 J1600 C100000 O0.016 S0 T0 M1200",
            "hi@3 P7000 J7000 C100000 O0.07 S0 T0 M1200",
            "hi@4 P7000 J7600 C100000 O0.076 S0 T0 M1800",
            // 12,000 read for 1,200 estimated: 10, clamped to 4.
            "hi@5 P13000 J13000 C100000 O0.13 S0 T0 M1800 X4",
            "hi@6 P13000 J15400 C100000 O0.154 S0 T0 M2400 X4",
            "lo@0 P- J- C100000 O- S0 T0 M600",
            "lo@1 P1000 J1000 C100000 O0.01 S0 T0 M600",
            "lo@2 P1000 J1600 C100000 O0.016 S0 T0 M1200",
            "lo@3 P1060 J1060 C100000 O0.0106 S0 T0 M1200",
            "lo@4 P1060 J1660 C100000 O0.0166 S0 T0 M1800",
            // 120 read for 1,200 estimated: 1/10, clamped to 1/4.
            "lo@5 P1120 J1120 C100000 O0.0112 S0 T0 M1800 X0.25",
            "lo@6 P1120 J1270 C100000 O0.0127 S0 T0 M2400 X0.25",
        ],
    );
}

#[test]
fn calibration_skips_an_interval_with_a_compaction() {
    // Between the readings at seq 1 and 4 a replacement grew the surface by 1,100 (node 0 of
    // 100 became 1,200): counted, that interval alone would calibrate at 2,000/1,700. It is not
    // counted: the next two clean intervals make the scale, 4/3.
    let recs = session(
        "c",
        "u100 a1000 u600 r1200:0-0 a3000 u600 a3800 u600 a4600 u300",
    );
    case(
        "calibration_compaction_between_samples",
        P,
        &recs,
        &[
            "c@0 P- J- C100000 O- S0 T0 M100",
            "c@1 P1000 J1000 C100000 O0.01 S0 T0 M100",
            "c@2 P1000 J1600 C100000 O0.016 S0 T0 M700",
            "c@3 P1000 J2700 C100000 O0.027 S0 T0 M1800",
            "c@4 P3000 J3000 C100000 O0.03 S0 T0 M1800",
            "c@5 P3000 J3600 C100000 O0.036 S0 T0 M2400",
            "c@6 P3800 J3800 C100000 O0.038 S0 T0 M2400",
            "c@7 P3800 J4400 C100000 O0.044 S0 T0 M3000",
            "c@8 P4600 J4600 C100000 O0.046 S0 T0 M3000 X1.333",
            "c@9 P4600 J5000 C100000 O0.05 S0 T0 M3300 X1.333",
        ],
    );
}
