// What the package's front modules share (api.js, sessions.js, providers.js, mcp.js): calls into the WebAssembly,
// guarded and loaded on demand; values the core makes for synchronous calls; options as the JSON the core reads; the
// registries by which one module's models, tools and savers are known to another. Not part of the public API.
import { ConfigError, InstanceLostError, describe } from './errors.js';
import { WasmLoadError, isLoaded, load, loadSync, memoryBytes, prefetch, raw, setTrapHandler } from './load.js';

// ---- the instance, replaced if it ever traps ----------------------------------------------------------------
// A trap (in practice: out of memory) poisons a WebAssembly instance. Every call goes through `calls`: calls in
// flight are tracked, and on a trap each is rejected with InstanceLostError and the instance is replaced
// (__wbg_reset_state), so every promise settles and later calls work. Traps inside the futures' microtasks reach
// lose() through the guard scripts/guard-glue.py puts into each variant's glue.

const inFlight = new Set();
let replaced = 0;

/** How often a trapped instance was replaced. */
export const instancesReplaced = () => replaced;

function lose(glue, trap) {
  const pending = [...inFlight];
  inFlight.clear();
  try {
    glue.__wbg_reset_state();
    replaced += 1;
  } catch {
    // Could not even instantiate again: later calls fail with their own errors.
  }
  const error = new InstanceLostError(
    `the WebAssembly instance failed (${trap?.message ?? trap}) and was replaced; the ${pending.length} call(s) in flight were lost: continue them from their last saved checkpoint (a session: session.resume())`,
    { cause: trap },
  );
  for (const reject of pending) reject(error);
  return error;
}
setTrapHandler(lose);

const isTrap = (e) => e instanceof WebAssembly.RuntimeError;

function guardSync(f) {
  try {
    return f();
  } catch (e) {
    throw isTrap(e) ? lose(raw(), e) : e;
  }
}

function guardAsync(f) {
  return new Promise((resolve, reject) => {
    inFlight.add(reject);
    const settle = (how) => (v) => { inFlight.delete(reject); how(v); };
    let p;
    try {
      p = f();
    } catch (e) {
      inFlight.delete(reject);
      reject(isTrap(e) ? lose(raw(), e) : e);
      return;
    }
    p.then(settle(resolve), settle(reject));
  });
}

/** The promise of `f()` once the wasm is loaded: called at once when it is (no extra turn of the microtask queue). */
export function loaded(f) {
  if (!isLoaded()) return load().then(f);
  try {
    return f();
  } catch (e) {
    return Promise.reject(e);
  }
}

/**
 * The wasm's exports as guarded calls: each `async` one loads the wasm first, each `sync` one expects it loaded (see
 * `needNow`).
 */
export function calls({ async = [], sync = [] }) {
  const out = {};
  for (const name of async) out[name] = (...args) => guardAsync(() => loaded(() => guardSync(() => raw()[name](...args))));
  for (const name of sync) out[name] = (...args) => guardSync(() => raw()[name](...args));
  return Object.freeze(out);
}

/** Loads the wasm synchronously for a call that cannot wait; WasmLoadError when it cannot be. */
export function needNow(what) {
  if (isLoaded() || loadSync()) return;
  throw new WasmLoadError(`resumable-agent: ${what} needs the package's WebAssembly, which this page is still loading`, {
    fix: 'await loadWasm() before calling it (or call it after the first agent call)',
  });
}

/** Loads the wasm synchronously if the runtime can (Node, Workers, an inlined build); true when it is there. */
function loadedNow() {
  if (isLoaded()) return true;
  try {
    return loadSync();
  } catch {
    // Not now: the first call that needs it reports why (WasmLoadError).
    return false;
  }
}

/**
 * What the core makes for a synchronous call (a tool's check, an agent's, a provider's, a saver's, a session's): made
 * at once when the wasm is there or can be loaded synchronously (Node, Workers, an inlined build), so a ConfigError is
 * thrown by the call itself; on a page still fetching the .wasm, made by the first call that needs it, which then
 * rejects with that error. `needs`: other Laters this one is made of (made first).
 */
export class Later {
  #make;
  #value;
  #error;
  #done = false;
  constructor(make, needs = []) {
    this.needs = needs;
    this.#make = make;
    if (loadedNow()) this.get();
    else prefetch();
  }

  /** Its value (the wasm must be loaded); throws what making it threw. */
  get() {
    if (!this.#done) {
      this.#done = true;
      try {
        for (const n of this.needs) n.get();
        this.#value = this.#make();
      } catch (e) {
        this.#error = e;
      }
      this.#make = undefined;
    }
    if (this.#error !== undefined) throw this.#error;
    return this.#value;
  }
}

/** The promise of `f(value)` once the wasm is loaded: at once when it is. */
export const withLater = (later, f) => loaded(() => f(later.get()));

/** The size of the WebAssembly memory (0 until loaded). */
export const wasmBytes = memoryBytes;

// ---- options objects as JSON ---------------------------------------------------------------------------
// Every options object is read and checked by the core (unknown keys refused with the nearest known one); what
// JSON cannot hold stays here: a function or another host object is written as HOST, so the core sees that it was
// given.

export const HOST = '\u0000function';
export const hostValues = (_key, value) => (typeof value === 'function' ? HOST : value);

/** An options object as the JSON text the core reads; `undefined` when it was not given. */
export function optionsText(options, what) {
  if (options === undefined || options === null) return 'null';
  if (typeof options !== 'object' || Array.isArray(options)) throw new ConfigError(`${what}: expected an options object, got ${describe(options)}`);
  return JSON.stringify(options, hostValues);
}

// ---- registries --------------------------------------------------------------------------------------------

/** Models the core implements (a provider, a script): the Later of their spec, by the function handed out. */
export const BUILTIN_MODELS = new WeakMap();
/** Tools that came out of defineTool or mcpTools: frozen and already checked. */
export const CHECKED_TOOLS = new WeakSet();
/** The JSON text of each checked tool's definition, as the core checked it: an agent's config text is made of them. */
export const TOOL_TEXTS = new WeakMap();
/** The `fetch` an MCP tool's calls go through, when `mcpTools({ fetch })` gave one (it takes the code's place). */
export const MCP_FETCH = new WeakMap();
/** Subagents: each agentTool()'s child agent spec, by the tool (subagents.js writes it, `agent()` reads it), and what
 * agentTool() needs of api.js's internals (`parts`, set by api.js). */
export const SUBAGENT = { specs: new WeakMap(), parts: undefined };

/** Registers a checked tool and its definition's text. */
export function registerTool(tool, text) {
  CHECKED_TOOLS.add(tool);
  TOOL_TEXTS.set(tool, text);
}

/**
 * What sessions.js gives a session, when the program imports it: the spec of one of its savers (a Later), `null`
 * once released, `undefined` for any other object. Without sessions.js every saver is the program's own.
 */
export const SAVERS = { specOf: () => undefined };
