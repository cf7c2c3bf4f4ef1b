# make test  - every test: lint, native, wasm (Node), the npm package in Node, TypeScript types
# make demo  - the multi-turn example: pause, write the checkpoint to a file, resume in a new process
# make pkg   - build the npm package into pkg/
# Each target installs what a bare machine lacks (scripts/ensure-tools.sh) and is quick when all is there.

SHELL := /bin/bash
export PATH := $(CURDIR)/node_modules/.bin:$(HOME)/.cargo/bin:$(PATH)

.PHONY: tools pkg test test-native test-wasm test-node lint demo clean

tools:
	@scripts/ensure-tools.sh

pkg: tools
	@scripts/build-pkg.sh

lint: tools
	cargo fmt --all -- --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --target wasm32-unknown-unknown --features js,kv --lib -- -D warnings

test-native: tools
	cargo test

test-wasm: tools
	cargo test --target wasm32-unknown-unknown --features js

test-node: pkg
	@ln -sfn ../pkg node_modules/resumable-agent  # the tests import the built package by its name
	node --test tests/node/
	tsc -p examples/typescript --noEmit

test: lint test-native test-wasm test-node

demo: pkg
	cd examples/node && npm install --no-audit --no-fund --loglevel=error && node demo.mjs

clean:
	rm -rf pkg target node_modules examples/node/node_modules
