#!/usr/bin/env bash
# agent-fold against a live Fluvio cluster: the frames view consumed with the transforms-line
# against `agent-fold run`, and `agent-fold relay` killed (SIGKILL) three times while the
# topic is being produced to, and restarted, then every record `agent-fold run --pressure-out` gives looked for in
# the sibling topic (in order per session, keyed by it; duplicates counted, none lost), and the
# relay's records/s beside a bare `fluvio consume` of the same topic.
#
# Needs a `fluvio` on PATH whose current profile reaches a cluster; else it prints
# `skipped: <reason>` and exits 0. Data: examples/agent-session.jsonl, a generated corpus
# (`agent-fold corpus --records 50000`), and the real logs in ../shared/data/real, read in place
# and produced raw (keyed by the session each line names) to topics consumed with -e input=…; a
# Gemini CLI chat or an OpenCode export as one record, produced twice (written again).
# Creates topics $E2E_PREFIX-* (default af-e2e; deleted first and at the end unless
# E2E_KEEP=1) and SmartModule $E2E_SMARTMODULE-<hash of the .wasm> (default agent-fold-e2e). Checks in
# scripts/e2e_check.py. Environment: E2E_RECORDS (50000), E2E_SEED (random), E2E_PROFILE
# (debug, or release: the binary measured), CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

skip() { echo "skipped: $*"; exit 0; }
command -v fluvio >/dev/null || skip "no fluvio on PATH"
command -v python3 >/dev/null || skip "no python3 on PATH"
timeout 20 fluvio topic list >/dev/null 2>&1 || skip "the fluvio on PATH reaches no cluster (\`fluvio topic list\` failed)"

prefix=${E2E_PREFIX:-af-e2e}
sm=${E2E_SMARTMODULE:-agent-fold-e2e}
records=${E2E_RECORDS:-50000}
seed=${E2E_SEED:-$RANDOM}
real=../shared/data/real
run_id=$(date +%s)-$$
work=$(mktemp -d)
check() { python3 scripts/e2e_check.py "$@"; }
say() { echo "e2e: $*"; }
RANDOM=$seed

cleanup() {
  local code=$?
  jobs -p | xargs -r kill -9 2>/dev/null || true
  if [[ ${E2E_KEEP:-0} != 1 ]]; then
    for t in $(topics); do fluvio topic delete "$t" >/dev/null 2>&1 || true; done
    rm -rf "$work"
  else
    say "kept topics $prefix-* and $work"
  fi
  exit $code
}
topics() { fluvio topic list 2>/dev/null | awk -v p="$prefix-" 'index($1, p) == 1 { print $1 }'; }
trap cleanup EXIT

say "seed $seed (E2E_SEED), work dir $work"
scripts/build-wasm.sh
wasm=target/wasm/wasm32-unknown-unknown/release/agent_fold_smartmodule.wasm
profile=${E2E_PROFILE:-debug}
cargo build --locked --bin agent-fold $([[ $profile == release ]] && echo --release)
af=${CARGO_TARGET_DIR:-target}/$profile/agent-fold

# Topics of an earlier run go first: a topic keeps its records.
for t in $(topics); do fluvio topic delete "$t" >/dev/null; done
# The module under a name of its bytes: a name deleted and created again can stay unknown to
# the SPU (SmartModuleNotFound in its log, an empty stream here), so names are never reused.
sm=$sm-$(sha256sum "$wasm" | cut -c1-10)
for old in $(fluvio smartmodule list 2>/dev/null | awk -v p="${sm%-*}-" 'index($1, p) == 1 { print $1 }'); do
  [[ $old == "$sm" ]] || fluvio smartmodule delete "$old" >/dev/null 2>&1 || true
done
if ! fluvio smartmodule list 2>/dev/null | awk '{ print $1 }' | grep -qx "$sm"; then
  fluvio smartmodule create "$sm" --wasm-file "$wasm" >/dev/null
fi
# A module used right after `create` silently yields nothing: wait until it answers.
fluvio topic create "$prefix-probe" >/dev/null
echo '{"type":"user/message","session_id":"probe","seq":0}' | fluvio produce "$prefix-probe"
for i in $(seq 30); do
  out=$(timeout 5 fluvio consume "$prefix-probe" -B -d \
    --transforms-line "{\"uses\":\"$sm\",\"with\":{\"emit\":\"frames\"}}" 2>/dev/null || true)
  [[ -n $out ]] && break
  ((i < 30)) || { say "FAILED: SmartModule $sm answers nothing (see the SPU's log)"; exit 1; }
  sleep 1
done
say "registered $wasm as SmartModule $sm"

# produce TOPIC FORMAT FILE...: the files' lines, keyed as `agent-fold run` keys them (0x1f),
# in order; the concatenation is left in $work/TOPIC.jsonl for the reference runs. Lines that
# are not UTF-8 are left out of both, and said: `fluvio produce -f` stops at one, silently
# losing the rest of its file (the module's answer to them is tested in tests/suite/hostile.rs, d8_records_that_are_not_utf8_are_malformed).
produce() {
  local topic=$1 fmt=$2; shift 2
  cat "$@" >"$work/$topic.jsonl"
  local odd; odd=$(check utf8 "$work/$topic.jsonl")
  if ((odd > 0)); then say "left out $odd line(s) that are not UTF-8: fluvio produce -f cannot carry them"; fi
  mkdir -p "$work/$topic.parts"
  local n=0
  for part in $(check key "$fmt" "$work/$topic.jsonl" "$work/$topic.parts"); do
    case $part in
      # A request large enough for a whole document (a Gemini CLI chat runs to megabytes).
      *-keyed) fluvio produce "$topic" --key-separator $'\x1f' --linger 500ms --max-request-size 33554432 -f "$part" ;;
      *) fluvio produce "$topic" --linger 500ms --max-request-size 33554432 -f "$part" ;;
    esac
    n=$((n + 1))
  done
  say "produced $(wc -l <"$work/$topic.jsonl") lines to $topic ($fmt, $n produce calls)"
}

# consume_all TOPIC FORMAT ARGS...: every record, however the consumer ends: with a module on
# the SPU, `-d` does not end the stream, so it stops when the output stops growing.
consume_all() {
  local out=$1; shift
  timeout 300 fluvio consume "$@" -B -d --maxbytes 100000000 >"$out" 2>"$out.err" &
  local pid=$! size=-1 still=0
  while kill -0 $pid 2>/dev/null && ((still < 4)); do
    sleep 1
    local now; now=$(stat -c %s "$out")
    if ((now == size && now > 0)); then still=$((still + 1)); else still=0; fi
    size=$now
  done
  kill $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
}

# frames TOPIC INPUT: the frames view through the transforms-line against `agent-fold run`.
frames() {
  local topic=$1 input=$2 with='"emit":"frames"' params=()
  if [[ $input != agent-fold ]]; then with+=",\"input\":\"$input\""; params=(-e "input=$input"); fi
  consume_all "$work/$topic.frames" "$topic" -A -F $'{{key}}\x1f{{value}}' \
    --transforms-line "{\"uses\":\"$sm\",\"with\":{$with}}"
  "$af" run --wasm "$wasm" "${params[@]}" "$work/$topic.jsonl" >"$work/$topic.frames.ref" 2>/dev/null
  check frames "$topic" "$work/$topic.frames.ref" "$work/$topic.frames"
}

# readback TOPIC OUT: every record of every partition with partition, offset and key.
readback() {
  consume_all "$2" "$1" -A -F $'{{partition}}\x1f{{offset}}\x1f{{key}}\x1f{{value}}'
}

# relay_check TOPIC INPUT: the relay once through, then the sibling topic against run.
relay_check() {
  local topic=$1 input=$2 params=()
  if [[ $input != agent-fold ]]; then params=(-e "input=$input"); fi
  "$af" relay --topic "$topic" --consumer "e2e-$run_id" --smartmodule "$sm" "${params[@]}" \
    --idle-exit 3 2>"$work/$topic.relay.log"
  tail -n 1 "$work/$topic.relay.log"
  "$af" run --wasm "$wasm" "${params[@]}" --pressure-out "$work/$topic.pressure.ref" \
    "$work/$topic.jsonl" >/dev/null 2>&1
  readback "$topic-pressure" "$work/$topic.pressure"
  check pressure "$topic" "$work/$topic.pressure.ref" "$work/$topic.pressure"
}

say "--- the bundled example: one stored batch, so the cluster's page is the runner's"
fluvio topic create "$prefix-example" >/dev/null
produce "$prefix-example" agent-fold examples/agent-session.jsonl
frames "$prefix-example" agent-fold
relay_check "$prefix-example" agent-fold
say "--- a sibling topic that exists laid out otherwise is said before relaying"
fluvio topic create "$prefix-example-odd" --partitions 2 >/dev/null
"$af" relay --topic "$prefix-example" --to "$prefix-example-odd" --consumer "e2e-odd-$run_id" \
  --smartmodule "$sm" --idle-exit 2 2>"$work/odd.log"
if grep -q "exists with 2 partition(s), replication 1, not 1 partition(s), replication 1" "$work/odd.log"; then
  say "layout said: $(grep -o 'topic [^ ]* exists with.*' "$work/odd.log" | head -n 1)"
else
  cat "$work/odd.log" >&2
  say "the relay did not say the sibling topic's other layout: FAILED"
  exit 1
fi

if [[ -d $real ]]; then
  say "--- real logs, raw, keyed by the session each line names, consumed with -e input=…"
  fluvio topic create "$prefix-claude-code" >/dev/null
  produce "$prefix-claude-code" claude-code "$real"/claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl \
    "$real"/claude-code/short.jsonl "$real"/claude-code/subagent.jsonl
  fluvio topic create "$prefix-codex" >/dev/null
  produce "$prefix-codex" codex "$real"/codex/*.jsonl
  fluvio topic create "$prefix-claude-stream" >/dev/null
  produce "$prefix-claude-stream" claude-stream "$real"/claude-stream-json/task_tool_output.jsonl
  # Documents an agent writes again as a session grows: each a record, produced twice.
  check minified "$work/gemini-docs.jsonl" "$real"/gemini-cli/session-*.json
  fluvio topic create "$prefix-gemini-cli" >/dev/null
  produce "$prefix-gemini-cli" gemini-cli "$work/gemini-docs.jsonl"
  check minified "$work/opencode-docs.jsonl" "$real"/opencode/*/export.json
  fluvio topic create "$prefix-opencode" >/dev/null
  produce "$prefix-opencode" opencode "$work/opencode-docs.jsonl"
  for f in claude-code codex claude-stream gemini-cli opencode; do
    frames "$prefix-$f" "$f"
    relay_check "$prefix-$f" "$f"
  done
else
  say "--- real logs: skipped ($real is absent)"
fi

corpus=$prefix-corpus
# Replicated as far as the cluster allows: one replica on each SPU.
spus=$(fluvio cluster spu list -O json | python3 -c 'import json, sys; print(max(1, len(json.load(sys.stdin))))')
say "--- a generated corpus of $records records (seed $seed), two partitions, replication $spus"
"$af" corpus --records "$records" --seed "$seed" >"$work/corpus.jsonl" 2>/dev/null
fluvio topic create "$corpus" --partitions 2 --replication "$spus" >/dev/null
produce "$corpus" agent-fold "$work/corpus.jsonl"
records=$(wc -l <"$work/$corpus.jsonl") # what the topic holds
frames "$corpus" agent-fold

say "--- throughput: bare consumes beside relays, three pairs (fresh consumers, sibling topics of their own)"
# The bare consume's own start (the CLI, its connection) is timed on the one-record probe
# topic and taken off, as the relay's rate leaves out its connect and module compile. The bare
# read and the relay alternate, three of each: the figure is the ratio of their medians (one
# bare read of the same topic has ranged over a factor of three on this project's machine).
median() { python3 -c "import statistics, sys; print(statistics.median(map(float, sys.argv[1:])))" "$@"; }
t0=$(date +%s.%N)
fluvio consume "$prefix-probe" -A -B -d --maxbytes 100000000 >/dev/null
t1=$(date +%s.%N)
start=$(python3 -c "print($t1 - $t0)")
bare_times=() relay_times=()
for i in 1 2 3; do
  t0=$(date +%s.%N)
  fluvio consume "$corpus" -A -B -d --maxbytes 100000000 >"$work/bare.out"
  t1=$(date +%s.%N)
  bare_n=$(wc -l <"$work/bare.out")
  bare_s=$(python3 -c "print(max(0.001, $t1 - $t0 - $start))")
  bare_times+=("$bare_s")
  say "bare fluvio consume $i: $bare_n records in $(python3 -c "print(round($t1 - $t0, 2))") s, \
$(python3 -c "print(round($start, 2))") s of it its start = $(python3 -c "print(round($bare_n / $bare_s))") records/s"
  t0=$(date +%s.%N)
  "$af" relay --topic "$corpus" --to "$corpus-measure-$i" --consumer "e2e-measure-$i-$run_id" \
    --smartmodule "$sm" --idle-exit 2 2>"$work/measure.log"
  t1=$(date +%s.%N)
  summary=$(tail -n 1 "$work/measure.log")
  busy=$(sed -E 's/.*; ([0-9.]+) s relaying.*/\1/' <<<"$summary")
  relay_times+=("$busy")
  wall=$(python3 -c "print(round($t1 - $t0 - 2, 2))")
  say "$summary"
  say "relay $i ($profile build): $records records in $wall s wall (connect, module compile, relaying; idle wait excluded) = $(python3 -c "print(round($records / $wall))") records/s; relaying alone (first poll to last commit) $(python3 -c "print(round($records / $busy))") records/s"
done
fluvio topic describe -O json "$corpus" >"$work/corpus.describe"
fluvio topic describe -O json "$corpus-measure-1" >"$work/sibling.describe"
check layout "$corpus-measure-1 (made by the relay)" "$work/corpus.describe" "$work/sibling.describe"
bare_med=$(median "${bare_times[@]}") relay_med=$(median "${relay_times[@]}")
say "medians: bare consume $(python3 -c "print(round($records / $bare_med))") records/s, relay $(python3 -c "print(round($records / $relay_med))") records/s"
say "relay / bare consume: $(python3 -c "print(round($bare_med / $relay_med, 2))") at the medians"

say "--- two relays sharing the corpus's partitions (--partition), the local build (--wasm)"
for p in 0 1; do
  "$af" relay --topic "$corpus" --partition "$p" --to "$corpus-shared" --wasm "$wasm" \
    --consumer "e2e-shared-$run_id" --lookback 100000 --idle-exit 3 2>"$work/shared-$p.log" &
done
wait
for p in 0 1; do say "partition $p: $(tail -n 1 "$work/shared-$p.log")"; done
"$af" run --wasm "$wasm" --pressure-out "$work/corpus.pressure.ref" "$work/$corpus.jsonl" \
  >/dev/null 2>&1
readback "$corpus-shared" "$work/corpus.shared"
check pressure "$corpus by two relays" "$work/corpus.pressure.ref" "$work/corpus.shared"

say "--- the relay killed (SIGKILL) three times while records are being produced, then run to the end"
# A topic of its own, filled while the relay works: a kill lands while a produce is under way,
# so the relay is always mid-stream (records it has not seen are still arriving), whatever
# the machine's speed.
kt=$prefix-kills
fluvio topic create "$kt" --partitions 2 >/dev/null
head -n 20000 "$work/$corpus.jsonl" >"$work/kill-first.jsonl"
tail -n +20001 "$work/$corpus.jsonl" | split -l 3000 -d -a 3 - "$work/kill-piece."
pieces=("$work"/kill-piece.*)
committed() { # the relay consumer's committed offsets, summed over partitions (+1 each: next)
  fluvio consumer list 2>/dev/null | awk -v c="e2e-kill-$run_id" -v t="$kt" \
    '$1 == c && $2 == t { n += $4 + 1 } END { print n + 0 }'
}
produce "$kt" agent-fold "$work/kill-first.jsonl" >/dev/null
kills=0 attempts=0 next=0
while ((kills < 3 && attempts < 8 && next < ${#pieces[@]})); do
  attempts=$((attempts + 1))
  before=$(committed)
  # Settling every 0.1 s (not 1 s): the kills land between commits, and restarts rebuild.
  "$af" relay --topic "$kt" --consumer "e2e-kill-$run_id" --smartmodule "$sm" \
    --commit-every 0.1 2>>"$work/kill.log" &
  pid=$!
  # It relays: its commits move (there is always new work: the last kill cut a produce short).
  for _ in $(seq 600); do
    (($(committed) > before)) && break
    kill -0 $pid 2>/dev/null || { say "FAILED: the relay ended before it relayed"; exit 1; }
    sleep 0.2
  done
  (($(committed) > before)) || { say "FAILED: the relay committed nothing in 120 s"; exit 1; }
  produce "$kt" agent-fold "${pieces[next]}" >/dev/null &
  producer=$!
  next=$((next + 1))
  sleep "$(python3 -c "import random; random.seed($seed * 10 + $attempts); print(round(random.uniform(0.05, 0.3), 2))")"
  mid=0
  kill -0 $producer 2>/dev/null && mid=1
  kill -9 $pid
  wait $pid 2>/dev/null || true
  wait $producer
  after=$(committed)
  if ((mid == 0)); then
    say "the produce of piece $next ended before the kill; not counted"
    continue
  fi
  kills=$((kills + 1))
  say "kill $kills: SIGKILL while piece $next of ${#pieces[@]} was being produced; committed $before -> $after"
done
while ((next < ${#pieces[@]})); do
  produce "$kt" agent-fold "${pieces[next]}" >/dev/null
  next=$((next + 1))
done
"$af" relay --topic "$kt" --consumer "e2e-kill-$run_id" --smartmodule "$sm" --idle-exit 3 \
  2>>"$work/kill.log"
grep -E "rebuilt|re-fetching|retrying" "$work/kill.log" | sed 's/^/e2e:   /' || true
say "final run: $(tail -n 1 "$work/kill.log")"
readback "$kt-pressure" "$work/kills.pressure"
check pressure "$corpus after $kills kills" "$work/corpus.pressure.ref" "$work/kills.pressure"
((kills == 3)) || { say "FAILED: $kills kills landed mid-stream, 3 wanted"; exit 1; }
say "all checks passed"
