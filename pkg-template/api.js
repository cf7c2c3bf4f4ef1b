// The public API: a thin front over the wasm exports (the .wasm is loaded by the first call that needs it, never at
// import: load.js). It holds no loop rules. Every object it hands out is plain JS: an agent keeps its checked config
// (a frozen spec), a saver its store (a Map, a KV binding, an IndexedDB connection). Each call builds what it needs in
// wasm and drops it when its promise settles, so an object the program drops is released by the garbage collector;
// free() / [Symbol.dispose] release it at once. The savers (sessions.js), the providers (providers.js) and MCP
// (mcp.js) are capabilities of their own: a program that does not import them loads a smaller .wasm.
import { ConfigError, InterruptError, ReleasedError, checkPlainJson, describe } from './errors.js';
import { isLoaded, load, loadedVariant, needFor } from './load.js';
import {
  BUILTIN_MODELS, CHECKED_TOOLS, HOST, Later, MCP_FETCH, SAVERS, SUBAGENT, TOOL_TEXTS, calls, hostValues, instancesReplaced,
  needNow, optionsText, registerTool, wasmBytes, withLater,
} from './internal.js';

import { telemetryAdapter, traceContext } from './telemetry.js';

export { WasmLoadError, loadWasm } from './load.js';

export {
  InterruptError, AgentError, CheckpointError, ConfigError, MaxIterationsError, ModelError, RunInterruptedError,
  SessionNotFoundError, SessionBusyError, SaverError, DecisionError, InterruptExpiredError, AbortedError, ReleasedError,
  InstanceLostError, OutputError, McpError, GuardrailError, BudgetExceededError, ConfigDriftError,
} from './errors.js';

const wasm = calls({
  async: ['prompt', 'resume', 'sessionRun', 'sessionCheckpoint', 'sessionHistory', 'sessionLabel', 'sessionRestore', 'sessionSave',
    'sessionDelete', 'sessionSettle', 'sessionReplay', 'listSessions', 'modelComplete'],
  sync: ['checkAgent', 'checkTool', 'scriptedSpec', 'checkSession', 'assertComplete'],
});

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

/** The Standard Schema (`~standard`, version 1: Zod 4, Valibot, ArkType, …) `schema` is, if it is one. */
function standardOf(schema) {
  if (schema === null || (typeof schema !== 'object' && typeof schema !== 'function')) return undefined;
  const std = schema['~standard'];
  return std !== null && typeof std === 'object' && std.version === 1 && typeof std.validate === 'function' ? std : undefined;
}

/** How a library without Standard JSON Schema gets one. */
const JSON_SCHEMA_FIX = {
  valibot: "wrap it with toStandardJsonSchema(schema) from '@valibot/to-json-schema'",
  zod: 'use Zod 4.2 or later',
  arktype: 'use ArkType 2.1.28 or later',
};

/** The JSON Schema a Standard Schema shows the model (its Standard JSON Schema input), or ConfigError naming the fix. */
function standardJsonSchema(std, where) {
  const vendor = String(std.vendor ?? 'this library');
  if (typeof std.jsonSchema?.input !== 'function') {
    throw new ConfigError(`${where}: this ${vendor} schema has no JSON Schema for the model to see (it does not implement Standard JSON Schema): ${JSON_SCHEMA_FIX[vendor] ?? 'give a JSON Schema object or the schema builder instead'}`);
  }
  let json;
  try {
    json = std.jsonSchema.input({ target: 'draft-2020-12' });
  } catch (e) {
    throw new ConfigError(`${where}: ${vendor} could not write this schema as JSON Schema: ${e?.message ?? e}`);
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new ConfigError(`${where}: ${vendor}'s JSON Schema for it is not an object: ${describe(json)}`);
  }
  const { $schema, ...rest } = JSON.parse(JSON.stringify(json));
  return rest;
}

/** Where a Standard Schema's issue is: `a.b[0]`, or '' at the top. */
function issuePath(path) {
  if (!Array.isArray(path)) return '';
  return path.map((p) => (p !== null && typeof p === 'object' ? p.key : p)).reduce((at, key) => (typeof key === 'number' ? `${at}[${key}]` : at ? `${at}.${String(key)}` : String(key)), '');
}

/**
 * `handle` behind the Standard Schema's own validator: the model's input (already checked against the JSON Schema
 * by the core) is validated again (refinements, transforms), and `handle` gets the validated value; what does not
 * pass is an error result the model reads, naming each issue.
 */
function validated(std, name, handle) {
  return async (input, ctx) => {
    const checked = await std.validate(input);
    if (checked.issues) {
      const issues = checked.issues.map((i) => { const at = issuePath(i.path); return at ? `${at}: ${i.message}` : i.message; });
      throw new TypeError(`invalid input for ${name}: ${issues.join('; ')}`);
    }
    return handle(checked.value, ctx);
  };
}

/**
 * `handle` whose failures `retryOn(error)` refuses are not tried again: thrown marked for the core (an
 * InterruptError passes as it is).
 */
function retriedOn(retryOn, handle) {
  return async (input, ctx) => {
    try {
      return await handle(input, ctx);
    } catch (e) {
      if (e instanceof InterruptError || e?.name === 'InterruptError') throw e;
      let again = false;
      try { again = Boolean(await retryOn(e)); } catch { again = false; }
      if (again) throw e;
      const final = new Error(e?.message ?? String(e));
      final.name = e?.name ?? 'Error';
      final.cause = e;
      final.resumableAgentNoRetry = true;
      throw final;
    }
  };
}

/**
 * A schema as plain JSON Schema: the builder form `(s) => ({ ...fields })` or `(s) => s.string()` (any
 * field), an object of fields, a Standard Schema (its JSON Schema), or a JSON Schema object (copied). The core
 * checks what it says.
 */
function compileSchema(schema, where, anyField = false) {
  const std = standardOf(schema);
  if (std) return standardJsonSchema(std, where);
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
  const std = standardOf(def[field]);
  // A needsApproval function goes to the core with its source text, which the agent's fingerprint covers (a
  // rule changed while a run waits makes another agent).
  const rule = typeof def.needsApproval === 'function' ? `${HOST}\n${sourceOf(def.needsApproval)}` : def.needsApproval;
  const text = withMember(JSON.stringify({ ...def, schema: undefined, inputSchema: undefined, needsApproval: rule }, hostValues), 'inputSchema', inputSchema);
  // Checked now where the wasm can be had now; on a page still loading it, by the agent that uses the tool.
  new Later(() => remembered(TOOL_CHECKS, 64, text, () => wasm.checkTool(text, path) ?? true));
  const { name, description = '', needsApproval, onExpire } = def;
  const retryOn = def.retry?.retryOn;
  if (retryOn !== undefined && typeof retryOn !== 'function') throw new ConfigError(`${path}.retry.retryOn: expected a function (error) => boolean, got ${describe(retryOn)}`);
  const checked = std ? validated(std, name, def.handle) : def.handle;
  const handle = retryOn ? retriedOn(retryOn, checked) : checked;
  const tool = Object.freeze({ name, description, inputSchema: inputSchema ?? { type: 'object', properties: {} }, handle, needsApproval, onExpire });
  registerTool(tool, text);
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
/** `{ wasmBytes, instancesReplaced, variant }`: the size of this package's WebAssembly memory, how often a trapped
 * instance was replaced, and which variant of the .wasm is loaded (null before the first call). */
export function memoryUsage() {
  return { wasmBytes: wasmBytes(), instancesReplaced: instancesReplaced(), variant: loadedVariant() };
}

const dispose = Symbol.dispose ?? Symbol.for('Symbol.dispose');

const released = (what) => new ReleasedError(`${what} was released (free() or the end of a using block); create a new one`);

function detached(cls, method) {
  return new ConfigError(`${cls}.${method} was called without its ${cls.toLowerCase()} (a detached method?): call it as ${cls.toLowerCase()}.${method}(...)`);
}

/**
 * `run(options)` with the caller's OpenTelemetry context, read when the call is made, added to its options (a
 * traced agent's spans are children of the span the caller is in).
 */
const inContext = (traced, run) => {
  if (!traced) return run;
  const ctx = traceContext();
  return ctx === undefined ? run : (o) => run({ ...o, traceContext: ctx });
};

/** An agent: `prompt`, `resume`, `stream`, `session`. */
class Agent {
  #spec;
  #traced;
  constructor(spec, traced) { this.#spec = spec; this.#traced = traced; }

  static spec(self, method) {
    if (self == null || typeof self !== 'object' || !(#spec in self)) throw detached('Agent', method);
    if (self.#spec === null) throw released('this agent');
    return self.#spec;
  }

  async prompt(message, options) {
    const spec = Agent.spec(this, 'prompt');
    return withEnd(inContext(this.#traced, (o) => withLater(spec, (s) => wasm.prompt(s, message, o))), options);
  }

  async resume(checkpoint, answer, options) {
    const spec = Agent.spec(this, 'resume');
    return withEnd(inContext(this.#traced, (o) => withLater(spec, (s) => wasm.resume(s, checkpoint, answer, o))), options);
  }

  stream(input, options) {
    const spec = Agent.spec(this, 'stream');
    if (input == null || typeof input !== 'object') {
      throw new ConfigError('stream(input): expected { prompt } or { checkpoint, answer? }');
    }
    if (typeof input.prompt === 'string') return eventStream(inContext(this.#traced, (o) => withLater(spec, (s) => wasm.prompt(s, input.prompt, o))), options);
    if ('checkpoint' in input) return eventStream(inContext(this.#traced, (o) => withLater(spec, (s) => wasm.resume(s, input.checkpoint, input.answer, o))), options);
    throw new ConfigError('stream(input): expected { prompt: string } or { checkpoint, answer? }');
  }

  session(saver, id, options) {
    // A session needs the .wasm's sessions (a program that never imported a saver loads them now).
    needFor('sessions', 'agent.session()');
    return new Session(Agent.spec(this, 'session'), saver, id, options, this.#traced);
  }

  free() { this.#spec = null; }
  [dispose]() { this.free(); }
}

/** A conversation kept in a saver under an id, with its history. */
class Session {
  #parts;
  #traced;

  constructor(agentSpec, saver, id, options, traced) {
    this.#traced = traced;
    const store = SAVERS.specOf(saver);
    const text = optionsText(options, 'session options');
    // What every call hands the core: the agent, the saver (a built-in's spec, or the user's own), the id and
    // the options; `waitUntil` is called with the background work a call leaves (see settle()).
    const waitUntil = options?.waitUntil;
    if (store === null) throw released('this saver');
    this.#parts = new Later(() => {
      wasm.checkSession(saver, store !== undefined, id, text);
      return { agent: agentSpec.get(), store: store?.get(), saver, id, options: text, waitUntil };
    }, store ? [agentSpec, store] : [agentSpec]);
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
      if (parts.store !== undefined && SAVERS.specOf(parts.saver) === null) throw released('the saver of this session');
      return parts;
    };
    return loadedParts(check);
  }

  get id() { return this.#parts === null ? undefined : this.#id; }

  async prompt(message, options) { return withEnd(inContext(this.#traced, run(Session.parts(this, 'prompt'), 'prompt', message)), options); }
  async reply(answer, options) { return withEnd(inContext(this.#traced, run(Session.parts(this, 'reply'), 'reply', answer)), options); }
  /** Continues from the last saved step (after a crash); a paused session answers with its pause. */
  async resume(options) { return withEnd(inContext(this.#traced, run(Session.parts(this, 'resume'), 'resume')), options); }

  stream(input, options) {
    const parts = Session.parts(this, 'stream');
    if (parts instanceof Promise) parts.catch(() => {}); // the stream's events carry the error
    const traced = this.#traced;
    if (input != null && typeof input === 'object' && typeof input.prompt === 'string') return eventStream(inContext(traced, run(parts, 'prompt', input.prompt)), options);
    if (input != null && typeof input === 'object' && 'answer' in input) return eventStream(inContext(traced, run(parts, 'reply', input.answer)), options);
    if (input != null && typeof input === 'object' && input.resume === true) return eventStream(inContext(traced, run(parts, 'resume')), options);
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

/** `check()` now when the wasm is loaded, else its promise once it is. */
function loadedParts(check) {
  if (isLoaded()) return check();
  return load().then(check);
}

/** `f(parts)` with a session's parts (given, or a promise of them while the wasm loads). */
const withParts = (parts, f) => (parts instanceof Promise ? parts.then(f) : f(parts));

/** One session call, as `withEnd`/`eventStream` start it with the call's options. */
const run = (parts, turn, value) => (o) => withParts(parts, (p) => wasm.sessionRun(p, turn, value, o));

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
 * output?, maxOutputRetries?, compaction?, approval?, budget?, onDrift? }`. Throws ConfigError for an unusable config, naming the key.
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
  // Where spans go is not part of the agent (nor of its fingerprint): it stays here, beside the config's text.
  const telemetry = config.telemetry == null ? undefined : telemetryAdapter(config.telemetry, 'config.telemetry');
  const guardrails = config.guardrails == null ? undefined : guardrailsOf(config.guardrails);
  if (guardrails !== undefined) needFor('guardrails', 'config.guardrails');
  // Spans need a .wasm with telemetry (every variant but the core's).
  if (telemetry !== undefined) needFor('telemetry', 'config.telemetry');
  // The tracer stays here; the core checks the options around it (and the guardrails' list) as it checks every option.
  const telemetryText = telemetry === undefined ? undefined : { ...config.telemetry, tracer: HOST };
  // The approval policy stays here; the core knows it by its source text (the agent's fingerprint covers it).
  const approval = typeof config.approval === 'function' ? config.approval : undefined;
  const approvalText = approval === undefined ? config.approval : `${HOST}\n${sourceOf(approval)}`;
  const rest = JSON.stringify({ ...config, tools: Array.isArray(tools) ? undefined : tools, output, telemetry: telemetryText, approval: approvalText, checkpointKeys: keysJson(config.checkpointKeys) }, hostValues);
  // The tools as the texts they were checked as (no second walk over their schemas).
  const text = Array.isArray(tools) ? `{"tools":[${tools.map((t) => TOOL_TEXTS.get(t)).join(',')}]${rest.length > 2 ? ',' : ''}${rest.slice(1)}` : rest;
  // Each tool's code and its approval function, by the tool's place.
  // (A subagent's place holds its agent's spec, made once the wasm is loaded.)
  const code = (Array.isArray(tools) ? tools : []).flatMap((t) => [t.handle ?? MCP_FETCH.get(t) ?? SUBAGENT.specs.get(t), typeof t.needsApproval === 'function' ? t.needsApproval : undefined]);
  const children = code.filter((f) => f instanceof Later);
  const builtin = BUILTIN_MODELS.get(model);
  const system = typeof config.instructions === 'string' ? config.instructions : undefined;
  // A summarizing compaction needs a variant with it (every one but the core's); its model, if it has its own, stays here.
  const summarize = config.compaction?.summarize;
  if (summarize !== undefined && summarize !== null && summarize !== false) needFor('summaries', 'config.compaction.summarize');
  const summaryModel = summarize?.model;
  if (summaryModel !== undefined && typeof summaryModel !== 'function') {
    throw new ConfigError(`config.compaction.summarize.model: expected a model function (request) => response or a provider, got ${describe(summaryModel)}`);
  }
  const summaryBuiltin = BUILTIN_MODELS.get(summaryModel);
  const later = [builtin, summaryBuiltin, ...children].filter((x) => x !== undefined);
  const made = new Agent(new Later(() => {
    const fns = Object.freeze(children.length > 0 ? code.map((f) => (f instanceof Later ? f.get() : f)) : code);
    const spec = { text, fns, model, builtin: builtin?.get(), system, telemetry, guardrails, approval, summaryModel, summaryBuiltin: summaryBuiltin?.get() };
    // What a JS model is shown as request.tools: the core's list (with final_answer when there is an output).
    spec.tools = remembered(AGENT_CHECKS, 16, text, () => Object.freeze(wasm.checkAgent(spec).map((t) => Object.freeze(t))));
    return Object.freeze(spec);
  }, later), telemetry !== undefined);
  AGENT_TEXTS.set(made, text);
  return made;
}

/** Each agent's config as the JSON text the core reads (what a subagent's parent fingerprints). */
const AGENT_TEXTS = new WeakMap();
// What agentTool() (subagents.js, shipped only to programs that import it) needs of the agent's internals.
SUBAGENT.parts = {
  agentOf: (given) => (given instanceof Agent ? given : agent(given)),
  specOf: (child) => ({ spec: Agent.spec(child, 'agentTool'), text: AGENT_TEXTS.get(child) }),
  compileSchema, sourceOf, withMember,
  check: (text, path) => new Later(() => remembered(TOOL_CHECKS, 64, text, () => wasm.checkTool(text, path) ?? true)),
};

/**
 * `config.guardrails` (`{ input?: [fn], output?: [fn] }`) as the core runs them: `{ input: [{ name, fn }], output }`,
 * each named by its function's name or its place. The core checks their shape with the rest of the config.
 */
function guardrailsOf(given) {
  const list = (kind) => Object.freeze((Array.isArray(given?.[kind]) ? given[kind] : [])
    .map((fn, i) => Object.freeze({ name: fn?.name || `guardrails.${kind}[${i}]`, fn })));
  return Object.freeze({ input: list('input'), output: list('output') });
}

/** A model the core implements (a script), as a function; `spec` is what the core made of it. */
function builtinModel(spec) {
  const model = (request) => withLater(spec, (s) => wasm.modelComplete(s, request));
  BUILTIN_MODELS.set(model, spec);
  return model;
}

/** A model that plays `responses` back: response k answers a conversation holding k assistant messages. */
export function scriptedModel(responses) {
  const script = Array.isArray(responses) ? responses.slice() : responses; // as it is now
  return builtinModel(new Later(() => wasm.scriptedSpec(script)));
}

// ---- streams of events ---------------------------------------------------------------------------------

function plainError(e) {
  const out = { name: e?.name ?? 'Error', message: e?.message ?? String(e) };
  for (const k of ['code', 'path', 'interruptId', 'sessionId', 'status', 'provider', 'retryable', 'stopReason', 'attempts', 'problem', 'guardrail', 'kind', 'info', 'limit', 'budget', 'usage', 'added', 'removed', 'changed']) {
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

