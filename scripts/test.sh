#!/usr/bin/env bash
# Every test: the .wasm build, formatting, clippy, the whole workspace's tests (unit, insta
# snapshots, the .wasm in fluvio-smartengine, properties, the server and the browser), and a
# bounded fuzz smoke.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-wasm.sh
# The build for engines without SIMD, which tests/wasm_engine.rs runs too.
scripts/build-wasm.sh --portable
cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -- -D warnings
# The browser tests (tests/browser.rs) drive a headless Chromium; CJK fonts draw the zh-CN
# meters. Installed when missing and apt-get is there; if that fails, those tests print
# "skipped: <reason>" and the run goes on.
if [[ -z ${AGENT_FOLD_CHROMIUM:-} ]] && ! command -v chromium >/dev/null; then
  if command -v apt-get >/dev/null; then
    sudo=()
    if [[ $(id -u) != 0 ]] && command -v sudo >/dev/null; then sudo=(sudo -n); fi
    echo "test.sh: no chromium: installing Debian's chromium and fonts-noto-cjk (apt-get) for the browser tests" >&2
    if ! { "${sudo[@]}" apt-get update -q && "${sudo[@]}" apt-get install -y -q chromium fonts-noto-cjk; } >&2; then
      echo "test.sh: installing chromium failed: the browser tests will print skipped" >&2
    fi
  else
    echo "test.sh: no chromium and no apt-get: the browser tests will print skipped" >&2
  fi
fi
# What this machine lacks, said once here: cargo shows a passing test's "skipped:" line only
# with --nocapture.
if [[ -z ${AGENT_FOLD_CHROMIUM:-} ]] && ! command -v chromium >/dev/null; then
  echo "test.sh: skipped: the browser tests (tests/browser.rs): no chromium on PATH" >&2
fi
if ! command -v fluvio >/dev/null || ! timeout 20 fluvio topic list >/dev/null 2>&1; then
  echo "test.sh: skipped: the live-cluster tests (tests/serve/fluvio.rs; scripts/e2e-fluvio.sh is not run here): no fluvio on PATH that reaches a cluster" >&2
fi
if [[ ! -d ../shared/data/real ]]; then
  echo "test.sh: skipped: the real logs and reproducers in tests/adapt.rs and tests/hostile.rs: no ../shared beside the repository" >&2
fi
log=$(mktemp)
cargo test --locked --workspace 2>&1 | tee "$log"
if [[ -x scripts/fuzz.sh && ${AGENT_FOLD_SKIP_FUZZ:-0} != 1 ]]; then
  scripts/fuzz.sh smoke
fi
# One closing line for the whole run: cargo's last line is a crate's doc-tests, often "0 passed".
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
rm -f "$log"
