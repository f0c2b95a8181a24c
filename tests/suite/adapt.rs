//! The adapters: Claude Code transcripts, `claude -p --output-format stream-json`
//! and Codex rollouts in, agent-fold frames out; the runner's `--input`, `--plot` and progress
//! bar; the `accuracy` report.
//!
//! Two kinds of input. Excerpts written for this project in each format live in
//! `tests/data/adapt/` and always run. The real captures (public data from other projects, see
//! `../shared/data/real/README.md`) are read from `../shared/data/real`, never copied here:
//! their tests run where that folder exists (CI has it) and say plainly when they are skipped.

use crate::common;
use crate::harness::{agent_fold, succeeded};

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Output;

use agent_fold::module::native_process;
use agent_fold::module::{Instance, default_wasm_path};
use agent_fold::record::Rec;
use agent_fold::record::inputs;
use agent_fold::testing::accuracy;
use agent_fold::testing::logs;
use agent_fold::testing::plot;
use agent_fold_core::usage_tokens;
use agent_fold_core::{Emit, Frame, Input, Processor};
use serde_json::Value;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/adapt");

const CC_SESSION: &str = "claude-code/5e551011-0000-4000-8000-000000000001";
const AE4A: &str = "claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04";

fn data(rel: &str) -> PathBuf {
    Path::new(DATA).join(rel)
}

/// A real capture, or `None` (said on stderr) where `../shared/data/real` is absent (a failure
/// under `CI=true`).
fn real(rel: &str) -> Option<PathBuf> {
    common::real_data(rel)
}

fn snap(name: &str, text: &str) {
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!(name, text);
    });
}

fn read(path: &Path) -> Vec<Rec> {
    logs::read_records(path).expect("the log reads")
}

/// The config of an instance adapting `input` with the default params.
fn config(input: Input) -> agent_fold_core::Config {
    agent_fold_core::Config {
        input,
        ..agent_fold_core::Config::default()
    }
}

fn adapt(input: Input, path: &Path) -> (Vec<Rec>, Vec<Rec>) {
    let lines = read(path);
    let frames = logs::adapt_all(&config(input), &lines);
    (lines, frames)
}

/// The pressure view over a log's own lines, as a deployment runs it (`input=` the log's format,
/// so the agent's defaults apply: contract §3.4, §3.5).
fn deployed_pressure(input: Input, lines: &[Rec]) -> Vec<Rec> {
    let mut p = Processor::from_params([("emit", "pressure"), ("input", input.name())]).unwrap();
    native_process(&mut p, lines, 0).unwrap()
}

fn pressure_of(frames: &[Rec]) -> Vec<Rec> {
    let mut p = Processor::from_params([("emit", "pressure")]).unwrap();
    native_process(&mut p, frames, 0).unwrap()
}

fn json(r: &Rec) -> Value {
    serde_json::from_slice(&r.value).unwrap_or(Value::Null)
}

fn text(r: &Rec) -> String {
    String::from_utf8_lossy(&r.value).into_owned()
}

fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

fn is_sub(r: &Rec) -> bool {
    Frame::parse(&r.value).is_some_and(|v| v.is_subagent())
}

/// Main samples: `(seq, timestamp, pressureTokens)`.
fn samples(frames: &[Rec]) -> Vec<(u64, String, u64)> {
    frames
        .iter()
        .filter_map(|r| {
            let v = Frame::parse(&r.value)?;
            if v.is_subagent() || v.kind() != Some("assistant/message") {
                return None;
            }
            Some((
                v.seq()?,
                v.stamp().unwrap_or("").trim_matches('"').to_owned(),
                usage_tokens(v.usage()?),
            ))
        })
        .collect()
}

/// The figures of each `context/pressure` record, without the `seq` (which the adapter
/// numbers): what a UI would draw, in order.
fn figures(pressure: &[Rec]) -> Vec<String> {
    pressure
        .iter()
        .map(|r| {
            let mut v = json(r);
            if let Some(o) = v.as_object_mut() {
                o.remove("seq");
            }
            v.to_string()
        })
        .collect()
}

/// What a reader can check of a big adapted log: counts by type, the samples, the
/// compaction, the ends, and what the pressure view made of it.
fn digest(input: Input, lines: &[Rec], frames: &[Rec]) -> String {
    let mut o = String::new();
    o.push_str(&format!(
        "lines: {}\nframes: {}\n",
        lines.len(),
        frames.len()
    ));
    let mut by_type: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for f in frames {
        let e = by_type.entry(logs::frame_type(&f.value)).or_default();
        if is_sub(f) {
            e.1 += 1;
        } else {
            e.0 += 1;
        }
    }
    o.push_str("\nframes by type (main + sub-agent):\n");
    for (t, (m, s)) in &by_type {
        o.push_str(&format!("  {t}: {m} + {s}\n"));
    }
    let ss = samples(frames);
    o.push_str(&format!(
        "\nmain samples ({}), seq timestamp: pressureTokens\n",
        ss.len()
    ));
    for (seq, ts, p) in &ss {
        o.push_str(&format!("  {seq} {ts}: {p}\n"));
    }
    // Carried content (a message, a line's `source`, a header's system prompt and tools) is
    // shown as its length only: what the agents and their users wrote stays in the captures.
    let skeleton = |f: &Rec| {
        let mut v = json(f);
        if let Some(o) = v.as_object_mut() {
            for k in ["message", "source", "system", "tools"] {
                if let Some(m) = o.get_mut(k).filter(|m| !m.is_null()) {
                    *m = Value::from(format!("<{} chars>", m.to_string().chars().count()));
                }
            }
        }
        v
    };
    o.push_str("\ncompaction frames (a message shown as its length):\n");
    for f in frames {
        let v = json(f);
        let t = v["type"].as_str().unwrap_or("");
        if t.starts_with("compact/") || v.get("replaces").is_some() {
            o.push_str(&format!("  {}\n", skeleton(f)));
        }
    }
    o.push_str("\nfirst frames:\n");
    for f in frames.iter().take(3) {
        o.push_str(&format!("  {}\n", cut(&skeleton(f).to_string(), 400)));
    }
    o.push_str("last frames:\n");
    for f in &frames[frames.len().saturating_sub(3)..] {
        o.push_str(&format!("  {}\n", cut(&skeleton(f).to_string(), 400)));
    }
    let p = deployed_pressure(input, lines);
    let errors = p
        .iter()
        .filter(|r| json(r)["type"] == "context/error")
        .count();
    o.push_str(&format!(
        "\npressure view: {} records, {} context/error\nlast: {}\n",
        p.len(),
        errors,
        p.last().map(text).unwrap_or_default()
    ));
    o
}

// ---------------------------------------------------------------------------------------------
// Excerpts written in each format: the whole output.

fn excerpt_case(input: Input, rel: &str, params: &[(&str, &str)]) -> String {
    let (lines, frames) = adapt(input, &data(rel));
    let mut p = Processor::from_params(params.iter().copied()).unwrap();
    let shown = native_process(&mut p, &frames, 0).unwrap();
    let pressure = deployed_pressure(input, &lines);
    let mut o = format!(
        "{} lines in, {} frames out\n\n--- frames ---\n",
        lines.len(),
        frames.len()
    );
    for f in &frames {
        o.push_str(&text(f));
        o.push('\n');
    }
    o.push_str(&format!(
        "\n--- frames view {params:?}: {} records ---\n",
        shown.len()
    ));
    for r in &shown {
        o.push_str(&cut(&text(r), 160));
        o.push('\n');
    }
    o.push_str("\n--- pressure view ---\n");
    for r in &pressure {
        o.push_str(&text(r));
        o.push('\n');
    }
    o
}

#[test]
fn claude_code_excerpt() {
    snap(
        "adapt__claude_code_excerpt",
        &excerpt_case(Input::ClaudeCode, CC_SESSION, &[("subagents", "keep")]),
    );
}

#[test]
fn claude_stream_excerpt() {
    snap(
        "adapt__claude_stream_excerpt",
        &excerpt_case(Input::ClaudeStream, "claude-stream.jsonl", &[]),
    );
}

#[test]
fn codex_excerpt() {
    snap(
        "adapt__codex_excerpt",
        &excerpt_case(Input::Codex, "codex.jsonl", &[]),
    );
}

#[test]
fn every_line_is_accounted_for() {
    // Nothing is dropped silently: every line becomes at least one frame, a line that is not
    // JSON is handed on as it came, and only a compaction's lines make two.
    for (input, rel) in [
        (Input::ClaudeCode, format!("{CC_SESSION}.jsonl")),
        (Input::ClaudeCode, CC_SESSION.to_owned()),
        (Input::ClaudeStream, "claude-stream.jsonl".to_owned()),
        (Input::Codex, "codex.jsonl".to_owned()),
    ] {
        let lines = read(&data(&rel));
        let mut a = agent_fold_core::Adapter::new(input, 100);
        for l in &lines {
            let mut out: Vec<Vec<u8>> = Vec::new();
            let n = a.push(l.key.as_deref(), &l.value, None, &mut out);
            assert!(n >= 1, "{rel}: a line became no frame: {}", text(l));
            if !agent_fold_core::is_object(&l.value) {
                assert_eq!(
                    out,
                    std::slice::from_ref(&l.value),
                    "{rel}: not JSON, handed on as it came"
                );
            }
            // Beside its own frame a line may bring headers the adapter inferred (a session's
            // envelope not in the log, its window, its compaction reserve).
            let own: Vec<String> = out
                .iter()
                .filter(|f| !common::inferred(f))
                .map(|f| logs::frame_type(f))
                .collect();
            assert!(!own.is_empty(), "{rel}: a line became only inferred frames");
            if own.len() == 2 {
                assert!(
                    own.iter().any(|k| k.starts_with("compact/")),
                    "{rel}: two frames from one line that is no compaction: {own:?}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The real captures: digests.

fn real_digest(name: &str, input: Input, rel: &str) {
    let Some(path) = real(rel) else { return };
    let (lines, frames) = adapt(input, &path);
    snap(name, &digest(input, &lines, &frames));
}

#[test]
fn real_claude_code_ae4a77f8() {
    real_digest(
        "adapt__real_claude_code_ae4a77f8",
        Input::ClaudeCode,
        &format!("{AE4A}.jsonl"),
    );
}

#[test]
fn real_claude_code_6113e919() {
    real_digest(
        "adapt__real_claude_code_6113e919",
        Input::ClaudeCode,
        "claude-code/6113e919-67d3-417b-b525-c63700228d19.jsonl",
    );
}

#[test]
fn real_claude_code_bf5915c6() {
    real_digest(
        "adapt__real_claude_code_bf5915c6",
        Input::ClaudeCode,
        "claude-code/bf5915c6-75c2-4612-ab44-c094d5efe7ed.jsonl",
    );
}

#[test]
fn real_claude_code_6c0a282a() {
    real_digest(
        "adapt__real_claude_code_6c0a282a",
        Input::ClaudeCode,
        "claude-code/6c0a282a-886f-458d-a426-93d95104b4a6.jsonl",
    );
}

#[test]
fn real_codex_019f17a5() {
    real_digest(
        "adapt__real_codex_019f17a5",
        Input::Codex,
        "codex/rollout-019f17a5-6d3f-7470-9097-c70f6cefe936.jsonl",
    );
}

#[test]
fn real_claude_code_short() {
    real_digest(
        "adapt__real_claude_code_short",
        Input::ClaudeCode,
        "claude-code/short.jsonl",
    );
}

#[test]
fn real_claude_code_subagent() {
    real_digest(
        "adapt__real_claude_code_subagent",
        Input::ClaudeCode,
        "claude-code/subagent.jsonl",
    );
}

#[test]
fn real_claude_stream() {
    real_digest(
        "adapt__real_claude_stream",
        Input::ClaudeStream,
        "claude-stream-json/task_tool_output.jsonl",
    );
}

#[test]
fn real_codex_12_41() {
    real_digest(
        "adapt__real_codex_12_41",
        Input::Codex,
        "codex/rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl",
    );
}

#[test]
fn real_codex_12_54() {
    real_digest(
        "adapt__real_codex_12_54",
        Input::Codex,
        "codex/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
    );
}

// ---------------------------------------------------------------------------------------------
// The traps the README lists.

#[test]
fn usage_is_a_sample_once_per_message_id() {
    let Some(path) = real(&format!("{AE4A}.jsonl")) else {
        return;
    };
    let (lines, frames) = adapt(Input::ClaudeCode, &path);
    let ids: HashSet<String> = lines
        .iter()
        .map(json)
        .filter(|l| l["type"] == "assistant" && l["isSidechain"] == false)
        .filter_map(|l| l["message"]["id"].as_str().map(str::to_owned))
        .collect();
    let ss = samples(&frames);
    assert_eq!(ss.len(), ids.len(), "one sample per main message.id");
    // Every assistant line's usage is still there: on the frame once, in extras on repeats.
    let assistant_lines = lines
        .iter()
        .filter(|l| json(l)["type"] == "assistant")
        .count();
    let with_usage = frames
        .iter()
        .map(json)
        .filter(|f| f["type"] == "assistant/message" && f["extras"]["parent_tool_use_id"].is_null())
        .filter(|f| f.get("usage").is_some() || f["extras"].get("usage").is_some())
        .count();
    assert_eq!(with_usage, assistant_lines);
}

#[test]
fn the_readme_compaction_facts() {
    let Some(path) = real(&format!("{AE4A}.jsonl")) else {
        return;
    };
    let (_, frames) = adapt(Input::ClaudeCode, &path);
    let rep = frames
        .iter()
        .map(json)
        .find(|f| f.get("replaces").is_some())
        .expect("a compaction");
    let at = rep["seq"].as_u64().unwrap();
    let ss = samples(&frames);
    let before = ss.iter().rev().find(|s| s.0 < at).unwrap();
    let after = ss.iter().find(|s| s.0 > at).unwrap();
    assert_eq!((before.2, after.2), (141_787, 45_263));
    // The replacement spans the whole surface: from the first main message frame.
    let first_message = frames
        .iter()
        .map(json)
        .find(|f| f.get("message").is_some() && f["extras"]["parent_tool_use_id"].is_null())
        .unwrap();
    assert_eq!(rep["replaces"]["from_seq"], first_message["seq"]);
    assert_eq!(rep["extras"]["compact_summary"], true);
    // No context/error: every span was in the surface.
    let p = pressure_of(&frames);
    assert!(p.iter().all(|r| json(r)["type"] == "context/pressure"));
}

#[test]
fn agent_progress_lines_are_sub_agent_frames() {
    for rel in [
        format!("{AE4A}.jsonl"),
        "claude-code/subagent.jsonl".to_owned(),
    ] {
        let Some(path) = real(&rel) else { continue };
        let lines = read(&path);
        let mut a = agent_fold_core::Adapter::new(Input::ClaudeCode, 100);
        let mut n = 0;
        for l in &lines {
            let mut out: Vec<Vec<u8>> = Vec::new();
            a.push(None, &l.value, None, &mut out);
            let line = json(l);
            if line["data"]["type"] == "agent_progress" {
                n += 1;
                assert_eq!(
                    line["isSidechain"], false,
                    "the trap: isSidechain stays false"
                );
                assert_eq!(out.len(), 1);
                let f: Value = serde_json::from_slice(&out[0]).unwrap();
                assert_eq!(f["extras"]["parent_tool_use_id"], line["parentToolUseID"]);
                assert_eq!(f["extras"]["agent_id"], line["data"]["agentId"]);
            }
        }
        assert!(n > 0, "{rel} has agent_progress lines");
    }
}

#[test]
fn sidechain_files_are_sub_agent_frames_throughout() {
    let Some(dir) = real(&format!("{AE4A}/subagents")) else {
        return;
    };
    for f in logs::log_files(&dir).unwrap() {
        let (lines, frames) = adapt(Input::ClaudeCode, &f);
        assert_eq!(lines.len(), frames.len());
        assert!(frames.iter().all(is_sub), "{}", f.display());
        assert!(
            pressure_of(&frames).is_empty(),
            "sub-agent frames move no figure"
        );
    }
}

#[test]
fn sub_agent_frames_never_move_the_main_figures() {
    // The session directory (transcript + subagents/, merged by time), the transcript alone,
    // and the transcript without its agent_progress lines draw the same main figures.
    let cases: Vec<(PathBuf, PathBuf)> = [(data(&format!("{CC_SESSION}.jsonl")), data(CC_SESSION))]
        .into_iter()
        .chain(real(&format!("{AE4A}.jsonl")).zip(real(AE4A)))
        .collect();
    for (file, dir) in cases {
        let (lines, frames) = adapt(Input::ClaudeCode, &file);
        let (_, dir_frames) = adapt(Input::ClaudeCode, &dir);
        let stripped: Vec<Rec> = lines
            .iter()
            .filter(|l| json(l)["data"]["type"] != "agent_progress")
            .cloned()
            .collect();
        let stripped_frames = logs::adapt_all(&config(Input::ClaudeCode), &stripped);
        let main = figures(&pressure_of(&frames));
        assert!(!main.is_empty());
        assert_eq!(
            figures(&pressure_of(&dir_frames)),
            main,
            "{}",
            dir.display()
        );
        assert_eq!(
            figures(&pressure_of(&stripped_frames)),
            main,
            "{}",
            file.display()
        );
        // The frames view drops exactly the sub-agent frames.
        let mut p = Processor::from_params([("emit", "frames")]).unwrap();
        let shown = native_process(&mut p, &dir_frames, 0).unwrap();
        let subs = dir_frames.iter().filter(|f| is_sub(f)).count();
        assert!(subs > 0);
        assert_eq!(shown.len(), dir_frames.len() - subs);
    }
}

#[test]
fn codex_readings_skip_null_zero_and_repeats() {
    let cases: Vec<PathBuf> = [data("codex.jsonl")]
        .into_iter()
        .chain(real(
            "codex/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
        ))
        .collect();
    for path in cases {
        let (lines, frames) = adapt(Input::Codex, &path);
        // Distinct non-zero readings, as the log states them.
        let mut want = Vec::new();
        let mut last_total = None;
        for l in &lines {
            let v = json(l);
            if v["payload"]["type"] != "token_count" || v["payload"]["info"].is_null() {
                continue;
            }
            let info = &v["payload"]["info"];
            let total = info["total_token_usage"]["total_tokens"].as_u64();
            let input = info["last_token_usage"]["input_tokens"].as_u64().unwrap();
            if input > 0 && total != last_total {
                want.push(input);
            }
            last_total = total;
        }
        let got: Vec<u64> = samples(&frames).iter().map(|s| s.2).collect();
        assert_eq!(got, want, "{}", path.display());
        // cached ⊂ input: the sample sums to the provider's input_tokens.
        let capacity = frames
            .iter()
            .map(json)
            .find(|f| f["type"] == "request/header" && f.get("context_window").is_some())
            .unwrap();
        assert_eq!(capacity["context_window"], 258_400);
    }
}

// ---------------------------------------------------------------------------------------------
// In the SmartModule: `-e input=…` in the engine equals the native adapter, and the runner's
// own `--input` gives the same output.

fn wasm() -> Vec<u8> {
    let path = default_wasm_path();
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "no SmartModule at {} ({e}): run scripts/build-wasm.sh",
            path.display()
        )
    })
}

#[test]
fn the_module_adapts_as_the_library_does() {
    // One engine instance per case (each costs a compile of the module), fed invocations of
    // 1, 4 and then all the remaining lines.
    let wasm = wasm();
    for (input, rel) in [
        ("claude-code", CC_SESSION),
        ("claude-stream", "claude-stream.jsonl"),
        ("codex", "codex.jsonl"),
    ] {
        let lines = read(&data(rel));
        let chunks = [&lines[..1], &lines[1..5], &lines[5..]];
        for emit in ["frames", "pressure"] {
            let params = [("input", input), ("emit", emit), ("subagents", "keep")];
            let owned: Vec<(String, String)> = params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let mut engine = Instance::new(&wasm, &owned, None).unwrap();
            let mut native = Processor::from_params(params).unwrap();
            let (mut from_engine, mut from_native) = (Vec::new(), Vec::new());
            for (chunk, base) in chunks.iter().zip([0, 1, 5]) {
                from_engine.extend(engine.process(chunk, base).unwrap());
                from_native.extend(native_process(&mut native, chunk, base).unwrap());
            }
            assert_eq!(from_engine, from_native, "{rel} {emit}");
            assert!(!from_engine.is_empty());
            // Every record out is keyed by its session.
            assert!(from_engine.iter().all(|r| r.key.is_some()));
        }
    }
}

#[test]
fn adapted_records_come_out_new_from_their_line() {
    let lines = read(&data("codex.jsonl"));
    let mut p = Processor::from_params([("input", "codex")]).unwrap();
    let emits = p.process(&inputs(&lines, 0)).unwrap();
    let mut last_at = 0;
    for e in &emits {
        let Emit::New { at, key, .. } = e else {
            panic!("an adapted record out must be new: {e:?}");
        };
        assert!(*at >= last_at && *at < lines.len());
        last_at = *at;
        assert_eq!(key, b"019ca000-0000-7000-8000-000000000003");
    }
    // The compacted line made two frames.
    assert_eq!(emits.len(), lines.len() + 1);
}

#[test]
fn a_refused_invocation_leaves_the_adapter_as_it_was() {
    let lines = read(&data("codex.jsonl"));
    let params = [("input", "codex"), ("malformed", "fail")];
    let mut p = Processor::from_params(params).unwrap();
    let mut bad = lines[..3].to_vec();
    bad.push(Rec::new(None, b"{truncated"));
    let e = p.process(&inputs(&bad, 0)).unwrap_err();
    assert_eq!(e.index, 3, "the error names the input record");
    let after = native_process(&mut p, &lines, 0).unwrap();
    let fresh = native_process(&mut Processor::from_params(params).unwrap(), &lines, 0).unwrap();
    assert_eq!(after, fresh);
}

#[test]
fn checkpoints_carry_the_adapter() {
    let lines = read(&data(CC_SESSION));
    let params = [("input", "claude-code"), ("emit", "pressure")];
    let whole = native_process(&mut Processor::from_params(params).unwrap(), &lines, 0).unwrap();
    let mut first = Processor::from_params(params).unwrap();
    let mut out = native_process(&mut first, &lines[..12], 0).unwrap();
    let cp = first.checkpoint();
    assert!(cp.contains("\"adapter\""));
    let mut second = Processor::from_params(params).unwrap();
    second.restore(&cp).unwrap();
    out.extend(native_process(&mut second, &lines[12..], 12).unwrap());
    let text = |r: &[agent_fold::record::Rec]| {
        r.iter()
            .map(|r| String::from_utf8_lossy(&r.value).into_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(text(&out), text(&whole));
    assert_eq!(out, whole);
    // A checkpoint without the adapter's state would renumber the session: refused.
    let mut plain = Processor::from_params([("emit", "pressure")]).unwrap();
    let e = second.restore(&plain.checkpoint()).unwrap_err();
    assert_eq!(
        e,
        agent_fold_core::CheckpointError::NoAdapterState {
            reads: "claude-code"
        }
    );
    assert!(plain.restore(&cp).is_err());
}

// ---------------------------------------------------------------------------------------------
// The runner.

/// `agent-fold` with the arguments `args` names (separated by spaces), then `path`.
fn run_on(args: &str, path: &Path) -> Output {
    let mut all: Vec<&str> = args.split(' ').collect();
    all.push(path.to_str().unwrap());
    agent_fold(&all, None)
}

/// `run` adapting in the runner (`--input`) and in the module (`-e input=`), in the engine and
/// native: stdout and the pressure records are the same bytes. `all`: the four ways; else
/// (each engine instance costs a compile of the module, slow in a debug build) the runner's
/// native adapter against the module's own in the engine. Invocations of 7 lines, of 1000 for
/// a big log.
fn four_ways(input: &str, path: &Path, extra: &[&str], all: bool) {
    let path = path.to_str().unwrap();
    let mut seen: Option<(Vec<u8>, Vec<u8>)> = None;
    let param = format!("input={input}");
    let ways = if all {
        vec![
            vec!["--input", input],
            vec!["-e", param.as_str()],
            vec!["--native", "--input", input],
            vec!["--native", "-e", param.as_str()],
        ]
    } else {
        vec![
            vec!["--native", "--input", input],
            vec!["-e", param.as_str()],
        ]
    };
    let big = std::fs::metadata(path).is_ok_and(|m| m.len() > 100_000);
    let batch = if big { "1000" } else { "7" };
    let dir = crate::harness::scratch(&format!("four-{input}"));
    for (i, how) in ways.into_iter().enumerate() {
        let p = dir.join(format!("{i}.pressure.jsonl"));
        let mut args = vec!["run", "--batch", batch];
        args.extend(how.iter().copied());
        args.extend(extra);
        args.extend(["--pressure-out", p.to_str().unwrap(), path]);
        let out = succeeded(agent_fold(&args, None));
        let pressure = std::fs::read(&p).unwrap();
        assert!(!out.stdout.is_empty() && !pressure.is_empty());
        match &seen {
            None => seen = Some((out.stdout, pressure)),
            Some((s, pr)) => {
                assert!(*s == out.stdout, "{path}: stdout differs for {how:?}");
                assert!(*pr == pressure, "{path}: pressure differs for {how:?}");
            }
        }
    }
}

#[test]
fn runner_input_equals_the_module_param() {
    let _ = wasm();
    four_ways(
        "claude-code",
        &data(CC_SESSION),
        &["-e", "subagents=keep"],
        true,
    );
    four_ways("claude-stream", &data("claude-stream.jsonl"), &[], false);
    four_ways("codex", &data("codex.jsonl"), &[], false);
    if let Some(p) = real(&format!("{AE4A}.jsonl")) {
        four_ways("claude-code", &p, &[], false);
    }
    if let Some(p) = real("claude-stream-json/task_tool_output.jsonl") {
        four_ways("claude-stream", &p, &[], false);
    }
    if let Some(p) =
        real("codex/rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl")
    {
        four_ways("codex", &p, &[], false);
    }
}

#[test]
fn input_auto_detects_and_two_inputs_are_refused() {
    let path = data("claude-stream.jsonl");
    let auto = succeeded(run_on("run --native --input auto", &path));
    let named = succeeded(run_on("run --native --input claude-stream", &path));
    assert_eq!(auto.stdout, named.stdout);
    let both = run_on("run --input codex -e input=codex", &path);
    assert!(!both.status.success());
    assert!(String::from_utf8_lossy(&both.stderr).contains("choose one"));
    let bad = run_on("run --native -e input=json", &path);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("`input`"));
}

#[test]
fn no_progress_bar_when_stderr_is_not_a_terminal() {
    let out = succeeded(agent_fold(
        &[
            "run",
            "--native",
            "--input",
            "codex",
            data("codex.jsonl").to_str().unwrap(),
        ],
        None,
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains('\r') && !err.contains('\u{1b}'), "{err:?}");
    assert_eq!(err.lines().count(), 1, "only the summary: {err:?}");
}

// ---------------------------------------------------------------------------------------------
// The plot.

struct SvgFacts {
    pressure_series: usize,
    projected_series: usize,
    reading_dots: usize,
    capacity_dashes: usize,
    compaction_labels: usize,
    compaction_dashes: usize,
    panels: usize,
}

fn hex(c: plotters::style::RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

fn svg_facts(svg: &str) -> SvgFacts {
    let doc = roxmltree::Document::parse(svg).expect("the plot is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    let polylines = |color: &str, series: bool| {
        doc.descendants()
            .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke") == Some(color))
            // A series has more than two points; the legend's sample and dashes have two.
            .filter(|n| {
                let pts = n
                    .attribute("points")
                    .unwrap_or("")
                    .split_whitespace()
                    .count();
                if series { pts > 2 } else { pts == 2 }
            })
            .count()
    };
    let texts = |s: &str, fill: Option<&str>| {
        doc.descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter(|n| n.text().is_some_and(|t| t.trim().starts_with(s)))
            .filter(|n| fill.is_none_or(|f| n.attribute("fill") == Some(f)))
            .count()
    };
    SvgFacts {
        pressure_series: polylines(&hex(plot::PRESSURE), true),
        projected_series: polylines(&hex(plot::PROJECTED), true),
        reading_dots: doc
            .descendants()
            .filter(|n| {
                n.has_tag_name("circle") && n.attribute("fill") == Some(&hex(plot::PRESSURE))
            })
            .count(),
        capacity_dashes: polylines(&hex(plot::CAPACITY), false),
        compaction_labels: texts("compaction", Some(&hex(plot::COMPACTION))),
        compaction_dashes: polylines(&hex(plot::COMPACTION), false),
        panels: texts("context pressure", None),
    }
}

fn plot_case(input: &str, path: &Path, extra: &[&str]) -> SvgFacts {
    let dir = crate::harness::scratch(&format!("plot-{input}"));
    let svg = dir.join("plot.svg");
    let mut args = vec![
        "run",
        "--native",
        "--input",
        input,
        "--plot",
        svg.to_str().unwrap(),
    ];
    args.extend(extra);
    args.push(path.to_str().unwrap());
    succeeded(agent_fold(&args, None));
    svg_facts(&std::fs::read_to_string(&svg).unwrap())
}

#[test]
fn plot_of_an_excerpt() {
    let f = plot_case("claude-code", &data(CC_SESSION), &["-e", "capacity=200000"]);
    assert_eq!(f.panels, 1, "one session, one figure");
    assert_eq!(
        (f.pressure_series, f.projected_series),
        (1, 1),
        "one series each"
    );
    assert_eq!(f.reading_dots, 4, "a dot per main reading");
    assert!(f.capacity_dashes > 10, "the capacity line");
    assert_eq!(f.compaction_labels, 1, "the compaction is marked");
    assert!(f.compaction_dashes > 5);
    let f = plot_case("codex", &data("codex.jsonl"), &[]);
    assert_eq!((f.panels, f.pressure_series, f.projected_series), (1, 1, 1));
    assert_eq!(f.reading_dots, 3);
    assert!(f.capacity_dashes > 10, "the window the rollout names");
    assert_eq!(f.compaction_labels, 1);
    // No timestamps in stream-json: x is the seq, and there is no compaction.
    let f = plot_case("claude-stream", &data("claude-stream.jsonl"), &[]);
    assert_eq!((f.panels, f.pressure_series, f.projected_series), (1, 1, 1));
    assert_eq!(f.compaction_labels, 0);
    assert!(f.capacity_dashes > 10, "the window its model names");
}

#[test]
fn plot_of_the_real_logs() {
    if let Some(p) = real(&format!("{AE4A}.jsonl")) {
        let f = plot_case("claude-code", &p, &["-e", "capacity=200000"]);
        assert_eq!((f.panels, f.pressure_series, f.projected_series), (1, 1, 1));
        assert_eq!(f.reading_dots, 217);
        assert_eq!(f.compaction_labels, 1);
        assert!(f.capacity_dashes > 10);
    }
    if let Some(p) =
        real("codex/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl")
    {
        let f = plot_case("codex", &p, &[]);
        assert_eq!((f.panels, f.pressure_series, f.projected_series), (1, 1, 1));
        assert_eq!(f.reading_dots, 286);
        assert_eq!(f.compaction_labels, 1);
    }
}

// ---------------------------------------------------------------------------------------------
// The accuracy report, recomputed from the logs.

/// Each log read, adapted and scored once: its file name, its format (detected, and checked
/// against the one given) and its summary.
fn measure_all(
    paths: &[(PathBuf, Input)],
    params: &agent_fold::testing::params::ModuleParams,
) -> Vec<(String, Input, accuracy::AccuracySummary)> {
    paths
        .iter()
        .map(|(p, input)| {
            let (detected, s) = accuracy::measure_path(p, None, params).unwrap();
            assert_eq!(detected, *input, "{}", p.display());
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, detected, s)
        })
        .collect()
}

fn accuracy_text(measured: &[(String, Input, accuracy::AccuracySummary)]) -> String {
    let mut o = String::new();
    for (name, input, s) in measured {
        o.push_str(&accuracy::render(name, *input, s));
        o.push('\n');
    }
    o
}

#[test]
fn accuracy_of_the_excerpts() {
    snap(
        "adapt__accuracy_excerpts",
        &accuracy_text(&measure_all(
            &[
                (data(CC_SESSION), Input::ClaudeCode),
                (data("claude-stream.jsonl"), Input::ClaudeStream),
                (data("codex.jsonl"), Input::Codex),
            ],
            &Default::default(),
        )),
    );
}

/// Every shared real log with a reading to score, in the order docs/accuracy.md tables them.
const REAL_LOGS: [(&str, Input); 21] = [
    (
        "claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
        Input::ClaudeCode,
    ),
    (
        "claude-code/6113e919-67d3-417b-b525-c63700228d19.jsonl",
        Input::ClaudeCode,
    ),
    (
        "claude-code/bf5915c6-75c2-4612-ab44-c094d5efe7ed.jsonl",
        Input::ClaudeCode,
    ),
    (
        "claude-code/6c0a282a-886f-458d-a426-93d95104b4a6.jsonl",
        Input::ClaudeCode,
    ),
    (
        "claude-code/847ff7d2-4a55-44d7-a3f5-a3afd89f1ee1.jsonl",
        Input::ClaudeCode,
    ),
    (
        "claude-code/a318ad73-17a2-4575-845d-8952a1e5958b.jsonl",
        Input::ClaudeCode,
    ),
    ("claude-code/subagent.jsonl", Input::ClaudeCode),
    ("claude-code/short.jsonl", Input::ClaudeCode),
    (
        "claude-stream-json/task_tool_output.jsonl",
        Input::ClaudeStream,
    ),
    (
        "codex/rollout-019f17a5-6d3f-7470-9097-c70f6cefe936.jsonl",
        Input::Codex,
    ),
    (
        "codex/rollout-019d6d29-8cf7-7fe3-adc9-8c3e4d9d5603.jsonl",
        Input::Codex,
    ),
    (
        "codex/rollout-019f03e0-321f-7eb2-83cc-b54ecd71be23.jsonl",
        Input::Codex,
    ),
    (
        "codex/rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl",
        Input::Codex,
    ),
    (
        "codex/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
        Input::Codex,
    ),
    (
        "claude-code/da81b1d5-eb50-45b5-b9c2-a57df460d77b.jsonl",
        Input::ClaudeCode,
    ),
    (
        "claude-code/7f78a542-6201-447a-8277-213165356894.jsonl",
        Input::ClaudeCode,
    ),
    (
        "claude-code/9d7a9d52-7eb4-427d-847d-ee5451884f3d.jsonl",
        Input::ClaudeCode,
    ),
    (
        "codex/rollout-019f36b8-7808-7b53-b256-85144c802798.jsonl",
        Input::Codex,
    ),
    (
        "gemini-cli/session-4eb0784d-cdb9-4f59-89a6-fc90a7fabc67.json",
        Input::GeminiCli,
    ),
    (
        "gemini-cli/session-f7633853-6663-4dbb-bbf4-6159afa29df8.json",
        Input::GeminiCli,
    ),
    (
        "opencode/ses_017eabd4affe5dT53SiL5dEtX6/export.json",
        Input::OpenCode,
    ),
];

/// The redacted Codex capture: its text is `[REDACTED_TEXT len=…]` placeholders, so no estimate
/// can price what its compaction keeps (docs/accuracy.md).
const REDACTED: &str = "rollout-2026-02-23T12-54-34";

#[test]
fn accuracy_of_the_real_logs() {
    let mut paths = Vec::new();
    for (rel, input) in REAL_LOGS {
        match real(rel) {
            Some(p) => paths.push((p, input)),
            None => return,
        }
    }
    // No `capacity`: each log's window is what the log says (contract §3).
    let measured = measure_all(&paths, &Default::default());
    snap("adapt__accuracy_real", &accuracy_text(&measured));

    // The regression guard of the shared logs (the data the method was chosen on and its prior
    // fitted on, so a guard, not a property; the cross-validated test below scores each log
    // with a prior fitted on the others; docs/accuracy.md): at every compaction but the
    // redacted capture's,
    // `rebased` within ±25% of the next reading (the worst, +24%: Codex 019f36b8's second
    // compaction, whose replacement carries the developer and AGENTS.md messages priced as prose
    // where the base took them at the session's scale), median ≤ 8%; over each log no worse than
    // `calibrated`; before every automatic compaction, a level shown.
    let mut errors = Vec::new();
    let mut points = Vec::new();
    for (name, _, s) in &measured {
        for r in &s.after_compaction {
            let [Some(rebased), Some(calibrated), _] = r.projected else {
                panic!("{name}: no projection at seq {}", r.seq)
            };
            let off = |v: u64| (v as f64 - r.reading as f64) / r.reading as f64;
            if name.starts_with(REDACTED) {
                assert!(off(rebased).abs() < off(calibrated).abs(), "{name}: {r:?}");
                continue;
            }
            assert!(
                off(rebased).abs() <= 0.25,
                "{name} seq {}: rebased {rebased} is {:.1}% off {}",
                r.seq,
                off(rebased) * 100.0,
                r.reading
            );
            errors.push(off(rebased).abs());
        }
        if s.scored > 0 {
            assert!(
                s.projection[0].median_abs <= s.projection[1].median_abs,
                "{name}: rebased {:?} against calibrated {:?}",
                s.projection[0],
                s.projection[1]
            );
        }
        // Every automatic compaction has a point shown before it (contract §3.5).
        for a in &s.auto_compactions {
            let shown = a
                .shown
                .unwrap_or_else(|| panic!("{name}: no level shown before {a:?}"));
            points.push((
                name.clone(),
                (shown as f64 - a.fired_at as f64) / a.fired_at as f64,
            ));
        }
    }
    // Within 10% of where they fired, Codex and Claude Code alike, but for two Codex misses: a
    // model no bundled catalog knows (gpt-5.3-codex-spark) and 0.104, which fired under its
    // documented point.
    let near = points.iter().filter(|(_, off)| off.abs() <= 0.10).count();
    assert!(points.len() >= 18, "{} automatic compactions", points.len());
    assert!(
        near + 2 >= points.len(),
        "{near} of {} automatic compactions within 10%: {points:?}",
        points.len()
    );
    errors.sort_by(f64::total_cmp);
    assert!(errors.len() >= 9, "{} compactions scored", errors.len());
    let median = errors[errors.len() / 2];
    assert!(
        median <= 0.08,
        "median |error| at a compaction {:.1}%",
        median * 100.0
    );

    // The README's compaction: the last-reading meter still shows 141,787 when the provider
    // reads 45,263; the projections have already dropped with the surface.
    let s = &measured[0].2;
    let [r] = &s.after_compaction[..] else {
        panic!("one reading after the compaction: {:?}", s.after_compaction);
    };
    assert_eq!((r.reading, r.last), (45_263, 141_787));
    // The seed's fixed method is what it was: +78% at the compaction, a median error of 144
    // tokens over the session (80,399 where it was 80,373: the adapter no longer prices the
    // thinking blocks' signatures).
    assert_eq!(r.projected[2], Some(80_399));
    assert_eq!(s.projection[2].median_abs, 143.5, "printed as 144");
    // Over the session, every projection beats the last reading.
    for p in &s.projection {
        assert!(
            p.median_abs < s.last.median_abs && p.p90_abs < s.last.p90_abs,
            "{p:?}"
        );
    }
}

/// Leave one session out: each shared log scored with what comes back at a compaction fitted on
/// the other logs of its agent only; the table is snapshotted, and held to the mark for logs the
/// method has not seen: every compaction but the redacted capture's within ±25%, median ≤ 10%;
/// between readings, on every Codex log, the projection no worse than the last reading. The
/// shipped priors are the fit over all of them.
#[test]
fn accuracy_cross_validated() {
    let mut logs = Vec::new();
    for (rel, input) in REAL_LOGS {
        match real(rel) {
            Some(p) => logs.push(accuracy::Log::read(&p, Some(input)).unwrap()),
            None => return,
        }
    }
    let t = accuracy::cross::cross_validate(&logs, &Default::default()).unwrap();
    let mut errors = Vec::new();
    for c in &t.compactions {
        let r = &c.reading;
        assert!(
            c.fitted_on.is_some_and(|n| n > 0),
            "{}: no prior fitted",
            c.label
        );
        let rebased = r.projected[0].unwrap_or_else(|| panic!("{}: no projection", c.label));
        let off = (rebased as f64 - r.reading as f64) / r.reading as f64;
        if c.label.starts_with(REDACTED) {
            continue;
        }
        assert!(
            off.abs() <= 0.25,
            "{} ({}): {rebased} is {:.1}% off {}",
            c.label,
            c.nth,
            off * 100.0,
            r.reading
        );
        errors.push(off.abs());
    }
    errors.sort_by(f64::total_cmp);
    assert!(errors.len() >= 23, "{} compactions", errors.len());
    assert!(errors[errors.len() / 2] <= 0.10, "median {errors:?}");
    for l in t
        .logs
        .iter()
        .filter(|l| l.label.starts_with("rollout-") && l.scored > 0)
    {
        assert!(
            l.median_abs[0] <= l.median_abs[3],
            "{}: between readings the projection ({}) loses to the last reading ({})",
            l.label,
            l.median_abs[0],
            l.median_abs[3]
        );
    }
    for (agent, prior, _) in &t.fitted_on_all {
        assert_eq!(
            *prior,
            Some(agent_fold_core::restore_prior(*agent)).filter(|_| *agent != Input::AgentFold),
            "the shipped prior for {} is the fit over the shared logs",
            agent.name()
        );
    }
    snap(
        "adapt__accuracy_cross_validated",
        &accuracy::cross::render(&t),
    );
}

#[test]
fn accuracy_command_line() {
    let out = succeeded(agent_fold(
        &["accuracy", data("codex.jsonl").to_str().unwrap()],
        None,
    ));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("codex.jsonl (codex): 3 provider readings, 2 scored"),
        "{text}"
    );
    assert!(text.contains("right after a compaction"));
}

// ---------------------------------------------------------------------------------------------
// The census (`agent-fold inspect`).

/// Every shared log, as `agent-fold inspect` tells it: a new kind of line in a new log shows in
/// review as a changed snapshot. Each kind it passes over is named, and none is unknown to this
/// build; each Claude Code transcript is one session, its `sessionId`.
#[test]
fn the_census_of_every_shared_log() {
    let mut all = String::new();
    let mut logs: Vec<(&str, Option<Input>)> =
        REAL_LOGS.iter().map(|(r, i)| (*r, Some(*i))).collect();
    logs.push((
        "claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents",
        None,
    ));
    for (rel, input) in logs {
        let Some(path) = real(rel) else { return };
        for file in logs::log_files(&path).unwrap() {
            let text = std::fs::read(&file).unwrap();
            let c = agent_fold::testing::inspect::census(&file, &text, input).unwrap();
            let unknown: Vec<_> = c
                .kinds
                .iter()
                .filter(|k| k.treatment == "unknown")
                .collect();
            assert!(
                unknown.is_empty(),
                "{}: kinds unknown to this build: {unknown:?}",
                c.file
            );
            let counted: usize = c.kinds.iter().map(|k| k.lines).sum();
            assert!(
                counted + c.not_objects >= c.lines,
                "{}: every line counted",
                c.file
            );
            if c.input == "claude-code" {
                assert_eq!(c.sessions.len(), 1, "{}: {:?}", c.file, c.sessions);
                let stem = file.file_stem().unwrap().to_string_lossy();
                if !stem.starts_with("agent-") && stem.len() == 36 {
                    assert_eq!(c.sessions[0].id, stem, "the transcript's own id");
                }
            }
            agent_fold::testing::inspect::render(&mut all, &c);
        }
    }
    snap("adapt__census", &all);
}

/// The newest Claude Code format (2.1.232): `session_id` beside a different `sessionId` after
/// `/clear`, and usage summed over an advisor's turn. One session; no reading is a sum; the
/// census says both.
#[test]
fn the_newest_claude_code_reads_right() {
    let Some(path) = real("claude-code/da81b1d5-eb50-45b5-b9c2-a57df460d77b.jsonl") else {
        return;
    };
    let (lines, frames) = adapt(Input::ClaudeCode, &path);
    let pressure = deployed_pressure(Input::ClaudeCode, &lines);
    let sessions: std::collections::BTreeSet<String> = pressure
        .iter()
        .map(|r| json(r)["session"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        sessions.into_iter().collect::<Vec<_>>(),
        ["da81b1d5-eb50-45b5-b9c2-a57df460d77b"]
    );
    // Each reading is the request's own: the last `message` iteration where there are
    // iterations, read here from the raw lines with serde.
    let mut own = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for l in &lines {
        let v = json(l);
        let Some(u) = v
            .pointer("/message/usage")
            .filter(|_| v["type"] == "assistant")
        else {
            continue;
        };
        if !seen.insert(v["message"]["id"].to_string()) {
            continue;
        }
        let sum = |u: &Value| {
            [
                "input_tokens",
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
            ]
            .iter()
            .map(|k| u[k].as_u64().unwrap_or(0))
            .sum::<u64>()
        };
        let last_own = u["iterations"].as_array().and_then(|its| {
            its.iter()
                .rev()
                .find(|i| matches!(i["type"].as_str(), Some("message" | "fallback_message")))
        });
        let n = last_own.map_or_else(|| sum(u), sum);
        if n > 0 {
            own.push(n);
        }
    }
    let read: Vec<u64> = samples(&frames).iter().map(|s| s.2).collect();
    assert_eq!(read, own);
    assert!(!read.contains(&223_140), "the summed figure is no reading");
    let c =
        agent_fold::testing::inspect::census(&path, &std::fs::read(&path).unwrap(), None).unwrap();
    assert_eq!(c.summed_readings, [357, 494, 702]);
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("session_id d29c2adb-9a9e-45ac-b435-bce63d920d59")),
        "{:?}",
        c.warnings
    );
}

/// `agent-fold inspect` from the command line: text and `--json` say the same census; a log
/// whose format cannot be told, a format named wrong, a missing file are refused in words.
#[test]
fn inspect_command_line() {
    let log = data("codex.jsonl");
    let text = succeeded(agent_fold(&["inspect", log.to_str().unwrap()], None));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.starts_with("codex.jsonl\n  agent: codex"), "{text}");
    assert!(text.contains("unknown      compaction_hint"), "{text}");
    let json = succeeded(agent_fold(
        &["inspect", "--json", log.to_str().unwrap()],
        None,
    ));
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    let c = &v[0];
    assert_eq!(
        (&c["file"], &c["input"]),
        (
            &serde_json::json!("codex.jsonl"),
            &serde_json::json!("codex")
        )
    );
    let unknown: Vec<&Value> = c["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["treatment"] == "unknown")
        .collect();
    assert_eq!(unknown.len(), 1);
    assert_eq!(unknown[0]["kind"], "compaction_hint");
    assert!(
        c["warnings"][0]
            .as_str()
            .unwrap()
            .contains("compaction_hint (line")
    );

    let s = crate::harness::scratch("inspect");
    let odd = s.join("odd.jsonl");
    std::fs::write(&odd, "{\"hello\":1}\nnot json\n").unwrap();
    let out = agent_fold(&["inspect", odd.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("cannot tell the log's format; name it with --input"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let named = succeeded(agent_fold(
        &["inspect", "--input", "claude-code", odd.to_str().unwrap()],
        None,
    ));
    let named = String::from_utf8(named.stdout).unwrap();
    assert!(named.contains("lines: 2 (1 not JSON objects)"), "{named}");
    assert!(named.contains("unknown      untyped"), "{named}");
    let out = agent_fold(
        &["inspect", "--input", "gemini", odd.to_str().unwrap()],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "clap refuses a format it does not know"
    );
    let out = agent_fold(
        &["inspect", s.join("missing.jsonl").to_str().unwrap()],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.jsonl"));
}

/// Issue 55: `inspect` read a whole file into memory (`/dev/zero` grew to 4.2 GB in 9 s; one
/// 1 GB line peaked at 3.15 GB) and opened a FIFO before looking at it, waiting for a writer
/// for ever. Now what is not a regular file is refused before a byte is read, at once, and a
/// log is streamed as `serve` reads one: a line over 32 MiB is skipped and counted.
#[test]
fn inspect_refuses_what_is_no_regular_file_and_streams_past_an_over_long_line() {
    let s = crate::harness::scratch("inspect-bounds");
    let fifo = s.join("fifo.jsonl");
    crate::harness::mkfifo(&fifo);
    for (path, says) in [
        (Path::new("/dev/zero"), "is a device, not a regular file"),
        (fifo.as_path(), "is a FIFO, not a regular file"),
    ] {
        let out = crate::harness::agent_fold_within(
            &["inspect", path.to_str().unwrap()],
            b"",
            std::time::Duration::from_secs(20),
        )
        .unwrap_or_else(|| panic!("inspect {} did not answer", path.display()));
        assert_eq!(out.status.code(), Some(1), "{}", path.display());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{}: {err}", path.display());
    }
    // A line of 33 MiB, then a log's lines: the long one skipped and counted, the rest read.
    let log = s.join("long.jsonl");
    let mut text = vec![b'x'; 33 << 20];
    text.push(b'\n');
    text.extend_from_slice(&std::fs::read(data("codex.jsonl")).unwrap());
    std::fs::write(&log, &text).unwrap();
    let out = succeeded(agent_fold(
        &["inspect", "--json", log.to_str().unwrap()],
        None,
    ));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["input"], "codex");
    let warnings: Vec<&str> = v[0]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("1 lines over 32 MiB were skipped (first at line 1)")),
        "{warnings:?}"
    );
    let whole = succeeded(agent_fold(
        &["inspect", "--json", data("codex.jsonl").to_str().unwrap()],
        None,
    ));
    let whole: Value = serde_json::from_slice(&whole.stdout).unwrap();
    assert_eq!(v[0]["lines"], whole[0]["lines"], "every other line read");
    assert_eq!(
        v[0]["kinds"].as_array().unwrap().len(),
        whole[0]["kinds"].as_array().unwrap().len()
    );
}
