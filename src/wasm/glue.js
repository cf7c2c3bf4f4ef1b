// JS half of the bindings: the classes and helpers that must be real JS (error classes that
// `instanceof` works on, the schema builder, tiny predicates). The loop itself lives in Rust.

const INTERRUPT = Symbol.for('resumable-agent.InterruptError');

/**
 * Thrown by a tool to pause the run and ask the human `question`. `options`: choices a UI can offer;
 * `data`: anything else it needs (plain JSON); `expiresInMs`: how long the question stays answerable.
 */
export class InterruptError extends Error {
  constructor(question, options) {
    const message = String(question ?? '');
    // A pause is a signal, not a failure: its stack keeps only the throw site (the tool's line). Capturing
    // the default ten frames, through the run's promise and wasm frames, cost ~8 µs of a 150 µs pause+resume.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 1;
    try {
      super(message, options && 'cause' in options ? { cause: options.cause } : undefined);
    } finally {
      Error.stackTraceLimit = limit;
    }
    this.name = 'InterruptError';
    this.question = this.message;
    if (options != null) {
      if (typeof options !== 'object') throw new ConfigError(`InterruptError(question, options): expected an options object, got ${describeValue(options)}`);
      if (options.options !== undefined) {
        if (!Array.isArray(options.options) || !options.options.every((o) => typeof o === 'string')) {
          throw new ConfigError(`InterruptError options.options: expected an array of strings, got ${describeValue(options.options)}`);
        }
        this.options = [...options.options];
      }
      if (options.data !== undefined) {
        checkPlainJson(options.data, 'InterruptError options.data');
        this.data = options.data;
      }
      if (options.expiresInMs !== undefined) {
        if (!Number.isSafeInteger(options.expiresInMs) || options.expiresInMs < 0) {
          throw new ConfigError(`InterruptError options.expiresInMs: expected a non-negative integer, got ${describeValue(options.expiresInMs)}`);
        }
        this.expiresInMs = options.expiresInMs;
      }
    }
    // A brand, so that an InterruptError from a second copy of this package still pauses the run.
    Object.defineProperty(this, INTERRUPT, { value: true });
  }

  static [Symbol.hasInstance](value) {
    if (this !== InterruptError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return value != null && value[INTERRUPT] === true;
  }
}

/** Base class of every error this package throws (except InterruptError, which tools throw). */
export class AgentError extends Error {
  constructor(message, fields) {
    super(message, fields && 'cause' in fields ? { cause: fields.cause } : undefined);
    if (fields) for (const [k, v] of Object.entries(fields)) if (k !== 'cause') this[k] = v;
  }
}
/** A checkpoint that cannot be resumed; `.path` names the JSON path. Nothing ran. */
export class CheckpointError extends AgentError {}
/** The agent's config (or an argument) is unusable. Nothing ran. */
export class ConfigError extends AgentError {}
/** The run reached maxIterations model calls; `.checkpoint` holds it. */
export class MaxIterationsError extends AgentError {}
/** The model failed; `.checkpoint` is the run before that call, `.cause` what the model threw. */
export class ModelError extends AgentError {}
/** assertComplete() got a paused run; `.question` and `.checkpoint` say where. */
export class RunInterruptedError extends AgentError {}
/** session.reply() found nothing saved under `.sessionId`. */
export class SessionNotFoundError extends AgentError {}
/** session.prompt() found the session waiting for an answer to `.question`. */
export class SessionBusyError extends AgentError {}
/** A resume's answer or decisions do not fit what the run waits for; `.interruptId` names the interrupt. Nothing ran. */
export class DecisionError extends AgentError {}
/** A pending interrupt expired and its tool's onExpire is 'error'; `.checkpoint` is the unchanged run. */
export class InterruptExpiredError extends AgentError {}
/**
 * The model's answer missed the agent's `output` schema more than `maxOutputRetries` times; `.problem` says
 * what was wrong with the last one, `.attempts` how many missed, `.checkpoint` holds the run (resume with ''
 * to try again).
 */
export class OutputError extends AgentError {}
/** The run was stopped by its `signal`; `.checkpoint` holds the progress so far. */
export class AbortedError extends AgentError {}
/** A method was called on an agent, session or saver after `free()` (or the end of its `using` block). */
export class ReleasedError extends AgentError {}
/**
 * The WebAssembly instance trapped (out of memory) while this call was in flight; the package replaced it,
 * and later calls work. `.cause` is the trap. Continue from the last saved checkpoint.
 */
export class InstanceLostError extends AgentError {}
/**
 * A saver failed. `.code`: 'TOO_LARGE' | 'KEY_LENGTH' | 'CORRUPT' | 'BACKEND' | 'OPTION'. In a session,
 * `.checkpoint` holds the run that could not be saved, and `.cause` what the saver threw.
 */
export class SaverError extends AgentError {}

const ERRORS = {
  AgentError, CheckpointError, ConfigError, MaxIterationsError, ModelError, RunInterruptedError,
  SessionNotFoundError, SessionBusyError, SaverError, DecisionError, InterruptExpiredError, AbortedError,
  ReleasedError, InstanceLostError, OutputError,
};
for (const C of Object.values(ERRORS)) {
  Object.defineProperty(C.prototype, 'name', { value: C.name, writable: true, configurable: true });
}

export function makeError(kind, message, fields) {
  return new (ERRORS[kind] ?? AgentError)(message, fields ?? undefined);
}

export function isInterruptError(e) {
  return e instanceof InterruptError;
}

/**
 * The message of anything thrown. A non-Error object is never dumped (it may hold credentials, e.g. a
 * request with its headers): its string `message` if it has one, else only what kind of value it was.
 */
export function errorMessage(e) {
  if (e instanceof Error) return e.message || e.name;
  if (typeof e === 'string') return e;
  if (e !== null && typeof e === 'object') {
    if (typeof e.message === 'string' && e.message !== '') return e.message;
    return `${describeValue(e)} was thrown (not an Error; its contents are not shown)`;
  }
  return String(e);
}

export function errorName(e) {
  return e instanceof Error ? e.name : undefined;
}

// ---- schema builder -------------------------------------------------------------------------------

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
  throw new ConfigError(`${where}: expected a schema field such as s.string(), got ${describeValue(value)}`);
}

function objectSchema(shape, where) {
  if (shape === null || typeof shape !== 'object' || Array.isArray(shape)) {
    throw new ConfigError(`${where}: expected an object of fields, got ${describeValue(shape)}`);
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
export const s = Object.freeze({
  string: () => new Field({ type: 'string' }),
  number: () => new Field({ type: 'number' }),
  integer: () => new Field({ type: 'integer' }),
  boolean: () => new Field({ type: 'boolean' }),
  array: (item) => new Field({ type: 'array', items: fieldSchema(item, 's.array(item)') }),
  object: (shape) => new Field(objectSchema(shape, 's.object(shape)')),
  enum: (values) => {
    if (!Array.isArray(values) || values.length === 0) {
      throw new ConfigError(`s.enum(values): expected a non-empty array, got ${describeValue(values)}`);
    }
    const types = new Set(values.map((v) => typeof v));
    const type = types.size === 1 && (types.has('string') || types.has('number')) ? [...types][0] : undefined;
    return new Field(type ? { type, enum: [...values] } : { enum: [...values] });
  },
});

function describeValue(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : typeof v === 'undefined' ? 'undefined' : `${typeof v} ${String(v)}`;
}

/**
 * A tool's input schema: the builder form `(s) => ({ ...fields })`, an object of fields, or a JSON Schema
 * object describing an object (copied). Called by the Rust side, which owns every other tool rule.
 */
export function compileSchema(schema, where) {
  if (schema === undefined) return { type: 'object', properties: {} };
  if (typeof schema === 'function') return objectSchema(schema(s), `${where}(s)`);
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    throw new ConfigError(`${where}: expected (s) => ({ ...fields }) or a JSON Schema object, got ${describeValue(schema)}`);
  }
  const values = Object.values(schema);
  if (values.length > 0 && values.every((v) => v instanceof Field)) return objectSchema(schema, where);
  if (schema.type !== 'object') {
    throw new ConfigError(`${where}.type: a tool's input schema must describe an object (type: "object"), got ${JSON.stringify(schema.type)}`);
  }
  try {
    return JSON.parse(JSON.stringify(schema));
  } catch (e) {
    throw new ConfigError(`${where}: not JSON-serializable: ${errorMessage(e)}`);
  }
}

/**
 * An output schema: `(s) => ({ ...fields })` (an object), `(s) => s.enum([...])` or any field, or a JSON
 * Schema object of any type, as plain JSON Schema.
 */
export function compileOutputSchema(schema, where) {
  const built = typeof schema === 'function' ? schema(s) : schema;
  const at = typeof schema === 'function' ? `${where}(s)` : where;
  if (built instanceof Field) return JSON.parse(JSON.stringify(built.schema));
  if (built === null || typeof built !== 'object' || Array.isArray(built)) {
    throw new ConfigError(`${at}: expected (s) => ({ ...fields }), (s) => s.string() (any field) or a JSON Schema object, got ${describeValue(built)}`);
  }
  const values = Object.values(built);
  if (values.length > 0 && values.every((v) => v instanceof Field)) return objectSchema(built, at);
  try {
    return JSON.parse(JSON.stringify(built));
  } catch (e) {
    throw new ConfigError(`${at}: not JSON-serializable: ${errorMessage(e)}`);
  }
}

export function describe(v) {
  return describeValue(v);
}

export function freeze(o) {
  return Object.freeze(o);
}

// ---- tools and agent config ----------------------------------------------------------------------------
// Read and checked here, in JS, where reading a property costs nothing: one crossing into wasm per agent
// (`checkAgent`, the core's own rules) instead of one per field. What the Rust side needs travels as one
// JSON text (`core`); the functions stay in JS (`fns`).

/** Tools that came out of normalizeTool: frozen and already checked. */
const CHECKED_TOOLS = new WeakSet();
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_SAFE_OPTION = 9.0e15;

/** An optional whole-number option of at least `min`; undefined when absent (undefined or null). */
function integerOption(obj, key, owner, min) {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > MAX_SAFE_OPTION) {
    throw new ConfigError(`${owner}.${key}: expected ${min === 0 ? 'a non-negative integer' : 'a positive integer'}`);
  }
  return v;
}

/** `needsApproval` (not a function) as `[needed, expiresInMs]`, or a ConfigError naming `path`. */
function staticApproval(v, path) {
  if (v === undefined || v === null || v === false) return [false, undefined];
  if (v === true) return [true, undefined];
  if (typeof v === 'object') {
    const ms = v.expiresInMs;
    if (ms === undefined) return [true, undefined];
    if (typeof ms === 'number' && Number.isInteger(ms) && ms >= 0 && ms <= MAX_SAFE_OPTION) return [true, ms];
    throw new ConfigError(`${path}.needsApproval.expiresInMs: expected a non-negative integer, got ${describeValue(ms)}`);
  }
  throw new ConfigError(`${path}.needsApproval: expected a boolean or { expiresInMs }, got ${describeValue(v)}`);
}

function toolInvalid(path, what, got) {
  return new ConfigError(`${path}: expected ${what}, got ${describeValue(got)}`);
}

/**
 * Checks a tool definition and compiles its schema: `{ name, description, inputSchema, handle,
 * needsApproval?, onExpire? }`, frozen. A tool this returned is not checked again.
 */
export function normalizeTool(def, path) {
  if (CHECKED_TOOLS.has(def)) return def;
  if (def === null || typeof def !== 'object') throw toolInvalid(path, 'a tool object', def);
  const name = def.name;
  if (typeof name !== 'string') throw toolInvalid(`${path}.name`, '1-64 letters, digits, "_" or "-"', name);
  if (!TOOL_NAME.test(name)) {
    throw new ConfigError(`${path}.name: expected 1-64 letters, digits, "_" or "-" (what every provider accepts), got ${JSON.stringify(name)}`);
  }
  const description = def.description;
  if (description !== undefined && typeof description !== 'string') throw toolInvalid(`${path}.description`, 'a string', description);
  const handle = def.handle;
  if (typeof handle !== 'function') throw toolInvalid(`${path}.handle`, 'a function (input, ctx) => result', handle);
  const field = def.inputSchema === undefined ? 'schema' : 'inputSchema';
  const inputSchema = compileSchema(def[field], `${path}.${field}`);
  const needsApproval = def.needsApproval;
  if (typeof needsApproval !== 'function') staticApproval(needsApproval, path);
  const onExpire = def.onExpire;
  if (onExpire !== undefined && onExpire !== 'deny' && onExpire !== 'error') throw toolInvalid(`${path}.onExpire`, '"deny" or "error"', onExpire);
  const tool = Object.freeze({ name, description: description ?? '', inputSchema, handle, needsApproval, onExpire });
  CHECKED_TOOLS.add(tool);
  return tool;
}

/** `config.limits` as `{ maxCheckpointBytes?, maxDepth? }` (numbers checked; their bounds are the core's). */
function limitsOf(config) {
  const limits = config.limits;
  if (limits === undefined || limits === null) return undefined;
  if (typeof limits !== 'object') {
    throw new ConfigError(`config.limits: expected { maxCheckpointBytes?, maxDepth? }, got ${describeValue(limits)}`);
  }
  return {
    maxCheckpointBytes: integerOption(limits, 'maxCheckpointBytes', 'config.limits', 1),
    maxDepth: integerOption(limits, 'maxDepth', 'config.limits', 1),
  };
}

function compactionOf(config) {
  const c = config.compaction;
  if (c === undefined || c === null) return undefined;
  if (typeof c !== 'object') {
    throw new ConfigError(`config.compaction: expected { maxBytes?, maxMessages?, keepFirst? }, got ${describeValue(c)}`);
  }
  if (c.summarize !== undefined) {
    throw new ConfigError('config.compaction.summarize: not supported yet; compaction drops the oldest whole steps');
  }
  const what = 'config.compaction';
  const out = {
    maxBytes: integerOption(c, 'maxBytes', what, 1),
    maxMessages: integerOption(c, 'maxMessages', what, 1),
    keepFirst: integerOption(c, 'keepFirst', what, 1) ?? 1,
  };
  if (out.maxBytes === undefined && out.maxMessages === undefined) throw new ConfigError(`${what}: give maxBytes, maxMessages or both`);
  return out;
}

/**
 * `agent(config)`'s spec, before the core's rules are checked (`checkAgent`): `{ core, fns, toolSpecs,
 * model, builtin, keys }`. `core` is the JSON text the Rust agent is built from on every call; `fns` holds
 * each tool's `[handle, needsApproval]`; `toolSpecs` is what a JS model sees as `request.tools`.
 */
export function agentSpec(config, builtin) {
  if (config === null || typeof config !== 'object') {
    throw new ConfigError('agent(config): expected a config object { instructions?, tools?, model, maxIterations? }');
  }
  const instructions = config.instructions ?? undefined;
  if (instructions !== undefined && typeof instructions !== 'string') throw new ConfigError('config.instructions: expected a string');
  const model = config.model;
  if (typeof model !== 'function') {
    throw new ConfigError('config.model: expected a model function (request) => response, e.g. scriptedModel([...]) or a provider');
  }
  const maxIterations = integerOption(config, 'maxIterations', 'config', 1);
  const state = config.state;
  if (state !== undefined) checkPlainJson(state, 'config.state');
  const keys = checkpointKeysSpec(config);
  const limits = limitsOf(config);
  const listed = config.tools ?? [];
  if (!Array.isArray(listed)) throw new ConfigError('config.tools: expected an array of tools');
  const tools = [];
  const fns = [];
  const toolSpecs = [];
  for (let i = 0; i < listed.length; i++) {
    const t = normalizeTool(listed[i], `config.tools[${i}]`);
    const fn = typeof t.needsApproval === 'function';
    const [needed, expiresInMs] = fn ? [false, undefined] : staticApproval(t.needsApproval, '');
    tools.push({
      name: t.name, description: t.description, inputSchema: t.inputSchema,
      approval: fn ? 'function' : needed ? 'needed' : 'none', expiresInMs, onExpire: t.onExpire ?? 'error',
    });
    fns.push(t.handle, fn ? t.needsApproval : undefined);
    toolSpecs.push(Object.freeze({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
  }
  const output = config.output === undefined || config.output === null ? undefined : compileOutputSchema(config.output, 'config.output');
  const compaction = compactionOf(config);
  const maxOutputRetries = integerOption(config, 'maxOutputRetries', 'config', 0);
  const core = JSON.stringify({ instructions, maxIterations, tools, state, limits, output, maxOutputRetries, compaction });
  return { core, fns: Object.freeze(fns), toolSpecs, model, builtin, keys, system: instructions };
}

/** Completes a spec with what the core adds (the final_answer tool a model sees), frozen. */
export function sealSpec(spec, finalAnswerTool) {
  if (finalAnswerTool !== undefined) spec.toolSpecs.push(Object.freeze(finalAnswerTool));
  Object.freeze(spec.toolSpecs);
  return Object.freeze(spec);
}

// ---- the per-call boundary -----------------------------------------------------------------------------

/** `o[k]` of an object this package made (a spec): no checks, nothing to catch. */
export function prop(o, k) {
  return o[k];
}

/** Appends `added` (JSON text of messages, if any) to `mirror`; returns a copy of it. */
export function appendMessages(mirror, added) {
  if (added !== undefined) for (const m of JSON.parse(added)) mirror.push(m);
  return mirror.slice();
}

/** A model request `{ system?, messages, tools }`. */
export function modelRequest(system, messages, tools) {
  const request = {};
  if (system !== undefined) request.system = system;
  request.messages = messages;
  request.tools = tools;
  return request;
}

/** `f(a, b)` (what it throws reaches Rust as an error). */
export function callNow(f, a, b) {
  return b === undefined ? f(a) : f(a, b);
}

/** Whether `value` is a thenable, to be awaited. */
export function isThenable(value) {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
  try {
    return typeof value.then === 'function';
  } catch {
    return true; // a throwing `then` getter: Promise.resolve turns it into the rejection
  }
}

/** A run's result from its JSON text, with `messages` and `checkpoint` put in when given as JS values. */
export function outcome(text, messages, checkpoint) {
  const r = JSON.parse(text);
  if (messages !== undefined) r.messages = messages;
  if (checkpoint !== undefined) r.checkpoint = checkpoint;
  return r;
}

// ---- agent state ---------------------------------------------------------------------------------------

/** Where `value` stops being plain JSON (null, booleans, finite numbers, strings, arrays, plain objects). */
/** Deeper than any checkpoint can hold (limits.maxDepth is at most 120): refused here, before a stack overflows. */
const JSON_DEPTH_BOUND = 128;

function notJson(value, path, seen, depth = 0) {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return undefined;
  if (depth >= JSON_DEPTH_BOUND) return `${path.slice(0, 60)}…: nested more than ${JSON_DEPTH_BOUND} deep`;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `${path}: ${value} is not a JSON number`;
  if (typeof value !== 'object') return `${path}: ${typeof value === 'undefined' ? 'undefined' : `a ${typeof value}`} is not JSON`;
  if (seen.has(value)) return `${path}: a cycle is not JSON`;
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const p = notJson(value[i], `${path}[${i}]`, seen, depth + 1);
        if (p) return p;
      }
      return undefined;
    }
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) return `${path}: a ${value.constructor?.name ?? 'class instance'} is not plain JSON`;
    for (const [k, v] of Object.entries(value)) {
      const p = notJson(v, `${path}.${k}`, seen, depth + 1);
      if (p) return p;
    }
    return undefined;
  } finally {
    seen.delete(value);
  }
}

/** Throws a ConfigError naming where `value` is not plain JSON. */
function checkPlainJson(value, what) {
  const problem = notJson(value, what, new Set());
  if (problem) throw new ConfigError(`${problem} (it must stay plain JSON)`);
}

/** The JSON text of plain JSON `value`, or a ConfigError naming where it is not plain JSON. */
function plainJsonText(value, what) {
  checkPlainJson(value, what);
  return JSON.stringify(value);
}

const NEXT_STATE = Symbol('nextState');

/** A tool's context: ids, the agent's state (parsed on first read) and setState(next). */
export function toolContext(toolUseId, runId, stateJson) {
  let state;
  let parsed = false;
  const ctx = {
    toolUseId,
    runId,
    idempotencyKey: `${runId}:${toolUseId}`,
    get state() {
      if (!parsed) { state = stateJson === undefined ? undefined : JSON.parse(stateJson); parsed = true; }
      return state;
    },
    setState(next) {
      const text = plainJsonText(next, 'setState(state)');
      state = JSON.parse(text);
      parsed = true;
      ctx[NEXT_STATE] = text;
    },
  };
  return ctx;
}

/** The state a tool set through its context (JSON text), if it did. */
export function nextState(ctx) {
  return ctx[NEXT_STATE];
}

// ---- checkpoint keys -------------------------------------------------------------------------------

/**
 * `config.checkpointKeys` ({ current, keys: { [kid]: secret } }) and `config.sealed`, read into a frozen
 * `{ current, keys: [[kid, Uint8Array]], sealed }` (undefined without keys). Secrets may be strings (UTF-8)
 * or bytes; they are copied, so later changes to the caller's buffers do not reach the agent.
 */
export function checkpointKeysSpec(config) {
  const given = config.checkpointKeys;
  const sealed = config.sealed;
  if (sealed !== undefined && typeof sealed !== 'boolean') {
    throw new ConfigError(`config.sealed: expected a boolean, got ${describeValue(sealed)}`);
  }
  if (given === undefined || given === null) {
    if (sealed === true) throw new ConfigError('config.sealed: sealing needs config.checkpointKeys ({ current, keys })');
    return undefined;
  }
  if (typeof given !== 'object' || Array.isArray(given)) {
    throw new ConfigError(`config.checkpointKeys: expected { current, keys: { [keyId]: secret } }, got ${describeValue(given)}`);
  }
  if (typeof given.current !== 'string') {
    throw new ConfigError(`config.checkpointKeys.current: expected the id of the key that signs (a string), got ${describeValue(given.current)}`);
  }
  const map = given.keys;
  if (map === null || typeof map !== 'object' || Array.isArray(map)) {
    throw new ConfigError(`config.checkpointKeys.keys: expected an object { [keyId]: secret }, got ${describeValue(map)}`);
  }
  const keys = [];
  for (const [kid, secret] of Object.entries(map)) {
    let bytes;
    if (typeof secret === 'string') bytes = new TextEncoder().encode(secret);
    else if (secret instanceof Uint8Array) bytes = secret.slice();
    else if (secret instanceof ArrayBuffer) bytes = new Uint8Array(secret.slice(0));
    else if (ArrayBuffer.isView(secret)) bytes = new Uint8Array(secret.buffer.slice(secret.byteOffset, secret.byteOffset + secret.byteLength));
    else {
      throw new ConfigError(`config.checkpointKeys.keys.${kid}: expected a secret (a string, Uint8Array or ArrayBuffer), got ${typeof secret}`);
    }
    keys.push(Object.freeze([kid, bytes]));
  }
  const name = given.agent;
  if (name !== undefined && (typeof name !== 'string' || name.length === 0 || name.length > 200)) {
    throw new ConfigError(`config.checkpointKeys.agent: expected the agent's name (a non-empty string of at most 200 characters), got ${describeValue(name)}`);
  }
  for (const k of Object.keys(given)) {
    if (!['current', 'keys', 'agent'].includes(k)) throw new ConfigError(`config.checkpointKeys.${k}: unknown option (current, keys, agent)`);
  }
  if (!globalThis.crypto?.subtle) {
    throw new ConfigError('config.checkpointKeys: this host has no Web Crypto (globalThis.crypto.subtle); signed checkpoints need Node 20 or later, a Worker or a browser');
  }
  return Object.freeze({ current: given.current, keys: Object.freeze(keys), sealed: sealed === true, agent: name });
}

/**
 * `[promise, cancel]`: a promise that resolves after `ms`, and a function that clears the timer and resolves
 * it at once (a promise that never settles would keep what awaits it in wasm memory for good).
 */
export function timer(ms) {
  let id;
  let done;
  const promise = new Promise((resolve) => { done = resolve; id = setTimeout(resolve, ms); });
  return [promise, () => { clearTimeout(id); done(); }];
}

/**
 * `promise`, or a rejection after `ms` if it has not settled by then: what wasm awaits always settles, and a
 * store's promise that never does stays in JS, where the garbage collector can take it.
 */
export function race(promise, ms) {
  return new Promise((resolve, reject) => {
    const id = setTimeout(() => reject(Object.assign(new Error(`did not settle within ${ms} ms`), { code: 'TIMEOUT' })), ms);
    promise.then((v) => { clearTimeout(id); resolve(v); }, (e) => { clearTimeout(id); reject(e); });
  });
}
