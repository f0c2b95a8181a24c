//! The shared real logs' derived OpenTelemetry streams (`agent_fold_testkit::otel`) through the
//! module with `input=otel, emit=pressure`, scored against the logs' own readings and beside the
//! transcript path (`input=claude-code` / `codex`) on the same sessions.
//!
//! The logs are public captures from other projects, read from `../shared/data/real` (see its
//! README), never copied here: where that folder is absent the test says so and passes, but
//! under `CI=true`, where it fails.
//!
//! `cargo test -p agent-fold-testkit --test otel_real -- --nocapture` prints the table.

use std::path::{Path, PathBuf};

use agent_fold_core::{Adapter, Config, Emit, Frame, Input, Processor, RecordIn, usage_tokens};
use agent_fold_testkit::otel::{
    OtelAgent, OtelEvent, collector_records, derive, export_requests, read_jsonl,
    records_from_request,
};
use serde_json::Value;

fn real() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/real");
    if p.exists() {
        return Some(p);
    }
    assert!(
        !std::env::var("CI").is_ok_and(|v| v == "true"),
        "CI=true and {} is absent",
        p.display()
    );
    println!("skipped: {} is absent", p.display());
    None
}

/// The logs of one agent's folder, by name.
fn logs(dir: &Path, agent: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join(agent))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    v.sort();
    v
}

/// One provider reading as a path saw it: the line it came from, the reading, the figure shown
/// when its request left, and whether it is the first after a compaction.
#[derive(Debug, Clone, Copy)]
struct Reading {
    line: usize,
    reading: u64,
    shown: Option<u64>,
    after_compaction: bool,
}

/// The pressure records of one invocation: (seq, projectedTokens, pressureTokens).
fn figures(out: &[Emit]) -> Vec<(u64, Option<u64>, Option<u64>)> {
    out.iter()
        .filter_map(|e| match e {
            Emit::New { value, .. } => serde_json::from_slice::<Value>(value).ok(),
            _ => None,
        })
        .filter(|r| r["type"] == "context/pressure")
        .map(|r| {
            (
                r["seq"].as_u64().unwrap_or(0),
                r["projectedTokens"].as_u64(),
                r["pressureTokens"].as_u64(),
            )
        })
        .collect()
}

/// Whether an event is a main-thread reading, and its prompt size.
fn main_reading(e: &OtelEvent) -> Option<u64> {
    let get = |k: &str| {
        e.attributes
            .iter()
            .find(|(n, _)| n == k)
            .and_then(|(_, v)| match v {
                agent_fold_testkit::otel::Attr::Int(n) => Some(*n as u64),
                agent_fold_testkit::otel::Attr::Str(s) => s.parse().ok(),
                _ => None,
            })
    };
    let source = e.attributes.iter().find(|(n, _)| n == "query_source");
    match e.name.as_str() {
        "claude_code.api_request"
            if source.is_some_and(|(_, v)| *v == "repl_main_thread".into()) =>
        {
            Some(
                get("input_tokens").unwrap_or(0)
                    + get("cache_read_tokens").unwrap_or(0)
                    + get("cache_creation_tokens").unwrap_or(0),
            )
        }
        "codex.sse_event" => get("input_token_count"),
        _ => None,
    }
}

/// The OTel path: each record its own invocation.
fn otel_path(events: &[OtelEvent], records: &[Value]) -> Vec<Reading> {
    let mut p = Processor::from_params([("input", "otel"), ("emit", "pressure")]).unwrap();
    let mut shown = None;
    let mut out = Vec::new();
    for (i, (e, r)) in events.iter().zip(records).enumerate() {
        let bytes = serde_json::to_vec(r).unwrap();
        let emitted = p
            .process(&[RecordIn::new(None, &bytes).at(i as i64)])
            .unwrap();
        let f = figures(&emitted);
        if let Some(reading) = main_reading(e) {
            let now = f.iter().rev().find_map(|(_, _, p)| *p);
            assert_eq!(now, Some(reading), "the reading is the sample: {r}");
            out.push(Reading {
                line: e.line,
                reading,
                shown,
                after_compaction: false,
            });
        }
        if let Some(p) = f.iter().rev().find_map(|(_, p, _)| *p) {
            shown = Some(p);
        }
    }
    out
}

/// The transcript path: each line its own invocation; a reading's figure is the one shown when
/// its request left — before its line, or at the frame its `anchor_seq` names (Codex).
fn transcript_path(input: Input, text: &str) -> Vec<Reading> {
    let params = [("input", input.name()), ("emit", "pressure")];
    let mut p = Processor::from_params(params).unwrap();
    let mut adapter = Adapter::for_config(&Config::from_params(params).unwrap());
    let mut shown: Vec<(u64, u64)> = Vec::new();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut frames = Vec::new();
        adapter.push(None, line.as_bytes(), Some(i as i64), &mut frames);
        let emitted = p
            .process(&[RecordIn::new(None, line.as_bytes()).at(i as i64)])
            .unwrap();
        for frame in &frames {
            let Some(v) = Frame::parse(frame) else {
                continue;
            };
            let sample = v.kind() == Some("assistant/message") && !v.is_subagent();
            if let (true, Some(usage)) = (sample, v.usage()) {
                let left = match v.anchor_seq() {
                    Some(a) => shown.iter().rev().find(|(s, _)| *s <= a),
                    None => shown.last(),
                };
                out.push(Reading {
                    line: i,
                    reading: usage_tokens(usage),
                    shown: left.map(|(_, p)| *p),
                    after_compaction: false,
                });
            }
        }
        for (seq, projected, _) in figures(&emitted) {
            if let Some(p) = projected {
                shown.push((seq, p));
            }
        }
    }
    out
}

/// Marks each reading that is the first after a compaction: one of `compacted` lies between
/// its line and the reading before's.
fn mark(readings: &mut [Reading], compacted: &[(usize, bool)]) {
    let mut before = 0;
    for r in readings {
        r.after_compaction = compacted.iter().any(|(c, _)| (before..r.line).contains(c));
        before = r.line;
    }
}

/// Whether the compaction between two readings' lines stated its post-size.
fn stated(compacted: &[(usize, bool)], before: usize, line: usize) -> bool {
    compacted
        .iter()
        .any(|(c, post)| *post && (before..line).contains(c))
}

/// The lines where a log compacts (Claude Code's `compact_boundary`, Codex's `compacted`), and
/// whether the transcript states the compaction's post-size (`compactMetadata.postTokens`).
fn compactions(text: &str) -> Vec<(usize, bool)> {
    read_jsonl(text)
        .into_iter()
        .filter(|(_, l)| {
            l["type"] == "compacted"
                || (l["type"] == "system"
                    && l["subtype"] == "compact_boundary"
                    && l["isSidechain"] != true)
        })
        .map(|(i, l)| (i, l["compactMetadata"]["postTokens"].is_u64()))
        .collect()
}

fn pct(shown: Option<u64>, reading: u64) -> Option<f64> {
    shown.map(|s| (s as f64 - reading as f64) / reading as f64 * 100.0)
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| v[v.len() / 2])
}

/// A compaction as both paths scored it: the figure each showed when the first request after
/// it left, against that request's reading.
struct Row {
    log: String,
    n: usize,
    reading: u64,
    otel: Option<u64>,
    transcript: Option<u64>,
    input: Input,
    /// The transcript states the post-size (`postTokens`), which the stream then carries as
    /// it is; else the stream's is derived.
    post: bool,
    /// What the transcript's adapter priced of the files Claude Code's rule re-reads, and
    /// whether its compaction said anything may come back beyond them (the prior).
    restored: (u64, bool),
}

/// Between compactions: |error| of each path, in percent and in tokens.
struct Between {
    log: String,
    errors: [Option<f64>; 4],
}

#[test]
fn derived_streams_through_the_module() {
    let Some(dir) = real() else { return };
    let mut rows = Vec::new();
    let mut between = Vec::new();
    for (agent, input) in [("claude-code", Input::ClaudeCode), ("codex", Input::Codex)] {
        for path in logs(&dir, agent) {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            let name = format!("{agent}/{}", stem.chars().take(26).collect::<String>());
            let text = std::fs::read_to_string(&path).unwrap();
            let events = derive(&text);
            // What the transcript's adapter prices of the files Claude Code's rule re-reads at
            // each compaction (`restore_tokens`), and whether the prior stands beyond them
            // (`restore_beyond`): telemetry carries no file sizes or tool results.
            let mut transcript = Adapter::new(input, 16);
            let restored: Vec<(u64, bool)> = transcript
                .adapt_all(text.lines().map(|l| (None, l.as_bytes())))
                .iter()
                .filter_map(|f| serde_json::from_slice::<Value>(f).ok())
                .filter(|f| f["type"] == "compact/start")
                .map(|f| {
                    (
                        f["restore_tokens"].as_u64().unwrap_or(0),
                        f["restore_beyond"] != false,
                    )
                })
                .collect();
            let records = collector_records(&events);
            // What a receiver makes of the bodies is what the records say.
            let received: Vec<Value> = export_requests(&events)
                .iter()
                .flat_map(records_from_request)
                .collect();
            assert_eq!(received.len(), records.len(), "{name}");
            assert!(received == records, "{name}: the receiver's records differ");
            let want = match input {
                Input::Codex => OtelAgent::Codex,
                _ => OtelAgent::ClaudeCode,
            };
            assert!(records.iter().all(|r| r["agent"] == want.name()), "{name}");

            // The adapted stream's headers name the agent and, once it is known, the model.
            let mut a = Adapter::new(Input::Otel, 16);
            let texts: Vec<Vec<u8>> = records
                .iter()
                .map(|r| serde_json::to_vec(r).unwrap())
                .collect();
            let frames = a.adapt_all(texts.iter().map(|t| (None, &t[..])));
            let headers: Vec<Value> = frames
                .iter()
                .map(|f| serde_json::from_slice::<Value>(f).unwrap())
                .filter(|f| f["type"] == "request/header")
                .collect();
            if events.iter().any(|e| main_reading(e).is_some()) {
                assert!(headers.iter().all(|h| h["agent"] == want.name()), "{name}");
                assert!(
                    headers.iter().any(|h| h["model"].is_string()),
                    "{name}: no header names the model"
                );
            }

            let compacted = compactions(&text);
            let mut otel = otel_path(&events, &records);
            let mut transcript = transcript_path(input, &text);
            mark(&mut otel, &compacted);
            mark(&mut transcript, &compacted);
            // Both paths read the same provider readings, in the same order.
            let a: Vec<u64> = otel.iter().map(|r| r.reading).collect();
            let b: Vec<u64> = transcript.iter().map(|r| r.reading).collect();
            assert_eq!(a, b, "{name}: the readings differ");
            let (mut n, mut before) = (0, 0);
            for (o, t) in otel.iter().zip(&transcript) {
                if o.after_compaction || t.after_compaction {
                    assert!(
                        o.after_compaction && t.after_compaction,
                        "{name}: {}",
                        o.line
                    );
                    n += 1;
                    rows.push(Row {
                        log: name.clone(),
                        n,
                        reading: o.reading,
                        otel: o.shown,
                        transcript: t.shown,
                        input,
                        post: stated(&compacted, before, o.line),
                        restored: restored.get(n - 1).copied().unwrap_or((0, true)),
                    });
                } else if before > 0 {
                    let tokens = |s: Option<u64>, r: u64| s.map(|s| s.abs_diff(r) as f64);
                    between.push(Between {
                        log: name.clone(),
                        errors: [
                            pct(o.shown, o.reading).map(f64::abs),
                            pct(t.shown, t.reading).map(f64::abs),
                            tokens(o.shown, o.reading),
                            tokens(t.shown, t.reading),
                        ],
                    });
                }
                before = o.line;
            }
        }
    }

    println!(
        "\n| log (compaction) | post-size | reading | otel shown | otel error | transcript shown | transcript error |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|");
    for r in &rows {
        let f = |s: Option<u64>| s.map_or("—".to_owned(), |v| v.to_string());
        let e = |s: Option<u64>| pct(s, r.reading).map_or("—".into(), |p| format!("{p:+.1}%"));
        let post = match (r.input, r.post) {
            (Input::Codex, _) => "no event",
            (_, true) => "stated",
            (_, false) => "derived",
        };
        println!(
            "| {} ({}) | {post} | {} | {} | {} | {} | {} |",
            r.log,
            r.n,
            r.reading,
            f(r.otel),
            e(r.otel),
            f(r.transcript),
            e(r.transcript)
        );
    }
    let mut names: Vec<String> = between.iter().map(|b| b.log.clone()).collect();
    names.dedup();
    println!(
        "\n| log | scored | otel, median abs error | transcript | otel, tokens | transcript, tokens |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for name in &names {
        let of: Vec<&Between> = between.iter().filter(|b| &b.log == name).collect();
        let m = |k: usize| median(of.iter().filter_map(|b| b.errors[k]).collect());
        let p = |m: Option<f64>| m.map_or("—".into(), |m| format!("{m:.2}%"));
        let t = |m: Option<f64>| m.map_or("—".into(), |m| format!("{m:.0}"));
        println!(
            "| {name} | {} | {} | {} | {} | {} |",
            of.len(),
            p(m(0)),
            p(m(1)),
            t(m(2)),
            t(m(3))
        );
    }

    for r in &rows {
        let err = pct(r.otel, r.reading).expect("a figure before the reading");
        let at = format!("{} ({}): {err:+.1}% after the compaction", r.log, r.n);
        match (r.input, r.post) {
            // Claude Code states its post-compaction size, what it put back included: the first
            // figure after is the session's base, that size and what joined since. Telemetry
            // exports no attachment, so the base holds the listings a session opens with
            // (skills, agents, deferred tools, MCP instructions), which that size counts again
            // where Claude Code re-attaches them: on da81b1d5 (2.1.232) the figure
            // is 29% high (6c0a282a: −2.5%). Bounded here at 30%; the transcript path, which
            // sees them, is within 10% on both.
            (Input::ClaudeCode, true) => assert!(err.abs() <= 30.0, "{at}"),
            // A transcript that states none: the size derived from what it shows lacks what
            // those versions put back unseen, which the transcript path adds as the files its
            // rule re-reads and its prior. With them, the two paths agree: their bases and
            // what the compaction left are alike — at a session's first compaction, before the
            // transcript path has learnt from one what its agent puts back beyond them.
            (Input::ClaudeCode, false) if r.n > 1 => assert!(err < 0.0, "{at}"),
            (Input::ClaudeCode, false) => {
                assert!(err < 0.0, "{at}");
                let (files, beyond) = r.restored;
                let prior = match beyond {
                    true => agent_fold_core::restore_prior(Input::ClaudeCode),
                    false => 0,
                };
                let with_prior = r.otel.unwrap() as f64 + prior as f64 + files as f64;
                let gap = (with_prior - r.transcript.unwrap() as f64) / r.reading as f64;
                assert!(
                    gap.abs() <= 0.12,
                    "{at}; with the prior, {:+.1}% off the transcript's",
                    gap * 100.0
                );
            }
            // Codex exports no compaction event: the figure is still the level before it,
            // which the reading after it corrects.
            _ => assert!(err > 100.0, "{at}"),
        }
    }
    // Between compactions the stream's figures are about as close as the transcript's: every
    // reading restarts the figure from itself, and what joins is priced by its size.
    let o = median(between.iter().filter_map(|b| b.errors[0]).collect()).unwrap();
    let t = median(between.iter().filter_map(|b| b.errors[1]).collect()).unwrap();
    assert!(
        o <= 3.0 * t + 1.0,
        "between readings: otel {o:.2}%, transcript {t:.2}%"
    );
}
