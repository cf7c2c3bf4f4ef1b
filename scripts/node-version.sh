#!/usr/bin/env bash
# Installs Node <version> from npm (the `node` package) into target/node-versions/<major>, when it is not there yet;
# prints the binary's path. Shared by the stress run and the build-tools suite.   node-version.sh 20.20.2
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
version="$1"
major="${version%%.*}"
dir="target/node-versions/$major"
if ! [ -x "$dir/node_modules/.bin/node" ] || ! "$dir/node_modules/.bin/node" --version | grep -qx "v$version"; then
  mkdir -p "$dir"
  printf '{"name":"node-%s","private":true,"allowScripts":{"node":true}}\n' "$major" > "$dir/package.json"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "node@$version" >&2)
fi
echo "$PWD/$dir/node_modules/.bin/node"
