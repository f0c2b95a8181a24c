#!/usr/bin/env bash
# agent-fold's bench, side by side: the floor module (hands its input's records back with one
# copy) and Fluvio's generated identity module as references, the frames and pressure views in
# fluvio-smartengine at batch 1, 100 and 10,000, the native core, a naive serde_json baseline,
# the engine's store per call, per-session state and memory over a 1M-record stream.
#   scripts/bench.sh --quick                 the table in about a minute (20,000 records)
#   scripts/bench.sh                         the full run (200,000 records)
#   scripts/bench.sh --before OLD.wasm       an earlier build of the module beside this one
#   scripts/bench.sh --references --phases   only the modules against the references at batch
#                                            10,000 on both corpora, and each phase's fuel
# Extra arguments go to the bench binary (--records N, --small-records N, --seed S, --stream N,
# --wasm, --floor, --identity, --before, --references, --phases, --probe). With --phases the
# probe build of the module (feature `probe`, smartmodule/src/probe.rs) is built too. Writes the report to stdout and to target/bench.md.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-wasm.sh --with-reference
for arg in "$@"; do
  if [[ $arg == --phases ]]; then
    cargo build --release --locked --target wasm32-unknown-unknown -p agent-fold-smartmodule \
      --features probe --target-dir target/wasm-probe >&2
  fi
done
cargo build --release --locked -p agent-fold-bench --bin bench >&2
mkdir -p target
target/release/bench "$@" | tee target/bench.md
