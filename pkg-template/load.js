// How the package starts its WebAssembly: lazily, on the first call that needs it, never at import. Each entry
// (node.js, workerd.js, edge.js, browser.js, inline.js) says where the .wasm is (`setSource`); `loadWasm()`
// overrides it (a URL of your own, bytes, a compiled module). A failure is a WasmLoadError from the call that
// needed the wasm — it names the package, what was tried, the HTTP status and the fix — and the app that
// imported the package keeps running: nothing is awaited at the top level.
import init, { initSync } from './resumable_agent.js';

const PACKAGE = 'resumable-agent';

/** The WebAssembly of resumable-agent could not be loaded: `.url` (what was tried), `.status` (HTTP), `.fix`. */
export class WasmLoadError extends Error {
  constructor(message, { url, status, fix, cause } = {}) {
    super(fix ? `${message}. Fix: ${fix}` : message, cause === undefined ? undefined : { cause });
    this.name = 'WasmLoadError';
    this.url = url;
    this.status = status;
    this.fix = fix;
  }
}

/** Where the wasm comes from: `{ sync?: () => bytes | Module, async?: () => Promise<Response | bytes | Module>, url?: () => URL, fix: (problem) => string }`. */
let source;
let ready = false;
/** A synchronous load failed once: later ones go the asynchronous way (which reports why). */
let syncFailed = false;
/** The load in flight (async sources), or undefined. */
let loading;

/** Sets where the wasm comes from (each entry, once, at import). */
export function setSource(s) {
  source = s;
  syncFailed = false;
}

/** True once the wasm is instantiated. */
export const isLoaded = () => ready;

function finish() {
  ready = true;
  loading = undefined;
}

/** What `fix` says for a problem `kind` (`status`, `not-wasm`, `compile`, `fetch`, `missing`). */
const fixFor = (kind, detail) => source?.fix?.(kind, detail);

/** The error for a failure of `what` (a URL, or a description of the source). */
function failure(problem, { url, status, kind, cause } = {}) {
  const where = url === undefined ? '' : ` from ${url}`;
  return new WasmLoadError(`${PACKAGE}: could not load its WebAssembly${where}: ${problem}`, { url, status, fix: fixFor(kind, { url, status }), cause });
}

/** Reads an error thrown while compiling or instantiating into a WasmLoadError. */
function compileFailure(e, url) {
  const text = String(e?.message ?? e);
  // A page served instead of the .wasm (an SPA fallback, a dev server's index.html) fails on its first bytes.
  const notWasm = /magic/i.test(text);
  return failure(notWasm ? `what it got is not WebAssembly (${text})` : `the host refused to compile it (${text})`, { url, kind: notWasm ? 'not-wasm' : 'compile', cause: e });
}

/** Loads the wasm synchronously when the source can (Node, Workers, an inlined copy); true once loaded. */
export function loadSync() {
  if (ready) return true;
  if (source?.sync === undefined || syncFailed) return false;
  let module;
  try {
    module = source.sync();
  } catch (e) {
    syncFailed = true;
    if (e instanceof WasmLoadError) throw e;
    throw failure(String(e?.message ?? e), { url: source.where?.(), kind: 'missing', cause: e });
  }
  try {
    initSync({ module });
  } catch (e) {
    // A host may refuse to compile a large module synchronously (a browser's main thread): the asynchronous
    // way is tried next, and says why if it fails too.
    syncFailed = true;
    throw compileFailure(e, source.where?.());
  }
  finish();
  return true;
}

/** Loads the wasm (once; a failed load is tried again by the next call). */
export function load() {
  if (ready) return Promise.resolve();
  if (loading) return loading;
  if (source === undefined) return Promise.reject(failure('no entry of the package set where it is (import the package by its name)', { kind: 'missing' }));
  if (source.async === undefined) {
    syncFailed = false; // nothing else to try: this call tries again, and says why
    try {
      loadSync();
      return Promise.resolve();
    } catch (e) {
      return Promise.reject(e);
    }
  }
  loading = (async () => {
    const url = source.where?.();
    let got;
    try {
      got = await source.async();
    } catch (e) {
      if (e instanceof WasmLoadError) throw e;
      throw failure(`the request failed (${e?.message ?? e})`, { url, kind: 'fetch', cause: e });
    }
    if (typeof Response === 'function' && got instanceof Response && !got.ok) {
      throw failure(`HTTP ${got.status}${got.statusText ? ` ${got.statusText}` : ''}`, { url, status: got.status, kind: 'status' });
    }
    try {
      await init({ module_or_path: got });
    } catch (e) {
      throw compileFailure(e, url);
    }
    finish();
  })();
  // A failed load is not kept: the next call tries again (a network blip, a file copied since).
  loading.catch(() => { loading = undefined; });
  return loading;
}

/** Starts loading in the background when the source is asynchronous (a page): later calls find it done. */
export function prefetch() {
  if (!ready && !loading && source?.async !== undefined) load().catch(() => {});
}

/**
 * Loads the package's WebAssembly now, optionally from `from` — a URL (string or URL), a Response or a promise of
 * one, the bytes (ArrayBuffer, Uint8Array) or a compiled WebAssembly.Module — instead of where the package's entry
 * looks. Not needed (the first call loads it); use it to load early, to see a failure at start-up, or when your
 * build tool puts the .wasm somewhere else. Rejects with WasmLoadError.
 */
export function loadWasm(from) {
  if (from === undefined || ready) return load();
  if (loading) return loading.then(() => {});
  const given = from;
  const fix = source?.fix;
  if (given instanceof WebAssembly.Module || given instanceof ArrayBuffer || ArrayBuffer.isView(given)) {
    setSource({
      sync: () => given,
      where: () => 'the module or bytes given to loadWasm()',
      fix: (kind, detail) => (kind === 'not-wasm' ? `give loadWasm() the bytes of node_modules/${PACKAGE}/resumable_agent_bg.wasm (of this version of the package)` : fix?.(kind, detail)),
    });
  } else {
    const url = typeof given === 'string' || given instanceof URL ? String(given) : undefined;
    setSource({
      async: () => (url === undefined ? given : fetch(url)),
      where: () => url ?? 'the Response given to loadWasm()',
      fix: (kind, detail) => (kind === 'status' || kind === 'fetch' ? `make ${detail.url} serve node_modules/${PACKAGE}/resumable_agent_bg.wasm, or give loadWasm() another URL` : fix?.(kind, detail)),
    });
  }
  return load();
}
