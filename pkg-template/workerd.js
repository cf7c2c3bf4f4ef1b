// Cloudflare Workers: wrangler/esbuild turn a .wasm import into a compiled WebAssembly.Module.
import { initSync } from './resumable_agent.js';
import wasmModule from './resumable_agent_bg.wasm';

initSync({ module: wasmModule });

export * from './api.js';
