#!/usr/bin/env bash
# Runs the main job on the bundled example. First the folded frames view through the native
# library — the code the SmartModule is built from, which builds in a minute on a fresh clone —
# then the SmartModule itself: builds the `.wasm` and the host tool, runs the module in Fluvio's
# engine over the same log, holds its frames to the native library's bytes, prints the summary
# and writes the pressure view (the sibling topic's records) to target/demo-pressure.jsonl.
# Arguments go to `agent-fold run` (e.g. `-e subagents=keep`); with any, the frames are not
# compared, the native pass having run without them.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target
log=examples/agent-session.jsonl
echo "demo: the folded frames of $log through the native library, while Fluvio's engine builds" >&2
cargo run --locked -q -p agent-fold-core --example fold -- "$log" | tee target/demo-native.jsonl
scripts/build-wasm.sh
# The host tool alone, in the dev profile (`cargo install --path .` makes the release build,
# for deployments). Named beside the testkit so that its dependencies' features are the ones
# the test build unifies (the testkit derives `arbitrary`, which Cranelift depends on): else
# `scripts/test.sh` builds Fluvio's engine a second time.
cargo build --locked -p agent-fold -p agent-fold-testkit --bin agent-fold
target/debug/agent-fold run "$log" --pressure-out target/demo-pressure.jsonl "$@" \
  >target/demo-frames.jsonl
if [ $# -eq 0 ]; then
  cmp -s target/demo-native.jsonl target/demo-frames.jsonl || {
    echo "demo: the engine's frames differ from the native library's (target/demo-*.jsonl)" >&2
    exit 1
  }
  echo "the .wasm in Fluvio's engine: $(wc -l <target/demo-frames.jsonl) frames, byte-identical to the native library's" >&2
else
  cat target/demo-frames.jsonl
fi
echo "pressure view: $(wc -l <target/demo-pressure.jsonl) records in target/demo-pressure.jsonl" >&2
