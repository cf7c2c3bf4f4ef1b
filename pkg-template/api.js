// The public API: a thin front over the wasm exports, shared by every entry point (each says where the .wasm
// is: load.js; it is loaded by the first call that needs it, never at import). It holds no loop rules. Every object it hands out is plain JS: an
// agent keeps its checked config (a frozen spec), a saver its store (a Map, a KV binding, an IndexedDB
// connection). Each call builds what it needs in wasm and drops it when its promise settles, so an object
// the program drops is released by the garbage collector; free() / [Symbol.dispose] release it at once.
import * as raw from './resumable_agent.js';
import { ConfigError, ReleasedError, InstanceLostError, checkPlainJson, describe } from './resumable_agent.js';
import { WasmLoadError, isLoaded, load, loadSync, prefetch } from './load.js';

export { WasmLoadError, loadWasm } from './load.js';

export {
  InterruptError, AgentError, CheckpointError, ConfigError, MaxIterationsError, ModelError, RunInterruptedError,
  SessionNotFoundError, SessionBusyError, SaverError, DecisionError, InterruptExpiredError, AbortedError, ReleasedError,
  InstanceLostError, OutputError, McpError,
} from './resumable_agent.js';

// ---- one instance, replaced if it ever traps ------------------------------------------------------------
// A trap (in practice: out of memory) poisons a WebAssembly instance. Every call goes through `wasm` below:
// calls in flight are tracked, and on a trap each is rejected with InstanceLostError and the instance is
// replaced (__wbg_reset_state), so every promise settles and later calls work. Traps inside the futures'
// microtasks reach lose() through the guard scripts/guard-glue.py puts into the glue.

const inFlight = new Set();
let replaced = 0;

function lose(trap) {
  const pending = [...inFlight];
  inFlight.clear();
  try {
    raw.__wbg_reset_state();
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
raw.__raSetTrapHandler(lose);

const isTrap = (e) => e instanceof WebAssembly.RuntimeError;

function guardSync(f) {
  try {
    return f();
  } catch (e) {
    throw isTrap(e) ? lose(e) : e;
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
      reject(isTrap(e) ? lose(e) : e);
      return;
    }
    p.then(settle(resolve), settle(reject));
  });
}

/** The promise of `f()` once the wasm is loaded: called at once when it is (no extra turn of the microtask queue). */
function loaded(f) {
  if (!isLoaded()) return load().then(f);
  try {
    return f();
  } catch (e) {
    return Promise.reject(e);
  }
}

/** Loads the wasm synchronously for a call that cannot wait; WasmLoadError when it cannot be. */
function needNow(what) {
  if (isLoaded() || loadSync()) return;
  throw new WasmLoadError(`resumable-agent: ${what} needs the package's WebAssembly, which this page is still loading`, {
    fix: 'await loadWasm() before calling it (or call it after the first agent call)',
  });
}

/** Loads the wasm synchronously if the entry can (Node, Workers, an inlined build); true when it is there. */
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
 * What the core makes for a synchronous call (a tool's check, an agent's, a provider's, a saver's, a session's):
 * made at once when the wasm is there or can be loaded synchronously (Node, Workers, an inlined build), so a
 * ConfigError is thrown by the call itself; on a page still fetching the .wasm, made by the first call that
 * needs it, which then rejects with that error.
 */
class Later {
  #make;
  #value;
  #error;
  #done = false;
  constructor(make) {
    this.#make = make;
    if (loadedNow()) this.get();
    else prefetch();
  }

  /** Its value (the wasm must be loaded); throws what making it threw. */
  get() {
    if (!this.#done) {
      this.#done = true;
      try {
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

const ASYNC = [
  'prompt', 'resume', 'sessionRun', 'sessionCheckpoint', 'sessionHistory', 'sessionLabel', 'sessionRestore', 'sessionSave',
  'sessionDelete', 'sessionSettle', 'sessionReplay', 'listSessions', 'saverCall', 'modelComplete', 'mcpList',
];
const SYNC = ['checkAgent', 'checkTool', 'saverSpec', 'saverAbout', 'providerSpec', 'scriptedSpec', 'checkSession', 'assertComplete', 'memoryUsage', 'conditionHolds'];
const wasm = {};
for (const name of ASYNC) wasm[name] = (...args) => guardAsync(() => loaded(() => guardSync(() => raw[name](...args))));
for (const name of SYNC) wasm[name] = (...args) => guardSync(() => raw[name](...args));
Object.freeze(wasm);

// ---- options objects as JSON ---------------------------------------------------------------------------
// Every options object is read and checked by the core (unknown keys refused with the nearest known one);
// what JSON cannot hold stays here: a function or another host object is written as HOST, so the core sees
// that it was given.

const HOST = '\u0000function';
const hostValues = (_key, value) => (typeof value === 'function' ? HOST : value);

/** An options object as the JSON text the core reads; `undefined` when it was not given. */
function optionsText(options, what) {
  if (options === undefined || options === null) return 'null';
  if (typeof options !== 'object' || Array.isArray(options)) throw new ConfigError(`${what}: expected an options object, got ${describe(options)}`);
  return JSON.stringify(options, hostValues);
}

// ---- the schema builder --------------------------------------------------------------------------------

class Field {
  constructor(schema, isRequired = false) {
    this.schema = schema;
    this.isRequired = isRequired;
    Object.freeze(this);
  }
  /** The property must be present. */
  required() { return new Field(this.schema, true); }
  /** Explains the property to the model. */
  describe(description) { return new Field({ ...this.schema, description: String(description) }, this.isRequired); }
}

function fieldSchema(value, where) {
  if (value instanceof Field) return value.schema;
  throw new ConfigError(`${where}: expected a schema field such as s.string(), got ${describe(value)}`);
}

function objectSchema(shape, where) {
  if (shape === null || typeof shape !== 'object' || Array.isArray(shape)) {
    throw new ConfigError(`${where}: expected an object of fields, got ${describe(shape)}`);
  }
  const properties = {};
  const required = [];
  for (const [key, field] of Object.entries(shape)) {
    properties[key] = fieldSchema(field, `${where}.${key}`);
    if (field.isRequired) required.push(key);
  }
  return required.length ? { type: 'object', properties, required } : { type: 'object', properties };
}

/** The builder handed to `schema: (s) => ({ ... })`. */
const s = Object.freeze({
  string: () => new Field({ type: 'string' }),
  number: () => new Field({ type: 'number' }),
  integer: () => new Field({ type: 'integer' }),
  boolean: () => new Field({ type: 'boolean' }),
  array: (item) => new Field({ type: 'array', items: fieldSchema(item, 's.array(item)') }),
  object: (shape) => new Field(objectSchema(shape, 's.object(shape)')),
  enum: (values) => {
    if (!Array.isArray(values) || values.length === 0) throw new ConfigError(`s.enum(values): expected a non-empty array, got ${describe(values)}`);
    const types = new Set(values.map((v) => typeof v));
    const type = types.size === 1 && (types.has('string') || types.has('number')) ? [...types][0] : undefined;
    return new Field(type ? { type, enum: [...values] } : { enum: [...values] });
  },
});

/**
 * A schema as plain JSON Schema: the builder form `(s) => ({ ...fields })` or `(s) => s.string()` (any
 * field), an object of fields, or a JSON Schema object (copied). The core checks what it says.
 */
function compileSchema(schema, where, anyField = false) {
  const built = typeof schema === 'function' ? schema(s) : schema;
  const at = typeof schema === 'function' ? `${where}(s)` : where;
  // A tool's builder returns its input's fields; an output's may return any field.
  if (typeof schema === 'function' && !anyField) return objectSchema(built, at);
  if (built instanceof Field) return JSON.parse(JSON.stringify(built.schema));
  if (built === null || typeof built !== 'object' || Array.isArray(built)) {
    throw new ConfigError(`${at}: expected (s) => ({ ...fields }) or a JSON Schema object, got ${describe(built)}`);
  }
  const values = Object.values(built);
  if (values.length > 0 && values.every((v) => v instanceof Field)) return objectSchema(built, at);
  try {
    return JSON.parse(JSON.stringify(built));
  } catch (e) {
    throw new ConfigError(`${at}: not JSON-serializable: ${e?.message ?? e}`);
  }
}

// ---- tools ---------------------------------------------------------------------------------------------

/** Tools that came out of defineTool: frozen and already checked. */
const CHECKED_TOOLS = new WeakSet();

/**
 * What the core answered for a config text it checked, kept for the same text (a Worker defines its tools
 * and builds its agent per request, from the same config): a check is a pure function of the text. Bounded;
 * the oldest entry goes first. Texts over 16 KiB are not kept.
 */
function remembered(cache, limit, text, check) {
  const kept = cache.get(text);
  if (kept !== undefined) return kept;
  const answer = check();
  if (text.length <= 16384) {
    if (cache.size >= limit) cache.delete(cache.keys().next().value);
    cache.set(text, answer);
  }
  return answer;
}
const TOOL_CHECKS = new Map();
const AGENT_CHECKS = new Map();
/** The JSON text of each checked tool's definition, as the core checked it: an agent's config text is made of them. */
const TOOL_TEXTS = new WeakMap();

/**
 * Checks a tool (`{ name, description?, schema, handle, needsApproval?, onExpire? }`) and compiles its schema:
 * `{ name, description, inputSchema, handle, needsApproval, onExpire }`, frozen. A tool this returned is not
 * checked again.
 */
function checkedTool(def, path) {
  if (CHECKED_TOOLS.has(def)) return def;
  if (def === null || typeof def !== 'object' || Array.isArray(def)) throw new ConfigError(`${path}: expected a tool object, got ${describe(def)}`);
  if (typeof def.handle !== 'function') throw new ConfigError(`${path}.handle: expected a function (input, ctx) => result, got ${describe(def.handle)}`);
  if (def.schema !== undefined && def.inputSchema !== undefined) throw new ConfigError(`${path}: give schema (or its older name inputSchema), not both`);
  const field = def.inputSchema === undefined ? 'schema' : 'inputSchema';
  const inputSchema = def[field] === undefined ? undefined : compileSchema(def[field], `${path}.${field}`);
  // A needsApproval function goes to the core with its source text, which the agent's fingerprint covers (a
  // rule changed while a run waits makes another agent).
  const rule = typeof def.needsApproval === 'function' ? `${HOST}\n${sourceOf(def.needsApproval)}` : def.needsApproval;
  const text = withMember(JSON.stringify({ ...def, schema: undefined, inputSchema: undefined, needsApproval: rule }, hostValues), 'inputSchema', inputSchema);
  // Checked now where the wasm can be had now; on a page still loading it, by the agent that uses the tool.
  new Later(() => remembered(TOOL_CHECKS, 64, text, () => wasm.checkTool(text, path) ?? true));
  const { name, description = '', handle, needsApproval, onExpire } = def;
  const tool = Object.freeze({ name, description, inputSchema: inputSchema ?? { type: 'object', properties: {} }, handle, needsApproval, onExpire });
  CHECKED_TOOLS.add(tool);
  TOOL_TEXTS.set(tool, text);
  return tool;
}

/** A function's source text (`Function.prototype.toString`), or '' when it has none to give. */
function sourceOf(fn) {
  try {
    return Function.prototype.toString.call(fn);
  } catch {
    return '';
  }
}

/** The JSON text of an object with one more member, `key: value` (plain JSON), unless `value` is undefined. */
function withMember(text, key, value) {
  if (value === undefined) return text;
  return `${text.slice(0, -1)}${text.length > 2 ? ',' : ''}${JSON.stringify(key)}:${JSON.stringify(value)}}`;
}

/**
 * The tools of an MCP server (Streamable HTTP), usable in `agent({ tools })` beside `defineTool` tools:
 * `mcpTools({ url, headers?, prefix?, timeoutMs?, signal? })`. The protocol is negotiated once here
 * (2026-07-28, falling back to 2025-11-25) and each call goes to the server. `headers` (a bearer token) are
 * sent with every request and never appear on the tools, in a checkpoint, an event or an error.
 * Rejects with McpError (`.server`, `.status`) when the server cannot be reached or refuses.
 */
export async function mcpTools(options) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new ConfigError(`mcpTools(options): expected { url, headers?, prefix?, timeoutMs? }, got ${describe(options)}`);
  }
  const { signal, fetch, ...rest } = options;
  if (fetch !== undefined && typeof fetch !== 'function') throw new ConfigError(`mcpTools(options).fetch: expected a function like fetch, got ${describe(fetch)}`);
  const listed = JSON.parse(await wasm.mcpList(JSON.stringify(rest, hostValues), signal, fetch));
  const where = { url: rest.url, headers: rest.headers, timeoutMs: rest.timeoutMs, maxResponseBytes: rest.maxResponseBytes, protocol: listed.protocol, session: listed.session ?? undefined };
  return listed.tools.map((t) => {
    const text = JSON.stringify({ name: t.name, description: t.description, inputSchema: t.inputSchema, mcp: { ...where, tool: t.tool } });
    wasm.checkTool(text, `mcpTools(options): tool ${JSON.stringify(t.name)}`);
    // What the program sees: no header (the token stays in the text the agent reads).
    const mcp = Object.freeze({ server: new URL(rest.url).origin, tool: t.tool, protocol: listed.protocol });
    const tool = Object.freeze({ name: t.name, description: t.description, inputSchema: t.inputSchema, mcp });
    CHECKED_TOOLS.add(tool);
    TOOL_TEXTS.set(tool, text);
    if (fetch) MCP_FETCH.set(tool, fetch);
    return tool;
  });
}
/** The `fetch` an MCP tool's calls go through, when `mcpTools({ fetch })` gave one (it takes the code's place). */
const MCP_FETCH = new WeakMap();

/** Checks a tool definition at once (throws ConfigError naming what is wrong). */
export const defineTool = (def) => checkedTool(def, 'defineTool');
/** Type guard: the run paused for a human. */
export const isInterrupted = (result) => result !== null && typeof result === 'object' && result.interrupted === true;
/** Returns a finished result; throws RunInterruptedError for a paused one. */
export function assertComplete(result) {
  if (!isInterrupted(result)) return result;
  needNow('assertComplete()');
  return wasm.assertComplete(result);
}
/** `{ wasmBytes, instancesReplaced }`: the size of this package's WebAssembly memory, and how often a trapped instance was replaced. */
export function memoryUsage() {
  return { ...(isLoaded() ? wasm.memoryUsage() : { wasmBytes: 0 }), instancesReplaced: replaced };
}

const dispose = Symbol.dispose ?? Symbol.for('Symbol.dispose');

// Models and savers written in Rust, by the function or object handed out: a run calls them directly. A
// WeakMap keeps the specs (API keys among them) out of reach and lets them go with their owner.
const BUILTIN_MODELS = new WeakMap();

const released = (what) => new ReleasedError(`${what} was released (free() or the end of a using block); create a new one`);

function detached(cls, method) {
  return new ConfigError(`${cls}.${method} was called without its ${cls.toLowerCase()} (a detached method?): call it as ${cls.toLowerCase()}.${method}(...)`);
}

/** An agent: `prompt`, `resume`, `stream`, `session`. */
class Agent {
  #spec;
  constructor(spec) { this.#spec = spec; }

  static spec(self, method) {
    if (self == null || typeof self !== 'object' || !(#spec in self)) throw detached('Agent', method);
    if (self.#spec === null) throw released('this agent');
    return self.#spec;
  }

  async prompt(message, options) {
    const spec = Agent.spec(this, 'prompt');
    return withEnd((o) => loaded(() => wasm.prompt(spec.get(), message, o)), options);
  }

  async resume(checkpoint, answer, options) {
    const spec = Agent.spec(this, 'resume');
    return withEnd((o) => loaded(() => wasm.resume(spec.get(), checkpoint, answer, o)), options);
  }

  stream(input, options) {
    const spec = Agent.spec(this, 'stream');
    if (input == null || typeof input !== 'object') {
      throw new ConfigError('stream(input): expected { prompt } or { checkpoint, answer? }');
    }
    if (typeof input.prompt === 'string') return eventStream((o) => loaded(() => wasm.prompt(spec.get(), input.prompt, o)), options);
    if ('checkpoint' in input) return eventStream((o) => loaded(() => wasm.resume(spec.get(), input.checkpoint, input.answer, o)), options);
    throw new ConfigError('stream(input): expected { prompt: string } or { checkpoint, answer? }');
  }

  session(saver, id, options) {
    return new Session(Agent.spec(this, 'session'), saver, id, options);
  }

  free() { this.#spec = null; }
  [dispose]() { this.free(); }
}

/** A conversation kept in a saver under an id, with its history. */
class Session {
  #parts;

  constructor(agentSpec, saver, id, options) {
    const store = Saver.spec(saver);
    const text = optionsText(options, 'session options');
    // What every call hands the core: the agent, the saver (a built-in's spec, or the user's own), the id and
    // the options; `waitUntil` is called with the background work a call leaves (see settle()).
    const waitUntil = options?.waitUntil;
    this.#parts = new Later(() => {
      wasm.checkSession(saver, store !== undefined, id, text);
      return { agent: agentSpec.get(), store: store?.get(), saver, id, options: text, waitUntil };
    });
    this.#id = id;
  }

  #id;

  /** The session's parts for a call of `method`, once the wasm is loaded (a promise of them before). */
  static parts(self, method) {
    if (self == null || typeof self !== 'object' || !(#parts in self)) throw detached('Session', method);
    const later = self.#parts;
    if (later === null) throw released('this session');
    const check = () => {
      const parts = later.get();
      if (parts.store === null || (parts.store !== undefined && Saver.spec(parts.saver) === null)) throw released('the saver of this session');
      return parts;
    };
    return isLoaded() ? check() : load().then(check);
  }

  get id() { return this.#parts === null ? undefined : this.#id; }

  async prompt(message, options) { return withEnd(run(Session.parts(this, 'prompt'), 'prompt', message), options); }
  async reply(answer, options) { return withEnd(run(Session.parts(this, 'reply'), 'reply', answer), options); }
  /** Continues from the last saved step (after a crash); a paused session answers with its pause. */
  async resume(options) { return withEnd(run(Session.parts(this, 'resume'), 'resume'), options); }

  stream(input, options) {
    const parts = Session.parts(this, 'stream');
    if (parts instanceof Promise) parts.catch(() => {}); // the stream's events carry the error
    if (input != null && typeof input === 'object' && typeof input.prompt === 'string') return eventStream(run(parts, 'prompt', input.prompt), options);
    if (input != null && typeof input === 'object' && 'answer' in input) return eventStream(run(parts, 'reply', input.answer), options);
    if (input != null && typeof input === 'object' && input.resume === true) return eventStream(run(parts, 'resume'), options);
    throw new ConfigError('session.stream(input): expected { prompt: string }, { answer } or { resume: true }');
  }

  /**
   * The session's logged events numbered above `after` (every one without it), in order, from any process:
   * what a client that lost its connection missed. An async iterable; `done` and `error` carry a compact
   * result (`{ text, structured? }` or `{ interrupted, question, interrupts }`) and the error's `{ name,
   * message, code? }`. With `follow` (`true`, or `{ timeoutMs = 60000, pollMs = 250 }`), it then follows a
   * call running the session in another process, reading only the records it adds, until that call ends.
   * SessionNotFoundError when nothing is stored under the id.
   */
  replay({ after, follow } = {}) {
    const parts = Session.parts(this, 'replay');
    let timeoutMs;
    let pollMs;
    if (follow === true) timeoutMs = 60_000;
    else if (follow != null && follow !== false) {
      if (typeof follow !== 'object') throw new ConfigError(`replay({ follow }): expected true or { timeoutMs?, pollMs? }, got ${typeof follow}`);
      ({ timeoutMs = 60_000, pollMs } = follow);
    }
    const stop = { aborted: false };
    const events = eventQueue(() => { stop.aborted = true; });
    const options = { onEvent: (e) => events.push(e), signal: stop, followMs: timeoutMs, pollMs };
    withParts(parts, (p) => wasm.sessionReplay(p, after, options)).then(() => events.end(), (e) => events.fail(e));
    return { [Symbol.asyncIterator]() { return events.iterator(); } };
  }

  /** Saved steps, newest first: `{ step, parentStep?, label?, updatedAt, interrupted, question?, iterations, usage, messageCount }`. */
  async history({ limit, before } = {}) { return withParts(Session.parts(this, 'history'), (p) => wasm.sessionHistory(p, limit, before)); }
  /** The latest checkpoint, or the one saved as `step`. */
  async checkpoint(step) { return withParts(Session.parts(this, 'checkpoint'), (p) => wasm.sessionCheckpoint(p, step)); }
  /** Names a saved step. */
  async label(step, name) { return withParts(Session.parts(this, 'label'), (p) => wasm.sessionLabel(p, step, name)); }
  /** Makes a saved step (by its number or label) the head again: the next call continues from it, as a new branch. */
  async restore(stepOrLabel) { return withParts(Session.parts(this, 'restore'), (p) => wasm.sessionRestore(p, stepOrLabel)); }
  /** Saves a checkpoint (e.g. a SaverError's) as the session's new head. */
  async save(checkpoint) { return withParts(Session.parts(this, 'save'), (p) => wasm.sessionSave(p, checkpoint)); }
  /** Removes the session and its history. */
  async delete() { return withParts(Session.parts(this, 'delete'), (p) => wasm.sessionDelete(p)); }
  /**
   * Finishes what a store's write interval (Workers KV: one write per key per second) held back — a head
   * behind the newest step (what `listSessions` reads), the last keys of a finished session — waiting for
   * the interval first. Calls do this by themselves in the background (through the `waitUntil` option when
   * given); call it to wait for it. `true` when nothing is left.
   */
  async settle() { return withParts(Session.parts(this, 'settle'), (p) => wasm.sessionSettle(p)); }

  free() { this.#parts = null; }
  [dispose]() { this.free(); }
}

/** `f(parts)` with a session's parts (given, or a promise of them while the wasm loads). */
const withParts = (parts, f) => (parts instanceof Promise ? parts.then(f) : f(parts));

/** One session call, as `withEnd`/`eventStream` start it with the call's options. */
const run = (parts, turn, value) => (o) => withParts(parts, (p) => wasm.sessionRun(p, turn, value, o));

/** The sessions stored in `saver` (their latest checkpoints' summaries, not their history). */
export async function listSessions(saver, prefix) {
  const store = Saver.spec(saver);
  if (store === null) throw released('this saver');
  await loaded(() => {});
  if (store === undefined) wasm.checkSession(saver, false, 'x', 'null');
  return wasm.listSessions(store?.get(), saver, prefix ?? '');
}

/** A saver implemented in Rust: `get`, `put`, `delete`, `exists`, `list(prefix?)`, each a promise. */
class Saver {
  #spec;
  constructor(spec) { this.#spec = spec; }

  /** The spec of a built-in saver (null once released); undefined for any other object. */
  static spec(saver) {
    return saver != null && typeof saver === 'object' && #spec in saver ? saver.#spec : undefined;
  }

  static #call(self, op, key, value, condition) {
    if (self == null || typeof self !== 'object' || !(#spec in self)) return Promise.reject(detached('Saver', op));
    const spec = self.#spec;
    if (spec === null) return Promise.reject(released('this saver'));
    return loaded(() => wasm.saverCall(spec.get(), op, key, value, condition));
  }

  /** What the core says of its store (`{ compareAndSet, maxValueBytes }`), once the wasm is there. */
  static #about(self, what) {
    if (self.#spec === null) return undefined;
    needNow(`saver.${what}`);
    return wasm.saverAbout(self.#spec.get());
  }

  get(key) { return Saver.#call(this, 'get', key); }
  /** `condition`: `{ ifAbsent: true }` or `{ ifStep: n }` (compare-and-set; SaverError code CONFLICT). */
  put(key, checkpoint, condition) { return Saver.#call(this, 'put', key, checkpoint, condition); }
  /** True when conditional puts are atomic (memory, file, IndexedDB, Durable Object; not KV). */
  get compareAndSet() { return Saver.#about(this, 'compareAndSet')?.compareAndSet ?? false; }
  /** The largest value the store takes, in bytes, when it has a limit. */
  get maxValueBytes() { return Saver.#about(this, 'maxValueBytes')?.maxValueBytes; }
  delete(key) { return Saver.#call(this, 'delete', key); }
  exists(key) { return Saver.#call(this, 'exists', key); }
  list(prefix) { return Saver.#call(this, 'list', prefix); }

  free() {
    const spec = this.#spec;
    this.#spec = null;
    let slot;
    try {
      slot = isLoaded() ? spec?.get()?.slot : undefined;
    } catch {
      // a saver whose options were refused holds nothing
    }
    if (slot?.db) { slot.db.close(); slot.db = undefined; }
  }
  [dispose]() { this.free(); }
}

/** `config.checkpointKeys` with each secret as the core reads it: a string (its UTF-8 bytes) or an array of bytes. */
function keysJson(given) {
  if (given === null || typeof given !== 'object' || Array.isArray(given)) return given;
  if (!globalThis.crypto?.subtle) {
    throw new ConfigError('config.checkpointKeys: this host has no Web Crypto (globalThis.crypto.subtle); signed checkpoints need Node 20 or later, a Worker or a browser');
  }
  const keys = given.keys;
  if (keys === null || typeof keys !== 'object' || Array.isArray(keys)) return given;
  const bytes = (secret) => {
    if (secret instanceof ArrayBuffer) return Array.from(new Uint8Array(secret));
    if (ArrayBuffer.isView(secret)) return Array.from(new Uint8Array(secret.buffer, secret.byteOffset, secret.byteLength));
    return secret;
  };
  return { ...given, keys: Object.fromEntries(Object.entries(keys).map(([kid, secret]) => [kid, bytes(secret)])) };
}

/**
 * Creates an agent: `{ instructions?, tools?, model, maxIterations?, state?, checkpointKeys?, sealed?, limits?,
 * output?, maxOutputRetries?, compaction? }`. Throws ConfigError for an unusable config, naming the key.
 */
export function agent(config) {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new ConfigError(`agent(config): expected a config object { model, instructions?, tools?, ... }, got ${describe(config)}`);
  }
  const model = config.model;
  if (typeof model !== 'function') {
    throw new ConfigError(`config.model: expected a model function (request) => response, e.g. scriptedModel([...]) or a provider, got ${describe(model)}`);
  }
  const tools = Array.isArray(config.tools) ? config.tools.map((t, i) => checkedTool(t, `config.tools[${i}]`)) : config.tools;
  if (config.state !== undefined) checkPlainJson(config.state, 'config.state');
  const output = config.output === undefined || config.output === null ? config.output : compileSchema(config.output, 'config.output', true);
  const rest = JSON.stringify({ ...config, tools: Array.isArray(tools) ? undefined : tools, output, checkpointKeys: keysJson(config.checkpointKeys) }, hostValues);
  // The tools as the texts they were checked as (no second walk over their schemas).
  const text = Array.isArray(tools) ? `{"tools":[${tools.map((t) => TOOL_TEXTS.get(t)).join(',')}]${rest.length > 2 ? ',' : ''}${rest.slice(1)}` : rest;
  // Each tool's code and its approval function, by the tool's place.
  const fns = Object.freeze((Array.isArray(tools) ? tools : []).flatMap((t) => [t.handle ?? MCP_FETCH.get(t), typeof t.needsApproval === 'function' ? t.needsApproval : undefined]));
  const builtin = BUILTIN_MODELS.get(model);
  const system = typeof config.instructions === 'string' ? config.instructions : undefined;
  return new Agent(new Later(() => {
    const spec = { text, fns, model, builtin: builtin?.get(), system };
    // What a JS model is shown as request.tools: the core's list (with final_answer when there is an output).
    spec.tools = remembered(AGENT_CHECKS, 16, text, () => Object.freeze(wasm.checkAgent(spec).map((t) => Object.freeze(t))));
    return Object.freeze(spec);
  }));
}

/** True when a put's `condition` holds for what is stored (`summary`: its stored summary text, or undefined):
 * the compare-and-set rule (the core's), for the savers written in JS (memory, file, Durable Object). */
export function conditionHolds(condition, summary) {
  if (condition == null) return true;
  needNow('conditionHolds()');
  return wasm.conditionHolds(condition, summary);
}

/** A saver in memory (this process or tab only): a text store over a Map, read and written synchronously. */
export function memorySaver() {
  const map = new Map();
  return textStoreSaver({
    compareAndSet: true,
    getText: (key) => map.get(key)?.[0] ?? null,
    getMany: (keys) => keys.map((key) => map.get(key)?.[0] ?? null),
    putText(key, value, summary, condition) {
      const held = map.get(key);
      if (!conditionHolds(condition, held?.[1])) {
        throw Object.assign(new Error(`key ${JSON.stringify(key)} changed`), { code: 'CONFLICT' });
      }
      map.set(key, [value, summary]);
    },
    delete(key) { map.delete(key); },
    list: (prefix = '') => [...map].filter(([k]) => k.startsWith(prefix)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, [, summary]]) => ({ key, summary })),
  });
}

/** Checkpoints in Workers KV; summaries in each key's metadata. */
export function kvSaver(namespace, options) {
  const text = optionsText(options, 'kvSaver options');
  return new Saver(new Later(() => wasm.saverSpec('kv', namespace, text)));
}

/** Checkpoints in IndexedDB (browsers, Web Workers). */
export function indexedDbSaver(options) {
  const text = optionsText(options, 'indexedDbSaver options');
  return new Saver(new Later(() => wasm.saverSpec('indexeddb', undefined, text)));
}

/**
 * A saver over a store written in JS at the text level: `{ getText(key), putText(key, value, summary,
 * condition), delete(key), list(prefix), getMany?(keys), compareAndSet, maxValueBytes? }` (the memory, file and
 * Durable Object savers). `list` answers `[{ key, summary }]` sorted by key.
 */
export function textStoreSaver(store) {
  return new Saver(new Later(() => wasm.saverSpec('text', store, 'null')));
}

// ---- Durable Objects -----------------------------------------------------------------------------------

const DO_MAX_VALUE_BYTES = 2 * 1024 * 1024;

function storeError(code, message) {
  const e = new Error(message);
  e.code = code;
  return e;
}

/**
 * Checkpoints in a Durable Object (`env.CHECKPOINTS`, bound to the exported CheckpointStore class): strongly
 * consistent, compare-and-set, values up to 2 MB. `name` picks the object (default "default"): one object
 * serialises every session in it; shard by giving each user or tenant its own name.
 */
export function durableObjectSaver(namespace, options = {}) {
  if (namespace == null || typeof namespace.idFromName !== 'function' || typeof namespace.get !== 'function') {
    throw new ConfigError('durableObjectSaver(namespace): expected a Durable Object namespace binding such as env.CHECKPOINTS');
  }
  for (const k of Object.keys(options ?? {})) if (k !== 'name') throw new ConfigError(`durableObjectSaver options.${k}: unknown option (known: name)`);
  const name = options?.name ?? 'default';
  if (typeof name !== 'string' || name === '') throw new ConfigError('durableObjectSaver options.name: expected a non-empty string');
  let stub;
  const call = async (body) => {
    stub ??= namespace.get(namespace.idFromName(name));
    const res = await stub.fetch('https://checkpoint-store.invalid/', { method: 'POST', body: JSON.stringify(body) });
    const out = await res.json();
    if (out.error) throw storeError(out.code ?? 'BACKEND', out.error);
    return out;
  };
  return textStoreSaver({
    compareAndSet: true,
    maxValueBytes: DO_MAX_VALUE_BYTES,
    async getText(key) { return (await call({ op: 'get', key })).value; },
    async getMany(keys) { return (await call({ op: 'getMany', keys })).values; },
    async putText(key, value, summary, condition) { await call({ op: 'put', key, value, summary, condition: condition ?? null }); },
    async delete(key) { await call({ op: 'delete', key }); },
    async list(prefix) { return (await call({ op: 'list', prefix })).entries; },
  });
}

/**
 * The Durable Object class behind durableObjectSaver: export it from your Worker and bind it
 * (`[[durable_objects.bindings]] name = "CHECKPOINTS", class_name = "CheckpointStore"`, with a
 * `new_sqlite_classes` migration). Each key is two entries — `v:<key>` (the checkpoint's JSON) and `s:<key>`
 * (its summary), written together — so a listing reads summaries only. A conditional write compares and
 * writes within one request, which nothing else interleaves with.
 */
export class CheckpointStore {
  constructor(ctx) {
    this.storage = ctx.storage;
  }

  async fetch(request) {
    let body;
    try {
      body = await request.json();
    } catch {
      return Response.json({ error: 'expected a JSON body', code: 'BACKEND' }, { status: 400 });
    }
    const { op, key, value, summary, condition, prefix } = body;
    try {
      switch (op) {
        case 'get': return Response.json({ value: (await this.storage.get(`v:${key}`)) ?? null });
        case 'getMany': {
          // storage.get takes at most 128 keys at once.
          const keys = Array.isArray(body.keys) ? body.keys.map((k) => `v:${k}`) : [];
          const values = [];
          for (let i = 0; i < keys.length; i += 128) {
            const found = await this.storage.get(keys.slice(i, i + 128));
            for (const k of keys.slice(i, i + 128)) values.push(found.get(k) ?? null);
          }
          return Response.json({ values });
        }
        case 'put': {
          if (new TextEncoder().encode(value).length > DO_MAX_VALUE_BYTES) {
            return Response.json({ error: `value for ${JSON.stringify(key)} is over ${DO_MAX_VALUE_BYTES} bytes`, code: 'TOO_LARGE' });
          }
          if (condition) {
            const current = await this.storage.get(`s:${key}`);
            if (!conditionHolds(condition, current)) {
              return Response.json({ error: `key ${JSON.stringify(key)} changed`, code: 'CONFLICT' });
            }
          }
          await this.storage.put({ [`v:${key}`]: value, [`s:${key}`]: summary });
          return Response.json({ ok: true });
        }
        case 'delete': await this.storage.delete([`v:${key}`, `s:${key}`]); return Response.json({ ok: true });
        case 'list': {
          const found = await this.storage.list({ prefix: `s:${prefix ?? ''}` });
          return Response.json({ entries: [...found].map(([k, s]) => ({ key: k.slice(2), summary: s })) });
        }
        default: return Response.json({ error: `unknown operation ${JSON.stringify(op)}`, code: 'BACKEND' }, { status: 400 });
      }
    } catch (e) {
      return Response.json({ error: String(e?.message ?? e), code: 'BACKEND' }, { status: 500 });
    }
  }
}

/** A model the core implements, as a function; `spec` is what the core made of its options. */
function builtinModel(spec) {
  const model = (request) => loaded(() => wasm.modelComplete(spec.get(), request));
  BUILTIN_MODELS.set(model, spec);
  return model;
}

/** A provider's options as the core reads them; its AbortSignal stays here. */
function providerModel(kind, options) {
  const text = optionsText(options, `${kind}(options)`);
  const signal = options?.signal;
  return builtinModel(new Later(() => wasm.providerSpec(kind, text, signal)));
}

/** The Anthropic Messages API over fetch. */
export const anthropic = (options) => providerModel('anthropic', options);

/** OpenAI Chat Completions (and compatible servers) over fetch. */
export const openai = (options) => providerModel('openai', options);

/** The OpenAI Responses API (and Open Responses servers) over fetch; stateless by default (store: false). */
export const openaiResponses = (options) => providerModel('openai-responses', options);

/** The Gemini API over fetch; each thought signature is kept in the checkpoint on its part. */
export const gemini = (options) => providerModel('gemini', options);

/** Workers AI through its binding. */
export function workersAI(binding, options) {
  const text = optionsText(options, 'workersAI(binding, options)');
  return builtinModel(new Later(() => wasm.providerSpec('workers-ai', text, binding)));
}

/** A model that plays `responses` back: response k answers a conversation holding k assistant messages. */
export function scriptedModel(responses) {
  const script = Array.isArray(responses) ? responses.slice() : responses; // as it is now
  return builtinModel(new Later(() => wasm.scriptedSpec(script)));
}

// ---- streams of events ---------------------------------------------------------------------------------

function plainError(e) {
  const out = { name: e?.name ?? 'Error', message: e?.message ?? String(e) };
  for (const k of ['code', 'path', 'interruptId', 'sessionId', 'status', 'provider', 'retryable', 'stopReason', 'attempts', 'problem']) {
    if (e != null && e[k] !== undefined) out[k] = e[k];
  }
  return out;
}

/** A session's own `done`/`error` (numbered, compact): its number is kept for the full event made here. */
function endOf(event, ending) {
  if (event?.type !== 'done' && event?.type !== 'error') return false;
  ending.seq = event.seq;
  return true;
}

function doneEvent(result, ending) {
  const event = { type: 'done', result };
  if (ending.seq !== undefined) event.seq = ending.seq;
  return event;
}

function errorEvent(e, ending) {
  const event = { type: 'error', error: plainError(e) };
  if (e?.checkpoint !== undefined) event.checkpoint = e.checkpoint;
  if (ending.seq !== undefined) event.seq = ending.seq;
  return event;
}

/** What a listener throws is ignored: a broken listener cannot break a run you pay for. */
function callQuietly(f, event) {
  if (typeof f !== 'function') return;
  try {
    f(event);
  } catch {
    // ignored, as during the run
  }
}

/**
 * Runs `run(options)` with the caller's `onEvent` receiving `done` (with the result) or `error` (with the
 * error as plain JSON and the last checkpoint) as its last event, as a stream's last event is.
 */
function withEnd(run, options) {
  const onEvent = options?.onEvent;
  if (typeof onEvent !== 'function') return run(options);
  const ending = { seq: undefined };
  const wrapped = { ...options, onEvent: (event) => { if (!endOf(event, ending)) onEvent(event); } };
  return run(wrapped).then(
    (r) => { callQuietly(onEvent, doneEvent(r, ending)); return r; },
    (e) => { callQuietly(onEvent, errorEvent(e, ending)); throw e; },
  );
}

/**
 * Runs `start({ onEvent, signal })` and hands its events out as an async iterable; the last event is
 * `done` (with the result) or `error` (with the error as plain JSON and the last checkpoint). Leaving the
 * loop early (or `abort()`) stops the run: a model request in flight is cancelled and the run ends in
 * AbortedError. `.result` is the run's promise.
 */
/**
 * Events handed out as an async iterable: `push` queues one (or hands it to a waiting `next()`), `end` ends
 * the iteration, `fail(e)` ends it by rejecting the next `next()` with `e`; leaving the loop early calls
 * `onReturn`.
 */
function eventQueue(onReturn) {
  const queue = [];
  const waiting = [];
  let ended = false;
  let failure;
  const settle = (w) => (failure === undefined ? w.resolve({ value: undefined, done: true }) : w.reject(failure));
  const end = () => {
    ended = true;
    for (const w of waiting.splice(0)) settle(w);
  };
  return {
    push(event) {
      if (ended) return;
      const w = waiting.shift();
      if (w) w.resolve({ value: event, done: false }); else queue.push(event);
    },
    end,
    fail(e) { if (!ended) { failure = e; end(); } },
    iterator() {
      return {
        next() {
          if (queue.length > 0) return Promise.resolve({ value: queue.shift(), done: false });
          if (ended) return new Promise((resolve, reject) => settle({ resolve, reject }));
          return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
        },
        return() {
          onReturn();
          queue.length = 0;
          failure = undefined;
          end();
          return Promise.resolve({ value: undefined, done: true });
        },
        [Symbol.asyncIterator]() { return this; },
      };
    },
  };
}

function eventStream(start, options) {
  // Leaving the loop, abort() or the caller's signal stop the run: a model request in flight is cancelled.
  const stop = new AbortController();
  const events = eventQueue(() => stop.abort());
  const outer = options?.signal;
  // The caller's signal aborts this one (a listener removed when the run settles: no AbortSignal.any, whose
  // weak bookkeeping a tight await loop never lets go).
  let unlisten = () => {};
  let signal = stop.signal;
  if (outer && typeof outer.addEventListener === 'function') {
    if (outer.aborted) stop.abort();
    const listener = () => stop.abort();
    outer.addEventListener('abort', listener, { once: true });
    unlisten = () => outer.removeEventListener('abort', listener);
  } else if (outer) {
    signal = { get aborted() { return stop.signal.aborted || outer.aborted === true; } };
  }
  const onEvent = options?.onEvent;
  const ending = { seq: undefined };
  const result = start({
    onEvent: (event) => {
      if (endOf(event, ending)) return;
      events.push(event);
      if (typeof onEvent === 'function') onEvent(event);
    },
    signal,
  });
  result.then(
    (r) => { unlisten(); const event = doneEvent(r, ending); events.push(event); callQuietly(onEvent, event); events.end(); },
    (e) => { unlisten(); const event = errorEvent(e, ending); events.push(event); callQuietly(onEvent, event); events.end(); },
  );
  result.catch(() => {}); // the events carry the error; awaiting `.result` still rejects
  return {
    result,
    abort() { stop.abort(); },
    [Symbol.asyncIterator]() { return events.iterator(); },
  };
}

