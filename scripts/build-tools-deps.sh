#!/usr/bin/env bash
# What the build-tools suite (tests/build-tools) runs: its pinned build tools and runtimes from npm (esbuild, Rollup,
# Vite, webpack, Next.js, Deno, Bun) and Node 18 and 20 from npm; each installed only when missing or changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=tests/build-tools
if [ ! -x "$dir/node_modules/.bin/next" ] || [ "$dir/package.json" -nt "$dir/node_modules/.package-lock.json" ] \
   || { [ -f "$dir/package-lock.json" ] && [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; }; then
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error)
fi
scripts/node-version.sh 18.20.8 >/dev/null
scripts/node-version.sh 20.20.2 >/dev/null
