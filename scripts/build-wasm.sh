#!/usr/bin/env bash
# Builds the SmartModule to target/wasm/wasm32-unknown-unknown/release/agent_fold_smartmodule.wasm.
# rustup's wasm32 target where it is (or installs), else Debian's toolchain that builds std from
# source (see ../shared/TOOLCHAIN.md). Each toolchain keeps its own target dir.
#   scripts/build-wasm.sh               with WebAssembly SIMD (.cargo/config.toml), as engines run
#   scripts/build-wasm.sh --portable    without SIMD, for an engine that has none: the same
#                                       module under target/wasm-portable/…/release/
#   --with-reference (with either)      also the bench's reference modules beside it
#                                       (agent_fold_identity.wasm, agent_fold_floor.wasm)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=target/wasm
crates=(-p agent-fold-smartmodule)
modules=(smartmodule)
for arg in "$@"; do
  case $arg in
    --portable)
      dir=target/wasm-portable
      # Overrides .cargo/config.toml's target rustflags.
      export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-C target-feature=-simd128"
      ;;
    --with-reference)
      crates+=(-p agent-fold-identity -p agent-fold-floor)
      modules+=(identity floor)
      ;;
    *)
      echo "usage: scripts/build-wasm.sh [--portable] [--with-reference]" >&2
      exit 2
      ;;
  esac
done
out=$dir/wasm32-unknown-unknown/release/agent_fold_smartmodule.wasm

if rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  route=rustup
elif command -v rustup >/dev/null && echo "build-wasm: installing rustup's wasm32-unknown-unknown target" >&2 \
     && timeout 300 rustup target add wasm32-unknown-unknown >&2; then
  route=rustup
else
  route=debian
fi

if [[ $route == rustup ]]; then
  cargo build --release --locked --target wasm32-unknown-unknown "${crates[@]}" --target-dir "$dir"
else
  if ! [[ -x /usr/bin/cargo && -d /usr/lib/rustlib/src/rust/library ]] || ! command -v rust-lld >/dev/null; then
    echo "build-wasm: installing Debian's rustc-web cargo-web rust-web-src lld-22" >&2
    apt-get update -q >&2
    apt-get install -y -q rustc-web cargo-web rust-web-src lld-22 >&2
  fi
  RUSTC_BOOTSTRAP=1 PATH=/usr/bin:$PATH /usr/bin/cargo build --release \
    --target wasm32-unknown-unknown -Zbuild-std=std,panic_abort "${crates[@]}" \
    --target-dir "$dir-debian"
  mkdir -p "$(dirname "$out")"
  for m in "${modules[@]}"; do
    cp "$dir-debian/wasm32-unknown-unknown/release/agent_fold_$m.wasm" "$(dirname "$out")/"
  done
fi
echo "build-wasm: $out ($(wc -c <"$out") bytes, via $route)" >&2
