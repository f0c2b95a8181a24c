#!/usr/bin/env bash
# Every test: the .wasm build, formatting, clippy, the whole workspace's tests (unit, insta
# snapshots, the .wasm in fluvio-smartengine, properties), and a bounded fuzz smoke.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-wasm.sh
cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -- -D warnings
cargo test --locked --workspace
if [[ -x scripts/fuzz.sh && ${AGENT_FOLD_SKIP_FUZZ:-0} != 1 ]]; then
  scripts/fuzz.sh smoke
fi
