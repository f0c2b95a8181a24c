//! The built `.wasm` in fluvio-smartengine against the native library (contract §6.8): identical
//! output, byte for byte and key for key, over invocation sizes 1, 7 and all at once, on the
//! bundled example and generated logs; look-back; `init` refusing bad params; a long stream
//! within the engine's default memory limit.

use crate::common::frames::*;
use crate::common::*;
use agent_fold::testing::jsonl;
use agent_fold_testkit::Drawn;

fn example() -> Vec<Rec> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/agent-session.jsonl");
    jsonl::records(&std::fs::read(path).expect("the bundled example"))
}

/// Runs `pages` both ways (asserting identical answers), checks the accounting identity of
/// every invocation, and returns the concatenated output.
fn both_checked(params: Params, history: Option<&[Rec]>, pages: &[Vec<Rec>]) -> Vec<Rec> {
    let mut out = Vec::new();
    for (page, answer) in pages.iter().zip(run_both(params, history, pages)) {
        let answer = answer.unwrap_or_else(|e| panic!("the invocation failed: {e:?}"));
        check_accounting(params, page, &answer);
        out.extend(answer);
    }
    out
}

fn folds(records: &[Rec]) -> usize {
    records
        .iter()
        .filter(|r| folded_frames(r, "thinking/tokens").is_some())
        .count()
}

#[test]
fn bundled_example_at_batch_1_7_and_all() {
    let input = example();
    assert_eq!(input.len(), 39);
    for batch in [1, 7, 0] {
        let out = both_checked(&[], None, &split(&input, batch));
        // The runs of s-42 and s-77 fold once they are in one page, never at batch 1.
        if batch == 1 {
            assert_eq!(folds(&out), 0, "batch 1 folds nothing");
        }
        if batch == 0 {
            assert!(folds(&out) >= 4, "{}", render(&out));
        }
    }
    let params: Params = &[("subagents", "keep"), ("malformed", "drop")];
    both_checked(params, None, &split(&input, 7));
}

/// Logs of several seeds, one after another in one stream, keyed and unkeyed, half of them
/// with mostly foldable counters: the two runs only have to agree, so one instance serves them
/// all.
fn generated_stream() -> Vec<Rec> {
    let mut out = Vec::new();
    for seed in 0..12u64 {
        let mut log = gen_log(seed, 60);
        log.keyed = seed % 4 < 2;
        if seed % 2 == 1 {
            log = heal(log, 4);
        }
        out.extend(gen_records(&log));
    }
    out
}

#[test]
fn generated_logs_at_batch_1_7_and_all() {
    let input = generated_stream();
    for batch in [1, 7, 0] {
        both_checked(&[], None, &split(&input, batch));
    }
    // The generator's own cuts, with the other values of subagents and malformed.
    let log = heal(gen_log(99, 400), 3);
    let records = gen_records(&log);
    let pages: Vec<Vec<Rec>> = log
        .batches(records.len())
        .into_iter()
        .map(|r| records[r].to_vec())
        .collect();
    both_checked(
        &[("subagents", "keep"), ("malformed", "drop")],
        None,
        &pages,
    );
}

#[test]
fn generated_logs_under_malformed_fail_fail_alike() {
    let input = generated_stream();
    let pages = split(&input, 7);
    let answers = run_both(&[("malformed", "fail")], None, &pages);
    let mut base = 0;
    let mut failed = 0;
    for (page, answer) in pages.iter().zip(&answers) {
        let bad = page.iter().position(|r| !is_json_object(&r.value));
        match (bad, answer) {
            (None, Ok(out)) => check_accounting(&[("malformed", "fail")], page, out),
            (Some(i), Err((native, engine))) => {
                let offset = base + i;
                assert!(native.contains(&format!("offset {offset}:")), "{native}");
                assert!(engine.contains(&format!("Offset: {offset}\n")), "{engine}");
                failed += 1;
            }
            (bad, answer) => panic!("first malformed record {bad:?}, answer {answer:?}"),
        }
        base += page.len();
    }
    assert!(failed > 0, "the stream has malformed records");
}

#[test]
fn look_back_then_process() {
    let input = generated_stream();
    let (history, rest) = input.split_at(input.len() / 2);
    // The history ends, in every session, with a non-counter; the rest opens with a foldable
    // run in every session.
    let mut history = history.to_vec();
    let mut opening = Vec::new();
    for s in ["s0", "s1", "s2", "s3", ""] {
        history.push(rec(
            None,
            &format!(r#"{{"type":"user/message","id":"h-{s}","session_id":"{s}"}}"#),
        ));
        for i in 0..2 {
            opening.push(rec(
                None,
                &format!(
                    r#"{{"type":"thinking/tokens","id":"o-{s}-{i}","session_id":"{s}","timestamp":"t{i}","estimated_tokens_delta":{i}}}"#
                ),
            ));
        }
    }
    let history = &history[..];
    let mut pages = vec![opening];
    pages.extend(split(rest, 7));
    let with_history = both_checked(&[], Some(history), &pages);
    // look_back leaves the state that processing the history as one invocation leaves.
    let mut p = processor(&[], None);
    let mut replay = vec![history.to_vec()];
    replay.extend(pages.iter().cloned());
    let answers = native_pages(&mut p, &replay);
    let after: Vec<Rec> = answers[1..]
        .iter()
        .flat_map(|a| a.clone().expect("no failure"))
        .collect();
    assert_eq!(render(&with_history), render(&after));
    // The history matters: without it the output differs (some leading counters fold).
    let without: Vec<Rec> = native_pages(&mut processor(&[], None), &pages)
        .into_iter()
        .flat_map(|a| a.expect("no failure"))
        .collect();
    assert_ne!(render(&with_history), render(&without));
    assert_eq!(
        folds(&with_history[..5]),
        5,
        "{}",
        render(&with_history[..5])
    );
}

#[test]
fn init_refuses_every_bad_param_naming_it() {
    // In the engine: one bad value of each param, and an unknown one.
    for (k, v) in [
        ("emit", "both"),
        ("subagents", "yes"),
        ("counter_type", ""),
        ("capacity", "0"),
        ("max_sessions", "0"),
        ("malformed", "ignore"),
        ("input", "json"),
        ("projection", "smart"),
        ("colour", "blue"),
    ] {
        let err = agent_fold::module::Instance::new(wasm(), &owned(&[(k, v)]), None)
            .err()
            .unwrap_or_else(|| panic!("{k}={v:?} is accepted"));
        let text = format!("{err:#}");
        assert!(text.contains(&format!("`{k}`")), "{k}={v:?}: {text}");
        // An SPU's log names no module: the message does.
        assert!(text.contains("agent-fold: "), "{k}={v:?}: {text}");
    }
    // Every other bad value, natively (the same `Config::from_params` runs in `init`).
    for (k, v) in [
        ("emit", ""),
        ("emit", "Frames"),
        ("subagents", ""),
        ("subagents", "DROP"),
        ("capacity", "-5"),
        ("capacity", "abc"),
        ("capacity", "1.5"),
        ("capacity", ""),
        ("max_sessions", "many"),
        ("max_sessions", "-1"),
        ("max_sessions", "10000001"),
        ("max_sessions", ""),
        ("malformed", ""),
        ("malformed", "PASS"),
        ("", "x"),
    ] {
        let err = agent_fold_core::Processor::from_params([(k, v)])
            .err()
            .unwrap_or_else(|| panic!("{k}={v:?} is accepted"));
        assert_eq!(err.key(), k, "{k}={v:?}: {err}");
        assert!(
            err.to_string().contains(&format!("`{k}`")),
            "{k}={v:?}: {err}"
        );
    }
    // And the good values are taken.
    for (k, v) in [
        ("emit", "frames"),
        ("emit", "pressure"),
        ("subagents", "keep"),
        ("counter_type", "x/y"),
        ("capacity", "200000"),
        ("max_sessions", "1"),
        ("max_sessions", "10000000"),
        ("malformed", "fail"),
    ] {
        assert!(
            agent_fold_core::Processor::from_params([(k, v)]).is_ok(),
            "{k}={v}"
        );
    }
}

/// A pseudo-random stream of `n` realistic frames over `sessions` sessions: turns of a user
/// message, a run of counters (now and then an unstamped one), sub-agent dispatches, an
/// assistant message and a tool result; every 997th record is not JSON.
fn realistic_stream(n: usize, sessions: usize, seed: u64) -> Vec<Rec> {
    let mut x = seed;
    let mut next = move |m: u64| {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (x >> 33) % m
    };
    let frame = |kind: &str, key: &str, q: u64, stamped: bool, extra: &str| {
        let stamp = if stamped {
            format!(
                r#","timestamp":"2026-11-29T10:{:02}:{:02}Z""#,
                q / 60 % 60,
                q % 60
            )
        } else {
            String::new()
        };
        format!(
            r#"{{"type":"{kind}","id":"{key}-{q}","session_id":"{key}","seq":{q}{stamp}{extra}}}"#
        )
    };
    let mut seq = vec![0u64; sessions];
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let s = next(sessions as u64) as usize;
        let key = format!("session-{s:04}");
        let turn = next(4);
        let mut frames: Vec<(&str, bool, String)> = vec![(
            "user/message",
            true,
            r#","message":{"role":"user","content":"Why does the build fail?"}"#.into(),
        )];
        for _ in 0..next(12) {
            let d = next(60);
            let stamped = next(25) != 0;
            frames.push((
                "thinking/tokens",
                stamped,
                format!(r#","estimated_tokens_delta":{d}"#),
            ));
        }
        if turn == 0 {
            for _ in 0..next(4) {
                frames.push((
                    "thinking/tokens",
                    true,
                    r#","estimated_tokens_delta":9,"extras":{"parent_tool_use_id":"toolu_sub"}"#
                        .into(),
                ));
            }
        }
        frames.push((
            "assistant/message",
            true,
            r#","message":{"role":"assistant","content":"Checking."},"usage":{"input_tokens":120,"output_tokens":8}"#.into(),
        ));
        if turn != 3 {
            frames.push((
                "tool/result",
                true,
                r#","message":{"role":"tool","content":"ok"}"#.into(),
            ));
        }
        for (kind, stamped, extra) in frames {
            if out.len() % 997 == 996 {
                out.push(rec(None, "{\"truncated"));
            }
            seq[s] += 1;
            out.push(rec(Some(&key), &frame(kind, &key, seq[s], stamped, &extra)));
        }
    }
    out.truncate(n);
    out
}

/// Σ valid deltas and Σ counters (by folded_frames) of main counters, per session.
fn tallies(records: &[Rec]) -> std::collections::BTreeMap<Vec<u8>, (u128, u128)> {
    let mut t = std::collections::BTreeMap::new();
    for r in records {
        let Some(o) = object(r) else { continue };
        if is_subagent(&o) || o.get("type").and_then(|v| v.as_str()) != Some("thinking/tokens") {
            continue;
        }
        let e: &mut (u128, u128) = t.entry(session_of(r)).or_default();
        e.0 += o
            .get("estimated_tokens_delta")
            .and_then(|d| d.as_u64())
            .unwrap_or(0) as u128;
        e.1 += folded_frames(r, "thinking/tokens").unwrap_or(1) as u128;
    }
    t
}

#[test]
fn a_stream_of_100k_records_runs_within_the_default_memory_limit() {
    let input = realistic_stream(100_000, 300, 7);
    assert_eq!(input.len(), 100_000);
    let pages = split(&input, 1000);
    // Default params: the engine (default memory limit) runs it all, as the library does.
    let out: Vec<Rec> = run_both(&[], None, &pages)
        .into_iter()
        .flat_map(|a| a.unwrap_or_else(|e| panic!("the invocation failed: {e:?}")))
        .collect();
    assert!(folds(&out) > 1000, "{} folds", folds(&out));
    // 300 sessions through 16 slots: state is evicted all the time, and still every
    // invocation's accounting holds and every session's counters are conserved.
    let out = both_checked(&[("max_sessions", "16")], None, &pages);
    assert!(folds(&out) > 1000, "{} folds", folds(&out));
    assert_eq!(tallies(&input), tallies(&out), "conservation per session");
}

#[test]
fn smart_toml_documents_every_param_and_no_other() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Smart.toml")).unwrap();
    let documented: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("name = \""))
        .filter_map(|l| l.strip_suffix('"'))
        .filter(|n| *n != "agent-fold")
        .collect();
    let params: Vec<&str> = agent_fold_core::PARAMS.iter().map(|p| p.name).collect();
    assert_eq!(documented, params);
}

/// Records that put every byte value, and every UTF-8 width, at every position of a 16-byte
/// block and across a block's end, inside strings whose ends the scan must find for the fields
/// after them to read right: the SIMD scan in the `.wasm` must classify each as the native scans
/// do. Each probe stands in a user message's content (which the pressure view prices, its
/// projection moving by it at the sample that follows) and in two counters after them, which
/// fold when both read.
fn every_byte_at_every_lane() -> Vec<Rec> {
    let mut probes: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    for s in ["é", "中", "😀", "\\\"", "\\\\", "\\u0041", "\\n"] {
        probes.push(s.as_bytes().to_vec());
    }
    probes.extend([vec![0xe4, 0xb8], vec![0xc0, 0xaf], vec![0xed, 0xa0, 0x80]]);
    let mut out = Vec::new();
    for (i, probe) in probes.iter().enumerate() {
        for lane in 0..33 {
            let session = format!("s{}-{lane}", i % 3);
            let mut user = format!(
                r#"{{"type":"user/message","session_id":"{session}","seq":{},"message":{{"role":"user","content":"{}"#,
                2 * i + 1,
                "y".repeat(lane)
            )
            .into_bytes();
            user.extend_from_slice(probe);
            user.extend_from_slice(b"\"}}");
            out.push(Rec::new(None, &user));
            // A sample: the pressure view's projection then moves by each message's estimate.
            let assistant = format!(
                r#"{{"type":"assistant/message","session_id":"{session}","seq":{},"usage":{{"input_tokens":{}}}}}"#,
                2 * i + 2,
                100 + i
            );
            out.push(Rec::new(None, assistant.as_bytes()));
            for t in 0..2 {
                let mut v = format!(
                    r#"{{"type":"thinking/tokens","session_id":"{session}","x":"{}"#,
                    "a".repeat(lane)
                )
                .into_bytes();
                v.extend_from_slice(probe);
                v.extend_from_slice(
                    format!(r#"b","timestamp":"t{t}","estimated_tokens_delta":1,"content":""#)
                        .as_bytes(),
                );
                v.extend_from_slice(&"z".repeat(lane).into_bytes());
                v.extend_from_slice(probe);
                v.extend_from_slice(b"\"}");
                out.push(Rec::new(None, &v));
            }
        }
    }
    out
}

#[test]
fn every_byte_at_every_lane_reads_alike_in_the_engine() {
    let input = every_byte_at_every_lane();
    for batch in [40, 0] {
        let out = both_checked(&[("malformed", "drop")], None, &split(&input, batch));
        assert!(folds(&out) > 1000, "batch {batch}: {} folds", folds(&out));
        // The pressure view prices what it reads (estimate's scan of each string).
        let answers = run_both(&[("emit", "pressure")], None, &split(&input, batch));
        let priced = answers.iter().flatten().flatten().count();
        assert!(priced > 1000, "batch {batch}: {priced} pressure records");
    }
}

/// Session keys of every length from 1 to 64 bytes, each beside the keys that differ from it in
/// one byte, at every position (the session index's hash and compare take 8- and 16-byte words
/// that overlap at the key's end), their counters interleaved; and the same stream with each key
/// renamed to one that shares no byte position with the others (`n-p`). The index must tell the
/// first keys apart as it tells the second apart.
fn keys_one_byte_apart() -> (Vec<Rec>, Vec<Rec>) {
    let (mut close, mut apart) = (Vec::new(), Vec::new());
    let mut seq = 0;
    for n in 1..=64usize {
        let base = vec![b'k'; n];
        for p in 0..n {
            let mut other = base.clone();
            other[p] = b'K';
            let renamed = |key: &[u8]| {
                if key == base {
                    format!("{n}-base").into_bytes()
                } else {
                    format!("{n}-{p}").into_bytes()
                }
            };
            let mut push = |key: &[u8], value: String| {
                close.push(Rec::new(Some(key), value.as_bytes()));
                apart.push(Rec::new(Some(&renamed(key)), value.as_bytes()));
            };
            for key in [&base[..], &other[..], &base[..], &other[..], &other[..]] {
                seq += 1;
                push(
                    key,
                    format!(
                        r#"{{"type":"thinking/tokens","seq":{seq},"timestamp":"t{seq}","estimated_tokens_delta":1}}"#
                    ),
                );
            }
            for key in [&base[..], &other[..]] {
                seq += 1;
                push(
                    key,
                    format!(r#"{{"type":"user/message","seq":{seq},"message":{{"content":"x"}}}}"#),
                );
            }
        }
    }
    (close, apart)
}

#[test]
fn keys_one_byte_apart_are_sessions_apart_in_the_engine() {
    let (close, apart) = keys_one_byte_apart();
    for params in [&[][..], &[("max_sessions", "50")][..]] {
        let out = both_checked(params, None, &split(&close, 0));
        let expected = both_checked(params, None, &split(&apart, 0));
        let values = |recs: &[Rec]| recs.iter().map(|r| r.value.clone()).collect::<Vec<_>>();
        assert!(folds(&out) >= 2000, "{params:?}: {} folds", folds(&out));
        assert_eq!(values(&out), values(&expected), "{params:?}");
    }
}

/// The engine refuses the module where it has no SIMD: the `.wasm` holds SIMD instructions.
#[test]
fn the_module_scans_with_simd_and_fluvios_engine_runs_it() {
    let mut config = wasmtime::Config::new();
    config.wasm_simd(false).wasm_relaxed_simd(false);
    let no_simd = wasmtime::Engine::new(&config).expect("an engine");
    assert!(
        wasmtime::Module::new(&no_simd, wasm()).is_err(),
        "the module validates without SIMD: it was built without simd128"
    );
    // Fluvio's engine as an SPU makes it (wasmtime's defaults: SIMD on) runs it.
    let out = both_checked(&[], None, &split(&example(), 7));
    assert!(!out.is_empty());
}

/// The portable build (`scripts/build-wasm.sh --portable`, for engines without SIMD) loads in an
/// engine without SIMD and answers as the native library does.
#[test]
fn the_portable_module_runs_without_simd_and_answers_alike() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/wasm-portable/wasm32-unknown-unknown/release/agent_fold_smartmodule.wasm");
    let Ok(portable) = std::fs::read(&path) else {
        eprintln!(
            "skipped: no portable build at {} (scripts/build-wasm.sh --portable)",
            path.display()
        );
        return;
    };
    let mut config = wasmtime::Config::new();
    config.wasm_simd(false).wasm_relaxed_simd(false);
    let no_simd = wasmtime::Engine::new(&config).expect("an engine");
    wasmtime::Module::new(&no_simd, &portable).expect("the portable module needs no SIMD");
    let input = every_byte_at_every_lane();
    let mut wasm =
        agent_fold::module::Instance::new(&portable, &owned(&[("malformed", "drop")]), None)
            .expect("the portable module loads");
    let mut native = processor(&[("malformed", "drop")], None);
    for page in split(&input, 40) {
        let n = agent_fold::module::native_process(&mut native, &page, 0).expect("native");
        assert_eq!(wasm.process(&page, 0).expect("portable"), n);
    }
}
