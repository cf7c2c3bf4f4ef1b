// The JS half of the bindings: what must be real JS and what Rust calls into (error classes `instanceof`
// works on, InterruptError, a tool's context, small helpers). Every rule lives in Rust.

const INTERRUPT = Symbol.for('resumable-agent.InterruptError');

/**
 * Thrown by a tool to pause the run and ask the human `question`. `options`: choices a UI can offer;
 * `data`: anything else it needs (plain JSON); `expiresInMs`: how long the question stays answerable.
 */
export class InterruptError extends Error {
  constructor(question, options) {
    if (question !== null && typeof question === 'object' && Object.getPrototypeOf(question) === Object.prototype && 'question' in question) {
      throw new ConfigError(`InterruptError(question, options): the question comes first, as a string: new InterruptError(${JSON.stringify(String(question.question))}, { options, data })`);
    }
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
      // The options of the JS class are checked here, where it is made (the core reads them as they are).
      if (typeof options !== 'object') throw new ConfigError(`InterruptError(question, options): expected an options object, got ${describe(options)}`);
      for (const k of Object.keys(options)) {
        if (!['options', 'data', 'expiresInMs', 'cause'].includes(k)) throw new ConfigError(`InterruptError options.${k}: unknown option (known: options, data, expiresInMs, cause)`);
      }
      if (options.options !== undefined) {
        if (!Array.isArray(options.options) || !options.options.every((o) => typeof o === 'string')) {
          throw new ConfigError(`InterruptError options.options: expected an array of strings, got ${describe(options.options)}`);
        }
        this.options = [...options.options];
      }
      if (options.data !== undefined) {
        checkPlainJson(options.data, 'InterruptError options.data');
        this.data = options.data;
      }
      if (options.expiresInMs !== undefined) {
        if (!Number.isSafeInteger(options.expiresInMs) || options.expiresInMs < 0) {
          throw new ConfigError(`InterruptError options.expiresInMs: expected a non-negative integer, got ${describe(options.expiresInMs)}`);
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
/** A checkpoint that cannot be resumed; `.code` says why, `.path` names the JSON path. Nothing ran. */
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
/** The session waits for an answer to `.question`, or another call runs it. */
export class SessionBusyError extends AgentError {}
/** A resume's answer or decisions do not fit what the run waits for; `.interruptId` names the interrupt. Nothing ran. */
export class DecisionError extends AgentError {}
/** A pending interrupt expired and its tool's onExpire is 'error'; `.checkpoint` is the unchanged run. */
export class InterruptExpiredError extends AgentError {}
/** The model's answer missed the agent's `output` schema more than `maxOutputRetries` times; `.problem`, `.attempts`, `.checkpoint`. */
export class OutputError extends AgentError {}
/** A guardrail tripped (or threw): `.guardrail` (its name), `.kind` ('input' or 'output'), `.info`, `.checkpoint`. */
export class GuardrailError extends AgentError {}
/** The run's token budget is spent: `.limit` ('totalTokens', 'inputTokens' or 'outputTokens'), `.budget`, `.usage`,
 * `.checkpoint` (a resume with a larger budget continues it). */
export class BudgetExceededError extends AgentError {}
/** The agent changed since the run paused mid-turn and its onDrift is 'error': `.added`, `.removed`, `.changed` (tool
 * names; 'instructions', 'approval'), `.checkpoint` (unchanged). Nothing ran. */
export class ConfigDriftError extends AgentError {}
/** The run was stopped by its `signal`; `.checkpoint` holds the progress so far. */
export class AbortedError extends AgentError {}
/** An MCP server could not be reached or refused (`.server`: its origin, `.status`: the HTTP status if it
 * answered); in a run `.checkpoint` is the run from before the call, which calls it again when resumed. */
export class McpError extends AgentError {}
/** A method was called on an agent, session or saver after `free()` (or the end of its `using` block). */
export class ReleasedError extends AgentError {}
/** The WebAssembly instance trapped while this call was in flight and was replaced; `.cause` is the trap. */
export class InstanceLostError extends AgentError {}
/** A saver failed; `.code` (see index.d.ts), and in a session `.checkpoint` (the run that could not be saved) and `.cause`. */
export class SaverError extends AgentError {}

const ERRORS = {
  AgentError, CheckpointError, ConfigError, MaxIterationsError, ModelError, RunInterruptedError,
  SessionNotFoundError, SessionBusyError, SaverError, DecisionError, InterruptExpiredError, AbortedError,
  ReleasedError, InstanceLostError, OutputError, McpError, GuardrailError, BudgetExceededError, ConfigDriftError,
};
// By the key, not `C.name`: a minifier renames classes (esbuild --minify made ConfigError's name "K").
for (const [name, C] of Object.entries(ERRORS)) {
  Object.defineProperty(C.prototype, 'name', { value: name, writable: true, configurable: true });
}

export function makeError(kind, message, fields) {
  return new (ERRORS[kind] ?? AgentError)(message, fields ?? undefined);
}

/** What a thrown InterruptError holds (checked when it was made): `{ question, options?, expiresInMs? }`. */
export function interruptOf(e) {
  if (!(e instanceof InterruptError)) return undefined;
  return { question: e.question, options: e.options, expiresInMs: e.expiresInMs };
}

/** The data of an InterruptError (plain JSON, checked when it was made), as JSON text. */
export function interruptData(e) {
  return e?.data === undefined ? undefined : JSON.stringify(e.data);
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
    return `${describe(e)} was thrown (not an Error; its contents are not shown)`;
  }
  return String(e);
}

export function errorName(e) {
  return e instanceof Error ? e.name : undefined;
}

/** What kind of value `v` is, for a message: `null`, `an array`, `an object`, `string x`. */
export function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'function') return 'a function';
  return typeof v === 'object' ? 'an object' : typeof v === 'undefined' ? 'undefined' : `${typeof v} ${String(v)}`;
}

// ---- plain JSON ----------------------------------------------------------------------------------------

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

/** Throws a ConfigError naming where `value` is not plain JSON (a Date, a Map, a cycle, undefined…). */
export function checkPlainJson(value, what) {
  const problem = notJson(value, what, new Set());
  if (problem) throw new ConfigError(`${problem} (it must stay plain JSON)`);
}

// ---- the per-call boundary -----------------------------------------------------------------------------

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
      checkPlainJson(next, 'setState(state)');
      const text = JSON.stringify(next);
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

/** Appends `added` (JSON text of messages, if any) to `mirror`; returns a copy of it. */
export function appendMessages(mirror, added) {
  if (added !== undefined) for (const m of JSON.parse(added)) mirror.push(m);
  return mirror.slice();
}

const isSignal = (s) => s !== null && typeof s === 'object' && typeof s.addEventListener === 'function';

/**
 * `{ promise, cancel }`: `promise` resolves when `signal` aborts (at once if it has); `cancel()` stops
 * listening and resolves it too — a promise Rust awaits must settle, or what awaits it is never freed.
 * `undefined` for something that is not an AbortSignal (it is then only polled between steps).
 */
export function onAbort(signal) {
  if (!isSignal(signal)) return undefined;
  let cancel = () => {};
  const promise = new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const listener = () => resolve();
    signal.addEventListener('abort', listener, { once: true });
    cancel = () => { signal.removeEventListener('abort', listener); resolve(); };
  });
  return { promise, cancel };
}

/**
 * `p` as a promise that also settles (with `undefined`) once its `cancel()` is called: what a dropped wait in Rust
 * (a timeout, an abort, calls stopped together) calls, so that a tool or model that never settles does not keep what
 * awaited it.
 */
export function settling(p) {
  let cancel;
  const stop = new Promise((resolve) => { cancel = resolve; });
  const promise = Promise.race([p, stop]);
  promise.cancel = cancel;
  return promise;
}

/** The messages of a checkpoint's JSON text, parsed here (`undefined` when there is no such array). */
export function messagesOf(text) {
  try {
    const messages = JSON.parse(text).messages;
    return Array.isArray(messages) ? messages : undefined;
  } catch {
    return undefined;
  }
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

/** A run's result from its JSON text: `messages` is the checkpoint's, or (sealed) the envelope's own. */
export function outcome(text, sealed) {
  const r = JSON.parse(text);
  if (sealed !== undefined) r.checkpoint = JSON.parse(sealed);
  // The transcript is the checkpoint's: its own array, the same message objects.
  else if (r.messages === null) r.messages = r.checkpoint.messages.slice();
  return r;
}

/** A promise resolved after `ms`. */
export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * `promise`, or a rejection with code TIMEOUT after `ms` if it has not settled by then: what wasm awaits always
 * settles, and a store's promise that never does stays in JS, where the garbage collector can take it.
 */
export function race(promise, ms) {
  if (ms === undefined) return Promise.resolve(promise);
  return new Promise((resolve, reject) => {
    const id = setTimeout(() => reject(Object.assign(new Error(`did not settle within ${ms} ms`), { code: 'TIMEOUT' })), ms);
    Promise.resolve(promise).then((v) => { clearTimeout(id); resolve(v); }, (e) => { clearTimeout(id); reject(e); });
  });
}
