//! The hostile-input reproducers (issue 10, D1–D10 of `../shared/repro/README.md`): each gives
//! what contract §1, §4 and §5 say, natively and as the built `.wasm` in fluvio-smartengine, the two
//! byte for byte alike, in invocations of 1, 7 and all at once. Small inputs live in
//! `tests/data/hostile/`; the large ones are generated here; the reproducers cut from real logs
//! are read from `../shared/repro` where it exists, never copied.

use crate::common;

use std::path::{Path, PathBuf};

use crate::common::*;
use agent_fold::module::{Instance, native_process};
use agent_fold::testing::jsonl;
use agent_fold_core::{MAX_KEY_LEN, Processor};
use agent_fold_testkit::{Drawn, HostileLog};
use serde_json::Value;

fn data(name: &str) -> Vec<Rec> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/hostile")
        .join(name);
    jsonl::records(&std::fs::read(path).unwrap())
}

/// A reproducer of `../shared/repro`, when that folder is there (a failure under `CI=true`).
fn shared(name: &str) -> Option<PathBuf> {
    common::shared(&format!("repro/{name}"))
}

/// Every output of `records` under `params`, natively and in the engine, at batch 1, 7 and
/// all: asserted alike; the all-at-once answer is returned.
fn everywhere(params: Params, records: &[Rec]) -> Vec<Rec> {
    let mut whole = None;
    for batch in [1, 7, 0] {
        let out: Vec<Rec> = run_both(params, None, &split(records, batch))
            .into_iter()
            .flat_map(|b| b.unwrap_or_else(|(n, w)| panic!("an invocation failed: {n} / {w}")))
            .collect();
        if batch == 0 {
            whole = Some(out);
        }
    }
    whole.unwrap()
}

/// A record as JSON, for assertions: every surrogate escape (which serde_json refuses alone)
/// read as U+FFFD first.
fn json(r: &Rec) -> Value {
    let text = String::from_utf8_lossy(&r.value);
    let mut out = String::with_capacity(text.len());
    let mut rest = &text[..];
    while let Some(at) = rest.find("\\u") {
        out.push_str(&rest[..at]);
        let hex = rest.get(at + 2..at + 6).unwrap_or("");
        let surrogate = u16::from_str_radix(hex, 16).is_ok_and(|u| (0xD800..=0xDFFF).contains(&u));
        out.push_str(if surrogate {
            "\\ufffd"
        } else {
            &rest[at..(at + 6).min(rest.len())]
        });
        rest = &rest[(at + 6).min(rest.len())..];
    }
    out.push_str(rest);
    serde_json::from_str(&out).expect("a JSON record")
}

/// The outputs as JSON, each read as [`json`] reads it (not `common::pressure::values_of`, which
/// refuses a lone surrogate escape).
fn pressure_of(out: &[Rec]) -> Vec<Value> {
    out.iter().map(json).collect()
}

const PRESSURE: Params = &[("emit", "pressure")];

#[test]
fn d1_long_session_keys_keep_no_state_and_never_trap() {
    // Distinct 1 MiB session ids: each served as itself (frames), answered by an error naming
    // its length (pressure); no state is kept, so memory does not grow with them.
    let records: Vec<Rec> = (0..48)
        .map(|i| {
            let sid = format!("{i:06}{}", "k".repeat((1 << 20) - 6));
            let line = format!(r#"{{"type":"user/message","session_id":"{sid}","seq":0,"timestamp":"t","message":"m"}}"#);
            jsonl::line_record(line.as_bytes())
        })
        .collect();
    let out = run_both(&[], None, &split(&records, 1));
    let out: Vec<Rec> = out.into_iter().flat_map(|b| b.unwrap()).collect();
    assert_eq!(out, records, "served as themselves");
    let out = run_both(PRESSURE, None, &split(&records, 1));
    let out: Vec<Rec> = out.into_iter().flat_map(|b| b.unwrap()).collect();
    assert_eq!(out.len(), records.len());
    for (o, r) in out.iter().zip(&records) {
        let v = json(o);
        assert_eq!(
            (v["type"].as_str(), &v["session"]),
            (Some("context/error"), &Value::Null),
            "{v}"
        );
        assert!(
            v["error"].as_str().unwrap().contains("1048576 bytes"),
            "{v}"
        );
        assert_eq!(o.key, r.key, "keyed by the session it answers");
    }
    let mut p = processor(PRESSURE, None);
    native_process(&mut p, &records, 0).unwrap();
    assert_eq!(p.sessions(), 0, "no state for keys over the limit");
    // At the limit: 1,024 bytes keep state, 1,025 do not.
    for (len, sessions) in [(MAX_KEY_LEN, 1), (MAX_KEY_LEN + 1, 0)] {
        let key = "k".repeat(len);
        let rec = rec(
            Some(&key),
            r#"{"type":"user/message","seq":0,"message":"m"}"#,
        );
        for params in [PRESSURE, &[]] {
            let mut p = processor(params, None);
            native_process(&mut p, std::slice::from_ref(&rec), 0).unwrap();
            assert_eq!(p.sessions(), sessions, "key of {len} bytes, {params:?}");
        }
    }
}

/// Claude Code lines through the adapter: every frame an adapted one, every pressure record
/// one; the frames and the pressure records.
fn adapted_claude(what: &str, lines: &[Rec]) -> (Vec<Value>, Vec<Value>) {
    let frames: Vec<Value> = everywhere(&[("input", "claude-code"), ("subagents", "keep")], lines)
        .iter()
        .filter(|r| !inferred(&r.value))
        .map(json)
        .collect();
    for v in &frames {
        assert!(
            v["type"].as_str().is_some_and(|t| t.contains('/')),
            "{what}: a raw line passed: {v}"
        );
    }
    let pressure = pressure_of(&everywhere(
        &[("input", "claude-code"), ("emit", "pressure")],
        lines,
    ));
    assert!(
        pressure.iter().all(|v| v["type"] == "context/pressure"),
        "{what}: {pressure:?}"
    );
    (frames, pressure)
}

/// A Claude Code transcript with one line serde_json's `Value` refuses, and its control.
fn claude_lines(odd: &str) -> Vec<Rec> {
    let mut lines = data("claude_code_lone_surrogate.jsonl");
    let text = String::from_utf8(lines[2].value.clone()).unwrap();
    let changed = match odd {
        "surrogate" => text,
        // The character the escape reads as, which the adapter's copy writes and prices
        // (contract §1).
        "control" => text.replace("\\ud83d", "\u{FFFD}"),
        "deep" => text.replacen(
            r#""uuid":"u3""#,
            &format!(r#""uuid":"u3","x":{}{}"#, "[".repeat(200), "]".repeat(200)),
            1,
        ),
        "huge" => text.replacen(r#""uuid":"u3""#, r#""uuid":"u3","x":1e400"#, 1),
        _ => unreachable!(),
    };
    lines[2].value = changed.into_bytes();
    lines
}

#[test]
fn d2_lines_serde_json_refuses_are_adapted() {
    let control = everywhere(
        &[("input", "claude-code"), ("emit", "pressure")],
        &claude_lines("control"),
    );
    let control_tokens = pressure_of(&control).last().unwrap()["messageTokens"].clone();
    for odd in ["surrogate", "deep", "huge"] {
        let lines = claude_lines(odd);
        let (frames, pressure) = adapted_claude(odd, &lines);
        assert_eq!(frames.len(), lines.len(), "{odd}");
        assert!(
            frames.iter().all(|v| v["seq"].is_u64()),
            "{odd}: {frames:?}"
        );
        assert_eq!(
            pressure.last().unwrap()["messageTokens"],
            control_tokens,
            "{odd}: the tool result joined the surface"
        );
        for malformed in ["fail", "drop"] {
            let params = [
                ("input", "claude-code"),
                ("malformed", malformed),
                ("subagents", "keep"),
            ];
            let own = everywhere(&params, &lines)
                .iter()
                .filter(|r| !inferred(&r.value))
                .count();
            assert_eq!(
                own,
                lines.len(),
                "{odd}, malformed={malformed}: every line is an object"
            );
        }
    }
    // The reproducers cut from a real transcript, where they are.
    for name in ["claude_code_deep200.jsonl", "claude_code_1e400.jsonl"] {
        let Some(path) = shared(name) else { continue };
        adapted_claude(name, &jsonl::records(&std::fs::read(path).unwrap()));
    }
}

#[test]
fn d3_the_adapter_and_the_view_evict_a_session_together() {
    let lines = data("adapter_lru_desync.jsonl");
    let room = |n| {
        [
            ("input", "claude-code"),
            ("emit", "pressure"),
            ("max_sessions", n),
        ]
    };
    let out = pressure_of(&everywhere(&room("2"), &lines));
    let b: Vec<&Value> = out.iter().filter(|v| v["session"] == "B").collect();
    // B's last three lines come after C evicted B: they answer, partial, and B's reading shows.
    let after: Vec<&&Value> = b.iter().filter(|v| v["partial"] == true).collect();
    assert!(after.len() >= 3, "B came back partial: {b:?}");
    assert!(
        b.iter().any(|v| v["pressureTokens"] == 5000),
        "B's reading is not lost: {b:?}"
    );
    assert!(
        out.iter().all(|v| v["type"] == "context/pressure"),
        "{out:?}"
    );
    // The frames view never renumbers B: its seqs only rise.
    let frames = everywhere(
        &[
            ("input", "claude-code"),
            ("max_sessions", "2"),
            ("subagents", "keep"),
        ],
        &lines,
    );
    let seqs: Vec<u64> = frames
        .iter()
        .map(json)
        .filter(|v| v["session_id"] == "B")
        .map(|v| v["seq"].as_u64().unwrap())
        .collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "B renumbered: {seqs:?}"
    );
    // A control with room for every session: B's figures are complete.
    let out = pressure_of(&everywhere(&room("3"), &lines));
    assert!(
        out.iter()
            .filter(|v| v["session"] == "B")
            .all(|v| v.get("partial").is_none())
    );
}

/// `gen_quadratic.py`: `n` message frames, then `n` frames with a corrupt span, a valid one
/// replacing the last node, or none.
fn quadratic(n: usize, mode: &str) -> Vec<Rec> {
    let mut out = Vec::with_capacity(2 * n);
    for i in 0..n {
        out.push(format!(
            r#"{{"type":"user/message","session_id":"s","seq":{i},"message":"m"}}"#
        ));
    }
    let mut prev = n - 1;
    for j in 0..n {
        let s = n + j;
        let rep = match mode {
            "corrupt" => r#","replaces":{"from_seq":99999999999,"to_seq":99999999999}"#.to_owned(),
            "valid" => format!(r#","replaces":{{"from_seq":{prev},"to_seq":{prev}}}"#),
            _ => String::new(),
        };
        out.push(format!(
            r#"{{"type":"user/message","session_id":"s","seq":{s},"message":"m"{rep}}}"#
        ));
        prev = s;
    }
    out.iter()
        .map(|l| jsonl::line_record(l.as_bytes()))
        .collect()
}

/// The engine's fuel over a run in invocations of 1,000 records: work, counted exactly.
fn fuel(records: &[Rec]) -> u64 {
    let mut i: Instance = engine(PRESSURE, None);
    let _ = i.metrics();
    i.run(records, 1000).unwrap();
    i.metrics().expect("metrics").fuel_used()
}

#[test]
fn d4_compactions_cost_what_they_remove_not_the_surface() {
    let n = 20_000;
    let ctrl = fuel(&quadratic(n, "ctrl"));
    for mode in ["corrupt", "valid"] {
        let f = fuel(&quadratic(n, mode));
        assert!(
            f <= 2 * ctrl,
            "{mode}: fuel {f} against {ctrl} without spans"
        );
        // Linear in the log's length: four times the log, about four times the work.
        let f4 = fuel(&quadratic(4 * n, mode));
        assert!(
            f4 * 10 <= f * 48,
            "{mode}: fuel {f4} at 4n against {f} at n"
        );
    }
}

#[test]
fn d5_odd_keys_beside_the_fields_read_change_nothing() {
    // A sub-agent counter with a lone surrogate in another `extras` key is still a sub-agent's.
    let out = everywhere(&[], &data("subagent_lone_surrogate_extras_key.jsonl"));
    let folded: Vec<Value> = out
        .iter()
        .map(json)
        .filter(|v| v.get("folded_frames").is_some())
        .collect();
    assert_eq!(folded.len(), 1, "{out:?}");
    assert_eq!(
        (
            &folded[0]["estimated_tokens_delta"],
            &folded[0]["folded_frames"]
        ),
        (&Value::from(12), &Value::from(2))
    );
    assert_eq!(
        out.len(),
        3,
        "the sub-agent counter dropped, two counters folded into one"
    );
    // Usage and span objects with odd keys read as contract §3 says; a sub-agent's reading is not
    // the session's.
    let p = pressure_of(&everywhere(
        PRESSURE,
        &data("pressure_lone_surrogate_keys.jsonl"),
    ));
    assert!(p.iter().all(|v| v["type"] == "context/pressure"), "{p:?}");
    assert_eq!(p[1]["pressureTokens"], 5300);
    assert!(p.iter().all(|v| v["pressureTokens"] != 90000));
    assert_eq!(
        (
            p.last().unwrap()["seq"].as_u64(),
            p.last().unwrap()["messageTokens"].as_u64()
        ),
        (Some(3), Some(1))
    );
    // A top-level odd key: the frame is a main non-counter of session `s`, breaking the run.
    let lines = data("toplevel_lone_surrogate_key.jsonl");
    let out = everywhere(&[], &lines);
    assert!(
        out.contains(&lines[3]),
        "passed as it came, keyed by its session"
    );
    let ids: Vec<String> = out
        .iter()
        .map(json)
        .map(|v| v["id"].as_str().unwrap_or("-").to_owned())
        .collect();
    assert_eq!(ids, ["u0", "c2", "-", "c5", "u6"], "{ids:?}");
    let p = pressure_of(&everywhere(PRESSURE, &lines));
    assert!(
        p.iter()
            .all(|v| v["type"] == "context/pressure" && v["session"] == "s"),
        "{p:?}"
    );
}

#[test]
fn d6_an_evicted_session_replayed_from_seq_0_comes_back_partial() {
    let out = pressure_of(&everywhere(
        &[("emit", "pressure"), ("max_sessions", "1")],
        &data("evict_replay_seq0.jsonl"),
    ));
    let a: Vec<&Value> = out.iter().filter(|v| v["session"] == "A").collect();
    let back = &a[2..];
    assert!(!back.is_empty(), "{out:?}");
    for v in back {
        assert_eq!(
            (&v["partial"], &v["messageTokens"]),
            (&Value::Bool(true), &Value::Null),
            "{v}"
        );
    }
}

#[test]
fn d8_records_that_are_not_utf8_are_malformed() {
    let lines = data("invalid_utf8_skipped_field.jsonl");
    assert!(std::str::from_utf8(&lines[1].value).is_err());
    let err = run_both(&[("malformed", "fail")], None, std::slice::from_ref(&lines));
    let Err((native, wasm)) = &err[0] else {
        panic!("malformed=fail let it through: {err:?}")
    };
    assert!(
        native.contains("offset 1") && native.contains("not a JSON object"),
        "{native}"
    );
    assert!(wasm.contains("not a JSON object"), "{wasm}");
    assert_eq!(everywhere(&[("malformed", "drop")], &lines), lines[..1]);
    assert_eq!(everywhere(&[], &lines), lines, "pass: as it came");
    let p = pressure_of(&everywhere(PRESSURE, &lines));
    assert_eq!(p.len(), 1, "the pressure view ignores it: {p:?}");
}

#[test]
fn d9_an_adapter_checkpoint_listing_a_session_twice_is_refused_past_the_cap() {
    let doc = r#"{"stateVersion":3,"view":"frames","sessions":[{"session":"a","afterOther":true}],
        "adapter":{"input":"claude-code","last":"a","sessions":[{"session":"a","nextSeq":100},{"session":"b","nextSeq":4},{"session":"a","nextSeq":7}]}}"#;
    let mut p = Processor::from_params([("input", "claude-code"), ("max_sessions", "1")]).unwrap();
    let before = p.checkpoint();
    let e = p.restore(doc).unwrap_err();
    assert_eq!(
        e,
        agent_fold_core::CheckpointError::Duplicate(b"a".to_vec())
    );
    assert_eq!(p.checkpoint(), before);
}

#[test]
fn d10_a_huge_transcript_line_costs_its_bytes_not_a_tree() {
    // ~60 MB of small JSON objects in one tool result: adapted in the engine, as natively.
    let block = r#"{"type":"text","text":"a"},"#;
    let n = 60 * 1024 * 1024 / block.len();
    let mut content = String::with_capacity(n * block.len() + 64);
    content.push('[');
    for _ in 0..n {
        content.push_str(block);
    }
    content.pop();
    content.push(']');
    let lines = [
        r#"{"type":"user","sessionId":"S","uuid":"u0","timestamp":"t","message":{"role":"user","content":"hi"}}"#.to_owned(),
        format!(r#"{{"type":"user","sessionId":"S","uuid":"u","timestamp":"t","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t","content":{content}}}]}}}}"#),
        r#"{"type":"user","sessionId":"S","uuid":"u9","timestamp":"t","message":{"role":"user","content":"hi"}}"#.to_owned(),
    ];
    let records: Vec<Rec> = lines
        .iter()
        .map(|l| jsonl::line_record(l.as_bytes()))
        .collect();
    let out = run_both(&[("input", "claude-code")], None, &split(&records, 1));
    let out: Vec<Rec> = out
        .into_iter()
        .flat_map(|b| b.unwrap())
        .filter(|r| !inferred(&r.value))
        .collect();
    assert_eq!(out.len(), 3);
    assert!(
        out[1]
            .value
            .starts_with(br#"{"type":"tool/result","id":"u""#)
    );
    assert!(out[1].value.len() > 60_000_000);
}

#[test]
fn hostile_logs_meet_the_properties() {
    // The `hostile` fuzz target's property over seeded logs, natively.
    let mut records = 0;
    for seed in 0..300 {
        let log = HostileLog::from_seed(seed, 600);
        records += log.records().len();
        agent_fold_testkit::checks::check_hostile_log(&log);
    }
    assert!(
        records > 300 * 20,
        "the generator made real logs ({records} records)"
    );
}

#[test]
fn hostile_logs_run_alike_in_the_engine_and_natively() {
    // A sample of the generator's logs through both, at invocations of 1, 7 and all.
    for seed in 0..24 {
        let log = HostileLog::from_seed(1000 + seed, 800);
        let config = agent_fold_testkit::checks::hostile_config(&log);
        let mut params: Vec<(&str, String)> = vec![
            (
                "emit",
                if config.view == agent_fold_core::View::Pressure {
                    "pressure"
                } else {
                    "frames"
                }
                .into(),
            ),
            ("input", config.input.name().into()),
            ("max_sessions", config.max_sessions.to_string()),
        ];
        if config.malformed == agent_fold_core::Malformed::Drop {
            params.push(("malformed", "drop".into()));
        }
        let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let records: Vec<Rec> = log
            .records()
            .into_iter()
            .map(|(key, value)| Rec { key, value })
            .collect();
        everywhere(&params, &records);
    }
}

/// Gemini CLI chats and OpenCode sessions of any shape — numbers past any integer, lone
/// surrogates in ids, deep nesting in content, messages that are not objects, fields of the
/// wrong type, a document of 5,000 messages written twice — run alike natively and in the
/// engine, never trap, and give only JSON objects; the readings they give are the documents'
/// own positive ones.
#[test]
fn d11_documents_of_any_shape_run_alike_and_never_trap() {
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let g = |id: &str, tokens: &str| {
        format!(
            r#"{{"id":"{id}","timestamp":"2026-01-15T20:51:52.837Z","type":"gemini","content":{deep},"model":"gemini-2.5-pro","tokens":{tokens}}}"#
        )
    };
    let chat = |messages: &[String]| {
        format!(
            r#"{{"sessionId":"g","projectHash":"h","startTime":"t","messages":[{}]}}"#,
            messages.join(",")
        )
    };
    let many: Vec<String> = (0..5_000)
        .map(|i| {
            g(
                &format!("m{i}"),
                &format!(r#"{{"input":{},"cached":0}}"#, 1_000 + i),
            )
        })
        .collect();
    let gemini = [
        chat(&[
            g("a", r#"{"input":1e400,"cached":-3}"#),
            g(r"\ud800", r#"{"input":"12"}"#),
        ]),
        chat(&[
            "7".to_owned(),
            "null".to_owned(),
            g("b", r#"{"input":5000,"cached":99999}"#),
        ]),
        r#"{"sessionId":"g","projectHash":"h","messages":"not a list"}"#.to_owned(),
        chat(&[g("c", "[1,2]"), g("d", r#"{"input":18446744073709551616}"#)]),
        chat(&many),
        chat(&many),
    ];
    let opencode = [
        r#"{"info":{"id":"ses_x"},"messages":[{"info":7,"parts":"x"},{"info":{"id":"m","role":"assistant","tokens":{"input":1e400,"cache":{"read":-1}}},"parts":[{"type":"tool","state":null},{"type":"text","text":{"deep":[[[[1]]]]}}]}]}"#.to_owned(),
        r#"{"info":{"id":"ses_x"},"messages":[{"info":{"id":"m2","role":"assistant","summary":true,"tokens":{"input":300,"cache":{"read":0,"write":0}}},"parts":[]}]}"#.to_owned(),
        r#"{"id":"m3","sessionID":"ses_y","role":"assistant","tokens":{"input":400,"cache":{"read":100,"write":"2"}}}"#.to_owned(),
        r#"{"id":"p","messageID":"m3","sessionID":"ses_y","type":"tool","tool":7,"state":{"input":[],"output":{"x":1}}}"#.to_owned(),
    ];
    for (input, docs) in [("gemini-cli", &gemini[..]), ("opencode", &opencode[..])] {
        let records: Vec<Rec> = docs
            .iter()
            .map(|d| jsonl::line_record(d.as_bytes()))
            .collect();
        for emit in ["frames", "pressure"] {
            let out = everywhere(&[("input", input), ("emit", emit)], &records);
            assert!(!out.is_empty(), "{input} {emit}");
            for r in &out {
                // Deeper than serde_json reads: checked by the module's own reader.
                assert!(agent_fold_core::is_object(&r.value), "{input} {emit}");
                if emit == "pressure" {
                    let v = json(r);
                    if let Some(p) = v["pressureTokens"].as_u64() {
                        assert!(p >= 1, "{input}: a reading is positive: {v}");
                    }
                }
            }
        }
    }
}
