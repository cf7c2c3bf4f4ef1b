#!/usr/bin/env bash
# Installs what a bare machine lacks for building and testing, idempotently and quickly when all is there.
# Only crates.io, npm and Debian are reachable: nothing here downloads a prebuilt binary from elsewhere.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
WASM_PACK_VERSION=0.15.1
WORKER_BUILD_VERSION=0.8.7
# wasm-bindgen-cli must equal the wasm-bindgen crate in Cargo.lock exactly.
WASM_BINDGEN_VERSION=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/^version = "\(.*\)"$/\1/p')
if [ -z "$WASM_BINDGEN_VERSION" ]; then
  echo "ensure-tools: no wasm-bindgen in Cargo.lock" >&2
  exit 1
fi

has() { [ -x "$CARGO_BIN/$1" ] && "$CARGO_BIN/$1" --version 2>/dev/null | grep -qw "$2"; }

# Debian's Chromium and its driver, for the IndexedDB and page tests (as root; see TOOLCHAIN notes), and Debian's
# Postgres server, which the SQL saver tests start in a temporary directory (tests/sql/postgres.mjs).
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
# No --locked: wasm-bindgen-cli's lockfile pins a webpki-roots release this registry lacks.
has wasm-bindgen "$WASM_BINDGEN_VERSION" || cargo install -q --force wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
has wasm-pack "$WASM_PACK_VERSION" || cargo install -q --force --locked wasm-pack --version "$WASM_PACK_VERSION"
has worker-build "$WORKER_BUILD_VERSION" || cargo install -q --force --locked worker-build --version "$WORKER_BUILD_VERSION"

# npm install (not ci: the registry lacks some other-platform builds the lockfile would name).
if [ ! -x node_modules/.bin/wrangler ] || [ package.json -nt node_modules/.package-lock.json ] \
   || { [ -f package-lock.json ] && [ package-lock.json -nt node_modules/.package-lock.json ]; }; then
  npm install --no-audit --no-fund --loglevel=error
fi
