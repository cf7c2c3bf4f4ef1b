// Node (>= 18), Deno and Bun: the .wasm next to this file, read and compiled synchronously by the first call that
// needs it. Bundled for Node (webpack in Next.js, esbuild, Rollup, ncc) the file is seldom where this module ends
// up: the inlined copy is loaded instead, once, asynchronously.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setSource } from './load.js';

const wasmUrl = () => new URL('./resumable_agent_bg.wasm', import.meta.url);

/** The .wasm's path, when this module is a file beside it (not a bundler's rewritten URL). */
function wasmPath() {
  const href = String(wasmUrl().href);
  if (!href.startsWith('file:')) throw new Error(`this module was bundled: ${href} is not a file`);
  return fileURLToPath(href);
}

setSource({
  sync: () => readFileSync(wasmPath()),
  async async() {
    try {
      return readFileSync(wasmPath());
    } catch {
      // bundled: the inlined copy
      return (await import('./wasm-inline.js')).wasmBytes();
    }
  },
  where: () => String(wasmUrl().href),
  fix: (kind) => (kind === 'compile'
    ? 'the host refused to compile WebAssembly; on Node use version 18 or later without --jitless'
    : 'keep node_modules/resumable-agent/resumable_agent_bg.wasm beside node.js (a bundler that moves the package must copy it, or mark resumable-agent external)'),
});

export * from './api.js';
export { fileSaver } from './file-saver.js';
