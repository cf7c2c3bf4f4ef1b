#!/usr/bin/env bash
# The npm package under Node 20, 22 and 24 (all from npm: `node` packages), RUNS processes each (default 3),
# every process doing 100,000 random resumes (tests/stress/resumes.mjs). Any process that does not exit
# with 0 by itself — a typed-error violation, a hang, or a crash of Node — fails the run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs="${1:-3}"
resumes="${2:-100000}"
# Node 22 is the repository's own (package.json); 20 and 24 are installed next to the build output.
binaries=("$(scripts/node-version.sh 20.20.2)" "node_modules/.bin/node" "$(scripts/node-version.sh 24.21.0)")
for bin in "${binaries[@]}"; do
  for seed in $(seq 1 "$runs"); do
    started=$(date +%s)
    if ! out=$(timeout 600 "$bin" tests/stress/resumes.mjs "$resumes" "$seed" 2>&1); then
      echo "$out" >&2
      echo "stress: $("$bin" --version) run $seed FAILED (exit status above)" >&2
      exit 1
    fi
    echo "stress: $("$bin" --version) run $seed: $(( $(date +%s) - started )) s, $(tail -1 <<<"$out")"
  done
done
