// JS half of the bindings: the classes and helpers that must be real JS (error classes that
// `instanceof` works on, the schema builder, tiny predicates). The loop itself lives in Rust.

const INTERRUPT = Symbol.for('resumable-agent.InterruptError');

/** Thrown by a tool to pause the run and ask the human `question`. */
export class InterruptError extends Error {
  constructor(question, options) {
    super(String(question ?? ''), options);
    this.name = 'InterruptError';
    this.question = this.message;
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
/**
 * A saver failed. `.code`: 'TOO_LARGE' | 'KEY_LENGTH' | 'CORRUPT' | 'BACKEND' | 'OPTION'. In a session,
 * `.checkpoint` holds the run that could not be saved, and `.cause` what the saver threw.
 */
export class SaverError extends AgentError {}

const ERRORS = {
  AgentError, CheckpointError, ConfigError, MaxIterationsError, ModelError, RunInterruptedError,
  SessionNotFoundError, SessionBusyError, SaverError,
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

export function errorMessage(e) {
  if (e instanceof Error) return e.message || e.name;
  if (typeof e === 'string') return e;
  try { return JSON.stringify(e) ?? String(e); } catch { return String(e); }
}

export function errorName(e) {
  return e instanceof Error ? e.name : undefined;
}

/** Type guard: the run paused on a question. */
export function isInterrupted(result) {
  return result != null && result.interrupted === true;
}

/** Returns a finished result; throws RunInterruptedError (with the checkpoint) for a paused one. */
export function assertComplete(result) {
  if (isInterrupted(result)) {
    throw new RunInterruptedError(`the run is interrupted, waiting for an answer to: ${result.question}`, {
      question: result.question,
      checkpoint: result.checkpoint,
    });
  }
  return result;
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

function inputSchema(schema, where) {
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

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** Validates a tool definition and compiles its schema: `{ name, description, inputSchema, handle }`. */
export function normalizeTool(def, where) {
  if (def === null || typeof def !== 'object') throw new ConfigError(`${where}: expected a tool object, got ${describeValue(def)}`);
  if (typeof def.name !== 'string' || !NAME.test(def.name)) {
    throw new ConfigError(`${where}.name: expected 1-64 letters, digits, "_" or "-", got ${JSON.stringify(def.name)}`);
  }
  if (def.description !== undefined && typeof def.description !== 'string') {
    throw new ConfigError(`${where}.description: expected a string, got ${describeValue(def.description)}`);
  }
  if (typeof def.handle !== 'function') {
    throw new ConfigError(`${where}.handle: expected a function (input, ctx) => result, got ${describeValue(def.handle)}`);
  }
  const schema = def.inputSchema ?? def.schema;
  return Object.freeze({
    name: def.name,
    description: def.description ?? '',
    inputSchema: inputSchema(schema, `${where}.${def.inputSchema !== undefined ? 'inputSchema' : 'schema'}`),
    handle: def.handle,
  });
}

/** Defines a tool: `{ name, description, schema, handle }`. Checks it at once. */
export function defineTool(def) {
  return normalizeTool(def, 'defineTool');
}

/**
 * A model that plays back `responses` (each a response, a string for a text answer, or a function of the
 * request). Response k answers a conversation holding k assistant messages, so a run resumed in another
 * process, Worker instance or tab gets the same answers; it throws a clear error when the script runs out.
 */
export function scriptedModel(responses) {
  if (!Array.isArray(responses)) throw new ConfigError(`scriptedModel(responses): expected an array, got ${describeValue(responses)}`);
  const script = [...responses];
  return async function scripted(request) {
    const turn = request.messages.filter((m) => m.role === 'assistant').length;
    if (turn >= script.length) {
      throw new Error(`scriptedModel: the script has ${script.length} responses but the conversation asks for assistant turn ${turn + 1}; add a response to the script`);
    }
    let r = script[turn];
    if (typeof r === 'function') r = await r(request);
    return typeof r === 'string' ? { content: [{ type: 'text', text: r }] } : r;
  };
}
