#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 600): `make fuzz` runs them long, `make test` briefly.
# Works on a copy of the committed corpus (fuzz/corpus + fuzz/seeds) under target/, so the tree stays clean;
# `FUZZ_KEEP=1` writes what the run found back into fuzz/corpus (minimized), to commit.
# A crash fails the run and names the input to copy into fuzz/regressions/<target>/ (replayed by
# `cargo test --test fuzz_regressions` on stable Rust).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
seconds="${1:-600}"
targets=(checkpoint anthropic_response openai_response responses_response gemini_response decisions sse_stream responses_stream gemini_stream mcp_answer)

# Nightly and cargo-fuzz, installed if missing (crates.io and rustup only).
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install -q --locked cargo-fuzz --version 0.13.2

mkdir -p target
if ! (cd fuzz && cargo +nightly fuzz build -O) >target/fuzz-build.log 2>&1; then
  cat target/fuzz-build.log >&2
  exit 1
fi

summary=()
for t in "${targets[@]}"; do
  work="target/fuzz-corpus/$t"
  rm -rf "$work"
  mkdir -p "$work" "fuzz/corpus/$t" "fuzz/regressions/$t" "fuzz/artifacts/$t"
  cp -r "fuzz/corpus/$t/." "fuzz/seeds/$t/." "$work/" 2>/dev/null || true
  log="target/fuzz-$t.log"
  status=0
  (cd fuzz && cargo +nightly fuzz run -O "$t" "../$work" -- \
      -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=65536 -timeout=10 -print_final_stats=1) >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ "$status" -ne 0 ]; then
    tail -40 "$log" >&2
    echo "fuzz: $t FAILED after ${runs:-?} executions; the input is in fuzz/artifacts/$t/ — copy it into fuzz/regressions/$t/ and fix" >&2
    exit 1
  fi
  if [ "${FUZZ_KEEP:-0}" = 1 ]; then
    (cd fuzz && cargo +nightly fuzz cmin -O "$t" "../$work" >/dev/null 2>&1)
    rm -rf "fuzz/corpus/$t" && mkdir -p "fuzz/corpus/$t" && cp "$work"/* "fuzz/corpus/$t/"
  fi
  summary+=("$t: ${runs:-0} executions in ${seconds} s, 0 crashes")
done
printf 'fuzz: %s\n' "${summary[@]}"
