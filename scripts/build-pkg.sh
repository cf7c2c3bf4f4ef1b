#!/usr/bin/env bash
# Builds the npm package into pkg/: wasm-pack (web target) -> wasm-opt (npm binaryen) -> pkg-template merged in.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PWD/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

stamp=pkg/package.json
if [ -f "$stamp" ] && [ -z "$(find src pkg-template Cargo.toml Cargo.lock scripts/build-pkg.sh scripts/inline-wasm.mjs scripts/pkg-meta.mjs scripts/heap-abi scripts/strip-reference-types.py scripts/guard-glue.py -newer "$stamp" -print -quit)" ]; then
  exit 0
fi

rm -rf pkg
# Without reference types: wasm-bindgen then keeps JS values in a JS-side slab, not an externref table (see
# scripts/heap-abi/wasm-bindgen for why). Its own target dir, so test builds keep their flags and cache.
PATH="$PWD/scripts/heap-abi:$PATH" RUSTFLAGS="-C target-feature=-reference-types" CARGO_TARGET_DIR="$PWD/target/pkg" \
  wasm-pack --quiet build --target web --release --no-pack --out-dir pkg --out-name resumable_agent -- --features js
if grep -q externref pkg/resumable_agent.js; then
  echo "build-pkg: the glue still uses an externref table" >&2
  exit 1
fi
python3 scripts/guard-glue.py pkg/resumable_agent.js
# Debian's old binaryen silently breaks the .wasm; npm's is current. Features come from the module itself.
wasm-opt -Oz pkg/resumable_agent_bg.wasm -o pkg/resumable_agent_bg.wasm
cp pkg-template/* pkg/
# The .wasm inlined, for builds that do not ship it as a file (inline.js; node.js and browser.js fall back to it).
node scripts/inline-wasm.mjs pkg/resumable_agent_bg.wasm pkg/wasm-inline.js
node scripts/pkg-meta.mjs pkg/package.json
touch "$stamp"
# wasm-pack's generated typings describe the raw exports; index.d.ts is the public contract.
rm -f pkg/resumable_agent.d.ts pkg/resumable_agent_bg.wasm.d.ts pkg/.gitignore
raw=$(wc -c < pkg/resumable_agent_bg.wasm)
gz=$(gzip -9 -c pkg/resumable_agent_bg.wasm | wc -c)
printf 'pkg/: resumable_agent_bg.wasm %s bytes, %s bytes gzip (%.1f KiB)\n' "$raw" "$gz" "$(echo "$gz/1024" | bc -l)"
