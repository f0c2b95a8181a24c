#!/usr/bin/env bash
# The status line's cost per call on a real transcript, as Claude Code calls it: cold (no cache:
# the whole transcript read), warm (the cache up to date: nothing new to read) and one new line
# (the cache behind by one message). Median wall time of RUNS calls each, release build.
#   scripts/bench-statusline.sh [TRANSCRIPT.jsonl] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
transcript=${1:-../shared/data/real/claude-code/bf5915c6-75c2-4612-ab44-c094d5efe7ed.jsonl}
runs=${2:-21}
bin=target/release/agent-fold
[[ -x $bin ]] || cargo build --release --locked --bin agent-fold >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$transcript" "$work/t.jsonl"
payload=$(printf '{"session_id":"%s","transcript_path":"%s","model":{"id":"claude-opus-4-6","display_name":"Opus"},"context_window":{"context_window_size":200000,"current_usage":null}}' \
  "$(basename "$transcript" .jsonl)" "$work/t.jsonl")
# One call's wall time in milliseconds.
call() { local t0 t1; t0=$(date +%s%N); "$bin" statusline --cache-dir "$work/cache" <<<"$payload" >/dev/null; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
cold=$(for _ in $(seq "$runs"); do rm -rf "$work/cache"; call; done | median)
warm=$(for _ in $(seq "$runs"); do call; done | median)
awk -v n="$(($(wc -l <"$transcript") - 39))" 'NR == n' "$transcript" >"$work/line"
grown=$(for _ in $(seq "$runs"); do cat "$work/line" >>"$work/t.jsonl"; call; done | median)
printf 'statusline on %s (%s bytes, %s lines), median of %s calls:\n' "$(basename "$transcript")" \
  "$(wc -c <"$transcript")" "$(wc -l <"$transcript")" "$runs"
printf '  cold (no cache) %s ms; warm (nothing new) %s ms; one new line %s ms\n' "$cold" "$warm" "$grown"
printf '  one line: %s\n' "$("$bin" statusline --cache-dir "$work/cache" <<<"$payload")"
