// Browsers through a build tool that ships `new URL('./file', import.meta.url)` assets (Vite, webpack, Next.js,
// Turbopack, Parcel): the .wasm is fetched and compiled (streaming) by the first call that needs it — nothing at
// import, so a failure reaches that call as a WasmLoadError and never the page's own code. If the tool did not
// ship the file (a dev server's dependency cache, a missing copy step), the inlined copy is used instead, with a
// warning that says how to ship the file.
import { setSource, WasmLoadError } from './load.js';

const wasmUrl = () => new URL('./resumable_agent_bg.wasm', import.meta.url);
let warned = false;
const SHIP = "serve node_modules/resumable-agent/resumable_agent_bg.wasm where the URL points (Vite dev server: optimizeDeps.exclude: ['resumable-agent']), or call loadWasm(url) with where it is";

/** True when `got` is a WebAssembly response (not a 404, not an index.html served in its place). */
async function isWasm(got) {
  if (!got.ok) return false;
  const bytes = new Uint8Array(await got.clone().arrayBuffer(), 0, 4);
  return bytes[0] === 0 && bytes[1] === 0x61 && bytes[2] === 0x73 && bytes[3] === 0x6d;
}

setSource({
  async async() {
    const url = wasmUrl();
    let problem;
    let status;
    try {
      const got = await fetch(url);
      if (await isWasm(got)) return got;
      status = got.status;
      problem = got.ok ? `is served as ${got.headers.get('content-type') ?? 'something'} that is not WebAssembly` : `answered HTTP ${got.status}`;
    } catch (e) {
      problem = `could not be fetched (${e?.message ?? e})`;
    }
    let inlined;
    try {
      inlined = (await import('./wasm-inline.js')).wasmBytes();
    } catch (e) {
      throw new WasmLoadError(`resumable-agent: could not load its WebAssembly: ${url} ${problem}, and the inlined copy could not be loaded either (${e?.message ?? e})`, {
        url: String(url), status, cause: e, fix: SHIP,
      });
    }
    if (!warned) {
      warned = true;
      console.warn(`resumable-agent: ${url} ${problem}, so the inlined copy of the .wasm is loaded instead (about a third larger). To ship the file: ${SHIP}.`);
    }
    return inlined;
  },
  where: () => String(wasmUrl()),
  fix: (kind) => (kind === 'compile'
    ? "allow WebAssembly in the page's Content-Security-Policy: script-src 'wasm-unsafe-eval'"
    : SHIP),
});

export * from './api.js';
