#!/usr/bin/env bash
# Builds the Rust example Worker (examples/worker/build/) with worker-build, unless it is up to date.
# wrangler.toml runs this as its build command, so `wrangler dev` restarts stay fast.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
export PATH="$ROOT/node_modules/.bin:$CARGO_BIN:$PATH"
# worker-build would otherwise download wasm-bindgen and wasm-opt from GitHub.
export WASM_BINDGEN_BIN="$CARGO_BIN/wasm-bindgen" WASM_OPT_BIN="$ROOT/node_modules/binaryen/bin/wasm-opt"

cd "$ROOT/examples/worker"
out=build/index.js
if [ -f "$out" ] && [ -z "$(find src Cargo.toml "$ROOT/src" "$ROOT/Cargo.toml" "$ROOT/Cargo.lock" -newer "$out" -print -quit)" ]; then
  exit 0
fi
worker-build --release >&2
# worker-build's own wasm-opt pass keeps the name section (181 KB of the 1.4 MB): -Oz as for the npm package.
"$WASM_OPT_BIN" -Oz build/index_bg.wasm -o build/index_bg.wasm
