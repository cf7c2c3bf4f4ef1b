// Where a variant's .wasm comes from on a page built by a tool that ships `new URL('./file', import.meta.url)` assets
// (Vite, webpack, Next.js, Turbopack): fetched and compiled (streaming) by the first call that needs it. If the tool
// did not ship the file (a dev server's dependency cache, a missing copy step), an inlined variant is used
// instead, with a warning that says how to ship the file.
import { Missing } from './load.js';

const SHIP = (file) => `serve node_modules/resumable-agent/${file} where the URL points (Vite dev server: optimizeDeps.exclude: ['resumable-agent']), or call loadWasm() with where it is`;

/** True when `got` is a WebAssembly response (not a 404, not an index.html served in its place). */
async function isWasm(got) {
  if (!got.ok) return false;
  const bytes = new Uint8Array(await got.clone().arrayBuffer(), 0, 4);
  return bytes[0] === 0 && bytes[1] === 0x61 && bytes[2] === 0x73 && bytes[3] === 0x6d;
}

/** `url()`: the variant's `new URL('./<file>', import.meta.url)`. */
export function browserSource(url, file) {
  return {
    async async() {
      const at = url();
      let problem;
      let status;
      try {
        const got = await fetch(at);
        if (await isWasm(got)) return got;
        status = got.status;
        problem = got.ok ? `is served as ${got.headers.get('content-type') ?? 'something'} that is not WebAssembly` : `answered HTTP ${got.status}`;
      } catch (e) {
        problem = `could not be fetched (${e?.message ?? e})`;
      }
      const warning = `resumable-agent: ${at} ${problem}, so an inlined copy of the .wasm is loaded instead (base64 in the JS: a third larger, and not streamed). To ship the file: ${SHIP(file)}.`;
      return new Missing(problem, { status, warning });
    },
    where: () => String(url()),
    fix: (kind) => (kind === 'compile' ? "allow WebAssembly in the page's Content-Security-Policy: script-src 'wasm-unsafe-eval'" : SHIP(file)),
  };
}
