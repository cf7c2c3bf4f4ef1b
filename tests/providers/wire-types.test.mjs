// Every request body the providers sent in a run of scenarios, type-checked against the vendors' own published
// request types: OpenAI's `openai` SDK (generated from OpenAI's OpenAPI description: ChatCompletionCreateParams,
// ResponseCreateParams), Anthropic's `@anthropic-ai/sdk` (MessageCreateParams) and Google's `@google/genai`
// (generated from the Gemini API description: Content, Tool, ToolConfig, GenerationConfig). Object literals get TypeScript's excess-property checks, so a field the API does
// not define fails as surely as a wrong type. A deliberately wrong body per format (`@ts-expect-error`) shows the
// check can fail.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, API_KEY } from './server.mjs';
import { makeAgent } from './agent-config.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let srv;
let base;
before(async () => {
  srv = await startServer();
  base = `http://127.0.0.1:${srv.port}`;
});
after(() => srv.server.close());

/** Runs `scenarios` through `provider`, plain and streamed, with `extra` options; the bodies it sent. */
async function bodies(provider, extras) {
  const from = srv.state.requests.length;
  for (const extra of extras) {
    for (const scenario of ['text', 'tool', 'parallel', 'badargs', 'cut', 'structured']) {
      const agentExtra = scenario === 'structured' ? { output: (s) => ({ city: s.string().required(), population: s.integer().required() }) } : {};
      const a = makeAgent(provider, base, API_KEY, extra, agentExtra);
      const first = await a.prompt(`scenario:${scenario}`).catch((e) => e);
      if (first.interrupted) await a.resume(first.checkpoint, 'blue');
      const s = a.stream({ prompt: `scenario:${scenario}` });
      for await (const e of s) void e;
      await s.result.catch(() => {});
    }
  }
  return srv.state.requests.slice(from).filter((r) => r.provider === provider).map((r) => ({ ...r.body }));
}

function typecheck(name, source) {
  const dir = join(ROOT, 'target', 'wire-types');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.ts`);
  writeFileSync(file, source);
  try {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '--noEmit', '--strict', '--skipLibCheck', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext', file], { encoding: 'utf8', cwd: ROOT });
  } catch (e) {
    assert.fail(`${name}: the bodies do not type-check against the vendor's types:\n${e.stdout}`);
  }
}

const literal = (v) => JSON.stringify(v, null, 1);

test('openaiResponses() bodies are ResponseCreateParams (store: false, reasoning items back, tool choice, extra fields)', async () => {
  const sent = await bodies('openai-responses', [{}, { toolChoice: { name: 'lookup' }, extraBody: { temperature: 0.2, parallel_tool_calls: false } }, { store: true, maxTokens: 500 }]);
  assert.ok(sent.length > 20 && sent.some((b) => b.input.some((i) => i.type === 'reasoning')));
  typecheck('responses', `import type { ResponseCreateParams } from 'openai/resources/responses/responses';
const bodies: ResponseCreateParams[] = ${literal(sent)};
// @ts-expect-error Chat Completions' max_tokens, which the Responses API does not have
const wrong: ResponseCreateParams = { model: 'm', input: 'x', max_tokens: 5 };
export { bodies, wrong };
`);
});

test('anthropic() bodies are MessageCreateParams (thinking blocks back, tool choice, extra fields)', async () => {
  const sent = await bodies('anthropic', [{}, { toolChoice: { name: 'lookup' }, extraBody: { stop_sequences: ['END'], metadata: { user_id: 'u-1' } } }]);
  const thought = await makeAgent('anthropic', base, API_KEY, { maxTokens: 4096, thinking: { budgetTokens: 2048 } }).prompt('scenario:thinking');
  assert.equal(thought.text, 'Thought it through.');
  sent.push(...srv.state.requests.filter((r) => r.provider === 'anthropic' && r.body.thinking).map((r) => r.body));
  assert.ok(sent.length > 20 && sent.some((b) => b.messages.some((m) => Array.isArray(m.content) && m.content.some((c) => c.type === 'thinking'))));
  typecheck('anthropic', `import type { MessageCreateParams } from '@anthropic-ai/sdk/resources/messages';
const bodies: MessageCreateParams[] = ${literal(sent)};
// @ts-expect-error a tool_result without tool_use_id
const wrong: MessageCreateParams = { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'tool_result', content: 'x' }] }] };
export { bodies, wrong };
`);
});

test('openai() bodies are ChatCompletionCreateParams', async () => {
  const sent = await bodies('openai', [{}, { toolChoice: 'required', extraBody: { temperature: 0.2 } }]);
  assert.ok(sent.length > 20);
  typecheck('chat', `import type { ChatCompletionCreateParams } from 'openai/resources/chat/completions';
const bodies: ChatCompletionCreateParams[] = ${literal(sent)};
// @ts-expect-error a tool message without tool_call_id
const wrong: ChatCompletionCreateParams = { model: 'm', messages: [{ role: 'tool', content: 'x' }] };
export { bodies, wrong };
`);
});

test('gemini() bodies are made of the Gemini API\'s Content, Tool, ToolConfig and GenerationConfig', async () => {
  const sent = await bodies('gemini', [{}, { toolChoice: { name: 'lookup' }, maxTokens: 800, thinking: { level: 'low' }, extraBody: { generationConfig: { temperature: 0.3 } } }, { thinking: { budgetTokens: 1024 } }]);
  assert.ok(sent.length > 20 && sent.some((b) => b.contents.some((c) => c.parts.some((p) => p.thoughtSignature))));
  // The REST body (the SDK's own method takes these pieces in another arrangement); enums as the JSON strings they are.
  typecheck('gemini', `import type { Content, Tool, ToolConfig, GenerationConfig, SafetySetting } from '@google/genai';
type Json<T> = T extends string ? \`\${T}\` : T extends (infer E)[] ? Json<E>[] : T extends object ? { [K in keyof T]: Json<T[K]> } : T;
type Request = Json<{ contents: Content[]; systemInstruction?: Content; tools?: Tool[]; toolConfig?: ToolConfig; generationConfig?: GenerationConfig; safetySettings?: SafetySetting[] }>;
const bodies: Request[] = ${literal(sent)};
// @ts-expect-error a part with a field the API does not have
const wrong: Request = { contents: [{ role: 'user', parts: [{ text: 'x', thoughtSignatures: 's' }] }] };
export { bodies, wrong };
`);
});
