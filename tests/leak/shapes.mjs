// Request shapes of a long-lived isolate, for the leak test (tests/leak/leak.test.mjs) and `make bench`.
//
//   node --expose-gc tests/leak/shapes.mjs <shape> [requests] [warmup]   -> one JSON line on stdout
//
// Each request builds what a Worker request would (a fresh agent, session or saver) and drops it. The loop
// never yields to the event loop (every await settles in microtasks), so FinalizationRegistry callbacks
// cannot run, as in hosts that never run them: whatever is not released when dropped shows up here.
// Memory is sampled after a full GC every `requests / 10` requests; `keptBytesPerRequest` is the
// least-squares slope of (JS heap + external, which includes the wasm memory) over those samples.
import {
  agent, agentTool, defineTool, InterruptError, scriptedModel, memorySaver, kvSaver, openai, openaiResponses, gemini, mcpTools, anthropic,
  loadWasm, memoryUsage, sqliteSaver,
} from 'resumable-agent';
import { measureShape } from './measure.mjs';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

// node:sqlite (Node 22+) only for its shape: `make bench` runs these shapes on Node 20.
const sqliteDb = process.argv[2] === 'session-sqlite' ? new (await import('node:sqlite')).DatabaseSync(':memory:') : undefined;

// The package loads its wasm on first use; loaded here so the figures start from a running instance.
await loadWasm();
const wasmBytes = () => memoryUsage().wasmBytes;

const askUser = defineTool({
  name: 'ask_user', schema: (s) => ({ question: s.string().required() }),
  handle: ({ question }) => { throw new InterruptError(question); },
});
const lookup = defineTool({ name: 'lookup', schema: (s) => ({ key: s.string() }), handle: ({ key }) => ({ key, value: `v-${key}` }) });
const send = defineTool({ name: 'send', needsApproval: true, schema: (s) => ({ to: s.string() }), handle: ({ to }) => `sent to ${to}` });
const broken = defineTool({ name: 'broken', handle: () => { throw new TypeError('disk on fire'); } });
const call = (id, name, input) => ({ type: 'tool_use', id, name, input });

const asking = scriptedModel([{ content: [call('q1', 'ask_user', { question: 'Deadline?' })] }, (req) => `due ${req.messages.at(-1).content[0].content}`]);
const cfg = { tools: [askUser, lookup, send, broken], model: asking };
const paused = await agent(cfg).prompt('go');
const lifetime = new AbortController();
const pausedText = JSON.stringify(paused.checkpoint);

/** A KV namespace stand-in: the four methods a Workers KV binding has, over a Map. */
function kvStandIn() {
  const m = new Map();
  return {
    async get(k) { return m.get(k)?.value ?? null; },
    async getWithMetadata(k) { const e = m.get(k); return { value: e?.value ?? null, metadata: e?.metadata ?? null }; },
    async put(k, value, o) { m.set(k, { value, metadata: o?.metadata }); },
    async delete(k) { m.delete(k); },
    size: () => m.size,
    async list({ prefix = '' } = {}) {
      const keys = [...m.keys()].filter((k) => k.startsWith(prefix)).sort().map((name) => ({ name, metadata: m.get(name).metadata }));
      return { keys, list_complete: true };
    },
  };
}

const memory = memorySaver();
const kv = kvStandIn();
/** The background tasks of KV sessions (their waitUntil), awaited every DRAIN requests. */
const settling = [];
const DRAIN = Number(process.env.LEAK_DRAIN ?? 2000);
await agent(cfg).session(memory, 'replayed').prompt('go');
// The real OpenTelemetry SDK, its spans exported to nowhere: what stays is ours (or the SDK's).
const dropping = { export(spans, done) { done({ code: 0 }); }, async shutdown() {} };
const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(dropping)] }).getTracer('leak');
const failing = { get: async () => null, put: async () => { throw new Error('ECONNRESET'); }, delete: async () => {} };

const expect = (cond, what) => { if (!cond) throw new Error(`shape check failed: ${what}`); };

const KEYS = { current: 'k1', keys: { k1: 'leak test secret, not real' } };
const signedCfg = { ...cfg, checkpointKeys: KEYS };
const sealedCfg = { ...cfg, checkpointKeys: KEYS, sealed: true };
const signedPaused = await agent(signedCfg).prompt('go');
const signedText = JSON.stringify(signedPaused.checkpoint);
const forgedText = signedText.replace('"iterations":1', '"iterations":0');
const stuck = { get: () => new Promise(() => {}), put: async () => {}, delete: async () => {} };

// A streamed Chat Completions answer, served by a fetch stand-in (a Response over the SSE text: reading it
// settles in microtasks, so the loop still never yields).
const chunk = (delta, finish = null) => JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] });
const sseText = [chunk({ role: 'assistant', content: '' }), chunk({ content: 'Hello ' }), chunk({ content: 'there.' }), chunk({}, 'stop'),
  JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 2 } }), '[DONE]'].map((d) => `data: ${d}\n\n`).join('');
const streamingProvider = openai({ apiKey: 'k-leak-test', model: 'm', baseURL: 'http://127.0.0.1:9/v1' });
const realFetch = globalThis.fetch;
const fakeFetch = async () => new Response(sseText, { status: 200, headers: { 'content-type': 'text/event-stream' } });
const cityOutput = (s) => ({ city: s.string().required() });
// A streamed Responses answer with a reasoning item (kept in the checkpoint), by the same stand-in.
const reasoningItem = { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Short.' }], encrypted_content: 'gAAAA-leak' };
const textItem = { type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello there.', annotations: [] }] };
const responsesEvents = [
  { type: 'response.created', response: { status: 'in_progress', output: [] } },
  { type: 'response.output_item.added', output_index: 0, item: { ...reasoningItem, encrypted_content: 'partial' } },
  { type: 'response.output_item.done', output_index: 0, item: reasoningItem },
  { type: 'response.output_item.added', output_index: 1, item: { ...textItem, content: [] } },
  { type: 'response.content_part.added', output_index: 1, content_index: 0, part: { type: 'output_text', text: '' } },
  { type: 'response.output_text.delta', output_index: 1, content_index: 0, delta: 'Hello ' },
  { type: 'response.output_text.delta', output_index: 1, content_index: 0, delta: 'there.' },
  { type: 'response.output_item.done', output_index: 1, item: textItem },
  { type: 'response.completed', response: { status: 'completed', output: [reasoningItem, textItem], usage: { input_tokens: 3, output_tokens: 2 } } },
];
const responsesText = responsesEvents.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('');
// A streamed Gemini answer: text in pieces, an empty signed part last (kept in the checkpoint).
const geminiText = [
  { candidates: [{ content: { role: 'model', parts: [{ text: 'Hello ' }] } }], responseId: 'r1' },
  { candidates: [{ content: { role: 'model', parts: [{ text: 'there.' }] } }], responseId: 'r1' },
  { candidates: [{ content: { role: 'model', parts: [{ text: '', thoughtSignature: 'sig-leak' }] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2 }, responseId: 'r1' },
].map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`).join('');
const geminiProvider = gemini({ apiKey: 'k-leak-test', model: 'm', baseURL: 'http://127.0.0.1:9/v1beta' });
const responsesProvider = openaiResponses({ apiKey: 'k-leak-test', model: 'm', baseURL: 'http://127.0.0.1:9/v1' });

// A 2026-07-28 MCP server, served by a fetch stand-in: discover, list, and `book`, which asks for a date first.
function mcpFetch(_url, init) {
  const m = JSON.parse(init.body);
  const reply = (result) => Response.json({ jsonrpc: '2.0', id: m.id, result: { resultType: 'complete', ...result } });
  if (m.method === 'server/discover') return reply({ supportedVersions: ['2026-07-28'], capabilities: { tools: {} } });
  if (m.method === 'tools/list') return reply({ tools: [{ name: 'book', description: 'Books.', inputSchema: { type: 'object', properties: { city: { type: 'string' } } } }] });
  const date = m.params.inputResponses?.date?.content?.date;
  if (!date) {
    return Response.json({ jsonrpc: '2.0', id: m.id, result: { resultType: 'input_required', requestState: 'st', inputRequests: {
      date: { method: 'elicitation/create', params: { mode: 'form', message: 'Which day?', requestedSchema: { type: 'object', properties: { date: { type: 'string', format: 'date' } }, required: ['date'] } } },
    } } });
  }
  return reply({ content: [{ type: 'text', text: `booked on ${date}` }] });
}
const booking = (req) => (req.messages.length === 1 ? { content: [call('b1', 'book', { city: 'Oslo' })] } : { content: [{ type: 'text', text: `read: ${req.messages.at(-1).content[0].content}` }] });

export const SHAPES = {
  'mcp-elicitation': async () => {
    globalThis.fetch = mcpFetch;
    try {
      const tools = await mcpTools({ url: 'http://127.0.0.1:9/mcp', headers: { authorization: 'Bearer leak' } });
      const paused = await agent({ model: booking, tools }).prompt('book');
      const text = JSON.stringify(paused.checkpoint);
      const done = await agent({ model: booking, tools }).resume(text, { type: 'accept', content: { date: '2026-11-30' } });
      expect(paused.interrupted && done.text === 'read: booked on 2026-11-30', 'paused on the elicitation, then booked');
    } finally {
      globalThis.fetch = realFetch;
    }
  },
  'stream-provider': async () => {
    globalThis.fetch = fakeFetch;
    try {
      let text = '';
      const s = agent({ model: streamingProvider }).stream({ prompt: 'hi' });
      for await (const e of s) if (e.type === 'text-delta') text += e.text;
      expect(text === 'Hello there.' && (await s.result).text === 'Hello there.', 'streamed and completed');
    } finally {
      globalThis.fetch = realFetch;
    }
  },
  'responses-stream': async () => {
    globalThis.fetch = async () => new Response(responsesText, { status: 200, headers: { 'content-type': 'text/event-stream' } });
    try {
      let text = '';
      const s = agent({ model: responsesProvider }).stream({ prompt: 'hi' });
      for await (const e of s) if (e.type === 'text-delta') text += e.text;
      const r = await s.result;
      expect(text === 'Hello there.' && r.checkpoint.messages[1].content[0].encryptedContent === 'gAAAA-leak', 'streamed, reasoning kept');
    } finally {
      globalThis.fetch = realFetch;
    }
  },
  'gemini-stream': async () => {
    globalThis.fetch = async () => new Response(geminiText, { status: 200, headers: { 'content-type': 'text/event-stream' } });
    try {
      let text = '';
      const s = agent({ model: geminiProvider }).stream({ prompt: 'hi' });
      for await (const e of s) if (e.type === 'text-delta') text += e.text;
      const r = await s.result;
      expect(text === 'Hello there.' && r.checkpoint.messages[1].content.at(-1).signature === 'sig-leak', 'streamed, signature kept');
    } finally {
      globalThis.fetch = realFetch;
    }
  },
  'provider-complete': async () => {
    globalThis.fetch = async () => Response.json({ choices: [{ index: 0, message: { role: 'assistant', content: 'Hi.' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1 } });
    try {
      const r = await agent({ model: streamingProvider }).prompt('hi');
      expect(r.text === 'Hi.', 'a plain provider request');
    } finally {
      globalThis.fetch = realFetch;
    }
  },
  'structured-output': async () => {
    const a = agent({ output: cityOutput, model: scriptedModel([{ content: [call('f1', 'final_answer', {})] }, { content: [call('f2', 'final_answer', { city: 'Oslo' })] }]) });
    const r = await a.prompt('go');
    expect(r.structured.city === 'Oslo', 'structured after a correction');
  },
  'prompt-complete': async () => {
    const r = await agent({ tools: [lookup], model: scriptedModel([{ content: [call('l', 'lookup', { key: 'k' })] }, 'done']) }).prompt('go');
    expect(r.text === 'done', 'completed');
  },
  // Every request a config never seen before: the prepared-config cache turns over (at most 4 kept).
  'distinct-configs': async (i) => {
    const r = await agent({ instructions: `Agent number ${i}.`, tools: [lookup], model: scriptedModel(['done']) }).prompt('go');
    expect(r.text === 'done', 'completed');
  },
  // A traced agent: a prompt that pauses and the resume that finishes it, with content recorded.
  'traced': async () => {
    const a = agent({ ...cfg, telemetry: { tracer, agentName: 'leak', recordContent: true } });
    const p = await a.prompt('go');
    const r = await a.resume(p.checkpoint, 'May');
    expect(r.text === 'due May' && r.checkpoint.traceparent?.length === 55, 'traced and completed');
  },
  // An input guardrail that trips, and an output guardrail that passes (async).
  'guardrails': async (i) => {
    const a = agent({ model: scriptedModel(['fine']), guardrails: { input: [({ messages }) => (messages.at(-1).content.includes('secret') ? { tripwire: true, info: 'no' } : undefined)], output: [async () => undefined] } });
    if (i % 2 === 0) {
      const e = await a.prompt('a secret').catch((x) => x);
      expect(e.name === 'GuardrailError', `tripped: ${e.message}`);
    } else {
      expect((await a.prompt('hello')).text === 'fine', 'passed');
    }
  },
  // An approval policy (async) over every call: a payment that waits for two approvers, approved by one and then by
  // another, beside a call the policy denies and one it remembers; and a budget.
  'approval-policy': async () => {
    const approval = async ({ toolName }) => (toolName === 'send' ? { ask: true, approvers: 2 } : toolName === 'broken' ? 'deny' : 'allow');
    const a = agent({ tools: [send, lookup, broken], approval, budget: { totalTokens: 1_000_000 }, model: scriptedModel([{ content: [call('s', 'send', { to: 'ann' }), call('b', 'broken', {}), call('l', 'lookup', { key: 'k' })], usage: { inputTokens: 5, outputTokens: 5 } }, 'ok']) });
    const p = await a.prompt('go');
    const one = await a.resume(p.checkpoint, { decisions: { s: { type: 'approve', by: 'ann', remember: 'tool' } } });
    const r = await a.resume(one.checkpoint, { decisions: { s: { type: 'approve', by: 'bob' } } });
    expect(one.interrupted === true && r.text === 'ok', 'approved by two and completed');
  },
  // A parent whose subagent pauses on an approval (a child agent built per request, its run nested in the parent's
  // checkpoint), approved through the parent, with the child's events forwarded with their path.
  'subagent': async () => {
    const child = agent({ tools: [send], model: scriptedModel([{ content: [call('k', 'send', { to: 'ann' })] }, 'sent']) });
    const a = agent({ tools: [lookup, agentTool({ name: 'mailer', agent: child })], model: scriptedModel([{ content: [call('l', 'lookup', { key: 'k' }), call('m', 'mailer', { task: 'mail ann' })] }, 'ok']) });
    let events = 0;
    const p = await a.prompt('go', { onEvent: () => { events += 1; } });
    const r = await a.resume(p.checkpoint, { decisions: { 'm/k': { type: 'approve' } } });
    expect(p.interrupts[0].id === 'm/k' && r.text === 'ok' && events > 0, 'approved through the parent and completed');
  },
  // A subagent whose model fails after its first call: the parent completes, keeping the child's run
  // (failedSubagents), which a child agent built per request resumes to its end.
  'subagent-failed': async () => {
    let n = 0;
    const down = async () => { n += 1; if (n === 1) return { content: [call('k', 'lookup', { key: 'x' })] }; throw new Error('overloaded'); };
    const a = agent({ tools: [agentTool({ name: 'mailer', agent: agent({ tools: [lookup], model: down }) })], model: scriptedModel([{ content: [call('m', 'mailer', { task: 'mail ann' })] }, 'ok']) });
    const r = await a.prompt('go');
    const kept = r.checkpoint.failedSubagents?.[0]?.checkpoint;
    const back = await agent({ tools: [lookup], model: scriptedModel([{ content: [call('k', 'lookup', { key: 'x' })] }, 'mailed']) }).resume(kept, '');
    expect(r.text === 'ok' && back.text === 'mailed', 'kept and resumed');
  },
  // A subagent in a session: its steps numbered and logged with the parent's, replayed with their path.
  'subagent-session': async () => {
    const child = agent({ tools: [send], model: scriptedModel([{ content: [call('k', 'send', { to: 'ann' })] }, 'sent']) });
    const a = agent({ tools: [agentTool({ name: 'mailer', agent: child })], model: scriptedModel([{ content: [call('m', 'mailer', { task: 'mail ann' })] }, 'ok']) });
    const saver = memorySaver();
    const p = await a.session(saver, 's').prompt('go');
    const r = await a.session(saver, 's', { keepCompleted: true }).reply({ decisions: { 'm/k': { type: 'approve' } } });
    let nested = 0;
    for await (const e of a.session(saver, 's').replay()) if (e.path) nested += 1;
    expect(p.interrupts[0].id === 'm/k' && r.text === 'ok' && nested > 0, 'logged and replayed');
  },
  // A turn's three calls running together (issue 36): two async lookups around a question; the pause keeps both
  // results and the resume runs neither again.
  'tools-together': async () => {
    let ran = 0;
    const slowLookup = defineTool({ name: 'lookup', handle: async ({ key }) => { ran += 1; await Promise.resolve(); return `v-${key}`; } });
    const script = () => scriptedModel([{ content: [call('a', 'lookup', { key: 'a' }), call('q', 'ask_user', { question: 'Day?' }), call('b', 'lookup', { key: 'b' })] }, 'planned']);
    const p = await agent({ tools: [slowLookup, askUser], model: script() }).prompt('go');
    const r = await agent({ tools: [slowLookup, askUser], model: script() }).resume(p.checkpoint, 'Friday');
    expect(p.checkpoint.toolResults.length === 2 && r.text === 'planned' && ran === 2, 'kept at the pause, none ran again');
  },
  // The run's signal stops a turn whose middle call never settles: the others are dropped or taken, the hung
  // call's promise is left pending forever (what awaited it must still be freed).
  'tools-together-abort': async () => {
    const controller = new AbortController();
    const hang = defineTool({ name: 'hang', handle: () => { controller.abort(); return new Promise(() => {}); } });
    const model = scriptedModel([{ content: [call('a', 'lookup', { key: 'a' }), call('h', 'hang', {}), call('b', 'lookup', { key: 'b' })] }, 'never']);
    const e = await agent({ tools: [lookup, hang], model }).prompt('go', { signal: controller.signal }).catch((x) => x);
    expect(e?.name === 'AbortedError' && e.checkpoint.toolResults.length === 1, 'aborted, the first call taken');
  },
  // A tool that never settles, stopped by its timeout, and a model function that never answers, stopped by the run's
  // signal: the promises stay pending forever; what awaited them must be freed.
  'hung-tool-and-model': async () => {
    const hung = defineTool({ name: 'hung', timeoutMs: 1, handle: () => new Promise(() => {}) });
    const r = await agent({ tools: [hung], model: scriptedModel([{ content: [call('h', 'hung', {})] }, 'gave up']) }).prompt('go');
    const controller = new AbortController();
    const e = await agent({ model: () => { controller.abort(); return new Promise(() => {}); } }).prompt('go', { signal: controller.signal }).catch((x) => x);
    expect(r.text === 'gave up' && e?.name === 'AbortedError', 'timed out, and aborted');
  },
  // A run of 12 lookups summarized at 6 messages (issue 36): summary calls by the agent's own model function.
  'summarize': async () => {
    const model = async (request) => {
      if (request.tools.length === 0) return { content: [{ type: 'text', text: 'so far: lookups' }] };
      const last = request.messages.findLast((m) => m.role === 'assistant')?.content.find((b) => b.type === 'tool_use');
      const i = last ? Number(last.id.slice(1)) + 1 : 0;
      return i < 12 ? { content: [call(`c${i}`, 'lookup', { key: `k${i}` })] } : { content: [{ type: 'text', text: 'done' }] };
    };
    const r = await agent({ model, tools: [lookup], compaction: { summarize: { maxMessages: 6 } } }).prompt('go');
    expect(r.text === 'done' && r.checkpoint.summarized?.messages > 0, 'summarized');
  },
  // A tool that times out once (a host timer per attempt, cleared) and answers on its retry; the timed-out attempt
  // settles later, ignored.
  'tool-retry-timeout': async () => {
    let calls = 0;
    const late = () => new Promise((resolve) => setTimeout(() => resolve('late'), 30));
    const slow = defineTool({ name: 'slow', timeoutMs: 1, retry: { maxAttempts: 2 }, handle: () => { calls += 1; return calls === 1 ? late() : 'fast'; } });
    const r = await agent({ tools: [slow], model: scriptedModel([{ content: [call('s', 'slow', {})] }, 'done']) }).prompt('go');
    expect(r.text === 'done' && calls === 2, 'retried after the timeout');
  },
  'prompt-paused': async () => {
    const r = await agent(cfg).prompt('go');
    expect(r.interrupted === true, 'paused');
  },
  'resume-complete': async () => {
    const r = await agent(cfg).resume(pausedText, 'May');
    expect(r.text === 'due May', 'completed');
  },
  'approvals': async () => {
    const a = agent({ tools: [send], model: scriptedModel([{ content: [call('s', 'send', { to: 'ann' })] }, 'ok']) });
    const p = await a.prompt('go');
    const r = await a.resume(p.checkpoint, { decisions: [{ type: 'approve' }] });
    expect(r.text === 'ok', 'approved and completed');
  },
  'stream': async () => {
    let last;
    for await (const e of agent(cfg).stream({ checkpoint: pausedText, answer: 'May' })) last = e;
    expect(last.type === 'done', 'stream ends with done');
  },
  'session-memory': async (i) => {
    const id = `s${i % 50}`;
    await agent(cfg).session(memory, id).prompt('go');
    const r = await agent(cfg).session(memory, id).reply('May');
    expect(r.text === 'due May', 'session completed');
  },
  'session-kv': async (i) => {
    // A session per pair of requests, as the example Worker makes them. KV takes one write per key per
    // second: the keys the reply wrote are deleted about a second later, in the task handed to waitUntil.
    // Every 2,000 requests (just before a sample) those tasks are awaited, as a Worker's isolate runs them.
    if (i % DRAIN === 0) {
      await Promise.all(settling.splice(0));
      expect(kv.size() === 0, `every finished session deleted, ${kv.size()} keys left`);
    }
    const id = `s${i}`;
    const options = { waitUntil: (p) => settling.push(p) };
    const saver = kvSaver(kv, { prefix: 'session:' }); // built per request, as the example Worker does
    await agent(cfg).session(saver, id, options).prompt('go');
    const r = await agent(cfg).session(kvSaver(kv, { prefix: 'session:' }), id, options).reply('May');
    expect(r.text === 'due May', 'session completed');
  },
  'session-sqlite': async (i) => {
    // A service's shape: one SQLite connection for the process, a saver per request over it (node:sqlite is
    // synchronous: the loop still never yields). Completed sessions are deleted, so the table stays small.
    const id = `s${i}`;
    await agent(cfg).session(sqliteSaver(sqliteDb), id).prompt('go');
    const r = await agent(cfg).session(sqliteSaver(sqliteDb), id).reply('May');
    expect(r.text === 'due May', 'session completed');
    if (i % 2000 === 0) expect(sqliteDb.prepare('SELECT count(*) AS n FROM resumable_agent_checkpoints').get().n === 0, 'finished sessions deleted');
  },
  'session-replay': async () => {
    // A client reconnecting: the events of a paused session, replayed from its log.
    const seen = [];
    for await (const e of agent(cfg).session(memory, 'replayed').replay({ after: 0 })) seen.push(e.type);
    expect(seen.includes('interrupt') && seen.at(-1) === 'done', `replayed ${seen.join(',')}`);
  },
  'saver-created': async (i) => {
    const s = memorySaver();
    await s.put(`k${i % 3}`, paused.checkpoint);
  },
  'provider-created': async () => {
    openai({ apiKey: 'k', model: 'm', baseURL: 'http://127.0.0.1:9' });
  },
  'aborted-in-flight': async () => {
    const stop = new AbortController();
    const running = agent({ model: () => new Promise(() => {}) }).prompt('go', { signal: stop.signal });
    stop.abort();
    const e = await running.catch((x) => x);
    expect(e.name === 'AbortedError' && e.checkpoint, 'AbortedError with checkpoint');
  },
  // One signal for the life of the isolate (a server's shutdown signal), never aborted: every call listens to it
  // while it waits on its model, and must stop listening when it ends.
  'long-lived-signal': async () => {
    const r = await agent(cfg).resume(pausedText, 'May', { signal: lifetime.signal });
    expect(r.text === 'due May', 'completed');
  },
  // A signal per request (a Worker's request.signal): the call listens to it while its model works, and the
  // wait must be freed when the call ends without an abort (a promise awaited from Rust has to settle).
  'signal-per-request': async () => {
    const c = new AbortController();
    const r = await agent({ model: async () => ({ content: [{ type: 'text', text: 'Hello there.' }] }) }).prompt('hi', { signal: c.signal });
    expect(r.text === 'Hello there.', 'completed');
  },
  'model-throws': async () => {
    const e = await agent({ model: async () => { throw new Error('overloaded'); } }).prompt('go').catch((x) => x);
    expect(e.name === 'ModelError' && e.checkpoint, 'ModelError with checkpoint');
  },
  'tool-throws': async () => {
    const r = await agent({ tools: [broken], model: scriptedModel([{ content: [call('b', 'broken', {})] }, 'recovered']) }).prompt('go');
    expect(r.text === 'recovered', 'completed after the tool error');
  },
  'refused-checkpoint': async () => {
    const e = await agent(cfg).resume('{"messages": 3, "iterations": 0}', 'x').catch((x) => x);
    expect(e.name === 'CheckpointError', 'CheckpointError');
  },
  'signed-resume': async () => {
    const r = await agent(signedCfg).resume(signedText, 'May');
    expect(r.text === 'due May' && r.checkpoint.signature, 'signed and completed');
  },
  'sealed-session': async (i) => {
    const id = `z${i % 50}`;
    const p = await agent(sealedCfg).session(memory, id).prompt('go');
    expect(typeof p.checkpoint.sealed === 'string', 'sealed');
    const r = await agent(sealedCfg).session(memory, id).reply('May');
    expect(r.text === 'due May', 'sealed session completed');
  },
  'forged-refused': async () => {
    const e = await agent(signedCfg).resume(forgedText, 'May').catch((x) => x);
    expect(e.name === 'CheckpointError' && e.code === 'SIGNATURE', 'SIGNATURE');
  },
  'session-with-timeout': async (i) => {
    const id = `w${i % 50}`;
    await agent(cfg).session(memory, id, { timeoutMs: 60_000 }).prompt('go');
    const r = await agent(cfg).session(memory, id, { timeoutMs: 60_000 }).reply('May');
    expect(r.text === 'due May', 'completed within the time limit');
  },
  'saver-timeout': async (i) => {
    const e = await agent(cfg).session(stuck, `t${i % 50}`, { timeoutMs: 1 }).prompt('go').catch((x) => x);
    expect(e.name === 'SaverError' && e.code === 'TIMEOUT', 'TIMEOUT');
  },
  'saver-fails': async (i) => {
    const e = await agent(cfg).session(failing, `f${i % 50}`).prompt('go').catch((x) => x);
    expect(e.name === 'SaverError' && e.checkpoint, 'SaverError with checkpoint');
  },
  // Hostile answers (issue 38): each refused with a typed error, and nothing of it kept.
  'hostile-too-long': async () => {
    const e = await withFetch(() => new Response(`{"id":"r","output":[{"type":"message","content":[{"type":"output_text","text":"${'x'.repeat(80_000)}"}]}]}`),
      () => agent({ model: responsesProvider, limits: { maxCheckpointBytes: 65_536 } }).prompt('hi'));
    expect(e.name === 'ModelError' && /more than 65536 bytes/.test(e.message), `an answer past the limit: ${e.message}`);
  },
  'hostile-error-body': async () => {
    const e = await withFetch(() => new Response(`{"error":{"message":"${'y'.repeat(100_000)}"}}`, { status: 400 }),
      () => agent({ model: responsesProvider }).prompt('hi'));
    expect(e.name === 'ModelError' && e.status === 400, `a long error body: ${e.message}`);
  },
  'hostile-endless-event': async () => {
    const e = await withFetch(() => new Response(`data: ${'z'.repeat(1000)}\n`.repeat(80), { headers: { 'content-type': 'text/event-stream' } }),
      () => agent({ model: responsesProvider, limits: { maxCheckpointBytes: 65_536 } }).stream({ prompt: 'hi' }).result);
    expect(e.name === 'ModelError' && /more than 65536 bytes/.test(e.message), `an endless event: ${e.message}`);
  },
  'hostile-amplified': async () => {
    const e = await withFetch(() => Response.json({ content: [{ type: 'tool_use', id: 't', name: 'lookup', input: { rows: tinyRows } }], stop_reason: 'tool_use' }),
      () => agent({ model: anthropicProvider, tools: [lookup] }).prompt('hi'));
    expect(e.name === 'ModelError' && /refused unread/.test(e.message), `JSON amplification: ${e.message}`);
  },
  'hostile-redirect': async () => {
    const e = await withFetch(() => new Response(null, { status: 307, headers: { location: 'http://127.0.0.2:9/steal' } }),
      () => agent({ model: anthropicProvider }).prompt('hi'));
    expect(e.name === 'ModelError' && e.status === 307, `a redirect elsewhere: ${e.message}`);
  },
  'hostile-fetch-answer': async () => {
    const e = await mcpTools({ url: 'http://127.0.0.1:9/mcp', fetch: () => undefined }).catch((x) => x);
    expect(e.name === 'McpError', `a fetch answering undefined: ${e.message}`);
  },
};

/** Runs `f` with `answer` as the global fetch; what it rejects with. */
async function withFetch(answer, f) {
  globalThis.fetch = async () => answer();
  try {
    return await f().then(() => new Error('expected a rejection'), (e) => e);
  } finally {
    globalThis.fetch = realFetch;
  }
}
const tinyRows = Array.from({ length: 8000 }, () => ({ a: 1 }));
const anthropicProvider = anthropic({ apiKey: 'k-leak-test', model: 'm', baseURL: 'http://127.0.0.1:9', maxRetries: 0 });

/** Runs `requests` requests of `shape` after `warmup` ones; returns the figures (measure.mjs). */
export const measure = (shape, requests, warmup) => measureShape(SHAPES, shape, requests, warmup, wasmBytes);

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const [shape, requests = '20000', warmup = '2000'] = process.argv.slice(2);
  process.stdout.write(`${JSON.stringify({ ...(await measure(shape, Number(requests), Number(warmup))), variant: memoryUsage().variant })}\n`);
}
