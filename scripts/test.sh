#!/usr/bin/env bash
# Every test: the .wasm build, formatting, clippy, the whole workspace's tests (unit, insta
# snapshots, the .wasm in fluvio-smartengine, properties, the real logs, the server, the
# status line, the meter in a browser), and a bounded fuzz smoke.
#
# What the tests need and a new machine may lack is installed here, and said: Debian's Chromium
# and CJK fonts for the browser tests, the meter package's dev dependencies (TypeScript) for its
# type check. Under CI=true (.ci/run sets it) a browser, package or real-log test that cannot run
# fails instead of printing "skipped:"; only the tests that need a live Fluvio cluster may skip.
set -euo pipefail
cd "$(dirname "$0")/.."
ci=${CI:-false}
scripts/build-wasm.sh
# The build for engines without SIMD, which tests/wasm_engine.rs runs too.
scripts/build-wasm.sh --portable
cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -- -D warnings

apt_install() {
  local sudo=()
  if [[ $(id -u) != 0 ]] && command -v sudo >/dev/null; then sudo=(sudo -n); fi
  "${sudo[@]}" apt-get update -q && "${sudo[@]}" apt-get install -y -q "$@"
}
if [[ -z ${AGENT_FOLD_CHROMIUM:-} ]] && ! command -v chromium >/dev/null; then
  if command -v apt-get >/dev/null; then
    echo "test.sh: no chromium: installing Debian's chromium and fonts-noto-cjk (apt-get) for the browser tests" >&2
    apt_install chromium fonts-noto-cjk >&2 || echo "test.sh: installing chromium failed" >&2
  fi
  if ! command -v chromium >/dev/null; then
    echo "test.sh: skipped: the browser tests (tests/browser.rs): no chromium on PATH" >&2
  fi
fi
if command -v npm >/dev/null; then
  if [[ ! -d ui/node_modules ]]; then
    echo "test.sh: installing the meter package's dev dependencies (npm ci in ui/)" >&2
  fi
  (cd ui && npm ci --no-audit --no-fund --loglevel=error >&2)
else
  echo "test.sh: skipped: the meter package's tests (tests/browser/package.rs): no npm on PATH" >&2
fi
if ! command -v fluvio >/dev/null || ! timeout 20 fluvio topic list >/dev/null 2>&1; then
  echo "test.sh: skipped: the live-cluster tests (tests/serve/fluvio.rs; scripts/e2e-fluvio.sh is not run here): no fluvio on PATH that reaches a cluster" >&2
fi
if [[ ! -d ../shared/data/real ]]; then
  echo "test.sh: skipped: the real logs and reproducers (tests/adapt.rs, tests/hostile.rs, tests/statusline.rs): no ../shared beside the repository" >&2
fi
log=$(mktemp)
CI=$ci cargo test --locked --workspace 2>&1 | tee "$log"
if [[ -x scripts/fuzz.sh && ${AGENT_FOLD_SKIP_FUZZ:-0} != 1 ]]; then
  scripts/fuzz.sh smoke
fi
# One closing line for the whole run: cargo's last line is a crate's doc-tests, often "0 passed".
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
rm -f "$log"
