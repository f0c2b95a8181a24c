#!/usr/bin/env bash
# The lab (docs/lab.md): the agents' releases, installed from the npm registry into
# target/lab/, run through every scenario against local model stand-ins, and agent-fold held
# to the stand-in's record of every request.
#
#   scripts/lab.sh                      the pinned releases (lab/package.json), every scenario
#   scripts/lab.sh --newest             the newest release of each agent, and what changed
#   scripts/lab.sh --agent codex --scenario auto-compact
#
# Nothing an agent writes leaves target/lab/ (it holds the agents' own prompts).
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --quiet -p agent-fold-lab -- "$@"
