// Types of the resumable-agent npm package. Every public type lives in this one file.

// ---- messages (the reference's exact shapes) ---------------------------------------------------------

export type Role = 'user' | 'assistant' | 'system';

export interface TextContent { type: 'text'; text: string }
export interface ImageContent { type: 'image'; url: string; mimeType?: string }
export interface ImageBase64Content { type: 'image_base64'; data: string; mimeType: string }
export interface ToolUseContent { type: 'tool_use'; id: string; name: string; input: unknown }
export interface ToolResultContent { type: 'tool_result'; toolUseId: string; content: string; isError?: boolean }

export type MessageContent = TextContent | ImageContent | ImageBase64Content | ToolUseContent | ToolResultContent;

export interface Message {
  role: Role;
  content: string | MessageContent[];
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

/** A result recorded for one call of a paused turn (a tool_result block without its `type`). */
export type ToolResult = Omit<ToolResultContent, 'type'>;

// ---- checkpoints -------------------------------------------------------------------------------------

/**
 * The whole run as plain JSON: `JSON.parse(JSON.stringify(checkpoint))` gives it back unchanged.
 * Checkpoints in the reference's format (no `version`) are accepted by `resume`.
 */
export interface Checkpoint {
  /** Format version; 1 for everything this release writes. Absent in reference-format checkpoints. */
  version?: number;
  /** Stable id of the run across pauses and resumes. */
  runId?: string;
  /** The conversation. While paused it ends with the assistant turn whose tool calls are in progress. */
  messages: Message[];
  /** Model calls made so far, across resumes (checked against maxIterations). */
  iterations: number;
  /** Tokens used so far, across resumes. */
  usage: Usage;
  /** Set while the run waits for an answer: the id of the tool call that asked. */
  pendingToolUseId?: string;
  /** The question asked, while paused. */
  question?: string;
  /** Results of the paused turn's calls that already ran; they never run again. */
  toolResults?: ToolResult[];
  /** When the run started, in ms since the epoch. */
  createdAt?: number;
  /** When this checkpoint was taken, in ms since the epoch. */
  updatedAt?: number;
}

/** What a saver's `list` returns for each key: enough for a listing, without the messages. */
export interface CheckpointSummary {
  key: string;
  runId?: string;
  updatedAt?: number;
  iterations: number;
  usage: Usage;
  interrupted: boolean;
  question?: string;
  messageCount: number;
}

// ---- results -------------------------------------------------------------------------------------------

/** A finished run. (`T` is accepted for source compatibility with the reference; there is no `structured`.) */
export interface AgentResponse<T = unknown> {
  /** The final assistant text (its text blocks joined). */
  text: string;
  usage: Usage;
  /** The conversation (a copy: changing it does not change `checkpoint`). */
  messages: Message[];
  checkpoint: Checkpoint;
  iterations: number;
}

/** A run paused by a tool's InterruptError. */
export interface InterruptedResponse {
  interrupted: true;
  question: string;
  checkpoint: Checkpoint & { pendingToolUseId: string; question: string };
}

export type AgentResult<T = unknown> = AgentResponse<T> | InterruptedResponse;

/** Type guard: the run paused on a question. */
export function isInterrupted<T>(result: AgentResponse<T> | InterruptedResponse): result is InterruptedResponse;

/** Returns a finished result; throws RunInterruptedError (carrying the checkpoint) for a paused one. */
export function assertComplete<T>(result: AgentResponse<T> | InterruptedResponse): AgentResponse<T>;

// ---- models --------------------------------------------------------------------------------------------

export type JsonSchema = { [key: string]: unknown };

/** A tool as the model sees it. */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: JsonSchema;
}

/** What a model is asked. Treat it as read-only. */
export interface ModelRequest {
  system?: string;
  messages: Message[];
  tools: ToolSpec[];
}

/** The assistant's turn. */
export interface ModelResponse {
  content: MessageContent[];
  usage?: Usage;
}

/** A model is any async function from a request to a response. */
export type Model = (request: ModelRequest) => ModelResponse | Promise<ModelResponse>;

/** One scripted turn: a response, a string (a final text), or a function of the request. */
export type ScriptedResponse =
  | ModelResponse
  | string
  | ((request: ModelRequest) => ModelResponse | string | Promise<ModelResponse | string>);

/**
 * Plays `responses` back, for tests and demos: response k answers a conversation holding k assistant
 * messages, so a resumed run (another process, Worker instance or tab) gets the same answers.
 * Throws a clear error when the script runs out.
 */
export function scriptedModel(responses: ScriptedResponse[]): Model;

// ---- providers ---------------------------------------------------------------------------------------------

interface ProviderOptions {
  /** Model name. */
  model: string;
  /** API base URL (Anthropic default https://api.anthropic.com; OpenAI default https://api.openai.com/v1). */
  baseURL?: string;
  /** Longest answer, in tokens (Anthropic default 4096). */
  maxTokens?: number;
  /** Extra headers for every request. */
  headers?: Record<string, string>;
  /** Retries for 408, 429, 529, 5xx and network failures, with exponential backoff honouring retry-after (default 2). */
  maxRetries?: number;
  /** Per-request timeout in milliseconds (default 120000). */
  timeoutMs?: number;
  /** Aborts every request when it aborts. */
  signal?: AbortSignal;
}

/** The Anthropic Messages API over fetch. The key stays inside the model: never in a checkpoint or an error. */
export function anthropic(options: ProviderOptions & {
  apiKey: string;
  /** Sends anthropic-dangerous-direct-browser-access: true, to call the API from a browser page. */
  dangerouslyAllowBrowser?: boolean;
}): Model;

/** OpenAI Chat Completions over fetch; with `baseURL`, any compatible server (Ollama, vLLM, llama.cpp, OpenRouter, Groq, Workers AI). */
export function openai(options: ProviderOptions & { apiKey?: string }): Model;

/** The part of the Workers AI binding (`env.AI`) the provider uses. */
export interface AiBindingLike {
  run(model: string, inputs: unknown): Promise<unknown>;
}

/** Workers AI through its binding, for Workers without an API key. */
export function workersAI(binding: AiBindingLike, options: { model: string }): Model;

// ---- tools ---------------------------------------------------------------------------------------------

/** A field of the schema builder; `T` is the value type, `R` whether it is required. */
export interface Field<T = unknown, R extends boolean = boolean> {
  readonly schema: JsonSchema;
  readonly isRequired: R;
  /** The property must be present. */
  required(): Field<T, true>;
  /** Explains the property to the model. */
  describe(description: string): Field<T, R>;
}

export type Shape = { [key: string]: Field<any, boolean> };

type RequiredKeys<S extends Shape> = { [K in keyof S]: S[K] extends Field<any, true> ? K : never }[keyof S];
type OptionalKeys<S extends Shape> = Exclude<keyof S, RequiredKeys<S>>;
type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** The input type a shape describes. */
export type InferShape<S extends Shape> = Simplify<
  { [K in RequiredKeys<S>]: S[K] extends Field<infer T, any> ? T : never } & {
    [K in OptionalKeys<S>]?: S[K] extends Field<infer T, any> ? T : never;
  }
>;

export interface SchemaBuilder {
  string(): Field<string, false>;
  number(): Field<number, false>;
  integer(): Field<number, false>;
  boolean(): Field<boolean, false>;
  array<T>(item: Field<T, boolean>): Field<T[], false>;
  object<S extends Shape>(shape: S): Field<InferShape<S>, false>;
  enum<const V extends readonly (string | number)[]>(values: V): Field<V[number], false>;
}

/** Ids that make a tool's side effects idempotent across pauses and resumes. */
export interface ToolContext {
  /** The model's id for this call. */
  toolUseId: string;
  /** The run's id, stable across resumes. */
  runId: string;
}

/** A tool, as returned by defineTool. */
export interface Tool<I = any> {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
  readonly handle: (input: I, ctx: ToolContext) => unknown;
}

/** A tool definition: schema as the builder form, or a plain JSON Schema object describing an object. */
export interface ToolDefinition<I> {
  /** 1-64 letters, digits, "_" or "-". */
  name: string;
  description?: string;
  /** Returns any JSON value (a string reaches the model as is) or throws InterruptError to pause. */
  handle: (input: I, ctx: ToolContext) => unknown;
}

export function defineTool<S extends Shape>(
  def: ToolDefinition<InferShape<S>> & { schema: (s: SchemaBuilder) => S },
): Tool<InferShape<S>>;
export function defineTool<I = Record<string, unknown>>(
  def: ToolDefinition<I> & ({ schema?: JsonSchema } | { inputSchema: JsonSchema }),
): Tool<I>;

// ---- the agent -----------------------------------------------------------------------------------------

export interface AgentConfig {
  instructions?: string;
  tools?: Tool<any>[];
  /** Required: a model function, e.g. scriptedModel([...]) or a provider. */
  model: Model;
  /** Bound on model calls per run, counted across resumes (default 25). */
  maxIterations?: number;
}

export interface AgentRunner {
  /** Starts a run with a user message. */
  prompt(message: string): Promise<AgentResponse | InterruptedResponse>;
  /**
   * Continues a checkpoint (an object, or its JSON text). With a pending question, `answer` becomes that
   * call's result; otherwise a non-empty answer is a new user turn and an empty one continues as is.
   */
  resume(checkpoint: Checkpoint | string, answer?: string): Promise<AgentResponse | InterruptedResponse>;
  /**
   * The conversation stored under `id` in `saver`: each call loads the checkpoint, runs, and saves it if
   * paused (or failed after progress); on completion it is deleted, or kept with `keepCompleted: true`.
   */
  session(saver: Saver, id: string, options?: SessionOptions): Session;
}

export interface SessionOptions {
  /** Keep the checkpoint when the run completes, to continue the conversation later (default false). */
  keepCompleted?: boolean;
}

export interface Session {
  readonly id: string;
  /**
   * Starts the session, or continues a completed, kept one with a new user message.
   * Throws SessionBusyError when it waits for an answer.
   */
  prompt(message: string): Promise<AgentResponse | InterruptedResponse>;
  /** Answers the pending question. Throws SessionNotFoundError when nothing is saved under the id. */
  reply(answer: string): Promise<AgentResponse | InterruptedResponse>;
}

/** Creates an agent. Throws ConfigError for an unusable config. */
export function agent(config: AgentConfig): AgentRunner;

// ---- savers ----------------------------------------------------------------------------------------------

/** Stores checkpoints by key. `put` replaces the whole value; `list` returns summaries, not whole runs. */
export interface Saver {
  get(key: string): Promise<Checkpoint | null>;
  put(key: string, checkpoint: Checkpoint): Promise<void>;
  delete(key: string): Promise<void>;
  list(prefix?: string): Promise<CheckpointSummary[]>;
}

/** An in-memory saver that stores copies and refuses invalid checkpoints. */
export function memorySaver(): Saver;

/** The part of a Workers KV namespace binding a saver uses (`env.MY_KV` satisfies it). */
export interface KVNamespaceLike {
  get(key: string): Promise<string | null>;
  put(key: string, value: string, options?: { metadata?: unknown; expirationTtl?: number }): Promise<void>;
  delete(key: string): Promise<void>;
  list(options?: { prefix?: string; cursor?: string }): Promise<{
    keys: { name: string; metadata?: unknown }[];
    list_complete: boolean;
    cursor?: string;
  }>;
}

export interface KvSaverOptions {
  /** Prepended to every key, e.g. "session:"; `list` only sees keys under it. */
  prefix?: string;
  /** Seconds until a saved checkpoint expires (at least 60). */
  expirationTtl?: number;
}

/**
 * Checkpoints in Workers KV: one value per key (the checkpoint's JSON), its summary in the key's metadata
 * so `list` reads no values. Keys over 512 bytes and values over 25 MiB are refused before writing
 * (SaverError with code KEY_LENGTH / TOO_LARGE).
 */
export function kvSaver(namespace: KVNamespaceLike, options?: KvSaverOptions): Saver;

export interface IndexedDbSaverOptions {
  /** Database name (default "resumable-agent"). */
  dbName?: string;
  /** Object store (default "checkpoints"); summaries go to "<storeName>-summaries". */
  storeName?: string;
  /** Write durability (default "strict": a paused run is on disk before the save resolves). */
  durability?: 'strict' | 'relaxed' | 'default';
}

/**
 * Checkpoints in IndexedDB (browsers and Web Workers): survive a reload, a crashed tab, and are shared by
 * every tab of the origin. `list` reads a separate summaries store, never whole checkpoints. A full disk is
 * a SaverError with code QUOTA_EXCEEDED; an upgrade blocked by another tab, code BLOCKED.
 */
export function indexedDbSaver(options?: IndexedDbSaverOptions): Saver;

// ---- errors ----------------------------------------------------------------------------------------------

/** Throw it in a tool to pause the run and ask the human `question`. */
export class InterruptError extends Error {
  constructor(question: string, options?: { cause?: unknown });
  readonly question: string;
}

/** Base class of the errors this package throws. */
export class AgentError extends Error {}

/** A checkpoint that cannot be resumed; nothing ran. */
export class CheckpointError extends AgentError {
  /** JSON path of the problem, e.g. `messages[2].content[0].type`. */
  readonly path?: string;
}

/** The config or an argument is unusable; nothing ran. */
export class ConfigError extends AgentError {}

/** The run used up maxIterations model calls. */
export class MaxIterationsError extends AgentError {
  readonly maxIterations: number;
  /** The run so far: resume it with a higher maxIterations. */
  readonly checkpoint: Checkpoint;
}

/** The model threw or answered with something unusable. */
export class ModelError extends AgentError {
  /** For HTTP providers: "anthropic", "openai", "workers-ai". */
  readonly provider?: string;
  /** For HTTP providers: the status, or null for a network failure or timeout. */
  readonly status?: number | null;
  /** For HTTP providers: whether trying again may work (408, 429, 529, 5xx, network). */
  readonly retryable?: boolean;
  /** The run before the failed call: resume it with `''` once the model works again. */
  readonly checkpoint: Checkpoint;
  /** What the model function threw, if it threw. */
  readonly cause?: unknown;
}

/** session.reply() found nothing saved under the id. */
export class SessionNotFoundError extends AgentError {
  readonly sessionId: string;
}

/** session.prompt() found the session waiting for an answer. */
export class SessionBusyError extends AgentError {
  readonly sessionId: string;
  readonly question: string;
}

/** A saver failed. In a session, `checkpoint` holds the run that could not be saved. */
export class SaverError extends AgentError {
  readonly code: 'TOO_LARGE' | 'KEY_LENGTH' | 'CORRUPT' | 'BACKEND' | 'OPTION' | 'QUOTA_EXCEEDED' | 'BLOCKED';
  readonly checkpoint?: Checkpoint;
  readonly cause?: unknown;
}

/** assertComplete() was given a paused run. */
export class RunInterruptedError extends AgentError {
  readonly question: string;
  readonly checkpoint: Checkpoint;
}
