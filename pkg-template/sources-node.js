// Where a variant's .wasm comes from in Node (>= 18), Deno and Bun: the file beside the package's modules, read and
// compiled synchronously by the first call that needs it. Bundled for Node (webpack in Next.js, esbuild, Rollup,
// ncc) the file is seldom where the bundle ends up: an inlined variant is loaded instead, asynchronously.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Missing } from './load.js';

/** `url()`: the variant's `new URL('./<file>', import.meta.url)`. */
export function nodeSource(url) {
  const path = () => {
    const href = String(url().href);
    if (!href.startsWith('file:')) throw new Error(`this module was bundled: ${href} is not a file`);
    return fileURLToPath(href);
  };
  return {
    sync: () => readFileSync(path()),
    async async() {
      try {
        return readFileSync(path());
      } catch (e) {
        return new Missing(`could not be read (${e?.code ?? e?.message ?? e})`);
      }
    },
    where: () => String(url().href),
    fix: (kind, { file }) => (kind === 'compile'
      ? 'the host refused to compile WebAssembly; on Node use version 18 or later without --jitless'
      : `keep node_modules/resumable-agent/${file} beside the package's modules (a bundler that moves the package must copy it, or mark resumable-agent external)`),
  };
}
