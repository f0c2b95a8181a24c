#!/usr/bin/env bash
# Replays a real Claude Code transcript line by line into a scratch file and, at the moments
# worth seeing (before and after each compaction), runs `agent-fold statusline` as Claude Code
# does, its JSON on stdin: what the README's terminal capture shows.
#   scripts/statusline-demo.sh [TRANSCRIPT.jsonl]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=${1:-$root/../shared/data/real/claude-code/bf5915c6-75c2-4612-ab44-c094d5efe7ed.jsonl}
bin=$root/target/release/agent-fold
[[ -x $bin ]] || (cd "$root" && cargo build --release --locked --bin agent-fold >&2)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
payload=$(printf '{"session_id":"%s","transcript_path":"%s","model":{"display_name":"Opus"},"context_window":{"context_window_size":200000,"current_usage":null}}' \
  "$(basename "$src" .jsonl)" "$work/t.jsonl")
show() { printf '%-34s %s\n' "$1" "$("$bin" statusline --cache-dir "$work/cache" <<<"$payload")"; }
# The compactions' boundary lines, and the moments around them.
mapfile -t bounds < <(grep -n '"subtype":"compact_boundary"' "$src" | cut -d: -f1)
n=0
while IFS= read -r line; do
  n=$((n + 1))
  printf '%s\n' "$line" >>"$work/t.jsonl"
  ((n == 40)) && show "line $n, early in the session:"
  for b in "${bounds[@]}"; do
    ((n == b - 1)) && show "line $n, before a compaction:"
    ((n == b + 2)) && show "line $n, just compacted:"
  done
done <"$src"
show "line $n, the end:"
