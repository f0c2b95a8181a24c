//! Checkpoints (contract §3): a replay stopped anywhere and resumed from its checkpoint equals one
//! uninterrupted replay; version 4 round-trips to identical text; versions 3, 2 and 1 restore
//! what they carried; anything else is refused and leaves the state as it was. Also the
//! runner's `--checkpoint-out` / `--checkpoint-in`.

use std::path::Path;

use crate::common::pressure::*;
use crate::harness;
use agent_fold::module::native_process;
use agent_fold::record::Rec;
use agent_fold::testing::jsonl;
use agent_fold_core::{CheckpointError, Processor, STATE_VERSION};
use serde_json::{Value, json};

const P: &[(&str, &str)] = &[("emit", "pressure"), ("capacity", "100000")];
const FRAMES: &[(&str, &str)] = &[("emit", "frames")];

fn example() -> Vec<Rec> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/agent-session.jsonl");
    jsonl::records(&std::fs::read(path).unwrap())
}

fn generated(seed: u64) -> Vec<Rec> {
    gen_records(&gen_session(seed, 40))
}

fn process(p: &mut Processor, recs: &[Rec]) -> Vec<String> {
    lines(&native_process(p, recs, 0).unwrap())
}

/// For every cut `k`, a processor that stops after `recs[..k]`, checkpoints, and is restored
/// into a fresh one that continues with `recs[k..]`, says exactly what one processor says over
/// the same two invocations. Each checkpoint also restores to identical text.
fn resume_anywhere(params: &[(&str, &str)], recs: &[Rec]) -> usize {
    for k in 0..=recs.len() {
        let mut whole = processor(params);
        let mut expect = process(&mut whole, &recs[..k]);
        expect.extend(process(&mut whole, &recs[k..]));

        let mut first = processor(params);
        let mut got = process(&mut first, &recs[..k]);
        let text = first.checkpoint();
        let mut second = processor(params);
        second.restore(&text).unwrap();
        assert_eq!(second.checkpoint(), text, "restore → checkpoint at cut {k}");
        got.extend(process(&mut second, &recs[k..]));
        assert_eq!(got, expect, "resumed at cut {k}");
        assert_eq!(
            second.checkpoint(),
            whole.checkpoint(),
            "end state, cut {k}"
        );
    }
    recs.len()
}

#[test]
fn the_example_resumes_from_a_checkpoint_at_every_position() {
    let recs = example();
    assert_eq!(resume_anywhere(P, &recs), 39);
    // The frames view's memory between pages survives a checkpoint too.
    resume_anywhere(FRAMES, &recs);
    // Checkpoint text is stable: version 4, the pressure view, sessions oldest first.
    let mut p = processor(P);
    process(&mut p, &recs);
    let doc: Value = serde_json::from_str(&p.checkpoint()).unwrap();
    assert_eq!(doc["stateVersion"], STATE_VERSION);
    assert_eq!(doc["view"], "pressure");
    let names = agent_fold_testkit::strings_of(&doc["sessions"], "session");
    assert_eq!(names, ["s-77", "s-42"]);
    let s42 = session_checkpoint(&p, "s-42").unwrap();
    assert_eq!(s42["cursor"], 32);
    assert_eq!(s42["partial"], false);
    assert_eq!(s42["pressureTokens"], 95 + 410 + 30);
}

#[test]
fn generated_sessions_resume_from_a_checkpoint_at_every_position() {
    let mut frames = 0;
    for seed in 0..60 {
        frames += resume_anywhere(P, &generated(seed));
    }
    assert!(
        frames > 60 * 35,
        "the generator made real sessions ({frames} frames)"
    );
}

#[test]
fn a_key_that_is_no_utf8_round_trips_as_bytes() {
    let key: &[u8] = b"s\xff\xfe";
    let recs = vec![
        Rec::new(
            Some(key),
            br#"{"type":"user/message","seq":0,"message":"Hello."}"#,
        ),
        Rec::new(
            Some(key),
            br#"{"type":"assistant/message","seq":1,"usage":{"input_tokens":9}}"#,
        ),
        Rec::new(
            Some(key),
            br#"{"type":"user/message","seq":2,"message":"Hi there"}"#,
        ),
    ];
    resume_anywhere(P, &recs);
    let mut p = processor(P);
    process(&mut p, &recs[..2]);
    let doc: Value = serde_json::from_str(&p.checkpoint()).unwrap();
    assert_eq!(doc["sessions"][0]["sessionBytes"], json!([115, 255, 254]));
    assert!(doc["sessions"][0].get("session").is_none());
}

#[test]
fn a_session_checkpoint_round_trips() {
    let mut p = processor(P);
    process(&mut p, &example());
    let s = session_checkpoint(&p, "s-42").unwrap();
    assert!(
        s["anchorTokens"].is_u64() && s["estGrowth"].is_u64() && s["providerGrowth"].is_u64(),
        "{s}"
    );
    // One session alone, in a document of its own: restored, it writes the very same object.
    let doc = |s: &Value| {
        json!({"stateVersion": STATE_VERSION, "view": "pressure", "sessions": [s]}).to_string()
    };
    let mut q = processor(P);
    q.restore(&doc(&s)).unwrap();
    assert_eq!(session_checkpoint(&q, "s-42").unwrap(), s);
    // A session object may name its own version: a version 3 one inside a version 4 document
    // restores as version 3 did, with no calibration sums.
    let mut v3 = s.clone();
    v3.as_object_mut()
        .unwrap()
        .insert("stateVersion".into(), 3.into());
    v3["estGrowth"] = 5000.into();
    let mut r = processor(P);
    r.restore(&doc(&v3)).unwrap();
    let back = session_checkpoint(&r, "s-42").unwrap();
    assert_eq!(
        (&back["estGrowth"], &back["providerGrowth"]),
        (&json!(0), &json!(0))
    );
    assert_eq!(back["surface"], s["surface"]);
}

/// A version 4 checkpoint carries no base or restore: `rebased` starts as if the session had
/// seen no compaction (contract §3.7). A compaction right after the restore is `calibrated`'s
/// figure; the next reading gives the session its base, and the compaction after that re-bases.
#[test]
fn a_version_4_checkpoint_restores_with_rebased_starting_afresh() {
    let key = Some(b"s".as_slice());
    let line = |v: Value| Rec::new(key, v.to_string().as_bytes());
    let msg = |seq: u64, n: usize| json!({"type": "user/message", "seq": seq, "message": "m".repeat(4 * n - 2)});
    let reading = |seq: u64, p: u64| json!({"type": "assistant/message", "seq": seq, "usage": {"input_tokens": p}});
    let summary = |seq: u64, from: u64, to: u64| json!({"type": "user/message", "seq": seq, "message": "s".repeat(38), "replaces": {"from_seq": from, "to_seq": to}});
    let before = [line(msg(0, 500)), line(reading(1, 3000)), line(msg(2, 700))];
    let after = [
        line(summary(3, 0, 2)),
        line(reading(4, 2500)),
        line(msg(5, 600)),
        line(summary(6, 3, 5)),
    ];
    let mut p = processor(P);
    process(&mut p, &before);
    // The same state as version 4 wrote it: no `rebase`, no `compactLevels`.
    let mut doc: Value = serde_json::from_str(&p.checkpoint()).unwrap();
    doc["stateVersion"] = 4.into();
    for s in doc["sessions"].as_array_mut().unwrap() {
        let s = s.as_object_mut().unwrap();
        s.remove("rebase");
        s.remove("compactLevels");
    }
    let mut v4 = processor(P);
    v4.restore(&doc.to_string()).unwrap();
    let mut calibrated = processor(&[
        ("emit", "pressure"),
        ("capacity", "100000"),
        ("projection", "calibrated"),
    ]);
    calibrated.restore(&doc.to_string()).unwrap();
    let shown = |p: &mut Processor, r: &Rec| -> Value {
        let out = process(p, std::slice::from_ref(r));
        let last: Value = serde_json::from_str(out.last().expect("a record")).unwrap();
        last["projectedTokens"].clone()
    };
    // The first compaction: no base yet, so `calibrated`'s figure, 3,000 + (10 − 500).
    assert_eq!(shown(&mut v4, &after[0]), shown(&mut calibrated, &after[0]));
    assert_eq!(
        session_checkpoint(&v4, "s").unwrap()["rebase"],
        json!([null, null, null])
    );
    // The reading after it: the base it implies (2,500 − 10), the restore not learnt from it.
    shown(&mut v4, &after[1]);
    assert_eq!(
        session_checkpoint(&v4, "s").unwrap()["rebase"],
        json!([2490, null, null])
    );
    shown(&mut v4, &after[2]);
    // The next compaction re-bases: base + the summary (10) + the prior (0 for agent-fold).
    assert_eq!(shown(&mut v4, &after[3]), json!(2490 + 10));
}

fn figures(v: &Value) -> Value {
    json!([
        v["pressureTokens"],
        v["projectedTokens"],
        v["contextOccupancy"],
        v["messageTokens"]
    ])
}

#[test]
fn a_version_2_checkpoint_restores_without_a_projection_until_the_next_sample() {
    // Version 2 carried no anchor. The seed's BEFORE-compact state (pressure 4227 over a
    // surface of 4365), restored: no projection, occupancy falls back to 4227 / 100000.
    let v2 = r#"{"stateVersion":2,"view":"pressure","sessions":[
        {"session":"s-42","cursor":4,"partial":false,"floor":1,"systemTokens":18,"toolsTokens":0,
         "capacity":null,"pressureTokens":4227,"surface":[[1,2000],[2,2269],[3,50],[4,46]]}]}"#;
    let mut p = processor(P);
    p.restore(v2).unwrap();
    let s = session_checkpoint(&p, "s-42").unwrap();
    assert_eq!(s["anchorTokens"], Value::Null);
    assert_eq!(s["cursor"], 4);
    assert_eq!(s["floor"], 1);

    let recs = frames(&[
        // A re-delivery: the cursor came back too.
        r#"{"type":"tool/result","session_id":"s-42","seq":4,"message":"x"}"#,
        // The compaction: 4 nodes → one of 286 tokens. No anchor, so no projection.
        &format!(
            r#"{{"type":"user/message","session_id":"s-42","seq":5,"message":{},"replaces":{{"from_seq":1,"to_seq":4}}}}"#,
            text(286)
        ),
        // The next sample anchors at 286 and projects again: 530 + 296 − 286 = 540.
        &format!(
            r#"{{"type":"assistant/message","session_id":"s-42","seq":6,"message":{},"usage":{{"input_tokens":530}}}}"#,
            text(10)
        ),
    ]);
    let out = values_of(&native_process(&mut p, &recs, 0).unwrap());
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0]["seq"], 5);
    assert_eq!(figures(&out[0]), json!([4227, null, 0.04227, 286]));
    assert_eq!(out[0]["systemTokens"], 18);
    assert_eq!(out[0]["capacity"], 100000);
    assert_eq!(figures(&out[1]), json!([530, 540, 0.0054, 296]));
}

#[test]
fn a_version_1_checkpoint_restores_the_envelope_and_the_surface() {
    let v1 = r#"{"stateVersion":1,"view":"pressure","sessions":[
        {"session":"s","systemTokens":18,"toolsTokens":5,"surface":[[0,3],[1,4]]}]}"#;
    let mut p = processor(P);
    p.restore(v1).unwrap();
    let s = session_checkpoint(&p, "s").unwrap();
    assert_eq!(s["systemTokens"], 18);
    assert_eq!(s["toolsTokens"], 5);
    assert_eq!(s["surface"], json!([[0, 3], [1, 4]]));
    assert_eq!(s["pressureTokens"], Value::Null);
    assert_eq!(s["partial"], false);

    let recs = frames(&[
        r#"{"type":"user/message","session_id":"s","seq":2,"message":"ok"}"#,
        r#"{"type":"user/message","session_id":"s","seq":3,"message":"Hello.","replaces":{"from_seq":0,"to_seq":1}}"#,
    ]);
    let out = values_of(&native_process(&mut p, &recs, 0).unwrap());
    let brief: Vec<Value> = out
        .iter()
        .map(|v| {
            json!([
                v["seq"],
                v["systemTokens"],
                v["toolsTokens"],
                v["messageTokens"],
                v["pressureTokens"]
            ])
        })
        .collect();
    // 3 + 4 + "ok" (1) = 8; then nodes 0..=1 → "Hello." (2): 2 + 1 = 3.
    assert_eq!(
        brief,
        [json!([2, 18, 5, 8, null]), json!([3, 18, 5, 3, null])]
    );
}

fn refused(p: &mut Processor, text: &str) -> String {
    refusal(p, text).to_string()
}

/// The refusal of `text`, checking it changed nothing.
fn refusal(p: &mut Processor, text: &str) -> CheckpointError {
    let before = p.checkpoint();
    let e = p.restore(text).expect_err(text);
    assert_eq!(
        p.checkpoint(),
        before,
        "a refused checkpoint changes nothing: {text}"
    );
    e
}

/// A processor with state in it, and a twin that never saw a restore attempt.
fn busy() -> (Processor, Processor) {
    let recs = example();
    let mut a = processor(P);
    let mut b = processor(P);
    process(&mut a, &recs[..20]);
    process(&mut b, &recs[..20]);
    (a, b)
}

#[test]
fn unknown_versions_are_refused_by_name() {
    let (mut p, mut twin) = busy();
    let session = r#"{"session":"s","cursor":0,"partial":false,"surface":[]}"#;
    for (version, named) in [
        ("0", "stateVersion 0 "),
        ("6", "stateVersion 6 "),
        ("\"3\"", "stateVersion \"3\" "),
        ("3.0", "stateVersion 3.0 "),
        ("-1", "stateVersion -1 "),
        ("null", "stateVersion null "),
    ] {
        let doc =
            format!(r#"{{"stateVersion":{version},"view":"pressure","sessions":[{session}]}}"#);
        let e = refused(&mut p, &doc);
        assert!(e.contains(named), "{version}: {e}");
        // The same version on a session inside a readable document.
        let doc = format!(
            r#"{{"stateVersion":3,"view":"pressure","sessions":[{{"stateVersion":{version},"session":"s","cursor":0,"partial":false,"surface":[]}}]}}"#
        );
        let e = refused(&mut p, &doc);
        assert!(e.contains(named), "session {version}: {e}");
    }
    let e = refusal(
        &mut p,
        &format!(r#"{{"view":"pressure","sessions":[{session}]}}"#),
    );
    assert_eq!(e, CheckpointError::MissingVersion);
    // Refusals left the state alone: both go on alike.
    let rest = &example()[20..];
    assert_eq!(process(&mut p, rest), process(&mut twin, rest));
}

#[test]
fn garbage_is_refused_and_changes_nothing() {
    let (mut p, mut twin) = busy();
    let doc =
        |sessions: &str| format!(r#"{{"stateVersion":3,"view":"pressure","sessions":{sessions}}}"#);
    let good = r#""cursor":3,"partial":false,"floor":0,"systemTokens":1,"toolsTokens":2,"capacity":null,"pressureTokens":null,"anchorTokens":null"#;
    let s = |body: &str| format!(r#"[{{"session":"s",{good},{body}}}]"#);
    let mut cases: Vec<String> = vec![
        "".into(),
        "not json".into(),
        r#"{"stateVersion":3"#.into(),
        "[]".into(),
        "3".into(),
        r#"{"stateVersion":3,"view":"pressure"}"#.into(),
        r#"{"stateVersion":3,"view":"pressure","sessions":{}}"#.into(),
        r#"{"stateVersion":3,"sessions":[]}"#.into(),
        r#"{"stateVersion":3,"view":"frames","sessions":[]}"#.into(),
        r#"{"stateVersion":3,"view":"context","sessions":[]}"#.into(),
        doc("[1]"),
        doc(r#"[{"cursor":0,"partial":false,"surface":[]}]"#),
        doc(r#"[{"session":7,"cursor":0,"partial":false,"surface":[]}]"#),
        doc(r#"[{"sessionBytes":[256],"cursor":0,"partial":false,"surface":[]}]"#),
        doc(&format!(r#"[{{"session":"s",{good}}}]"#)),
        doc(&s(r#""surface":{}"#)),
        doc(&s(r#""surface":[[0]]"#)),
        doc(&s(r#""surface":[[0,1,2]]"#)),
        doc(&s(r#""surface":[[-1,1]]"#)),
        doc(&s(r#""surface":[[0,"1"]]"#)),
        doc(&s(r#""surface":[[0,1.5]]"#)),
        doc(&s(r#""surface":[{"seq":0,"tokens":1}]"#)),
    ];
    for (field, bad) in [
        ("cursor", "-1"),
        ("cursor", "\"3\""),
        ("partial", "\"yes\""),
        ("partial", "null"),
        ("floor", "1.5"),
        ("systemTokens", "\"4\""),
        ("toolsTokens", "-2"),
        ("capacity", "[]"),
        ("pressureTokens", "18446744073709551616"),
        ("anchorTokens", "{}"),
    ] {
        let body = format!(r#"{{"session":"s",{good},"surface":[[0,1]]}}"#);
        let body = body.replacen(
            &format!(r#""{field}":"#),
            &format!(r#""{field}":{bad},"x":"#),
            1,
        );
        cases.push(doc(&format!("[{body}]")));
    }
    for c in &cases {
        refused(&mut p, c);
    }
    let e = refusal(
        &mut p,
        &doc(&s(r#""surface":[[0,18446744073709551615],[1,1]]"#)),
    );
    assert_eq!(e, CheckpointError::Overflow);
    let e = refusal(&mut p, &doc(&s(r#""surface":[[0,1],[2,1],[0,3]]"#)));
    assert_eq!(e, CheckpointError::RepeatedNode(0));
    let e = refusal(
        &mut p,
        &doc(&format!(
            r#"[{{"session":"s",{good},"surface":[]}},{{"session":"s",{good},"surface":[]}}]"#
        )),
    );
    assert_eq!(e, CheckpointError::Duplicate(b"s".to_vec()));
    let long = "k".repeat(1025);
    let e = refusal(
        &mut p,
        &doc(&format!(r#"[{{"session":"{long}",{good},"surface":[]}}]"#)),
    );
    assert_eq!(e, CheckpointError::KeyTooLong(1025));
    let rest = &example()[20..];
    assert_eq!(process(&mut p, rest), process(&mut twin, rest));
}

#[test]
fn duplicate_sessions_are_refused_even_past_the_session_cap() {
    // With room for one session, [a, b, a] would evict the first `a` before the second
    // arrived; the duplicate must still be seen.
    let params = [("emit", "pressure"), ("max_sessions", "1")];
    let s = |k: &str| format!(r#"{{"session":"{k}","cursor":0,"partial":false,"surface":[]}}"#);
    let doc = format!(
        r#"{{"stateVersion":3,"view":"pressure","sessions":[{},{},{}]}}"#,
        s("a"),
        s("b"),
        s("a")
    );
    let mut p = processor(&params);
    let e = refusal(&mut p, &doc);
    assert_eq!(e, CheckpointError::Duplicate(b"a".to_vec()));
    // Over the cap but distinct: the least recently used are dropped, as in a stream.
    let doc = format!(
        r#"{{"stateVersion":3,"view":"pressure","sessions":[{},{}]}}"#,
        s("a"),
        s("b")
    );
    p.restore(&doc).unwrap();
    assert_eq!(p.sessions(), 1);
    assert!(session_checkpoint(&p, "b").is_some());
}

// The runner: `--checkpoint-out` after one half, `--checkpoint-in` before the other.

/// `agent-fold run ARGS`: its stdout, having checked it succeeded.
fn agent_fold(args: &[&Path]) -> Vec<u8> {
    harness::succeeded(harness::agent_fold(args, None)).stdout
}

fn p(s: &str) -> &Path {
    Path::new(s)
}

#[test]
fn the_runner_resumes_from_its_checkpoint_file() {
    let t = harness::scratch("runner-ckpt");
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/agent-session.jsonl");
    let text = std::fs::read_to_string(&input).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let common = ["run", "-e", "capacity=100000", "--batch", "4"].map(p);

    // One run, in the engine and natively (with its checkpoint).
    let full_p = t.join("full.pressure");
    let mut args: Vec<&Path> = common.to_vec();
    args.extend([p("--pressure-out"), &full_p, &input]);
    let full = agent_fold(&args);
    let full_pressure = std::fs::read(&full_p).unwrap();
    let full_ck = t.join("full.ckpt");
    let mut args: Vec<&Path> = common.to_vec();
    args.extend([p("--native"), p("--pressure-out"), &full_p]);
    args.extend([p("--checkpoint-out"), &full_ck, &input]);
    assert_eq!(agent_fold(&args), full, "native = engine");
    assert_eq!(std::fs::read(&full_p).unwrap(), full_pressure);
    let n_pressure = full_pressure.split(|b| *b == b'\n').count() - 1;
    assert!(
        n_pressure >= 10,
        "the example has pressure records: {n_pressure}"
    );

    // Two halves, cut at every invocation boundary (a multiple of --batch) and at the end.
    let cuts: Vec<usize> = (0..lines.len()).step_by(4).chain([lines.len()]).collect();
    for cut in cuts {
        let halves = in_halves(&t, &common, &lines, cut);
        halves.assert_joined(&full, &full_pressure, cut);
        assert_eq!(
            std::fs::read_to_string(&halves.last_checkpoint).unwrap(),
            std::fs::read_to_string(&full_ck).unwrap(),
            "the final checkpoint, cut at {cut}"
        );
        let doc = &halves.first_checkpoint;
        assert_eq!(doc["main"]["view"], "frames");
        assert_eq!(doc["pressure"]["view"], "pressure");
    }
}

#[test]
fn the_runner_resumes_an_adapted_log_where_it_left_off() {
    // With `--input`, lines are new to the adapter only above its sessions' last offsets: the
    // checkpoint says where the log goes on, so the second half is not taken for re-deliveries.
    let t = harness::scratch("runner-ckpt-adapt");
    let input = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/adapt/claude-code/5e551011-0000-4000-8000-000000000001.jsonl");
    let text = std::fs::read_to_string(&input).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let common = ["run", "--input", "claude-code", "--batch", "3"].map(p);
    let full_p = t.join("full.pressure");
    let mut args: Vec<&Path> = common.to_vec();
    args.extend([p("--native"), p("--pressure-out"), &full_p, &input]);
    let full = agent_fold(&args);
    let full_pressure = std::fs::read(&full_p).unwrap();
    for cut in [3, 9, lines.len() - 3] {
        let halves = in_halves(&t, &common, &lines, cut);
        assert_eq!(
            halves.first_checkpoint["offset"], cut,
            "where the log goes on"
        );
        halves.assert_joined(&full, &full_pressure, cut);
    }
}

/// What two runner invocations make of a log cut in two, the second resuming from the first's
/// checkpoint.
struct Halves {
    stdout: Vec<u8>,
    pressure: Vec<u8>,
    first_checkpoint: Value,
    last_checkpoint: std::path::PathBuf,
}

impl Halves {
    /// The halves' outputs joined are the whole run's.
    fn assert_joined(&self, stdout: &[u8], pressure: &[u8], cut: usize) {
        assert_eq!(
            String::from_utf8_lossy(&self.stdout),
            String::from_utf8_lossy(stdout),
            "stdout, cut at {cut}"
        );
        assert_eq!(
            String::from_utf8_lossy(&self.pressure),
            String::from_utf8_lossy(pressure),
            "--pressure-out, cut at {cut}"
        );
    }
}

fn in_halves(t: &Path, common: &[&Path], lines: &[&str], cut: usize) -> Halves {
    let (a, b) = (t.join("a.jsonl"), t.join("b.jsonl"));
    let join = |ls: &[&str]| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
    std::fs::write(&a, join(&lines[..cut])).unwrap();
    std::fs::write(&b, join(&lines[cut..])).unwrap();
    let (pa, pb) = (t.join("a.pressure"), t.join("b.pressure"));
    let (ck, ck2) = (t.join("a.ckpt"), t.join("b.ckpt"));
    let mut args: Vec<&Path> = common.to_vec();
    args.extend([p("--pressure-out"), &pa, p("--checkpoint-out"), &ck, &a]);
    let mut stdout = agent_fold(&args);
    let mut args: Vec<&Path> = common.to_vec();
    args.extend([p("--pressure-out"), &pb, p("--checkpoint-in"), &ck]);
    args.extend([p("--checkpoint-out"), &ck2, &b]);
    stdout.extend(agent_fold(&args));
    let mut pressure = std::fs::read(&pa).unwrap();
    pressure.extend(std::fs::read(&pb).unwrap());
    Halves {
        stdout,
        pressure,
        first_checkpoint: serde_json::from_slice(&std::fs::read(&ck).unwrap()).unwrap(),
        last_checkpoint: ck2,
    }
}

#[test]
fn calibration_sums_resume_from_a_checkpoint_at_every_position() {
    // A session that calibrates (1,000 estimated tokens of clean growth by the fourth reading)
    // with a compaction between two readings: every cut restores the sums and the flag that
    // the interval since the last reading saw a replacement.
    let mut lines = Vec::new();
    let (mut seq, mut pressure) = (0u64, 3000u64);
    for k in 0..12u64 {
        lines.push(format!(
            r#"{{"type":"user/message","session_id":"k","seq":{seq},"message":{}}}"#,
            text(300 + 40 * k as usize)
        ));
        seq += 1;
        if k == 5 {
            lines.push(format!(
                r#"{{"type":"user/message","session_id":"k","seq":{seq},"message":{},"replaces":{{"from_seq":0,"to_seq":{}}}}}"#,
                text(50),
                seq - 1
            ));
            seq += 1;
        }
        pressure += 410 + 55 * k;
        lines.push(format!(r#"{{"type":"assistant/message","session_id":"k","seq":{seq},"usage":{{"input_tokens":{pressure}}}}}"#));
        seq += 1;
    }
    let recs = frames(&lines.iter().map(String::as_str).collect::<Vec<_>>());
    resume_anywhere(P, &recs);
    let mut p = processor(P);
    process(&mut p, &recs);
    let s = session_checkpoint(&p, "k").unwrap();
    assert!(
        s["estGrowth"].as_u64().unwrap() >= 1000,
        "it calibrated: {s}"
    );
    let out = values_of(&native_process(&mut processor(P), &recs, 0).unwrap());
    assert_ne!(out.last().unwrap()["estimateScale"], 1);
}
