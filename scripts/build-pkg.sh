#!/usr/bin/env bash
# Builds the npm package into pkg/. The .wasm is built in variants, each with only some capabilities on top of the
# core (cargo features js-*): a page loads the smallest variant that has what the program imported, so a program
# that uses no provider, session or MCP ships the core alone. Each variant: wasm-pack (web target) -> wasm-opt (npm
# binaryen). Then pkg-template/ is merged in, and the variants' loaders are written (scripts/variant-loaders.mjs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PWD/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

# name:cargo features. The order is the order in which a page prefers them (smallest first); `full` has everything.
# Telemetry, guardrails and summarizing compaction (config.telemetry, config.guardrails, config.compaction.summarize)
# are in every variant but the core: the minimal agent does not pay for them. MCP and subagents (agentTool()) are in the full variant alone.
VARIANTS=(core:js sessions:js-sessions,js-telemetry,js-guardrails,js-summaries providers:js-providers,js-telemetry,js-guardrails,js-summaries providers_sessions:js-providers,js-sessions,js-telemetry,js-guardrails,js-summaries full:js-all)
stamp=pkg/package.json
if [ -f "$stamp" ] && [ -z "$(find src pkg-template Cargo.toml Cargo.lock scripts/build-pkg.sh scripts/variant-loaders.mjs scripts/pkg-meta.mjs scripts/heap-abi scripts/strip-reference-types.py scripts/guard-glue.py -newer "$stamp" -print -quit)" ]; then
  exit 0
fi

build() {
  local name="${1%%:*}" features="${1#*:}" target="$2"
  local out="target/pkg-out/$name"
  rm -rf "$out"
  # Without reference types: wasm-bindgen then keeps JS values in a JS-side slab, not an externref table (see
  # scripts/heap-abi/wasm-bindgen for why). Its own target dir, so test builds keep their flags and cache.
  PATH="$PWD/scripts/heap-abi:$PATH" RUSTFLAGS="-C target-feature=-reference-types" CARGO_TARGET_DIR="$PWD/$target" \
    wasm-pack --quiet build --target web --release --no-pack --out-dir "$out" --out-name "resumable_agent_$name" \
    -- --no-default-features --features "$features"
}

rm -rf pkg
mkdir -p pkg
# Two at a time in two target directories: a release build's link (LTO, one codegen unit) keeps one core busy.
pids=()
for i in "${!VARIANTS[@]}"; do
  build "${VARIANTS[$i]}" "target/pkg$((i % 2))" &
  pids+=($!)
  if (( ${#pids[@]} == 2 )); then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for pid in "${pids[@]}"; do wait "$pid"; done
for v in "${VARIANTS[@]}"; do
  name="${v%%:*}"
  out="target/pkg-out/$name"
  glue="$out/resumable_agent_$name.js"
  if grep -q externref "$glue"; then
    echo "build-pkg: the $name glue still uses an externref table" >&2
    exit 1
  fi
  python3 scripts/guard-glue.py "$glue"
  # Debian's old binaryen silently breaks the .wasm; npm's is current. Features come from the module itself.
  wasm-opt -Oz "$out/resumable_agent_${name}_bg.wasm" -o "pkg/resumable_agent_${name}_bg.wasm"
  cp "$glue" pkg/
  # Every variant's glue imports the same snippets (the error classes, Web Crypto): one copy, one set of classes.
  cp -r "$out/snippets" pkg/
done
cp pkg-template/* pkg/
node scripts/variant-loaders.mjs pkg "${VARIANTS[@]}"
node scripts/pkg-meta.mjs pkg/package.json
touch "$stamp"
for v in "${VARIANTS[@]}"; do
  wasm="pkg/resumable_agent_${v%%:*}_bg.wasm"
  gz=$(gzip -9 -c "$wasm" | wc -c)
  printf 'pkg/: %-20s %8s bytes, %7s bytes gzip (%.1f KiB)\n' "${v%%:*}" "$(wc -c < "$wasm")" "$gz" "$(echo "$gz/1024" | bc -l)"
done
