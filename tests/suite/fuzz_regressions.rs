//! The fuzz targets' properties under `cargo test`: each target's seed corpus
//! (`fuzz/corpus/<target>/seed-*`), a few hundred pseudo-random inputs, and every crash the
//! fuzzers found, minimised, as a named regression test.
//!
//! The properties live in `agent_fold_testkit::checks` (one `check_*` function per
//! target, panicking on a violation); the fuzz targets in `fuzz/fuzz_targets/` are wrappers
//! around the same functions. Reproduce a crash file with
//! `fuzz/target/<host>/release/<target> <file>` after `scripts/fuzz.sh build`.

use std::path::{Path, PathBuf};

use agent_fold_testkit::checks::{
    check_adapters, check_checkpoint_restore, check_fold_bytes, check_fold_invariants,
    check_hostile, check_surface_ranges, check_wire,
};
use agent_fold_testkit::seeded_bytes;

/// A target's committed seed inputs.
fn seeds(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut out: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("seed-"))
        })
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, bytes)
        })
        .collect();
    out.sort();
    assert!(out.len() >= 3, "{}: a handful of seeds", dir.display());
    out
}

/// Runs a check on every seed, naming the seed that fails.
fn replay_seeds(target: &str, check: fn(&[u8])) {
    for (path, bytes) in seeds(target) {
        let r = std::panic::catch_unwind(|| check(&bytes));
        if let Err(e) = r {
            eprintln!("seed {} failed", path.display());
            std::panic::resume_unwind(e);
        }
    }
}

/// Runs a check on pseudo-random inputs of a few sizes (deterministic: splitmix64 seeds).
fn replay_random(check: fn(&[u8]), count: u64) {
    for seed in 0..count {
        let len = [8, 40, 160, 640][seed as usize % 4];
        check(&seeded_bytes(seed, len));
    }
}

#[test]
fn fold_bytes_seeds() {
    replay_seeds("fold_bytes", check_fold_bytes);
}

#[test]
fn fold_invariants_seeds() {
    replay_seeds("fold_invariants", check_fold_invariants);
}

#[test]
fn surface_ranges_seeds() {
    replay_seeds("surface_ranges", check_surface_ranges);
}

#[test]
fn checkpoint_restore_seeds() {
    replay_seeds("checkpoint_restore", check_checkpoint_restore);
}

#[test]
fn hostile_seeds() {
    replay_seeds("hostile", check_hostile);
}

#[test]
fn hostile_random() {
    replay_random(check_hostile, 400);
}

#[test]
fn wire_seeds() {
    replay_seeds("wire", check_wire);
}

#[test]
fn wire_random() {
    // Even first bytes: the bytes as an input (mostly refused); odd: a drawn, well-formed case.
    replay_random(check_wire, 2000);
}

#[test]
fn fold_invariants_random() {
    replay_random(check_fold_invariants, 2000);
}

#[test]
fn surface_ranges_random() {
    replay_random(check_surface_ranges, 2000);
}

#[test]
fn fold_bytes_random() {
    // Mostly not JSON: the malformed paths, every param combination the first bytes pick.
    replay_random(check_fold_bytes, 2000);
}

/// A few inputs of `fold_bytes` written out, so that the layout stays readable: params, then
/// records one a line, an empty line between invocations.
#[test]
fn fold_bytes_layout() {
    let log = concat!(
        r#"{"type":"user/message","session_id":"a","timestamp":"t0"}"#,
        "\n",
        r#"{"type":"thinking/tokens","session_id":"a","timestamp":"t1","estimated_tokens_delta":5}"#,
        "\n\n",
        r#"{"type":"thinking/tokens","session_id":"a","timestamp":"t2","estimated_tokens_delta":7}"#,
        "\n",
        r#"{"type":"thinking/tokens","session_id":"a","timestamp":"t3","estimated_tokens_delta":3}"#,
        "\n",
        r#"{"type":"tool/result","session_id":"a"}"#,
        "\n",
    );
    for p0 in [0u8, 1, 2, 4, 8, 16 | 32, 128, 0xff] {
        for p1 in [0u8, 1, 2, 4, 8, 0xf] {
            let mut data = vec![p0, p1];
            data.extend_from_slice(log.as_bytes());
            check_fold_bytes(&data);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Crashes the fuzzers found, minimised. Each names the fix it guards.

/// `checkpoint_restore`, found by the first smoke run: a restored surface whose tokens add up
/// to just under 2^64 took one more message; `Surface::commit` saturated its total, so the
/// nodes the module then wrote to its checkpoint added up past 2^64 and `restore` refused the
/// module's own checkpoint (and the saturated total would have stopped being Σ of the nodes
/// once a span was replaced). Fix in `core/src/pressure/surface.rs`: `commit` keeps the nodes adding
/// up within a u64 exactly, clipping only the new node's tokens.
#[test]
fn checkpoint_restore_surface_near_2_pow_64_takes_a_message() {
    let data = concat!(
        "\x01",
        r#"{"stateVersion":3,"view":"pressure","sessions":[{"session":"s","partial":false,"#,
        r#""surface":[[0,18446744073709551614]]}]}"#
    );
    check_checkpoint_restore(data.as_bytes());
}

/// `fold_invariants`, found by the first campaign: a checker bug, not the fold's. Under
/// `subagents=keep` a sub-agent frame kept in place stood between a fold's members
/// (`user/message | c1 | sub-agent counter | c3` folds c1 and c3 around it, as contract §2 says:
/// kept sub-agent frames neither extend nor break a run), and the nesting check looked for
/// the fold's members only after the last frame out, the kept one. Fix in
/// `testkit/src/checks/fold_invariants.rs` (`page_folds`): members are counted from the last *main*
/// frame out.
#[test]
fn fold_invariants_kept_subagent_inside_a_fold() {
    let data = [
        0xb7, 0xf7, 0x00, 0x00, 0xb7, 0x49, 0xb7, 0x13, 0xb7, 0xb7, 0x13, 0xb7, 0x13, 0x13, 0x13,
        0x13, 0x13, 0x13, 0xb7, 0xb7, 0x13, 0xb7, 0xb7, 0xb7, 0xb7, 0xb7, 0xb7, 0xb7, 0xb7, 0x13,
        0xb7, 0x13, 0x13, 0x13, 0x13, 0xb7, 0x13, 0xb7, 0xb7, 0x13, 0xb7, 0xb7,
    ];
    check_fold_invariants(&data);
}

#[test]
fn adapters_seeds() {
    replay_seeds("adapters", check_adapters);
}

#[test]
fn adapters_random() {
    replay_random(check_adapters, 2000);
}

/// `board`: the fleet board on arbitrary records and operations (its property is the host
/// crate's, `agent_fold::testing::serve::fuzz`).
#[test]
fn board_seeds() {
    replay_seeds("board", agent_fold::testing::serve::fuzz::check_board);
}

#[test]
fn board_random() {
    replay_random(agent_fold::testing::serve::fuzz::check_board, 400);
}

/// `board`, issue 55: a record with a number out of `f64`'s range in any field answered
/// `/api` and `/events`, then panicked on the next `/state` (the rows were read back into
/// `serde_json::Value`s), and the release build aborted: one record took the board down.
#[test]
fn board_a_number_out_of_range_in_a_record() {
    for record in [
        r#"{"type":"context/pressure","session":"x","seq":0,"pressureTokens":1e999}"#,
        r#"{"type":"context/pressure","session":"x","seq":0,"note":1e999}"#,
        r#"{"type":"context/error","session":"x","seq":0,"error":"e","n":-1e999}"#,
    ] {
        let data = format!("\x0f\x00{record}\n!e0\n");
        agent_fold::testing::serve::fuzz::check_board(data.as_bytes());
    }
}
