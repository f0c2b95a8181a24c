#!/usr/bin/env bash
# Sets up and runs the main job: builds the SmartModule and the runner, then runs the module in
# Fluvio's engine over the bundled agent log, printing the folded frames view and a summary,
# and writing the pressure view (the sibling topic's records) to target/demo-pressure.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-wasm.sh
# The host tool alone, in the dev profile (the tests build the rest; `cargo install
# --path .` makes the release build, for deployments).
cargo build --locked --bin agent-fold
target/debug/agent-fold run examples/agent-session.jsonl \
  --pressure-out target/demo-pressure.jsonl "$@"
echo "pressure view: $(wc -l <target/demo-pressure.jsonl) records in target/demo-pressure.jsonl" >&2
