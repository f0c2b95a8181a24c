#!/usr/bin/env bash
# The fleet board's catch-up (docs/serve.md, "Where --topic starts"): how long `agent-fold serve`
# takes to apply N pressure records of 10,000 sessions written at once, and its peak RSS. The
# records go on stdin, the board's path after a topic's consumer.
#
#   scripts/bench-catchup.sh                 # 100,000 then 1,000,000 records
#   scripts/bench-catchup.sh 250000          # one count
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked --release --bin agent-fold >&2
bin=$PWD/target/release/agent-fold
work=$(mktemp -d)
trap 'kill "${pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(100000 1000000)
max=0
for n in "${counts[@]}"; do [ "$n" -gt "$max" ] && max=$n; done
# Stamped over the last hour, 10,000 sessions taking turns, until-compact figures at random.
python3 - "$max" >"$work/fleet.jsonl" <<'PY'
import json, random, sys, time
n = int(sys.argv[1]); random.seed(7); now = time.time()
for k in range(n):
    until = random.randint(0, 60000)
    stamp = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(now - 3600 + k * 3600 / n))
    print(json.dumps({"type": "context/pressure", "session": f"s{k % 10000}", "seq": k // 10000,
        "timestamp": stamp, "pressureTokens": 167000 - until, "projectedTokens": 167000 - until,
        "capacity": 200000, "contextOccupancy": (167000 - until) / 200000,
        "compactAtTokens": 167000, "untilCompactTokens": until, "agent": "claude-code",
        "model": "claude-opus-4-6", "stateVersion": 5}))
PY
read_total() { curl -s "${url}metrics" | awk '/^agent_fold_serve_records_read_total /{print $2}'; }
for n in "${counts[@]}"; do
  mkfifo "$work/in"
  "$bin" serve --alert 'until<20000' - <"$work/in" >"$work/url" 2>/dev/null &
  pid=$!
  exec 3>"$work/in"
  until [ -s "$work/url" ]; do sleep 0.05; done
  url=$(head -1 "$work/url")
  t0=$(date +%s%N)
  head -n "$n" "$work/fleet.jsonl" >&3
  until [ "$(read_total)" = "$n" ]; do sleep 0.02; done
  t1=$(date +%s%N)
  peak=$(awk '/VmHWM/{print $2}' "/proc/$pid/status")
  printf 'records %d: applied in %.2f s, peak RSS %d MB\n' "$n" "$(echo "($t1 - $t0) / 1000000000" | bc -l)" $((peak / 1024))
  exec 3>&-
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -f "$work/in" "$work/url"
done
