#!/usr/bin/env bash
# Every test: the .wasm build, formatting, clippy, the whole workspace's tests (unit, insta
# snapshots, the .wasm in fluvio-smartengine, properties), and a bounded fuzz smoke.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-wasm.sh
cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -- -D warnings
log=$(mktemp)
cargo test --locked --workspace 2>&1 | tee "$log"
if [[ -x scripts/fuzz.sh && ${AGENT_FOLD_SKIP_FUZZ:-0} != 1 ]]; then
  scripts/fuzz.sh smoke
fi
# One closing line for the whole run: cargo's last line is a crate's doc-tests, often "0 passed".
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
rm -f "$log"
