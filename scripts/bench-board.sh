#!/usr/bin/env bash
# The fleet board under a platform's load (docs/bench.md, "The fleet board"): a release build of
# agent-fold serve fed 10,000 live sessions at 2,000 pressure records a second for ten minutes,
# watched in headless Chromium, its alerts received by a webhook on loopback.
#
#   scripts/bench-board.sh                       # the figures of docs/bench.md
#   scripts/bench-board.sh --secs 120            # shorter
#   scripts/bench-board.sh --via relay           # the same through a live cluster: produce,
#                                                # agent-fold relay, serve --topic (a fluvio on
#                                                # PATH that reaches a cluster)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked --release --bin agent-fold >&2
cargo build --locked --release -p agent-fold-board-bench >&2
exec target/release/board-bench --bin target/release/agent-fold "$@"
