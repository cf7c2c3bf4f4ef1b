// Browsers through a build tool that does not ship `new URL(..., import.meta.url)` assets (esbuild, Rollup, a
// plain <script>, an IIFE bundle), and anything else: the .wasm travels inside the JavaScript (base64, about a
// third larger), so the build needs no plugin and no copy step. Compiled by the first call that needs it:
// synchronously where the host allows (so a bad config throws from defineTool() and agent() as elsewhere).
import { setSource } from './load.js';
import { wasmBytes } from './wasm-inline.js';

setSource({
  sync: () => wasmBytes(),
  async: async () => wasmBytes(),
  where: () => 'the inlined copy of resumable_agent_bg.wasm',
  fix: () => "allow WebAssembly in the page's Content-Security-Policy: script-src 'wasm-unsafe-eval'",
});

export * from './api.js';
