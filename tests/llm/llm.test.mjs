// `make test-llm` (not part of `make test`): the package against a real model server — llama.cpp's llama-server
// with SmolLM2-135M-Instruct, both from PyPI packages (scripts/llm-server.sh), on 127.0.0.1 — through its three
// endpoints (Chat Completions, Responses, Anthropic Messages). A 135M model says little that is true, so the tests
// check what the protocol guarantees: every request accepted (tools and tool choice, a history with a tool-only
// turn and its result resumed in another process), streamed deltas adding up to the answer, a cut at maxTokens
// with its tokens counted, usage. This server build does not force a call for `tool_choice: "required"` with this
// model's template and ignores a named one, so no test relies on the model calling a tool.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agent, defineTool, InterruptError, ModelError, openai, openaiResponses, anthropic, scriptedModel } from 'resumable-agent';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PORT = 18000 + (process.pid % 1000);
const BASE = `http://127.0.0.1:${PORT}`;
let server;

before(async () => {
  server = spawn(join(ROOT, 'target/llm/llama-server'), [
    '-m', join(ROOT, 'target/llm/SmolLM2-135M-Instruct.Q4_1.gguf'), '--host', '127.0.0.1', '--port', String(PORT),
    '--jinja', '-c', '4096', '-np', '1', '--no-webui', '--log-disable',
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  server.stderr.on('data', (d) => { log = (log + d).slice(-4000); });
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ok = await fetch(`${BASE}/health`).then((r) => r.ok, () => false);
    if (ok) break;
    if (Date.now() > deadline || server.exitCode !== null) throw new Error(`llama-server did not start:\n${log}`);
    await new Promise((r) => setTimeout(r, 250));
  }
});
after(() => server?.kill());

const lookup = defineTool({ name: 'lookup', description: 'Looks a key up in the table.', schema: (s) => ({ key: s.string().required() }), handle: ({ key }) => ({ key, value: `v-${key}` }) });
const ask = defineTool({ name: 'ask_user', description: 'Asks the human a question.', schema: (s) => ({ question: s.string().required() }), handle: ({ question }) => { throw new InterruptError(question); } });

const providers = {
  openai: (extra = {}) => openai({ baseURL: `${BASE}/v1`, model: 'smollm2', extraBody: { temperature: 0 }, maxTokens: 256, ...extra }),
  'openai-responses': (extra = {}) => openaiResponses({ baseURL: `${BASE}/v1`, model: 'smollm2', store: true, extraBody: { temperature: 0 }, maxTokens: 256, ...extra }),
  anthropic: (extra = {}) => anthropic({ apiKey: 'unused-locally', baseURL: BASE, model: 'smollm2', extraBody: { temperature: 0 }, maxTokens: 256, ...extra }),
};

// A paused run as a scripted model leaves it: the model called ask_user (a turn of only a tool call) and waits.
const paused = await agent({
  model: scriptedModel([{ content: [{ type: 'tool_use', id: 'call_1', name: 'ask_user', input: { question: 'Your name?' } }] }]),
  tools: [lookup, ask],
}).prompt('Ask me for my name, then greet me.');

for (const [name, model] of Object.entries(providers)) {
  test(`${name}: a plain answer, with usage`, async () => {
    const r = await agent({ model: model(), instructions: 'Answer in one sentence.' }).prompt('What colour is the sky?');
    assert.equal(typeof r.text, 'string');
    assert.ok(r.usage.inputTokens > 0 && r.usage.outputTokens > 0, JSON.stringify(r.usage));
  });

  test(`${name}: a history with a tool-only turn and its result, resumed in another process, is accepted and answered`, async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'llm-')), 'checkpoint.json');
    writeFileSync(file, JSON.stringify(paused.checkpoint));
    const child = await promisify(execFile)(process.execPath, [fileURLToPath(new URL('./resume-child.mjs', import.meta.url)), name, BASE, file, 'Ann'], { encoding: 'utf8', timeout: 120_000 });
    const result = JSON.parse(child.stdout);
    assert.equal(typeof result.text, 'string');
    assert.deepEqual(result.checkpoint.messages.map((m) => m.role), ['user', 'assistant', 'user', 'assistant']);
    assert.deepEqual(result.checkpoint.messages[2].content, [{ type: 'tool_result', toolUseId: 'call_1', content: 'Ann' }]);
    assert.ok(result.usage.inputTokens > 0);
  });

  test(`${name}: streamed, the text deltas add up to the answer`, async () => {
    const s = agent({ model: model(), instructions: 'Answer in one sentence.' }).stream({ prompt: 'Name a fruit.' });
    let text = '';
    for await (const e of s) if (e.type === 'text-delta') text += e.text;
    const r = await s.result;
    assert.equal(text, r.text);
    assert.ok(r.usage.outputTokens > 0);
  });

  test(`${name}: a request with tools and a tool choice is accepted (whether the model calls one is its own affair)`, async () => {
    const r = await agent({ model: model({ toolChoice: 'auto' }), tools: [lookup], maxIterations: 3 }).prompt('Look up the key "a".').catch((e) => e);
    assert.ok(!(r instanceof ModelError), String(r));
  });

  // llama-server's Responses endpoint says `completed` for an answer cut at max_output_tokens (OpenAI says
  // `incomplete`), so a cut can only be told from its other two endpoints.
  test(`${name}: cut at maxTokens${name === 'openai-responses' ? ' (the server reports no cut: recorded as an answer)' : ', a ModelError whose tokens are counted'}`, async () => {
    const r = await agent({ model: model({ maxTokens: 3 }) }).prompt('Write a long story about a dragon.').catch((e) => e);
    if (name === 'openai-responses') {
      assert.ok(!(r instanceof Error), String(r));
      assert.ok(r.usage.outputTokens <= 3);
      return;
    }
    assert.ok(r instanceof ModelError, String(r));
    assert.equal(r.stopReason, 'max_tokens');
    assert.ok(r.usage?.outputTokens > 0 && r.checkpoint.usage.outputTokens === r.usage.outputTokens, JSON.stringify(r.usage));
    assert.equal(r.checkpoint.messages.length, 1, 'nothing of the cut answer kept');
  });
}
