/// <reference lib="esnext.disposable" />
// Types of the resumable-agent npm package. Every public type lives in this one file.

// ---- messages (the reference's exact shapes) ---------------------------------------------------------

export type Role = 'user' | 'assistant' | 'system';

/** `signature`: a provider's signature over the reasoning behind the part (Gemini), sent back on it. */
export interface TextContent { type: 'text'; text: string; signature?: string }
export interface ImageContent { type: 'image'; url: string; mimeType?: string }
export interface ImageBase64Content { type: 'image_base64'; data: string; mimeType: string }
/** `signature`: a provider's signature over the reasoning behind the call (Gemini), sent back on it. */
export interface ToolUseContent { type: 'tool_use'; id: string; name: string; input: unknown; signature?: string }
export interface ToolResultContent { type: 'tool_result'; toolUseId: string; content: string; isError?: boolean }

/** Anthropic extended thinking: kept in the history and sent back as it was (the API requires it with tool use). */
export interface ThinkingContent { type: 'thinking'; thinking: string; signature: string }
/** Thinking the provider encrypted: kept and sent back as it was. */
export interface RedactedThinkingContent { type: 'redacted_thinking'; data: string }
/**
 * A reasoning item of the OpenAI Responses API (`openaiResponses()`): its summary texts and, with
 * `store: false`, the encrypted reasoning, kept and sent back as they were before the calls they led to.
 */
export interface ReasoningContent { type: 'reasoning'; id: string; summary: string[]; encryptedContent?: string }

export type MessageContent =
  | TextContent
  | ImageContent
  | ImageBase64Content
  | ToolUseContent
  | ToolResultContent
  | ThinkingContent
  | RedactedThinkingContent
  | ReasoningContent;

export interface Message {
  role: Role;
  content: string | MessageContent[];
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

/** A result recorded for one call of the open turn (a tool_result block without its `type`). */
export type ToolResult = Omit<ToolResultContent, 'type'>;

// ---- interrupts and decisions ----------------------------------------------------------------------------

/** A call waiting for a human's approval before any call of its turn runs. */
export interface ApprovalInterrupt {
  kind: 'approval';
  /** The tool call's id. */
  id: string;
  toolName: string;
  /** The call's input, as the model wrote it. */
  input: unknown;
  /** After this moment (ms since the epoch) the tool's `onExpire` policy applies. */
  expiresAt?: number;
  /** How many distinct approvers must approve (set by an `approval` policy's `{ ask: true, approvers }`; absent: one). */
  approvers?: number;
  /** Who approved so far, and when (while fewer than `approvers` did). */
  approvals?: { by: string; at: number }[];
}

/** A question a tool asked by throwing InterruptError. */
export interface QuestionInterrupt {
  kind: 'question';
  id: string;
  toolName: string;
  input: unknown;
  question: string;
  /** Choices a UI can offer. */
  options?: string[];
  /** Anything else the tool attached (plain JSON). */
  data?: unknown;
  expiresAt?: number;
}

/**
 * A request for input of an MCP server (elicitation), one per input request of the call: answer it with
 * `{ type: 'accept', content }` (checked against `requestedSchema`), `{ type: 'decline' }` or
 * `{ type: 'cancel' }` — the call then goes on at the server — or `{ type: 'deny', message? }` to end the
 * call without it (the model reads that the user declined).
 */
export interface ElicitationInterrupt {
  kind: 'elicitation';
  /** `<call id>/<key>`. */
  id: string;
  toolName: string;
  input: unknown;
  /** What the server asks. */
  message: string;
  /** MCP's flat schema of the answer's content: strings (formats email, uri, date, date-time), numbers, booleans, enums. */
  requestedSchema: Record<string, unknown>;
}

/** Token limits of a whole run, counted across resumes; any may be left out. */
export interface TokenBudget {
  totalTokens?: number;
  inputTokens?: number;
  outputTokens?: number;
}

/**
 * The run's token budget is spent and its agent asks (`budget: { …, onExceeded: 'ask' }`): between turns, alone.
 * Approve it with a larger budget — `{ type: 'approve', budget: { totalTokens } }`, each limit given replacing the
 * agent's (kept in the checkpoint) — or deny it: the run then ends in BudgetExceededError.
 */
export interface BudgetInterrupt {
  kind: 'budget';
  id: 'budget';
  toolName: '';
  /** The limit reached, the budget in force and what the run has used. */
  input: { limit: 'totalTokens' | 'inputTokens' | 'outputTokens'; budget: TokenBudget; usage: Usage };
  question: string;
}

/** What a paused run waits for: approval requests of one turn, one question, one call's requests for input, or a
 * larger token budget — its own, or a subagent's (`path` set). */
/** A subagent's run that failed, kept in the calling run's checkpoint (`checkpoint.failedSubagents`). */
export interface FailedSubagent {
  /** The call that ran it; a subagent's subagent: `'<call>/<its call>'`, as interrupt ids go. */
  id: string;
  /** The agent tool's name. */
  toolName: string;
  /** How it failed, as an `error` event says it. */
  error: { name?: string; message: string; code?: string };
  /** Its run as it stood when it failed: what its agent resumes. */
  checkpoint: Checkpoint;
}

export type Interrupt = (ApprovalInterrupt | QuestionInterrupt | ElicitationInterrupt | BudgetInterrupt) & NestedIn;

/**
 * Where a subagent's interrupt comes from (`agentTool`): `path` lists the ids of the calls that led to it, from this
 * run's call of the subagent down, and `id` is `<path…>/<the subagent's own id>` (e.g. `call_1/call_7`). Decide it by
 * that id like any other; the decision reaches the subagent. Absent for the run's own interrupts.
 */
export interface NestedIn {
  path?: string[];
}

/**
 * The human's answer to one interrupt. `approve` (approvals): run the call, with `modifiedArgs` instead of
 * the model's input when given (checked against the tool's schema; the transcript shows what ran).
 * `deny` (either kind): do not run it / decline to answer; the model reads an error result with `message`.
 * `answer` (questions): the text becomes the call's result.
 * `remember: 'tool'` (approve): later calls of the same tool in this run are approved without asking (never one
 * a policy denies or that waits for several approvers). `by`: who decides, as your application names them from
 * its own login — needed for each approval of a call that waits for several approvers (the same one twice counts
 * once), recorded in the events and, for a denial, in the result the model reads.
 */
export type Decision =
  | { type: 'approve'; modifiedArgs?: unknown; remember?: 'tool'; by?: string; budget?: TokenBudget }
  | { type: 'deny'; message?: string; by?: string }
  | { type: 'answer'; text: string }
  | { type: 'accept'; content?: Record<string, string | number | boolean | string[]> }
  | { type: 'decline' }
  | { type: 'cancel' };

/**
 * What `resume` continues with: a string (answers the single pending question; with nothing pending a
 * non-empty string is a new user turn and '' continues as is), one decision for a run that waits for one
 * interrupt, or one decision per pending interrupt — an array in interrupt order or an object keyed by
 * interrupt id. No answer (or `null`) continues a run that waits for nothing; a run that waits for an answer
 * refuses it. While an interrupt waits for several approvers, decisions by id may leave interrupts undecided
 * (each approver resumes with their own decisions); the run goes on once nothing is pending. Anything that does not fit exactly is a DecisionError naming the interrupt, before anything
 * runs.
 */
export type ResumeAnswer = string | Decision | { decisions: Decision[] | Record<string, Decision> } | null;

// ---- checkpoints -------------------------------------------------------------------------------------

/**
 * The whole run as plain JSON: `JSON.parse(JSON.stringify(checkpoint))` gives it back unchanged.
 * Checkpoints of older formats (1, and the reference's without `version`) are accepted by `resume`.
 * Its JSON Schema ships as `resumable-agent/checkpoint.schema.json`.
 */
export interface Checkpoint {
  /** Format version; 2 for everything this release writes. Absent in reference-format checkpoints. */
  version?: number;
  /** Stable id of the run across pauses and resumes. */
  runId?: string;
  /** The conversation. Mid-turn it ends with the assistant turn whose tool calls are in progress. */
  messages: Message[];
  /** Model calls made so far, across resumes (checked against maxIterations). */
  iterations: number;
  /** Tokens used so far, across resumes. */
  usage: Usage;
  /** While paused: the id of the first interrupt (the reference's field). */
  pendingToolUseId?: string;
  /** While paused: the first interrupt's question, or a sentence naming the tool of an approval request. */
  question?: string;
  /** While paused: what the run waits for, in call order. */
  interrupts?: Interrupt[];
  /** Results of the open turn's calls that already ran or were denied; they never run again. */
  toolResults?: ToolResult[];
  /** Ids of the open turn's calls a human approved. */
  approved?: string[];
  /** The open turn's calls were checked for approval (the check never repeats). */
  reviewed?: boolean;
  /** Tools approved with `remember: 'tool'`: their later calls in this run are approved without asking. */
  remembered?: string[];
  /** The token limits a decision raised the run's budget to (each replacing the agent's). */
  budget?: TokenBudget;
  /** What decided the run's approvals when this checkpoint was written, as short hashes: the instructions, each
   * tool (schema and approval rule), the approval policy. A resume compares it with the agent's (`onDrift`). */
  fingerprint?: { instructions?: string; tools: Record<string, string>; approval?: string };
  /** The call that waits for input — an MCP server's elicitation, or (`nested: true`) a subagent's run, whose
   * checkpoint `state` is, with the decisions for it by its own ids in `responses` once they are given. */
  pendingInput?: { call: string; state: unknown; nested?: true; responses?: Record<string, { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> } | Decision> };
  /** Subagents' runs that failed (`agentTool`): the model read each failure as the call's error result; resume one
   * with the subagent's agent once what failed is fixed (`child.resume(f.checkpoint, '')`). */
  failedSubagents?: FailedSubagent[];
  /** The agent's state (plain JSON), when the agent has one. */
  state?: unknown;
  /** With an output schema: the run's validated structured answer (the run is finished). */
  structured?: unknown;
  /** With an output schema: answers of this prompt/resume that missed it. */
  outputAttempts?: number;
  /** Where it sits in a session's history (set by sessions). */
  thread?: ThreadInfo;
  /** The W3C traceparent of the traced call that made this checkpoint: the call that resumes it links to it. */
  traceparent?: string;
  /**
   * The summary standing for the steps a summarizing compaction replaced: the model's text, how many messages it
   * replaced in all, and `fnv1a64:<16 hex>` over them (telling what was replaced apart; not a signature).
   */
  summarized?: { text: string; messages: number; hash: string };
  /** When the run started, in ms since the epoch. */
  createdAt?: number;
  /** When this checkpoint was taken, in ms since the epoch. */
  updatedAt?: number;
  /** The MAC of an agent with `checkpointKeys` over everything else; such an agent resumes only checkpoints whose signature verifies. */
  signature?: Signature;
}

/** `{ kid, mac }`: the key id and the base64url HMAC-SHA256 over the checkpoint's canonical encoding. */
export interface Signature {
  kid: string;
  mac: string;
}

/**
 * What an agent with `sealed: true` hands out instead of a Checkpoint: the checkpoint encrypted (AES-256-GCM)
 * under its current key. Plain JSON; only an agent holding the key opens it.
 */
export interface SealedCheckpoint {
  version: 2;
  /** The id of the key it was sealed with. */
  kid: string;
  /** base64url of nonce ‖ ciphertext. */
  sealed: string;
}

/** A checkpoint's place in a session's history. */
export interface ThreadInfo {
  /** The session id. */
  id: string;
  /** Its number in the session's history (1, 2, 3, … in the order saved, across branches). */
  step: number;
  /** The step it continues from (after a restore, an earlier one). */
  parentStep?: number;
  /** Its name, when labelled. */
  label?: string;
}

/** What a listing shows about a saved run, without its messages. */
export interface CheckpointSummary {
  runId?: string;
  updatedAt?: number;
  iterations: number;
  usage: Usage;
  interrupted: boolean;
  question?: string;
  messageCount: number;
  /** Its step in a session's history. */
  step?: number;
  parentStep?: number;
  label?: string;
}

/** One step of a session's history, as `session.history()` lists it: its summary (the names a checkpoint's `thread` and a listing use). */
export interface HistoryEntry extends Omit<CheckpointSummary, 'runId'> {
  /** Its number in the session's history: for checkpoint(step), label(step, …), restore(step). */
  step: number;
  /** The step it continues from (after a restore, an earlier one). */
  parentStep?: number;
  /** When it was saved (ms since the epoch). */
  updatedAt?: number;
  /** @deprecated The step as a string: use `step`. */
  id: string;
  /** @deprecated The parent step as a string: use `parentStep`. */
  parentId?: string;
  /** @deprecated When it was saved: use `updatedAt` (the same value). */
  createdAt?: number;
}

/** One entry of a saver's `list`: the key and the summary of what is stored under it. */
export interface SavedCheckpoint extends CheckpointSummary {
  key: string;
}

// ---- results -------------------------------------------------------------------------------------------

/** A finished run. */
export interface AgentResponse<T = unknown> {
  /** The final assistant text (its text blocks joined). */
  text: string;
  /**
   * With `agent({ output })`: the answer as data, validated against the output schema (its type is inferred
   * from a builder schema). Undefined for an agent without `output`.
   */
  structured: T;
  usage: Usage;
  /** The conversation (a copy: changing it does not change `checkpoint`). */
  messages: Message[];
  checkpoint: Checkpoint;
  iterations: number;
}

/** A run paused for a human: a tool's InterruptError, or calls that need approval. */
export interface InterruptedResponse {
  interrupted: true;
  /** The first interrupt's question, or a sentence naming the tool to approve. */
  question: string;
  checkpoint: Checkpoint & { pendingToolUseId: string; question: string; interrupts: Interrupt[] };
  /** Everything the run waits for, in call order. */
  interrupts: Interrupt[];
}

/** How a run ended: finished, or paused. */
export type Outcome<T = unknown> = AgentResponse<T> | InterruptedResponse;

/** Type guard: the run paused for a human. */
export function isInterrupted<T>(result: AgentResponse<T> | InterruptedResponse): result is InterruptedResponse;
export function isInterrupted<R extends object>(result: R): result is Extract<R, { interrupted: true }>;

/** Returns a finished result; throws RunInterruptedError (carrying the checkpoint) for a paused one. */
export function assertComplete<T>(result: AgentResponse<T> | InterruptedResponse): AgentResponse<T>;

// ---- events ----------------------------------------------------------------------------------------------

/**
 * Events of a run, as plain JSON objects (send them over SSE or postMessage as they are). A session's
 * events carry `seq`: a number that only grows over the session's life (across calls and processes), to
 * use as an SSE `id` and to ask `session.replay({ after: seq })` for what came after it. Deltas are
 * numbered but not logged (replay skips them); `done` and `error` end a session call.
 */
export type AgentEvent = (

  | { type: 'step-start'; step: number }
  /** More of the model's text as it streams in (providers stream when the run is streamed or has onEvent). */
  | { type: 'text-delta'; step: number; text: string }
  /** More of a tool call's input, as JSON text in pieces that need not parse alone. */
  | { type: 'tool-call-delta'; step: number; id: string; toolName: string; inputDelta: string }
  /** The model's stream broke and the step is asked again: drop what this step's deltas showed. */
  | { type: 'step-restart'; step: number }
  /** The oldest steps were dropped to keep the history within `compaction`. */
  | { type: 'compacted'; removedMessages: number; removedBytes: number; messages: number }
  /** The oldest steps were replaced by a summary the model wrote (`compaction.summarize`; `checkpoint.summarized`). */
  | { type: 'summarized'; removedMessages: number; removedBytes: number; messages: number; summary: string }
  /** A summary call failed: the history stays as it was and the run goes on to its model call. */
  | { type: 'summary-failed'; error: string }
  | { type: 'step-finish'; step: number; content: MessageContent[]; usage?: Usage }
  | { type: 'tool-call'; id: string; toolName: string; input: unknown }
  | { type: 'tool-result'; id: string; toolName: string; content: string; isError?: true }
  /** A tool call's attempt failed or timed out, and the call is tried again after `delayMs`. */
  | { type: 'tool-retry'; id: string; toolName: string; attempt: number; error: string; delayMs: number }
  /** A guardrail checked the turn's input or its final answer (`tripwire`: it stopped the run). */
  | { type: 'guardrail'; kind: 'input' | 'output'; name: string; tripwire: boolean }
  | { type: 'approval-requested'; id: string; toolName: string; input: unknown; expiresAt?: number; approvers?: number }
  /** The agent changed since the resumed checkpoint was written (`changed` may hold 'instructions' and 'approval'). */
  | { type: 'config-drift'; added: string[]; removed: string[]; changed: string[] }
  /** `remembered`: approved by an earlier `remember: 'tool'`, nobody asked. `pending`: this approver (`by`) approved,
   * and the call still waits for more. */
  | { type: 'approval-response'; id: string; toolName: string; approved: boolean; modifiedArgs?: unknown; message?: string; by?: string; remembered?: true; pending?: true }
  | { type: 'interrupt'; question: string; interrupts: Interrupt[] }
  /** A tool replaced the agent's state. */
  | { type: 'state-changed'; state: unknown }
  /** Every consistent state the run passes through: resuming any of them continues the same run. */
  | { type: 'checkpoint'; checkpoint: Checkpoint }
  | { type: 'checkpoint-loaded'; key: string; messageCount: number; interrupted: boolean }
  | { type: 'checkpoint-saved'; key: string; messageCount: number }
  /** The last event of a successful run: what prompt/resume would have returned. */
  | { type: 'done'; result: Outcome }
  /** The last event of a failed run: the error as plain JSON, and the last checkpoint when it has one. */
  | { type: 'error'; error: { name: string; message: string; code?: string; path?: string; interruptId?: string; status?: number | null; provider?: string; retryable?: boolean; stopReason?: StopReason; attempts?: number; problem?: string; guardrail?: string; kind?: 'input' | 'output'; info?: unknown; limit?: string; budget?: TokenBudget; usage?: Usage; added?: string[]; removed?: string[]; changed?: string[] }; checkpoint?: Checkpoint }
) & { seq?: number; /** A subagent's event (`agentTool`): the ids of the calls that led to it, outermost first. */ path?: string[] };

export interface RunOptions {
  /** Called with every event, in order, as it happens. What it throws is ignored. */
  onEvent?: (event: AgentEvent) => void;
  /**
   * Stops the run (AbortedError carrying the checkpoint from before the step it stopped): an AbortSignal
   * also cancels a provider's request in flight, stops waiting on a model function (which gets it as
   * `{ signal }`) and makes no further call; an object with `aborted` alone is checked between steps.
   */
  signal?: AbortSignal | { readonly aborted: boolean };
}

/**
 * A run's events as an async iterable; leaving the loop early stops the run as `abort()` does. (Events are
 * delivered after they happen: a model function the run called before the loop was left has been called.)
 */
export interface EventStream extends AsyncIterable<AgentEvent> {
  /** The run's outcome (rejects with the typed error). */
  readonly result: Promise<Outcome>;
  /** Stops the run: a provider's request in flight is cancelled; the run ends in AbortedError. */
  abort(): void;
}

// ---- models --------------------------------------------------------------------------------------------

export type JsonSchema = { [key: string]: unknown };

/** A tool as the model sees it. */
export interface ToolDefinition {
  name: string;
  description: string;
  inputSchema: JsonSchema;
}

/** What a model is asked. Treat it as read-only. */
export interface ModelRequest {
  system?: string;
  messages: Message[];
  tools: ToolDefinition[];
}

/** The assistant's turn. */
export interface ModelResponse {
  content: MessageContent[];
  usage?: Usage;
  /**
   * Why the model stopped, as the provider said it (Anthropic `stop_reason`, OpenAI `finish_reason` mapped to
   * the same names). `max_tokens`/`length`, `refusal` and `content_filter` end the run in a ModelError with
   * `stopReason` set and nothing of the answer recorded; anything else (or none) is a normal answer.
   */
  stopReason?: StopReason;
  /** The provider's id of this answer: a traced agent's `gen_ai.response.id` (never kept in the checkpoint). */
  id?: string;
  /** The model that answered: a traced agent's `gen_ai.response.model`. */
  model?: string;
}

/** Why a model stopped. Unknown provider values pass through as they are. */
export type StopReason = 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'refusal' | 'content_filter' | 'recitation' | 'prompt_blocked' | (string & {});

/** A model is any async function from a request to a response. */
export type Model = ((request: ModelRequest, call?: { signal: AbortSignal | { readonly aborted: boolean } }) => ModelResponse | Promise<ModelResponse>) & {
  /** For a traced agent's `chat` spans: `gen_ai.provider.name` (e.g. 'anthropic'). */
  provider?: string;
  /** For a traced agent's `chat` spans: `gen_ai.request.model`. */
  modelId?: string;
};

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
  /**
   * Whether the model must call a tool, sent when the request has tools (default: the API's, `'auto'`).
   * With `'required'` a run ends only through structured output's answer tool, an interrupt or
   * `maxIterations`: a model that must call a tool never answers in text. `{ name }` must be one of the
   * agent's tools. Anthropic with `thinking` takes only `'auto'` and `'none'`.
   */
  toolChoice?: ToolChoice;
  /**
   * Other request body fields, sent as they are with every request: `{ temperature: 0.2 }`,
   * `{ parallel_tool_calls: false }`, `{ metadata: { user_id } }`, a server's own options. A field the provider writes
   * itself (`model`, `messages`, `tools`, `tool_choice`, `stream`, `max_tokens`, …) is refused: set it with
   * its option.
   */
  extraBody?: Record<string, unknown>;
}

/** Whether the model must call a tool: `'required'` any tool, `{ name }` that one, `'none'` none. */
export type ToolChoice = 'auto' | 'required' | 'none' | { name: string };

/** The Anthropic Messages API over fetch. The key stays inside the model: never in a checkpoint or an error. */
export function anthropic(options: ProviderOptions & {
  apiKey: string;
  /** Sends anthropic-dangerous-direct-browser-access: true, to call the API from a browser page. */
  dangerouslyAllowBrowser?: boolean;
  /**
   * Extended thinking with this budget (at least 1024 tokens, below maxTokens). Its thinking blocks are kept
   * in the checkpoint and sent back unchanged, as the API requires with tool use.
   */
  thinking?: { budgetTokens: number };
}): Model;

/** OpenAI Chat Completions over fetch; with `baseURL`, any compatible server (Ollama, vLLM, llama.cpp, OpenRouter, Groq, Workers AI). */
export function openai(options: ProviderOptions & { apiKey?: string }): Model;

/**
 * The OpenAI Responses API over fetch (`POST {baseURL}/responses`; also any Open Responses server). Stateless
 * by default: with `store: false` (the default) the API keeps nothing, each reasoning item comes back with its
 * encrypted reasoning, is kept in the checkpoint (`{ type: 'reasoning' }` blocks) and is sent back as it was
 * before the calls it led to — a run paused here resumes in another process with its reasoning intact.
 * Function tools go with `strict: false` (strict mode would hold every schema to OpenAI's subset); the run
 * checks each call's input against the tool's schema itself. `maxTokens` is `max_output_tokens`; an answer
 * cut there (`status: 'incomplete'`) is a `ModelError` with `stopReason: 'max_tokens'`.
 */
export function openaiResponses(options: ProviderOptions & {
  apiKey?: string;
  /** Whether OpenAI stores the responses (default false: the reasoning travels in the checkpoint). */
  store?: boolean;
  /** `reasoning.effort` and `reasoning.summary` of reasoning models. */
  reasoning?: { effort?: 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh'; summary?: 'auto' | 'concise' | 'detailed' };
}): Model;

/**
 * The Gemini API over fetch: `POST {baseURL}/models/{model}:generateContent` (`:streamGenerateContent?alt=sse`
 * when watched), the key in `x-goog-api-key` (never in the URL). `baseURL` includes the version (default
 * `https://generativelanguage.googleapis.com/v1beta`). Gemini signs its reasoning: each `thoughtSignature` is
 * kept in the checkpoint on the block it came on (`signature` of a text, tool_use or thinking block, an empty
 * signed text included) and sent back on it, so a paused run resumes elsewhere without Gemini's HTTP 400.
 * Thought summaries are kept as thinking blocks. Calls without an id get `gc_<responseId>_<n>`. Tools go as
 * `parametersJsonSchema` (the whole JSON Schema). `extraBody.generationConfig` adds generation settings
 * (`temperature`, `topP`, …) beside `maxTokens` and `thinking`.
 */
export function gemini(options: ProviderOptions & {
  apiKey: string;
  /** `thinkingConfig`: a token budget (Gemini 2.5) or a level (Gemini 3), with the thought summaries kept. */
  thinking?: { budgetTokens: number } | { level: 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' };
}): Model;

/** The part of the Workers AI binding (`env.AI`) the provider uses. */
export interface AiBindingLike {
  run(model: string, inputs: unknown): Promise<unknown>;
}

/** Workers AI through its binding, for Workers without an API key. */
export function workersAI(binding: AiBindingLike, options: {
  model: string;
  /** Sent as Chat Completions' `tool_choice` when the request has tools (a model that does not take it ignores it). */
  toolChoice?: ToolChoice;
  /** Other inputs of `env.AI.run` (`temperature`, `max_tokens`, …); `messages`, `tools`, `tool_choice`, `stream` are refused. */
  extraBody?: Record<string, unknown>;
}): Model;

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
  /** `runId:toolUseId`: the same for every attempt of this call, in any process (a tool that may run again after a crash dedupes with it). */
  idempotencyKey: string;
  /** The agent's state as this call sees it (see AgentConfig.state). */
  readonly state: any;
  /** Replaces the agent's state (plain JSON only: anything else throws ConfigError). */
  setState(next: unknown): void;
}

/** Whether a call needs approval: `true`, `{ expiresInMs }` (true, answerable for that long), or false. */
export type ApprovalNeed = boolean | { expiresInMs?: number };

/** A tool, as returned by defineTool. */
export interface Tool<I = any> {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
  readonly handle: (input: I, ctx: ToolContext) => unknown;
  readonly needsApproval?: ApprovalNeed | ((input: I, ctx: ToolContext) => ApprovalNeed | Promise<ApprovalNeed>);
  readonly onExpire?: 'deny' | 'error';
}

/** What defineTool takes (the schema as the builder form or a JSON Schema object describing an object). */
export interface DefineToolOptions<I> {
  /** 1-64 letters, digits, "_" or "-" (what every provider accepts). */
  name: string;
  description?: string;
  /** Returns any JSON value (a string reaches the model as is) or throws InterruptError to pause. */
  handle: (input: I, ctx: ToolContext) => unknown;
  /**
   * Calls that need a human's approval: the run pauses once, before any call of the turn runs, with every
   * such call of the turn. A function decides per call (sync or async).
   */
  needsApproval?: ApprovalNeed | ((input: I, ctx: ToolContext) => ApprovalNeed | Promise<ApprovalNeed>);
  /** What a resume does once this tool's interrupt expired: 'deny' the call, or fail with InterruptExpiredError ('error', the default). */
  onExpire?: 'deny' | 'error';
  /**
   * The longest an attempt may take, in ms: past it the attempt counts as failed (retried if `retry` allows)
   * and what it does later is ignored. Default: `agent({ toolDefaults })`, else unbounded.
   */
  timeoutMs?: number;
  /** Tries a call that threw (or timed out) again. Default: `agent({ toolDefaults })`, else once. */
  retry?: ToolRetry;
}

/**
 * Retries of a tool's calls: up to `maxAttempts` attempts in all, the first retry after `backoffMs` (doubled each
 * time). Every attempt has the call's `idempotencyKey`; each retry is a `tool-retry` event. `retryOn(error)` decides
 * per error (default: every error but an InterruptError).
 */
export interface ToolRetry {
  maxAttempts: number;
  backoffMs?: number;
  retryOn?: (error: any) => boolean | Promise<boolean>;
}

/**
 * The Standard Schema interface (https://standardschema.dev), which Zod 4, Valibot and ArkType implement: a tool's
 * or an output's schema may be one. Its JSON Schema (Standard JSON Schema: Zod 4.2+, ArkType; Valibot through
 * `toStandardJsonSchema` from `@valibot/to-json-schema`) is what the model sees.
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => StandardSchemaResult<Output> | Promise<StandardSchemaResult<Output>>;
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}

/** What a Standard Schema's `validate` answers. */
export type StandardSchemaResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<{ readonly message: string; readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined }> };

/** The type a Standard Schema validates into (what `handle` gets). */
export type InferStandardOutput<S> = S extends StandardSchemaV1<any, infer O> ? O : never;
/** The type a Standard Schema accepts (what the model writes). */
export type InferStandardInput<S> = S extends StandardSchemaV1<infer I, any> ? I : never;

/**
 * A tool whose schema is a Standard Schema (Zod, Valibot, ArkType): the model sees its JSON Schema, its validator
 * checks each call's input (an input it refuses is an error result the model reads, naming each issue), and
 * `handle` gets the validated value.
 */
export function defineTool<S extends StandardSchemaV1>(
  def: DefineToolOptions<InferStandardOutput<S>> & { schema: S },
): Tool<InferStandardOutput<S>>;
export function defineTool<S extends Shape>(
  def: DefineToolOptions<InferShape<S>> & { schema: (s: SchemaBuilder) => S },
): Tool<InferShape<S>>;
export function defineTool<I = Record<string, unknown>>(
  def: DefineToolOptions<I> & ({ schema?: JsonSchema } | { /** @deprecated The older name of `schema`. */ inputSchema: JsonSchema }),
): Tool<I>;

/** A tool whose call runs a child agent (from `agentTool`). */
export interface AgentTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
  readonly needsApproval?: ApprovalNeed | ((input: any, ctx: ToolContext) => ApprovalNeed | Promise<ApprovalNeed>);
  readonly onExpire?: 'deny' | 'error';
  /** The child agent its calls run. */
  readonly agent: Agent<any>;
}

/** What agentTool takes. */
export interface AgentToolOptions<I> {
  /** 1-64 letters, digits, "_" or "-". */
  name: string;
  description?: string;
  /** The child: an agent, or its config (its own model, instructions and tools). */
  agent: Agent<any> | AgentConfig;
  /**
   * The input's schema (the builder form, a JSON Schema or a Standard Schema); the child's prompt is then the input
   * as JSON text. Default: `{ task: string }`, the task being the child's prompt.
   */
  input?: JsonSchema | ((s: SchemaBuilder) => Shape) | StandardSchemaV1;
  /** Whether a call of the child needs approval (as defineTool's). */
  needsApproval?: ApprovalNeed | ((input: I, ctx: ToolContext) => ApprovalNeed | Promise<ApprovalNeed>);
  onExpire?: 'deny' | 'error';
  timeoutMs?: number;
  retry?: Omit<ToolRetry, 'retryOn'>;
}

/**
 * A tool whose call runs a child agent — a researcher, a writer, a reviewer — with its own model, instructions and
 * tools. Its result is the child's final text, or its structured output. The child's interrupts surface in the
 * parent's result with ids `<call id>/<child's id>` and `path` (decide them by those ids: the decision reaches the
 * child, checked by it before anything runs); the child's run is kept in the parent's checkpoint (one JSON, at any
 * depth); its events reach the parent's `onEvent` and `stream()` with `path`. The parent's `approval` policy reviews
 * the child's calls too (beside the child's own), its `budget` counts and bounds the child's tokens. A child that fails
 * is an error result the parent's model reads. Needs a .wasm with subagents (not `resumable-agent/core`).
 */
export function agentTool<I = { task: string }>(def: AgentToolOptions<I>): AgentTool;

// ---- the agent -----------------------------------------------------------------------------------------

/**
 * The keys an agent signs its checkpoints with: `current` signs, every id in `keys` verifies (keep old ids to
 * resume checkpoints signed before a rotation). Secrets: at least 16 bytes, as a string (UTF-8) or bytes.
 */
export interface CheckpointKeys {
  /** The id of the key that signs; the others still verify (rotation). */
  current: string;
  keys: Record<string, string | Uint8Array | ArrayBuffer>;
  /**
   * What a signature binds a checkpoint to. Without it: a fingerprint of the agent's instructions, tool names
   * and schemas and approval rules, so a checkpoint resumes only in an agent that decides approvals the same
   * way (a checkpoint from another agent, or from before a deploy that changed them, is refused with
   * CheckpointError code 'BINDING'). With a name: any agent with these keys and this name (a deploy keeps
   * paused runs). Session checkpoints are bound to their session id as well.
   */
  agent?: string;
}

/** Size and depth limits of what a run accepts: checkpoints (before parsing), tool inputs, state, question data. */
export interface Limits {
  /** The largest checkpoint text resume and savers read, in bytes (default 33,554,432: 32 MiB). */
  maxCheckpointBytes?: number;
  /** How deeply a tool input, the state or a question's data may nest (default 64, at most 120). */
  maxDepth?: number;
}

export interface AgentConfig {
  instructions?: string;
  tools?: (Tool<any> | McpTool | AgentTool)[];
  /** Required: a model function, e.g. scriptedModel([...]) or a provider. */
  model: Model;
  /** Bound on model calls per run, counted across resumes (default 25). */
  maxIterations?: number;
  /** The agent's state at the start of a run (plain JSON: todos, files, …); tools read and replace it through ctx. */
  state?: unknown;
  /**
   * Sign every checkpoint the agent returns or saves, and resume only checkpoints signed with one of these keys
   * (anything else: CheckpointError with code 'SIGNATURE', before any model or tool call). See README "Security".
   */
  checkpointKeys?: CheckpointKeys;
  /** With checkpointKeys: hand out and save checkpoints encrypted, as SealedCheckpoint envelopes. */
  sealed?: boolean;
  /** Size and depth limits (defaults in Limits). */
  limits?: Limits;
  /**
   * Structured output: every run ends with `structured` filled and validated against this schema —
   * `(s) => ({ ...fields })`, `(s) => s.enum([...])` (any field), or a JSON Schema. The model answers through a
   * `final_answer` tool added to `tools` (or as JSON text); an answer that does not validate is fed back for it
   * to correct, up to `maxOutputRetries` times, then the run fails with OutputError (carrying the checkpoint).
   */
  output?: OutputSchema;
  /** How many invalid answers are fed back before OutputError (default 2). */
  maxOutputRetries?: number;
  /**
   * Keeps long runs within a store's limits: before each model call, while the history is over `maxBytes`
   * (its JSON) or `maxMessages`, the oldest whole steps after the first `keepFirst` messages (default 1: the
   * first user message) are dropped; every request stays provider-valid. A `compacted` event says what went.
   */
  compaction?: {
    maxBytes?: number;
    maxMessages?: number;
    keepFirst?: number;
    /** Trailing messages always kept (whole steps; the last step is kept whatever this says). */
    keepLast?: number;
    /**
     * Replace the oldest steps with a summary the model writes instead of dropping them: when the history passes
     * its bounds, it is summarized down to half of them. `model`: who writes it (default: the agent's own model; a
     * `scriptedModel` answers by turn, so give a function); `instructions`: what it is told. Not in
     * 'resumable-agent/core'. See README "Compaction".
     */
    summarize?:
      | true
      | { maxBytes?: number; maxMessages?: number; keepLast?: number; instructions?: string; model?: Model };
  };
  /**
   * OpenTelemetry spans of every call (`invoke_agent`, `chat`, `execute_tool`, GenAI semantic conventions),
   * linked across pauses through the checkpoint's `traceparent`. Not part of the agent: changing it never
   * invalidates a paused run. Not in 'resumable-agent/core'. See README "Tracing".
   */
  telemetry?: TelemetryOptions;
  /**
   * Checks that stop a run on policy: each `input` guardrail sees a turn's conversation before its first model
   * call (never beside it: a tripped input is not sent), each `output` guardrail the final answer before it is
   * returned. In order; the first that returns `{ tripwire: true, info }` (or throws) ends the run in a
   * GuardrailError carrying the checkpoint. May be async. See README "Guardrails".
   */
  guardrails?: { input?: Guardrail[]; output?: Guardrail[] };
  /** Timeouts and retries for the tools that set none (`retryOn` is per tool). */
  toolDefaults?: { timeoutMs?: number; retry?: Omit<ToolRetry, 'retryOn'> };
  /**
   * How many tool calls of one model turn run at once (a whole number, at least 1). Default: all of them,
   * concurrently. Results, events and the checkpoint keep the model's call order whatever order calls finish in;
   * a call that throws InterruptError lets the others finish (none runs again on resume); an abort stops them all.
   * Calls running together see what another set with `ctx.setState` once it returned; a set over a change the call
   * did not see is refused (its result says so). `1` runs them one after another, as the reference does (a question
   * stops the calls after it from starting). A subagent's call runs alone. See README "Concurrent tool calls".
   */
  toolConcurrency?: number;
  /**
   * An approval rule over every tool call of the agent, asked before any call of a turn runs (with the tools'
   * own `needsApproval`; the stricter wins: 'allow' never skips a tool's `needsApproval`). 'deny' answers the
   * model with an error result; a throw or an answer that is not a decision denies too (the call does not run).
   * Part of the agent's fingerprint (its source text). See README "Approval policy".
   */
  approval?: ApprovalPolicy;
  /**
   * Tokens the whole run may use, counted across resumes from the checkpoint's `usage`: a model call that would
   * start at or past a limit ends the run in BudgetExceededError (with the checkpoint; resuming it with a larger
   * budget continues) — or, with `onExceeded: 'ask'`, pauses with a `budget` interrupt that a decision raising the
   * budget answers. Not part of the agent's fingerprint. See README "Token budgets".
   */
  budget?: TokenBudget & { onExceeded?: 'error' | 'ask' };
  /**
   * What a resume does when the agent changed (tools added, removed, or with another schema or approval rule; other
   * instructions or approval policy) since the run paused in the middle of a turn: 'error' (default:
   * ConfigDriftError, nothing runs), 'reapprove' (the changed tools' pending approvals, and their approved calls
   * that did not run, are asked again; decisions sent for them are set aside) or 'continue'. A run that waits for
   * nothing goes on either way. Each resume that sees a change reports a `config-drift` event. See README "Config drift".
   */
  onDrift?: 'error' | 'reapprove' | 'continue';
}

/** The call an approval policy is asked about. */
export interface PolicyCall {
  id: string;
  toolName: string;
  /** The call's input as the model wrote it, already checked against the tool's schema (calls that break it are
   * answered with an error result and never reach the policy). */
  input: any;
}

/** What else an approval policy is shown. */
export interface PolicyContext {
  runId: string;
  /** The agent's state, when it has one. */
  state?: unknown;
  /** Model calls made so far, across resumes. */
  iterations: number;
  /** Tokens used so far, across resumes. */
  usage: Usage;
}

/** What an approval policy answers for a call (`undefined`/`null`: 'allow'). */
export type PolicyDecision =
  | 'allow'
  | 'ask'
  | 'deny'
  | { ask: true; expiresInMs?: number; approvers?: number }
  | { deny: true; message?: string }
  | null
  | undefined;

export type ApprovalPolicy = (call: PolicyCall, ctx: PolicyContext) => PolicyDecision | Promise<PolicyDecision>;

/** What a guardrail is shown (shared by the guardrails of one check: read-only). */
export interface GuardrailInput {
  kind: 'input' | 'output';
  /** The conversation (for an output guardrail, ending with the answer). */
  messages: Message[];
  /** The answer's text (output). */
  text?: string;
  /** The structured answer (output, with `output`). */
  structured?: unknown;
}

/** A guardrail: `{ tripwire: true, info }` stops the run; anything else passes. */
export type Guardrail = (input: GuardrailInput) => GuardrailVerdict | Promise<GuardrailVerdict>;
export type GuardrailVerdict = { tripwire?: boolean; info?: unknown } | null | undefined | void;

/** The part of an OpenTelemetry `Tracer` (`trace.getTracer('my-app')` from `@opentelemetry/api`) the agent uses. */
export interface OtelTracer {
  startSpan(name: string, options?: any, context?: any): OtelSpan;
}

/** The part of an OpenTelemetry `Span` the agent uses. */
export interface OtelSpan {
  setAttribute(key: string, value: any): unknown;
  addEvent(name: string, attributes?: any): unknown;
  setStatus(status: any): unknown;
  end(): void;
  spanContext(): { traceId: string; spanId: string; traceFlags: number };
}

export interface TelemetryOptions {
  /** Where spans go; what it throws is ignored (a broken tracer never breaks a run). */
  tracer: OtelTracer;
  /** `gen_ai.agent.name`, and the `invoke_agent {agentName}` span's name. */
  agentName?: string;
  /**
   * Record messages, instructions and tool inputs and results as the conventions' JSON attributes (off by
   * default: they may hold personal data). Each attribute holds at most 32 KiB: the newest messages that fit,
   * a text over 8 KiB cut, saying how much was cut.
   */
  recordContent?: boolean;
  /** Write list attributes as JSON text (default: true in Workers, whose own tracing takes scalars only). */
  scalarAttributes?: boolean;
}

/** What `output` takes (a Standard Schema: its JSON Schema, which the model's answer is checked against). */
export type OutputSchema = ((s: SchemaBuilder) => Shape | Field<any, boolean>) | StandardSchemaV1 | JsonSchema;

/** The type of the structured answer an output schema describes. */
export type InferOutput<O> = O extends StandardSchemaV1<infer I, any> ? I : O extends (s: SchemaBuilder) => infer R
  ? R extends Field<infer T, any>
    ? T
    : R extends Shape
      ? InferShape<R>
      : unknown
  : unknown;

/** The result of a sealed agent: the same, with the checkpoint sealed. */
export type Sealed<O> = O extends unknown ? Omit<O, 'checkpoint'> & { checkpoint: SealedCheckpoint } : never;

/** An agent created with `sealed: true`: its results carry SealedCheckpoint envelopes. */
export interface SealedAgent<T = unknown> {
  prompt(message: string, options?: RunOptions): Promise<Sealed<Outcome<T>>>;
  resume(checkpoint: SealedCheckpoint | Checkpoint | string, answer?: ResumeAnswer, options?: RunOptions): Promise<Sealed<Outcome<T>>>;
  stream(input: { prompt: string } | { checkpoint: SealedCheckpoint | Checkpoint | string; answer?: ResumeAnswer }, options?: RunOptions): EventStream;
  session(saver: Saver, id: string, options?: SessionOptions): SealedSession<T>;
  free(): void;
  [Symbol.dispose](): void;
}

/** A session of a sealed agent: the checkpoints it returns are sealed. */
export interface SealedSession<T = unknown> extends Omit<Session<T>, 'prompt' | 'reply' | 'resume' | 'checkpoint' | 'restore' | 'save'> {
  prompt(message: string, options?: RunOptions): Promise<Sealed<Outcome<T>>>;
  reply(answer: ResumeAnswer, options?: RunOptions): Promise<Sealed<Outcome<T>>>;
  resume(options?: RunOptions): Promise<Sealed<Outcome<T>>>;
  checkpoint(id?: string | number): Promise<SealedCheckpoint | null>;
  restore(idOrLabel: string | number): Promise<SealedCheckpoint>;
  save(checkpoint: SealedCheckpoint | Checkpoint): Promise<SealedCheckpoint>;
}

/**
 * An agent. Holds no WebAssembly memory between calls: dropping it releases it; `free()` (or a `using`
 * declaration) releases it at once, after which its methods throw ReleasedError.
 */
export interface Agent<T = unknown> {
  /** Starts a run with a user message. */
  prompt(message: string, options?: RunOptions): Promise<Outcome<T>>;
  /**
   * Continues a checkpoint (an object, or its JSON text) with the human's answer or decisions
   * (see ResumeAnswer).
   */
  resume(checkpoint: Checkpoint | SealedCheckpoint | string, answer?: ResumeAnswer, options?: RunOptions): Promise<Outcome<T>>;
  /** The same run as an async iterable of events; the last is `done` or `error`. */
  stream(input: { prompt: string } | { checkpoint: Checkpoint | string; answer?: ResumeAnswer }, options?: RunOptions): EventStream;
  /**
   * The conversation stored under `id` in `saver`: each call loads the checkpoint, runs, and saves it if
   * paused (or failed after progress); on completion it is deleted, or kept with `keepCompleted: true`.
   */
  session(saver: Saver, id: string, options?: SessionOptions): Session<T>;
  free(): void;
  [Symbol.dispose](): void;
}
/** The reference's name for an agent. */
export type AgentRunner = Agent;

export interface SessionOptions {
  /** Keep the checkpoint (and history) when the run completes, to continue the conversation later (default false). */
  keepCompleted?: boolean;
  /**
   * Records kept (default: all — a session is an append-only log of steps, each record holding what its
   * step added); the oldest unlabelled ones go first, labelled ones are kept. Also bounds `history()`.
   */
  maxHistory?: number;
  /** 'step' (default): save after every step; 'stop': save when the run starts and stops only. */
  autoSave?: 'step' | 'stop';
  /**
   * Each saver operation fails with SaverError code 'TIMEOUT' after this many ms (a store that never answers
   * cannot hang the session). An operation given up on may still complete later.
   */
  timeoutMs?: number;
  /**
   * Receives work that finishes after the call returned: on a store with a write interval (Workers KV: one
   * write per key per second) the head a listing reads and the last keys of a finished session are written
   * or deleted once the interval allows. Pass a Worker's `(p) => ctx.waitUntil(p)` so the isolate lives
   * for it; without it the work still runs while the process does (see `Session.settle()`).
   */
  waitUntil?: (work: Promise<unknown>) => void;
}

export interface Session<T = unknown> {
  readonly id: string;
  /**
   * Starts the session, or continues a completed, kept one with a new user message.
   * Throws SessionBusyError when it waits for a human.
   */
  prompt(message: string, options?: RunOptions): Promise<Outcome<T>>;
  /**
   * Answers what the session waits for (a string or decisions). SessionNotFoundError when nothing is saved;
   * SessionBusyError when another call got there first or the session is running (a call that loads it only
   * after that other call finished gets SessionNotFoundError — a completed session that is not kept is gone —
   * or DecisionError, nothing waits for an answer, for a kept one).
   */
  reply(answer: ResumeAnswer, options?: RunOptions): Promise<Outcome<T>>;
  /** Continues from the last saved step (after a crash); a session waiting for a human answers with its pause. */
  resume(options?: RunOptions): Promise<Outcome<T>>;
  /** A prompt, reply or resume as an async iterable of events (with checkpoint-loaded / checkpoint-saved). */
  stream(input: { prompt: string } | { answer: ResumeAnswer } | { resume: true }, options?: RunOptions): EventStream;
  /** The saved steps, newest first, read without loading conversations. */
  history(options?: { limit?: number; before?: number }): Promise<HistoryEntry[]>;
  /** The latest checkpoint, or the one saved as `step`. */
  checkpoint(step?: number | string): Promise<Checkpoint | null>;
  /** Names a saved step (a name moves from any other step). */
  label(step: number | string, name: string): Promise<void>;
  /** Makes a saved step (by its number or label) the head again; the next call continues from it as a new branch. */
  restore(stepOrLabel: number | string): Promise<Checkpoint>;
  /** Saves a checkpoint (e.g. a SaverError's) as the session's new head. */
  save(checkpoint: Checkpoint): Promise<Checkpoint>;
  /** Removes the session and its history. */
  delete(): Promise<void>;
  /**
   * The session's logged events numbered above `after` (every one without it), in order, from any process:
   * what a client that lost its connection missed (pass the last `seq` it saw). Step-level events, not
   * deltas; `done` and `error` carry a compact result and the error's `{ name, message, code? }`. With
   * `follow`, it then follows a call running the session elsewhere — each poll reads only the records added
   * since — until that call ends (or `timeoutMs`, default 60000, passes; `pollMs` default 250); leaving the
   * loop stops it. Rejects with SessionNotFoundError when nothing is stored under the id.
   */
  replay(options?: { after?: number; follow?: boolean | { timeoutMs?: number; pollMs?: number } }): AsyncIterable<AgentEvent & { seq: number }>;
  /**
   * Finishes what a store's write interval held back (a head behind the newest step, the last keys of a
   * finished session), waiting for the interval first. Calls start this themselves (see `waitUntil`);
   * `true` when nothing is left.
   */
  settle(): Promise<boolean>;
  free(): void;
  [Symbol.dispose](): void;
}

/** Creates an agent. Throws ConfigError for an unusable config. */
/**
 * `C` with every key `Known` lacks typed `never`: the config is generic (to infer the output type), which
 * turns TypeScript's excess-property check off; this puts it back, so `agent({ system })` or `maxSteps` is a
 * type error as it is a ConfigError at run time.
 */
export type NoExtraKeys<C, Known> = C & { [K in Exclude<keyof C, keyof Known>]: never };
export function agent<C extends AgentConfig & { sealed: true }>(config: NoExtraKeys<C, AgentConfig>): SealedAgent<InferOutput<C['output']>>;
export function agent<C extends AgentConfig>(config: NoExtraKeys<C, AgentConfig>): Agent<InferOutput<C['output']>>;

/** The sessions stored in a saver (their latest checkpoints' summaries, not their history entries). */
export function listSessions(saver: Saver, prefix?: string): Promise<SavedCheckpoint[]>;

/**
 * The size of this package's WebAssembly memory (it only grows), to watch a long-lived isolate; how often a trapped
 * instance was replaced; and which variant of the `.wasm` is loaded (null before the first call that needs it): the
 * package loads the smallest one with what the program imports (`core`, `sessions`, `providers`,
 * `providers_sessions` or `full`; see the README's sizes).
 */
export function memoryUsage(): { wasmBytes: number; instancesReplaced: number; variant: WasmVariant | null };

/** A variant of the package's `.wasm`: the core, plus sessions and savers, the providers, or everything (MCP too). */
export type WasmVariant = 'core' | 'sessions' | 'providers' | 'providers_sessions' | 'full';

/** Where `loadWasm()` may take the `.wasm` from. */
export type WasmSource = string | URL | Response | PromiseLike<Response> | ArrayBuffer | ArrayBufferView | WebAssembly.Module;

/**
 * Loads the package's WebAssembly now (it is otherwise loaded by the first call that needs it, never at import) —
 * the variant with what the program imports — from `from` when given, instead of where the package's entry for your
 * runtime looks: a function of the variant's file name (`resumable_agent_core_bg.wasm`, ...) answering a URL, a
 * Response, bytes or a compiled module (or undefined: where the package looks); or one of those for the variant
 * that is loaded. Use it to load early, to see a failure at start-up, or when your build puts the `.wasm` files
 * somewhere else. Rejects with WasmLoadError.
 */
export function loadWasm(from?: WasmSource | ((file: string) => WasmSource | undefined)): Promise<void>;

// ---- savers ----------------------------------------------------------------------------------------------

/**
 * Stores checkpoints by key. `put` replaces the whole value; `list` returns summaries, not whole runs.
 * Any object with get/put/delete (and list) is a saver; the built-in ones also have `exists`, `free()`
 * and `[Symbol.dispose]`.
 */
export interface Saver {
  get(key: string): Promise<Checkpoint | null>;
  /**
   * Stores a checkpoint. With a condition (only when `compareAndSet` is true): write only if nothing is
   * stored (`ifAbsent`) or the stored checkpoint's `thread.step` is `ifStep`; else throw with `code: 'CONFLICT'`.
   */
  put(key: string, checkpoint: Checkpoint, condition?: PutCondition): Promise<void>;
  delete(key: string): Promise<void>;
  list(prefix?: string): Promise<SavedCheckpoint[]>;
  exists?(key: string): Promise<boolean>;
  /** True when conditional puts are atomic: sessions then guarantee that exactly one concurrent reply runs. */
  readonly compareAndSet?: boolean;
}

export type PutCondition = { ifAbsent: true } | { ifStep: number };

/** A saver implemented by this package. */
export interface BuiltinSaver extends Saver {
  exists(key: string): Promise<boolean>;
  readonly compareAndSet: boolean;
  /** The largest value the store takes, in bytes, when it has a limit. */
  readonly maxValueBytes: number | undefined;
  /** Releases it (an IndexedDB saver closes its connection); later calls throw ReleasedError. */
  free(): void;
  [Symbol.dispose](): void;
}

/** An in-memory saver that stores copies and refuses invalid checkpoints. */
export function memorySaver(): BuiltinSaver;

/** The part of a Workers KV namespace binding a saver uses (`env.MY_KV` satisfies it). */
/**
 * What kvSaver uses of a Workers KV binding (`env.MY_KV` has all of it). A stand-in needs every method here;
 * `get(keys[], 'text')` (bulk reads, a Map) is used when it answers one, else keys are read one by one.
 */
export interface KVNamespaceLike {
  get(key: string): Promise<string | null>;
  getWithMetadata(key: string): Promise<{ value: string | null; metadata: unknown }>;
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
export function kvSaver(namespace: KVNamespaceLike, options?: KvSaverOptions): BuiltinSaver;

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
export function indexedDbSaver(options?: IndexedDbSaverOptions): BuiltinSaver;

/**
 * Node only: one file per key in `dir` (created if needed), written atomically (temp file, fsync, rename);
 * conditional writes hold an exclusive lock file, so exactly one concurrent reply runs, across processes too.
 */
export function fileSaver(options: { dir: string }): BuiltinSaver;

/** The part of a Durable Object namespace binding the saver uses (`env.CHECKPOINTS` satisfies it). */
export interface DurableObjectNamespaceLike {
  idFromName(name: string): unknown;
  get(id: any): { fetch(input: string, init?: { method?: string; body?: string }): Promise<{ json(): Promise<any> }> };
}

/**
 * Checkpoints in a Durable Object of the exported CheckpointStore class: strongly consistent, compare-and-set,
 * 2 MB per value. `name` picks the object (default "default"); one object serialises every session in it.
 */
export function durableObjectSaver(namespace: DurableObjectNamespaceLike, options?: { name?: string }): BuiltinSaver;

/** The part of a node:sqlite `DatabaseSync` (or a better-sqlite3 `Database`) sqliteSaver uses. */
export interface SqliteDatabaseLike {
  prepare(sql: string): { run(...params: unknown[]): { changes: number | bigint }; all(...params: unknown[]): unknown[] };
  exec(sql: string): unknown;
}

/**
 * Checkpoints in SQLite (Node, Bun, Deno): one row per stored key, each save one statement; the table (default
 * `resumable_agent_checkpoints`) is made on first use. A connection with no busy timeout gets `busyTimeoutMs`
 * (default 5000) so a second process waits for the write lock. ConfigError for a table name that is not
 * `[A-Za-z_][A-Za-z0-9_]*` (at most 63) or starts with `sqlite_`.
 */
export function sqliteSaver(db: SqliteDatabaseLike, options?: { table?: string; busyTimeoutMs?: number }): BuiltinSaver;

/** The part of a D1 binding (`env.DB`, or `env.DB.withSession()`) d1Saver uses. */
export interface D1DatabaseLike {
  prepare(sql: string): { bind(...params: unknown[]): any };
  batch(statements: any[]): Promise<Array<{ meta?: { changes?: number } }>>;
}

/**
 * Checkpoints in Cloudflare D1: one row per stored key, compare-and-set in the statement, a value over D1's
 * 2,000,000-byte row limit stored in several rows written in one batch and read back whole; listing reads an index,
 * never values. ConfigError for an invalid table name, `_cf_…` and `sqlite_…` included.
 */
export function d1Saver(db: D1DatabaseLike, options?: { table?: string }): BuiltinSaver;

/** Anything with `query(text, params)` answering `{ rows, rowCount }`: a `pg` Pool or Client. */
export interface PostgresClientLike {
  query(text: string, params?: unknown[]): Promise<{ rows: any[]; rowCount?: number | null }>;
}

/**
 * Checkpoints in Postgres: one row per stored key, every write one conditional statement (no transaction held), so
 * a shared Client and many processes are safe; the table is made on first use, in `schema` when given (it must
 * exist). ConfigError for an invalid table or schema name, `pg_…` included.
 */
export function postgresSaver(client: PostgresClientLike, options?: { table?: string; schema?: string }): BuiltinSaver;

/** The Durable Object class behind durableObjectSaver: export it from your Worker and bind it. */
export class CheckpointStore {
  constructor(ctx: { storage: any }, env?: unknown);
  fetch(request: Request): Promise<Response>;
}

/** A store written in JS at the text level (what the file and Durable Object savers are). */
export interface TextStore {
  getText(key: string): Promise<string | null>;
  /** `summary` is JSON text; reject with `code: 'CONFLICT'` when a condition does not hold. `step`: the summary's step (0 when none), what `{ ifStep }` compares. */
  putText(key: string, value: string, summary: string, condition?: PutCondition, step?: number): Promise<void>;
  delete(key: string): Promise<void>;
  list(prefix: string): Promise<{ key: string; summary: string }[]>;
  /** Optional: the sessions under `prefix` alone (keys without `#~`, not their step records), as `list` answers. */
  listHeads?(prefix: string): Promise<{ key: string; summary: string }[]>;
  /** Optional: the values of `keys`, in order (`null` where nothing is stored), in one round trip. */
  getMany?(keys: string[]): Promise<(string | null)[]>;
  readonly compareAndSet: boolean;
  readonly maxValueBytes?: number;
}

/** A built-in saver over your text store: validation, summaries and typed errors come from the package. */
export function textStoreSaver(store: TextStore): BuiltinSaver;

// ---- errors ----------------------------------------------------------------------------------------------

/** Throw it in a tool to pause the run and ask the human `question`. */
export class InterruptError extends Error {
  constructor(question: string, options?: {
    /** Choices a UI can offer. */
    options?: string[];
    /** Anything else a UI needs (plain JSON). */
    data?: unknown;
    /** How long the question stays answerable; then the tool's onExpire policy applies. */
    expiresInMs?: number;
    cause?: unknown;
  });
  readonly question: string;
  readonly options?: string[];
  readonly data?: unknown;
  readonly expiresInMs?: number;
}

/** Base class of the errors this package throws. */
export class AgentError extends Error {}

/** A checkpoint that cannot be resumed; nothing ran. */
export class CheckpointError extends AgentError {
  /** JSON path of the problem, e.g. `messages[2].content[0].type`. */
  readonly path?: string;
  /**
   * INVALID (a bad shape or broken invariant, at `path`), VERSION (newer format), JSON (not JSON), TOO_LARGE /
   * TOO_DEEP (over the limits, refused before parsing), SIGNATURE (changed, unsigned, unknown key, or sealed
   * and unopenable), BINDING (signed for another agent — see CheckpointKeys.agent — or saved under another
   * session id).
   */
  readonly code: 'INVALID' | 'VERSION' | 'JSON' | 'TOO_LARGE' | 'TOO_DEEP' | 'SIGNATURE' | 'BINDING';
}

/** The config or an argument is unusable; nothing ran. */
export class ConfigError extends AgentError {}

/** The run used up maxIterations model calls. */
export class MaxIterationsError extends AgentError {
  readonly maxIterations: number;
  /** The run so far: resume it with a higher maxIterations. */
  readonly checkpoint: Checkpoint;
}

/** The run's token budget is spent (usage counted across resumes reached a limit before a model call). */
export class BudgetExceededError extends AgentError {
  readonly limit: 'totalTokens' | 'inputTokens' | 'outputTokens';
  readonly budget: TokenBudget;
  readonly usage: Usage;
  /** The run so far: resume it with a larger budget to continue. */
  readonly checkpoint: Checkpoint;
}

/** The agent changed since the run paused mid-turn and its `onDrift` is 'error'. Nothing ran. */
export class ConfigDriftError extends AgentError {
  readonly added: string[];
  readonly removed: string[];
  /** Tools whose schema or approval rule changed; 'instructions' and 'approval' (the policy) when they did. */
  readonly changed: string[];
  /** The run as it was: resume it with onDrift 'reapprove' or 'continue', or with the agent it paused under. */
  readonly checkpoint: Checkpoint;
}

/** The model threw or answered with something unusable. */
export class ModelError extends AgentError {
  /** For HTTP providers: "anthropic", "openai", "openai-responses", "gemini", "workers-ai". */
  readonly provider?: string;
  /** For HTTP providers: the status, or null for a network failure or timeout. */
  readonly status?: number | null;
  /** For HTTP providers: whether trying again may work (408, 429, 529, 5xx, network). */
  readonly retryable?: boolean;
  /** The run before the failed call: resume it with `''` once the model works again. */
  readonly checkpoint: Checkpoint;
  /**
   * Set when the model stopped without an answer to keep: `max_tokens` (cut at its output limit; raise
   * `maxTokens` and resume with `''`), `refusal`, `content_filter`, `recitation` or `prompt_blocked`
   * (Gemini). Nothing of that answer was recorded
   * and no tool call of it ran.
   */
  readonly stopReason?: StopReason;
  /** With `stopReason`: the text the model wrote before it stopped (a refusal's explanation). */
  readonly text?: string;
  /**
   * With `stopReason`: the tokens that call spent, when the provider said. They are also in
   * `checkpoint.usage`: a run's usage counts every call made, kept answers or not.
   */
  readonly usage?: Usage;
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

/** A resume's answer or decisions do not fit what the run waits for. Nothing ran. */
export class DecisionError extends AgentError {
  /** The interrupt the problem is about, when there is one. */
  readonly interruptId?: string;
}

/** A pending interrupt expired and its tool's onExpire policy is 'error'. Nothing ran. */
export class InterruptExpiredError extends AgentError {
  readonly interruptId: string;
  /** When it expired (ms since the epoch). */
  readonly expiresAt: number;
  /** The unchanged run. */
  readonly checkpoint: Checkpoint;
}

/**
 * A guardrail tripped (or threw): an input guardrail before the turn's first model call (nothing was sent to the
 * model), or an output guardrail on the final answer.
 */
export class GuardrailError extends AgentError {
  /** The guardrail's name (its function's name, or `guardrails.input[i]`). */
  readonly guardrail: string;
  readonly kind: 'input' | 'output';
  /** What the guardrail returned as `info` (a throw: `{ error: message }`). */
  readonly info: unknown;
  /**
   * The run: for an input guardrail, with the user's message and no model call (resuming it with '' checks it
   * again); for an output guardrail, with the answer that tripped.
   */
  readonly checkpoint: Checkpoint;
}

/** The model's answer missed the agent's `output` schema more than `maxOutputRetries` times. */
export class OutputError extends AgentError {
  /** Answers that did not validate. */
  readonly attempts: number;
  /** What was wrong with the last one. */
  readonly problem: string;
  /** The run with the last answer: resume it with '' to give the model another `maxOutputRetries` tries. */
  readonly checkpoint: Checkpoint;
}

/** The run was stopped by its signal (or by leaving a stream's loop). */
export class AbortedError extends AgentError {
  /** The progress so far: resume it to continue. */
  readonly checkpoint: Checkpoint;
}

/**
 * An MCP server could not be reached or refused (a wrong token: status 401). In a run, `checkpoint` is the
 * run from before the call (the call is not recorded as done: resuming it calls it again; a call resumed with
 * answers to its requests for input waits for them again). From `mcpTools()`, no checkpoint.
 */
export class McpError extends AgentError {
  /** The server's origin (`http://host:port`: never a path, query or credential). */
  readonly server: string;
  /** The HTTP status it answered with, or null when it did not answer. */
  readonly status: number | null;
  readonly checkpoint?: Checkpoint;
}

/** Options of {@link mcpTools}. */
export interface McpToolsOptions {
  /** The server's Streamable HTTP endpoint. */
  url: string;
  /** Sent with every request (e.g. `{ authorization: 'Bearer …' }`); never in a checkpoint, event or error. */
  headers?: Record<string, string>;
  /** Put before each tool's name (the server's names stay on the wire). */
  prefix?: string;
  /** How long one request may take (default 60 000), even through a `fetch` of your own that ignores its signal. */
  /** Retries of these tools' calls, as defineTool's. */
  retry?: ToolRetry;
  timeoutMs?: number;
  /**
   * The most bytes of one answer read — a JSON body, or one event of a stream (default 16 MiB). A longer one
   * fails the request with McpError; so does JSON that would take more than 32 times its length in memory.
   */
  maxResponseBytes?: number;
  /** Stops the listing. */
  signal?: AbortSignal;
  /** Sends the listing's and every call's requests instead of the global `fetch` (adds auth, routes to a service binding, …). */
  fetch?: (url: string, init: RequestInit) => Promise<Response> | Response;
}

/** A tool of an MCP server, as `mcpTools()` returns it: usable in `agent({ tools })`. */
export interface McpTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  /** Where it lives (no header). */
  readonly mcp: { readonly server: string; readonly tool: string; readonly protocol: string };
}

/**
 * The tools of an MCP server (Streamable HTTP; 2026-07-28, falling back to 2025-11-25). A server's request for
 * input pauses the run with `elicitation` interrupts; call `mcpTools()` again (with the same headers) to resume.
 * Rejects with McpError when the server cannot be reached or refuses.
 */
export function mcpTools(options: McpToolsOptions): Promise<McpTool[]>;

/** A method was called on an agent, session or saver after free() (or the end of its using block). */
export class ReleasedError extends AgentError {}

/**
 * The package's WebAssembly could not be loaded (the first call that needed it rejects with this; importing the
 * package never fails). The message names the package and what was tried, and ends with the fix.
 */
export class WasmLoadError extends Error {
  readonly name: 'WasmLoadError';
  /** Where the `.wasm` was looked for (a URL), when it was. */
  readonly url: string | undefined;
  /** The HTTP status it was answered with, when it was fetched. */
  readonly status: number | undefined;
  /** What to do about it, in one line (also the end of the message). */
  readonly fix: string | undefined;
}

/**
 * The WebAssembly instance trapped (out of memory) while the call was in flight. The package replaced the
 * instance; later calls work. Continue from the last saved checkpoint (a session: session.resume()).
 */
export class InstanceLostError extends AgentError {
  /** The trap (a WebAssembly.RuntimeError). */
  readonly cause: unknown;
}

/** A saver failed. In a session, `checkpoint` holds the run that could not be saved. */
export class SaverError extends AgentError {
  /**
   * TOO_LARGE: a value over the store's limit (KV 25 MiB, a Durable Object 2 MB), refused before writing;
   * KEY_LENGTH: a key the store cannot hold; CORRUPT: a stored value that is not a checkpoint; BACKEND: the
   * store failed (its error is `cause`); OPTION: a saver option the store refuses; QUOTA_EXCEEDED: IndexedDB's
   * quota is full; BLOCKED: another tab holds an old IndexedDB connection; CONFLICT: a conditional put found
   * the key changed; TIMEOUT: an operation took longer than the session's `timeoutMs`; NOT_CHECKPOINT:
   * `saver.get(key)` of a key that holds a session's head or one of its step records (read sessions through
   * `session.checkpoint()` / `history()`).
   */
  readonly code: 'TOO_LARGE' | 'KEY_LENGTH' | 'CORRUPT' | 'BACKEND' | 'OPTION' | 'QUOTA_EXCEEDED' | 'BLOCKED' | 'CONFLICT' | 'TIMEOUT' | 'NOT_CHECKPOINT';
  readonly checkpoint?: Checkpoint;
  readonly cause?: unknown;
}

/** assertComplete() was given a paused run. */
export class RunInterruptedError extends AgentError {
  readonly question: string;
  readonly checkpoint: Checkpoint;
}
