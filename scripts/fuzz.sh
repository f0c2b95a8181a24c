#!/usr/bin/env bash
# Fuzzing agent-fold with cargo-fuzz (libFuzzer). The targets live in fuzz/fuzz_targets; each is
# a wrapper around a property in agent-fold-testkit's `checks` (the board's: in the host crate,
# `agent_fold::serve::fuzz`), which tests/suite/fuzz_regressions.rs also replays on the seed
# corpus and on every crash ever found.
#
#   scripts/fuzz.sh smoke [SECONDS]           build, then run every target for SECONDS (default
#                                             60) from a scratch copy of its seed corpus
#   scripts/fuzz.sh campaign TARGET SECONDS   a long local run: corpus fuzz/corpus/TARGET (kept;
#                                             only seed-* files are committed), crashes in
#                                             fuzz/artifacts/TARGET
#   scripts/fuzz.sh build                     build the targets only
#   scripts/fuzz.sh list                      the target names
#
# Exit status: non-zero when a target crashes (the crash input's path is printed) or a build
# fails. Environment: FUZZ_SANITIZER (default `address`: the readers' vector scans are
# `unsafe`; `none` runs about twice as many inputs per second), FUZZ_ARGS (extra libFuzzer
# flags), FUZZ_RSS_MB (libFuzzer's memory limit, default 4096: ASan's allocator keeps a
# long run's freed memory around), FUZZ_TOOLCHAIN=stable (skip nightly even when installed),
# FUZZ_TARGET_DIR (default fuzz/target, cargo-fuzz's own, apart from the main target dir).
# Run it under `nice -n 19` on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(fold_bytes fold_invariants surface_ranges checkpoint_restore hostile wire adapters board)
SANITIZER=${FUZZ_SANITIZER:-address}
TARGET_DIR=${FUZZ_TARGET_DIR:-fuzz/target}
say() { echo "fuzz.sh: $*" >&2; }

usage() {
  sed -n '5,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# cargo-fuzz needs unstable flags (-Z, sanitizer coverage): a nightly toolchain when one is
# installed, else the stable one with RUSTC_BOOTSTRAP=1.
toolchain() {
  if [[ ${FUZZ_TOOLCHAIN:-} != stable ]] && command -v rustup >/dev/null 2>&1 &&
    rustup run nightly rustc --version >/dev/null 2>&1; then
    CARGO=(cargo +nightly)
    ROUTE="nightly: $(rustup run nightly rustc --version)"
  else
    CARGO=(cargo)
    export RUSTC_BOOTSTRAP=1
    ROUTE="stable with RUSTC_BOOTSTRAP=1: $(rustc --version)"
  fi
  if ! cargo fuzz --version >/dev/null 2>&1; then
    say "cargo-fuzz is missing: installing it from crates.io (cargo install cargo-fuzz --locked)"
    cargo install cargo-fuzz --locked
  fi
  HOST=$(rustc -vV | sed -n 's/^host: //p')
  BIN_DIR=$TARGET_DIR/$HOST/release
  say "toolchain: $ROUTE; $(cargo fuzz --version); sanitizer: $SANITIZER"
}

build() {
  local t0=$SECONDS
  # --fuzz-dir: the crate in fuzz/ (its own workspace; the root one excludes it).
  "${CARGO[@]}" fuzz build --fuzz-dir fuzz -O -s "$SANITIZER" --target "$HOST" \
    --target-dir "$TARGET_DIR" "$@"
  say "built in $((SECONDS - t0)) s"
}

is_target() {
  local t
  for t in "${TARGETS[@]}"; do [[ $t == "$1" ]] && return 0; done
  return 1
}

# run TARGET SECONDS CORPUS_DIR ARTIFACT_DIR [stream]: one libFuzzer run; prints a summary
# line; returns non-zero on a crash, printing the crash input's path. With `stream`,
# libFuzzer's own output also goes to stderr as it runs.
run() {
  local t=$1 secs=$2 corpus=$3 artifacts=$4 stream=${5:-} log rc=0 t0=$SECONDS
  mkdir -p "$corpus" "$artifacts"
  log=$(mktemp "${TMPDIR:-/tmp}/fuzz-$t.XXXXXX.log")
  local cmd=("$BIN_DIR/$t" "$corpus" -max_total_time="$secs" -print_final_stats=1 -timeout=30
    -rss_limit_mb="${FUZZ_RSS_MB:-4096}" -artifact_prefix="$artifacts/")
  # shellcheck disable=SC2206 # FUZZ_ARGS is a list of flags
  cmd+=(${FUZZ_ARGS:-})
  if [[ -n $stream ]]; then
    "${cmd[@]}" 2>&1 | tee "$log" >&2 || rc=$?
  else
    "${cmd[@]}" >"$log" 2>&1 || rc=$?
  fi
  local execs size
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  size=$(find "$corpus" -type f | wc -l)
  printf '%-20s %10s execs in %4d s, corpus %d inputs%s\n' "$t:" "${execs:-?}" \
    $((SECONDS - t0)) "$size" "$([[ $rc == 0 ]] || echo ", CRASHED (exit $rc)")"
  if [[ $rc != 0 ]]; then
    grep -E 'panicked|Test unit written|ERROR|SUMMARY' "$log" >&2 || true
    local crash
    crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    say "$t crashed; log: $log"
    if [[ -n $crash ]]; then
      say "crash input: $crash"
      say "reproduce: $BIN_DIR/$t $crash"
      say "minimise:  $BIN_DIR/$t -minimize_crash=1 -runs=10000 $crash"
    fi
    return 1
  fi
  rm -f "$log"
}

cmd=${1:-}
case $cmd in
  list)
    printf '%s\n' "${TARGETS[@]}"
    ;;
  build)
    toolchain
    build
    ;;
  smoke)
    secs=${2:-60}
    [[ $secs =~ ^[0-9]+$ ]] || usage
    start=$SECONDS
    toolchain
    build
    scratch=$TARGET_DIR/smoke
    failed=()
    for t in "${TARGETS[@]}"; do
      rm -rf "${scratch:?}/$t"
      mkdir -p "$scratch/$t/corpus"
      cp fuzz/corpus/"$t"/seed-* "$scratch/$t/corpus/"
      run "$t" "$secs" "$scratch/$t/corpus" "$scratch/$t/artifacts" || failed+=("$t")
    done
    say "smoke: $((SECONDS - start)) s in all"
    if ((${#failed[@]})); then
      say "crashed: ${failed[*]}; crash inputs under $scratch/<target>/artifacts"
      exit 1
    fi
    ;;
  campaign)
    [[ $# == 3 && $3 =~ ^[0-9]+$ ]] || usage
    is_target "$2" || { say "unknown target $2 (known: ${TARGETS[*]})"; exit 2; }
    toolchain
    build "$2"
    run "$2" "$3" "fuzz/corpus/$2" "fuzz/artifacts/$2" stream
    ;;
  *)
    usage
    ;;
esac
