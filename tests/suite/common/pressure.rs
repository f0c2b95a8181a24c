//! The pressure view's helpers: build frames, run them natively and in Fluvio's engine (the
//! built `.wasm`) over several invocation sizes, read checkpoints, render snapshots.

use agent_fold::module::{Instance, native_process};
pub(crate) use agent_fold::record::Rec;
use agent_fold::testing::jsonl::line_record;
use agent_fold_core::{Emit, Processor, RecordIn, STATE_VERSION};
use serde_json::Value;

pub(crate) use super::{owned, wasm};

pub(crate) fn processor(params: &[(&str, &str)]) -> Processor {
    Processor::from_params(params.iter().copied()).expect("valid params")
}

/// A record keyed as the runner keys a JSONL line: by its `session_id`, else no key.
pub(crate) fn frame(json: &str) -> Rec {
    line_record(json.as_bytes())
}

/// A record with an explicit key (`None`: no key).
pub(crate) fn keyed(key: Option<&str>, json: &str) -> Rec {
    Rec::new(key.map(str::as_bytes), json.as_bytes())
}

pub(crate) fn frames(lines: &[&str]) -> Vec<Rec> {
    lines.iter().map(|l| frame(l)).collect()
}

/// Records as the core reads them, each at its offset.
pub(crate) fn inputs(records: &[Rec]) -> Vec<RecordIn<'_>> {
    agent_fold::record::inputs(records, 0)
}

/// The library's output over invocations of `batch` records (0: all at once).
pub(crate) fn native_run(params: &[(&str, &str)], records: &[Rec], batch: usize) -> Vec<Rec> {
    let mut p = processor(params);
    native_on(&mut p, records, batch)
}

pub(crate) fn native_on(p: &mut Processor, records: &[Rec], batch: usize) -> Vec<Rec> {
    let batch = if batch == 0 {
        records.len().max(1)
    } else {
        batch
    };
    let mut out = Vec::new();
    for (i, chunk) in records.chunks(batch).enumerate() {
        out.extend(native_process(p, chunk, (i * batch) as i64).expect("invocation succeeds"));
    }
    out
}

/// The `.wasm` in fluvio-smartengine over invocations of `batch` records (0: all at once).
pub(crate) fn engine_run(params: &[(&str, &str)], records: &[Rec], batch: usize) -> Vec<Rec> {
    let mut i = Instance::new(wasm(), &owned(params), None).expect("the module initialises");
    let batch = if batch == 0 {
        records.len().max(1)
    } else {
        batch
    };
    i.run(records, batch).expect("invocation succeeds")
}

/// One invocation of the library; outputs grouped by the input record they came from.
pub(crate) fn native_by_input(p: &mut Processor, records: &[Rec]) -> Vec<Vec<Rec>> {
    let emits = p.process(&inputs(records)).expect("invocation succeeds");
    let mut by = vec![Vec::new(); records.len()];
    for e in emits {
        match e {
            Emit::New { at, key, value } => by[at].push(Rec {
                key: Some(key),
                value,
            }),
            other => panic!("the pressure view emits only new records, got {other:?}"),
        }
    }
    by
}

/// Runs `records` natively and in the engine, invocations of 1, 3 and all at once; asserts
/// all six outputs are identical and every output is keyed by its `session`. Returns the
/// outputs grouped by input record.
pub(crate) fn run_everywhere(params: &[(&str, &str)], records: &[Rec]) -> Vec<Vec<Rec>> {
    let by = native_by_input(&mut processor(params), records);
    let flat: Vec<Rec> = by.iter().flatten().cloned().collect();
    for batch in [1, 3, 0] {
        assert_eq!(
            lines(&native_run(params, records, batch)),
            lines(&flat),
            "native, batch {batch}"
        );
    }
    for (batch, out) in engine_passes(params, records) {
        assert_eq!(
            lines(&out),
            lines(&flat),
            "the .wasm in the engine, batch {batch}"
        );
        assert_eq!(out, flat, "the .wasm in the engine, batch {batch}: keys");
    }
    for r in &flat {
        let v = json(r);
        let session = v["session"].as_str().expect("a session string");
        assert_eq!(
            r.key.as_deref(),
            Some(session.as_bytes()),
            "keyed by session"
        );
        assert_eq!(v["stateVersion"], STATE_VERSION);
    }
    by
}

/// The engine's output in invocations of 1, 3 and all at once (batch 0).
///
/// Compiling the module is what costs (seconds in a debug build), so the three passes share one
/// instance: each pass's records carry their session under a key of their own (`1|…`, `3|…`,
/// `0|…`), as sessions sharing a topic do, and the prefix is taken off what comes out. With a
/// `max_sessions` param the passes would evict each other's sessions, so each gets a fresh
/// instance.
pub(crate) fn engine_passes(params: &[(&str, &str)], records: &[Rec]) -> Vec<(usize, Vec<Rec>)> {
    let batches = [1, 3, 0];
    if params.iter().any(|(k, _)| *k == "max_sessions") {
        return batches
            .iter()
            .map(|&b| (b, engine_run(params, records, b)))
            .collect();
    }
    let mut engine = Instance::new(wasm(), &owned(params), None).expect("the module initialises");
    batches
        .iter()
        .map(|&batch| {
            let prefix = format!("{batch}|");
            let keyed: Vec<Rec> = records
                .iter()
                .map(|r| {
                    let session = r.key.clone().unwrap_or_else(|| {
                        serde_json::from_slice::<Value>(&r.value)
                            .ok()
                            .and_then(|v| v.get("session_id")?.as_str().map(str::to_owned))
                            .unwrap_or_default()
                            .into_bytes()
                    });
                    let mut key = prefix.clone().into_bytes();
                    key.extend(session);
                    Rec {
                        key: Some(key),
                        value: r.value.clone(),
                    }
                })
                .collect();
            let size = if batch == 0 {
                records.len().max(1)
            } else {
                batch
            };
            let out = engine.run(&keyed, size).expect("invocation succeeds");
            let out = out
                .into_iter()
                .map(|r| {
                    let key = r.key.expect("keyed");
                    let key = key.strip_prefix(prefix.as_bytes()).expect("the pass's key");
                    let value = String::from_utf8(r.value).expect("UTF-8 out");
                    let tagged = format!("\"session\":\"{prefix}");
                    assert_eq!(value.matches(&tagged).count(), 1, "{value}");
                    Rec {
                        key: Some(key.to_vec()),
                        value: value.replacen(&tagged, "\"session\":\"", 1).into_bytes(),
                    }
                })
                .collect();
            (batch, out)
        })
        .collect()
}

pub(crate) fn json(r: &Rec) -> Value {
    serde_json::from_slice(&r.value).expect("output is JSON")
}

pub(crate) fn lines(recs: &[Rec]) -> Vec<String> {
    recs.iter()
        .map(|r| String::from_utf8_lossy(&r.value).into_owned())
        .collect()
}

/// The outputs as JSON, flattened.
pub(crate) fn values(by: &[Vec<Rec>]) -> Vec<Value> {
    by.iter().flatten().map(json).collect()
}

/// Each output as JSON.
pub(crate) fn values_of(out: &[Rec]) -> Vec<Value> {
    out.iter().map(json).collect()
}

/// A JSON string literal of exactly `4 * tokens` chars, quotes included: `tokens` by the
/// estimate.
pub(crate) fn text(tokens: usize) -> String {
    assert!(tokens >= 1);
    format!("\"{}\"", "a".repeat(4 * tokens - 2))
}

/// Collapses runs of 12 or more identical chars to `c×N`, so long test texts stay readable.
pub(crate) fn collapse(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let mut j = i;
        while j < chars.len() && chars[j] == chars[i] {
            j += 1;
        }
        if j - i >= 12 {
            out.push_str(&format!("{}×{}", chars[i], j - i));
        } else {
            out.extend(&chars[i..j]);
        }
        i = j;
    }
    out
}

/// A snapshot's text: the params, then each input frame (`>`) followed by what it emitted
/// (`<`), one record per line.
pub(crate) fn render(params: &[(&str, &str)], records: &[Rec], by: &[Vec<Rec>]) -> String {
    let mut s = String::new();
    let ps: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    s.push_str(&format!("params: {}\n", ps.join(" ")));
    s.push_str(
        "native = engine, in invocations of 1, 3 and all; runs of 12+ equal chars shown as c×N\n",
    );
    for (r, outs) in records.iter().zip(by) {
        let text = String::from_utf8_lossy(&r.value);
        let sid = serde_json::from_slice::<Value>(&r.value)
            .ok()
            .and_then(|v| {
                v.get("session_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
        let key = r
            .key
            .as_deref()
            .map(|k| String::from_utf8_lossy(k).into_owned());
        let prefix = match (&key, &sid) {
            (Some(k), Some(s)) if k == s => String::new(),
            (None, None) => String::new(),
            (Some(k), _) => format!("[key {k:?}] "),
            (None, Some(_)) => "[no key] ".to_string(),
        };
        s.push_str(&format!("> {prefix}{}\n", collapse(&text)));
        for o in outs {
            s.push_str(&format!("< {}\n", String::from_utf8_lossy(&o.value)));
        }
    }
    s
}

/// The checkpoint of one session of a processor, if it holds one.
pub(crate) fn session_checkpoint(p: &Processor, session: &str) -> Option<Value> {
    let doc: Value = serde_json::from_str(&p.checkpoint()).expect("a checkpoint is JSON");
    doc["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .find(|s| s["session"] == session)
        .cloned()
}

/// Σ tokens over a session checkpoint's surface.
pub(crate) fn surface_sum(session: &Value) -> u64 {
    session["surface"]
        .as_array()
        .expect("surface")
        .iter()
        .map(|n| n[1].as_u64().expect("tokens"))
        .sum()
}

/// A generated session of `ops` steps, drawn from consecutive sub-seeds. Even seeds start at
/// seq 0 (complete); odd ones where the draw says (one in four of those joins mid-stream).
pub(crate) fn gen_session(seed: u64, ops: usize) -> agent_fold_testkit::GenSession {
    use agent_fold_testkit::{Drawn, GenSession};
    let mut g = GenSession::from_seed(seed << 24, ops * 6 + 16);
    if seed.is_multiple_of(2) {
        g.start_seq = 0;
    }
    let mut k = 1;
    while g.ops.len() < ops {
        let more = GenSession::from_seed((seed << 24) + k, ops * 6 + 16);
        g.ops.extend(more.ops);
        g.cuts.extend(more.cuts);
        k += 1;
    }
    g.ops.truncate(ops);
    g
}

/// A generated session's records.
pub(crate) fn gen_records(g: &agent_fold_testkit::GenSession) -> Vec<Rec> {
    use agent_fold_testkit::Drawn;
    g.records()
        .into_iter()
        .map(|(key, value)| Rec { key, value })
        .collect()
}
