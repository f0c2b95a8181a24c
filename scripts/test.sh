#!/usr/bin/env bash
# Every test: the .wasm builds the tests run, formatting, clippy, the workspace's tests (unit,
# insta snapshots, the .wasm in fluvio-smartengine, properties, the real logs, the services,
# the status line, the meter in a browser, the agents' pinned releases in the lab) and a short
# fuzz smoke per target; then each phase's time.
#
# What the tests need and a new machine may lack is installed here, and said: Debian's Chromium
# and CJK fonts for the browser tests, the meter package's dev dependencies (TypeScript) for its
# type check. Under CI=true (.ci/run sets it) a browser, package or real-log test that cannot run
# fails instead of printing "skipped:"; only the tests that need a live Fluvio cluster may skip.
#
# Environment: AGENT_FOLD_SKIP_FUZZ=1 leaves the fuzz smoke out; AGENT_FOLD_FUZZ_SECONDS (8)
# is its length per target (scripts/fuzz.sh campaign runs the long ones).
set -euo pipefail
cd "$(dirname "$0")/.."
ci=${CI:-false}

phases=()
phase() {
  local name=$1 t0=$SECONDS
  shift
  "$@"
  phases+=("$(printf '%-34s %5d s' "$name" $((SECONDS - t0)))")
}
report() {
  echo "test.sh: time by phase" >&2
  printf '  %s\n' "${phases[@]}" >&2
}
trap report EXIT

apt_install() {
  local sudo=()
  if [[ $(id -u) != 0 ]] && command -v sudo >/dev/null; then sudo=(sudo -n); fi
  "${sudo[@]}" apt-get update -q && "${sudo[@]}" apt-get install -y -q "$@"
}

prerequisites() {
  if [[ -z ${AGENT_FOLD_CHROMIUM:-} ]] && ! command -v chromium >/dev/null; then
    if command -v apt-get >/dev/null; then
      echo "test.sh: no chromium: installing Debian's chromium and fonts-noto-cjk (apt-get) for the browser tests" >&2
      apt_install chromium fonts-noto-cjk >&2 || echo "test.sh: installing chromium failed" >&2
    fi
    if ! command -v chromium >/dev/null; then
      echo "test.sh: skipped: the browser tests (tests/suite/browser): no chromium on PATH" >&2
    fi
  fi
  if command -v npm >/dev/null; then
    # npm ci only when the lockfile changed since the last install (its hash is kept beside
    # the installed modules).
    local stamp=ui/node_modules/.agent-fold-lock
    local want
    want=$(sha256sum ui/package-lock.json | cut -d' ' -f1)
    if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
      echo "test.sh: installing the meter package's dev dependencies (npm ci in ui/)" >&2
      (cd ui && npm ci --no-audit --no-fund --loglevel=error >&2)
      echo "$want" >"$stamp"
    fi
    echo "test.sh: the lab (tests/suite/lab.rs) installs the agents' pinned releases (lab/package.json) into target/lab/ from the npm registry where missing" >&2
  else
    echo "test.sh: skipped: the meter package's tests (tests/suite/browser/package.rs) and the lab (tests/suite/lab.rs): no npm on PATH" >&2
  fi
  if ! command -v fluvio >/dev/null || ! timeout 20 fluvio topic list >/dev/null 2>&1; then
    echo "test.sh: skipped: the live-cluster tests (tests/suite/serve/fluvio.rs; scripts/e2e-fluvio.sh is not run here): no fluvio on PATH that reaches a cluster" >&2
  fi
  if [[ ! -d ../shared/data/real ]]; then
    echo "test.sh: skipped: the real logs and reproducers (tests/suite/adapt.rs, hostile.rs, statusline.rs): no ../shared beside the repository" >&2
  fi
}

# The counted total of the test run: cargo's last line is a crate's doc-tests, often "0 passed".
log=$(mktemp)
# Clippy's lints run inside the test build: `cargo clippy` is `cargo check` with clippy-driver
# as the workspace's compiler (RUSTC_WORKSPACE_WRAPPER, CLIPPY_ARGS); here it compiles the
# workspace for the tests as well, so every dependency is compiled once, not also checked. The
# targets are the ones `cargo clippy --workspace --all-targets -- -D warnings` lints (the
# library, binaries, tests and examples; there are no benches), and a warning fails the build.
clippy_driver() {
  rustup which clippy-driver 2>/dev/null || command -v clippy-driver ||
    { echo "test.sh: no clippy-driver (rustup component add clippy)" >&2; return 1; }
}
tests() {
  local driver
  driver=$(clippy_driver)
  CI=$ci RUSTC_WORKSPACE_WRAPPER=$driver CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__ \
    cargo test --locked --workspace 2>&1 | tee "$log"
}

phase "wasm (SIMD)" scripts/build-wasm.sh
phase "wasm (portable)" scripts/build-wasm.sh --portable
phase "cargo fmt --check" cargo fmt --all -- --check
phase "prerequisites" prerequisites
phase "cargo test, clippy -D warnings" tests
if [[ ${AGENT_FOLD_SKIP_FUZZ:-0} != 1 ]]; then
  phase "fuzz smoke" scripts/fuzz.sh smoke "${AGENT_FOLD_FUZZ_SECONDS:-8}"
fi
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
rm -f "$log"
