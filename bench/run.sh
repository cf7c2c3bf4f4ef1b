#!/usr/bin/env bash
# `make bench`: installs the benchmark's pinned dependencies when needed, makes sure the package is built,
# then runs every figure and prints the markdown table (also written to bench/results.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

NODE=/usr/bin/node # the target figures were measured on Node 20; don't pick up another node from PATH

if [[ ! -f ../pkg/package.json ]]; then
  make -C .. pkg
fi

if [[ ! -d node_modules || package.json -nt node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm install --no-audit --no-fund
fi

exec "$NODE" --expose-gc run.mjs "$@"
