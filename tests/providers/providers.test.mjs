// Both HTTP providers through the npm package, against the strict loopback server (127.0.0.1 only).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ModelError, isInterrupted, ConfigError, anthropic } from 'resumable-agent';
import { startServer, API_KEY } from './server.mjs';
import { makeAgent } from './agent-config.mjs';

let srv;
let base;
const seen = []; // every checkpoint and error of every run, for the key check
before(async () => {
  srv = await startServer();
  base = `http://127.0.0.1:${srv.port}`;
});
after(() => {
  srv.server.close();
  const everything = JSON.stringify(seen, (k, v) => (v instanceof Error ? { ...v, message: v.message, stack: v.stack, name: v.name } : v));
  assert.ok(seen.length > 10);
  assert.equal(everything.includes(API_KEY), false, 'the API key appears in no checkpoint and no error');
  assert.deepEqual(srv.state.errors, [], 'every request was valid for its wire format');
});

const conversation = (body) => body.messages ?? body.input ?? body.contents;
const requestsFor = (scenario) => srv.state.requests.filter((r) => JSON.stringify(conversation(r.body)).includes(`scenario:${scenario}`));

for (const provider of ['anthropic', 'openai', 'openai-responses', 'gemini']) {
  describe(provider, () => {
    const run = async (scenario, extra) => {
      const result = await makeAgent(provider, base, API_KEY, extra).prompt(`scenario:${scenario} please`);
      seen.push(result.checkpoint, result);
      return result;
    };

    test('plain text, with usage', async () => {
      const r = await run('text');
      assert.equal(r.text, 'Hello from the model.');
      assert.deepEqual(r.usage, { inputTokens: 100, outputTokens: 10 });
    });

    test('one tool call, its result back to the model, usage added up', async () => {
      const r = await run('tool');
      assert.equal(r.text, 'Found {"key":"a","value":"v-a"}.');
      assert.deepEqual(r.usage, { inputTokens: 300, outputTokens: 21 });
      assert.equal(r.iterations, 2);
    });

    test('toolChoice and extraBody reach every request in the provider\'s shape; a tool-only turn goes back with content ""', async () => {
      const extraBody = { anthropic: { stop_sequences: ['END'], metadata: { user_id: 'u-1' } }, gemini: { safetySettings: [], generationConfig: { temperature: 0.2 } } }[provider] ?? { temperature: 0.2, parallel_tool_calls: false };
      const mode = (m, names) => ({ functionCallingConfig: { mode: m, ...(names ? { allowedFunctionNames: names } : {}) } });
      for (const [toolChoice, wire] of [
        [{ name: 'lookup' }, { anthropic: { type: 'tool', name: 'lookup' }, openai: { type: 'function', function: { name: 'lookup' } }, 'openai-responses': { type: 'function', name: 'lookup' }, gemini: mode('ANY', ['lookup']) }[provider]],
        ['required', { anthropic: { type: 'any' }, gemini: mode('ANY') }[provider] ?? 'required'],
        ['none', { anthropic: { type: 'none' }, gemini: mode('NONE') }[provider] ?? 'none'],
      ]) {
        const before = requestsFor('choice').filter((q) => q.provider === provider).length;
        const r = await run('choice', { toolChoice, extraBody });
        assert.equal(r.text, 'Found {"key":"a","value":"v-a"}.');
        const sent = requestsFor('choice').filter((q) => q.provider === provider).slice(before);
        assert.equal(sent.length, 2);
        for (const q of sent) {
          assert.deepEqual(provider === 'gemini' ? q.body.toolConfig : q.body.tool_choice, wire, JSON.stringify(toolChoice));
          for (const [k, v] of Object.entries(extraBody)) assert.deepEqual(q.body[k], v, k);
        }
        if (provider === 'openai') {
          const call = sent[1].body.messages.find((m) => m.tool_calls);
          assert.equal(call.content, '', 'a tool-only turn: "" (null is refused by llama-cpp-python)');
        }
      }
    });

    test('a toolChoice or extraBody the API would refuse is refused before anything is sent', () => {
      const make = (extra) => makeAgent(provider, base, API_KEY, extra);
      assert.throws(() => make({ toolChoice: 'any' }), (e) => e instanceof ConfigError && /toolChoice: 'any' is written 'required' here/.test(e.message));
      assert.throws(() => make({ toolChoice: { tool: 'lookup' } }), (e) => e instanceof ConfigError && /toolChoice\.tool: unknown option; did you mean "name"\?/.test(e.message));
      const history = { 'openai-responses': 'input', gemini: 'contents' }[provider] ?? 'messages';
      assert.throws(() => make({ extraBody: { [history]: [] } }), (e) => e instanceof ConfigError && e.message.includes(`extraBody.${history}: written by the provider itself; set it with the run`));
      const [maxKey, maxBody] = { 'openai-responses': ['max_output_tokens', { max_output_tokens: 5 }], gemini: ['generationConfig.maxOutputTokens', { generationConfig: { maxOutputTokens: 5 } }] }[provider] ?? ['max_tokens', { max_tokens: 5 }];
      assert.throws(() => make({ extraBody: maxBody }), (e) => e instanceof ConfigError && e.message.includes(`extraBody.${maxKey}: written by the provider itself; set it with maxTokens`));
      assert.throws(() => make({ tool_choice: 'auto' }), (e) => e instanceof ConfigError && /did you mean "toolChoice"\?/.test(e.message));
      if (provider === 'anthropic') {
        assert.throws(() => make({ maxTokens: 4096, thinking: { budgetTokens: 1024 }, toolChoice: 'required' }), (e) => e instanceof ConfigError && /with thinking only 'auto' or 'none'/.test(e.message));
      }
    });

    test('a toolChoice naming a tool the agent lacks: a ModelError naming it, no request sent', async () => {
      const before = requestsFor('choice').filter((q) => q.provider === provider).length;
      const err = await makeAgent(provider, base, API_KEY, { toolChoice: { name: 'serach' } }).prompt('scenario:choice').catch((e) => e);
      seen.push(err);
      assert.ok(err instanceof ModelError, String(err));
      assert.match(err.message, /toolChoice: no tool named "serach" in the request \(tools: lookup, ask_user\)/);
      assert.equal(requestsFor('choice').filter((q) => q.provider === provider).length, before);
    });

    test('three parallel calls, an interrupt in the middle, resumed in a new process', async () => {
      const paused = await run('parallel');
      assert.ok(isInterrupted(paused));
      assert.equal(paused.question, 'Which colour?');
      // The calls ran together: the lookups around the question finished before the pause.
      assert.equal(paused.checkpoint.toolResults.length, 2, 'both lookups ran beside the question');
      const file = join(mkdtempSync(join(tmpdir(), 'cp-')), 'checkpoint.json');
      writeFileSync(file, JSON.stringify(paused.checkpoint));
      // Asynchronously: this process serves the child's HTTP requests meanwhile.
      const child = await promisify(execFile)(process.execPath, [fileURLToPath(new URL('./resume-child.mjs', import.meta.url)), provider, base, file, 'blue'], {
        encoding: 'utf8', timeout: 30_000, env: { ...process.env, TEST_API_KEY: API_KEY },
      });
      const { pid, result } = JSON.parse(child.stdout);
      seen.push(result);
      assert.notEqual(pid, process.pid);
      assert.equal(result.text, 'Results: {"key":"a","value":"v-a"} | blue | {"key":"c","value":"v-c"}');
      assert.deepEqual(result.usage, { inputTokens: 300, outputTokens: 21 });
    });

    test('429 with retry-after is retried after that long, then succeeds', async () => {
      const r = await run('retry429');
      assert.equal(r.text, 'Hello from the model.');
      const [first, second] = requestsFor('retry429').filter((q) => q.provider === provider).slice(-2);
      assert.ok(second.at - first.at >= 950, `waited ${second.at - first.at} ms for retry-after: 1`);
    });

    test('500 until retries run out: a typed, retryable ModelError carrying the checkpoint, no key', async () => {
      const before = requestsFor('error500').filter((q) => q.provider === provider).length;
      const err = await makeAgent(provider, base, API_KEY, { maxRetries: 2 }).prompt('scenario:error500').catch((e) => e);
      seen.push(err, err.checkpoint);
      assert.ok(err instanceof ModelError);
      assert.equal(err.status, 500);
      assert.equal(err.retryable, true);
      assert.equal(err.provider, provider);
      assert.match(err.message, /request failed with HTTP 500: .*\(key \[redacted\]\)/);
      assert.equal(err.checkpoint.messages.length, 1, 'the checkpoint holds the run so far');
      assert.equal(requestsFor('error500').filter((q) => q.provider === provider).length - before, 3, 'one try and two retries');
    });

    test('cut at max_tokens mid tool call: a ModelError with stopReason, nothing recorded, no tool ran; resuming with "" asks again', async () => {
      const a = makeAgent(provider, base, API_KEY);
      const err = await a.prompt('scenario:cut').catch((e) => e);
      seen.push(err, err.checkpoint);
      assert.ok(err instanceof ModelError, String(err));
      assert.equal(err.stopReason, 'max_tokens');
      assert.equal(err.text, 'Let me look');
      assert.match(err.message, /output token limit \(max_tokens\).*resume the error's checkpoint with ''/);
      assert.deepEqual(err.checkpoint.messages.map((m) => m.role), ['user'], 'the cut answer is not in the history');
      assert.equal(err.checkpoint.iterations, 0);
      // The cut call's tokens were spent and billed: on the error, and counted in the run's usage.
      assert.deepEqual(err.usage, { inputTokens: 100, outputTokens: 10 });
      assert.deepEqual(err.checkpoint.usage, { inputTokens: 100, outputTokens: 10 });
      const r = await a.resume(err.checkpoint, '');
      assert.equal(r.text, 'Complete answer.');
      assert.deepEqual(r.checkpoint.messages.map((m) => m.role), ['user', 'assistant']);
      assert.deepEqual(r.usage, { inputTokens: 200, outputTokens: 20 }, 'both calls counted');
    });

    test(provider === 'gemini' ? 'recitation is a ModelError with stopReason "recitation"' : 'a refusal is a ModelError with stopReason "refusal" and the model\'s explanation', async () => {
      const err = await makeAgent(provider, base, API_KEY).prompt('scenario:refusal').catch((e) => e);
      seen.push(err, err.checkpoint);
      assert.ok(err instanceof ModelError, String(err));
      assert.equal(err.stopReason, provider === 'gemini' ? 'recitation' : 'refusal');
      assert.equal(err.text, 'I cannot help with that.');
      assert.match(err.message, provider === 'gemini' ? /reciting its training data \(recitation\)/ : /refused to answer \(refusal\): I cannot help with that\./);
      assert.equal(err.checkpoint.messages.length, 1);
    });

    const filtered = { anthropic: 'refusal', gemini: 'prompt_blocked' }[provider] ?? 'content_filter';
    test(`a filtered answer is a ModelError with stopReason "${filtered}"`, async () => {
      const err = await makeAgent(provider, base, API_KEY).prompt('scenario:filter').catch((e) => e);
      seen.push(err, err.checkpoint);
      assert.ok(err instanceof ModelError, String(err));
      assert.equal(err.stopReason, filtered);
      assert.equal(err.text, '');
    });

    test('structured output: an answer missing a field is fed back as an error result, the corrected one fills structured', async () => {
      const a = makeAgent(provider, base, API_KEY, {}, { output: (s) => ({ city: s.string().required(), population: s.integer().required() }) });
      const r = await a.prompt('scenario:structured');
      seen.push(r.checkpoint);
      assert.deepEqual(r.structured, { city: 'Paris', population: 2102650 });
      assert.equal(r.iterations, 2);
      const sent = requestsFor('structured').filter((q) => q.provider === provider);
      const tools = { openai: () => sent[0].body.tools.map((t) => t.function), gemini: () => sent[0].body.tools[0].functionDeclarations }[provider]?.() ?? sent[0].body.tools;
      const finalAnswer = tools.find((t) => t.name === 'final_answer');
      assert.deepEqual(finalAnswer[{ anthropic: 'input_schema', gemini: 'parametersJsonSchema' }[provider] ?? 'parameters'].required, ['city', 'population']);
      const feedback = JSON.stringify(conversation(sent.at(-1).body));
      assert.match(feedback, /missing required property \\"population\\"/);
    });

    for (const scenario of ['empty', 'emptytext']) {
      test(`an empty answer (${scenario}) ends the run with "" and is never sent back to the model`, async () => {
        const a = makeAgent(provider, base, API_KEY);
        const r = await a.prompt(`scenario:${scenario}`);
        seen.push(r.checkpoint);
        assert.equal(r.text, '');
        assert.deepEqual(r.checkpoint.messages.map((m) => m.role), ['user', 'assistant']);
        const next = await a.resume(r.checkpoint, 'Say something.');
        seen.push(next.checkpoint);
        assert.equal(next.text, 'After an empty answer.');
        // The empty answer went; the new text joined the user message before it.
        assert.deepEqual(next.checkpoint.messages.map((m) => m.role), ['user', 'assistant']);
        assert.deepEqual(next.checkpoint.messages[0].content, [{ type: 'text', text: `scenario:${scenario}` }, { type: 'text', text: 'Say something.' }]);
      });
    }
  });
}

for (const provider of ['anthropic', 'openai', 'openai-responses', 'gemini']) {
  describe(`${provider} streaming`, () => {
    const streamed = async (scenario, extra) => {
      const events = [];
      const s = makeAgent(provider, base, API_KEY, extra).stream({ prompt: `scenario:${scenario}` });
      for await (const e of s) events.push(e);
      const result = await s.result.catch((e) => e);
      seen.push(result, events);
      const last = requestsFor(scenario).filter((q) => q.provider === provider).at(-1);
      return { events, result, last };
    };
    const deltas = (events, type, key) => {
      const after = events.findLastIndex((e) => e.type === 'step-restart');
      return events.slice(after + 1).filter((e) => e.type === type).map((e) => e[key]);
    };

    test('text arrives as text-delta events that add up to the answer; plain prompt() does not stream', async () => {
      const { events, result, last } = await streamed('text');
      assert.equal(last.body.stream, true);
      const texts = deltas(events, 'text-delta', 'text');
      assert.ok(texts.length >= 2, `several deltas: ${JSON.stringify(texts)}`);
      assert.equal(texts.join(''), 'Hello from the model.');
      assert.equal(result.text, 'Hello from the model.');
      assert.deepEqual(result.usage, { inputTokens: 100, outputTokens: 10 }, 'usage from the stream');
      const order = events.map((e) => e.type);
      assert.ok(order.indexOf('text-delta') > order.indexOf('step-start') && order.indexOf('text-delta') < order.indexOf('step-finish'));
      await makeAgent(provider, base, API_KEY).prompt('scenario:text');
      assert.equal(requestsFor('text').filter((q) => q.provider === provider).at(-1).body.stream, undefined);
    });

    test('a tool call\'s input arrives as tool-call-delta events; the call runs once, with the whole input', async () => {
      const { events, result } = await streamed('tool');
      const pieces = deltas(events.filter((e) => e.step === 1), 'tool-call-delta', 'inputDelta');
      assert.ok(pieces.length >= (provider === 'gemini' ? 1 : 2), 'Gemini sends a call whole');
      assert.deepEqual(JSON.parse(pieces.join('')), { key: 'a' });
      const first = events.find((e) => e.type === 'tool-call-delta');
      assert.equal(first.toolName, 'lookup');
      assert.equal(events.filter((e) => e.type === 'tool-call').length, 1);
      assert.equal(result.text, 'Found {"key":"a","value":"v-a"}.');
    });

    test('a stream cut mid-text is retried after step-restart; the checkpoint never holds half an answer', async () => {
      const { events, result } = await streamed('cutstream');
      assert.equal(events.filter((e) => e.type === 'step-restart').length, 1);
      assert.equal(deltas(events, 'text-delta', 'text').join(''), 'A streamed answer that arrives whole.');
      assert.equal(result.text, 'A streamed answer that arrives whole.');
      for (const e of events.filter((x) => x.type === 'checkpoint')) {
        assert.ok(e.checkpoint.messages.every((m) => m.role !== 'assistant' || JSON.stringify(m.content).includes('whole')), 'no partial answer in any checkpoint');
      }
    });

    test('a stream cut in the middle of a tool call\'s arguments: the call does not run until a whole answer came', async () => {
      const { events, result } = await streamed('cutargs');
      assert.equal(events.filter((e) => e.type === 'step-restart').length, 1);
      assert.equal(events.filter((e) => e.type === 'tool-call').length, 1, 'the cut call never ran');
      assert.equal(result.text, 'Found {"key":"a","value":"v-a"}.');
      assert.equal(result.checkpoint.messages.length, 4);
    });

    test('a stream that always breaks ends in a retryable ModelError with the checkpoint before the call', async () => {
      const { events, result } = await streamed('alwayscut', { maxRetries: 1 });
      assert.ok(result instanceof ModelError, String(result));
      assert.equal(result.retryable, true);
      assert.equal(result.status, null);
      assert.match(result.message, /stream broke/);
      assert.equal(result.checkpoint.messages.length, 1);
      assert.equal(events.at(-1).type, 'error');
      assert.equal(events.filter((e) => e.type === 'step-restart').length, 1, 'one retry');
    });

    test('stop reasons read from the stream: max_tokens is a ModelError, nothing recorded', async () => {
      const { result, events } = await streamed('alwaysmax');
      assert.ok(result instanceof ModelError, String(result));
      assert.equal(result.stopReason, 'max_tokens');
      assert.equal(events.at(-1).error.stopReason, 'max_tokens', 'the error event carries it too');
      assert.equal(result.checkpoint.messages.length, 1);
    });
  });
}

describe('openai-responses: reasoning state in the checkpoint', () => {
  const reasoning = (turn) => ({ type: 'reasoning', id: `rs_${turn}abc`, summary: [`Weighing turn ${turn}.`], encryptedContent: `gAAAAB-enc-${turn}-final` });

  test('store: false keeps each reasoning item, sends it back verbatim before its calls, across a pause in another process', async () => {
    const paused = await makeAgent('openai-responses', base, API_KEY).prompt('scenario:parallel');
    seen.push(paused.checkpoint);
    assert.ok(isInterrupted(paused));
    assert.deepEqual(paused.checkpoint.messages[1].content[0], reasoning(0), 'the final encrypted reasoning, not the streamed placeholder');
    const first = requestsFor('parallel').filter((q) => q.provider === 'openai-responses').at(-1).body;
    assert.equal(first.store, false);
    assert.deepEqual(first.include, ['reasoning.encrypted_content']);
    assert.deepEqual(first.reasoning, { effort: 'low', summary: 'auto' });
    assert.equal(first.tools[0].strict, false);
    const file = join(mkdtempSync(join(tmpdir(), 'cp-')), 'checkpoint.json');
    writeFileSync(file, JSON.stringify(paused.checkpoint));
    const child = await promisify(execFile)(process.execPath, [fileURLToPath(new URL('./resume-child.mjs', import.meta.url)), 'openai-responses', base, file, 'blue'], {
      encoding: 'utf8', timeout: 30_000, env: { ...process.env, TEST_API_KEY: API_KEY },
    });
    const { result } = JSON.parse(child.stdout);
    seen.push(result);
    assert.match(result.text, /^Results: /);
    const resumed = requestsFor('parallel').filter((q) => q.provider === 'openai-responses').at(-1).body.input;
    const at = resumed.findIndex((x) => x.type === 'reasoning');
    assert.deepEqual(resumed[at], { type: 'reasoning', id: 'rs_0abc', summary: [{ type: 'summary_text', text: 'Weighing turn 0.' }], encrypted_content: 'gAAAAB-enc-0-final' });
    assert.deepEqual(resumed.slice(at + 1).map((x) => (x.type === 'message' ? x.role : x.type)), ['assistant', 'function_call', 'function_call', 'function_call', 'function_call_output', 'function_call_output', 'function_call_output']);
    assert.ok(resumed.every((x) => x.type !== undefined), 'every item says its type (llama-server refuses a message without it)');
    assert.deepEqual(resumed.filter((x) => x.type === 'function_call_output').map((x) => x.output), ['{"key":"a","value":"v-a"}', 'blue', '{"key":"c","value":"v-c"}']);
  });

  test('a streamed run and a plain run of the same answers give the same checkpoint', async () => {
    const plain = await makeAgent('openai-responses', base, API_KEY).prompt('scenario:tool');
    const s = makeAgent('openai-responses', base, API_KEY).stream({ prompt: 'scenario:tool' });
    for await (const e of s) void e;
    const streamed = await s.result;
    seen.push(plain.checkpoint, streamed.checkpoint);
    const comparable = (c) => JSON.stringify({ messages: c.messages, usage: c.usage, toolResults: c.toolResults, iterations: c.iterations });
    assert.equal(comparable(streamed.checkpoint), comparable(plain.checkpoint));
    assert.deepEqual(plain.checkpoint.messages[1].content.map((b) => b.type), ['reasoning', 'tool_use']);
  });

  test('store: true: the API keeps the reasoning, nothing encrypted is asked for', async () => {
    const r = await makeAgent('openai-responses', base, API_KEY, { store: true }).prompt('scenario:tool');
    seen.push(r.checkpoint);
    assert.equal(r.text, 'Found {"key":"a","value":"v-a"}.');
    const sent = requestsFor('tool').filter((q) => q.provider === 'openai-responses').at(-1).body;
    assert.equal(sent.store, true);
    assert.equal(sent.include, undefined);
  });

  test('bad options are ConfigErrors naming them', () => {
    const make = (extra) => makeAgent('openai-responses', base, API_KEY, extra);
    assert.throws(() => make({ reasoning: { effort: 'max' } }), (e) => e instanceof ConfigError && /reasoning\.effort: expected one of 'none', 'minimal', 'low', 'medium', 'high', 'xhigh', got "max"/.test(e.message));
    assert.throws(() => make({ store: 'no' }), (e) => e instanceof ConfigError && /store/.test(e.message));
    assert.throws(() => make({ extraBody: { include: [] } }), (e) => e instanceof ConfigError && /extraBody\.include: written by the provider itself/.test(e.message));
  });
});

describe('gemini: thought signatures in the checkpoint', () => {
  test('each signature stays on the part it came on, across a pause in another process; the key only in a header', async () => {
    const paused = await makeAgent('gemini', base, API_KEY).prompt('scenario:parallel');
    seen.push(paused.checkpoint);
    assert.ok(isInterrupted(paused));
    const calls = paused.checkpoint.messages[1].content.filter((b) => b.type === 'tool_use');
    assert.deepEqual(calls.map((c) => [c.id, c.signature]), [['gc_gemresp0_0', 'sig-call-0'], ['gc_gemresp0_1', undefined], ['gc_gemresp0_2', undefined]], 'only the first call is signed; ids from the response id');
    const file = join(mkdtempSync(join(tmpdir(), 'cp-')), 'checkpoint.json');
    writeFileSync(file, JSON.stringify(paused.checkpoint));
    const child = await promisify(execFile)(process.execPath, [fileURLToPath(new URL('./resume-child.mjs', import.meta.url)), 'gemini', base, file, 'blue'], {
      encoding: 'utf8', timeout: 30_000, env: { ...process.env, TEST_API_KEY: API_KEY },
    });
    const { result } = JSON.parse(child.stdout);
    seen.push(result);
    assert.equal(result.text, 'Results: {"key":"a","value":"v-a"} | blue | {"key":"c","value":"v-c"}');
    const sent = requestsFor('parallel').filter((q) => q.provider === 'gemini').at(-1).body.contents;
    assert.deepEqual(sent[1].parts.map((p) => p.thoughtSignature), [undefined, 'sig-call-0', undefined, undefined]);
    assert.deepEqual(sent[2].parts.map((p) => p.functionResponse), [
      { name: 'lookup', response: { output: '{"key":"a","value":"v-a"}' } },
      { name: 'ask_user', response: { output: 'blue' } },
      { name: 'lookup', response: { output: '{"key":"c","value":"v-c"}' } },
    ]);
    // The final answer's empty signed text is kept (the empty-text rule drops only unsigned ones).
    assert.deepEqual(result.checkpoint.messages.at(-1).content.at(-1), { type: 'text', text: '', signature: 'sig-end-1' });
  });

  test('a streamed run and a plain run of the same answers give the same checkpoint', async () => {
    const plain = await makeAgent('gemini', base, API_KEY).prompt('scenario:tool');
    const s = makeAgent('gemini', base, API_KEY).stream({ prompt: 'scenario:tool' });
    for await (const e of s) void e;
    const streamed = await s.result;
    seen.push(plain.checkpoint, streamed.checkpoint);
    const comparable = (c) => JSON.stringify({ messages: c.messages, usage: c.usage, toolResults: c.toolResults, iterations: c.iterations });
    assert.equal(comparable(streamed.checkpoint), comparable(plain.checkpoint));
    assert.equal(requestsFor('tool').filter((q) => q.provider === 'gemini').at(-1).body.stream, true);
  });

  test('thinking, and bad options named', () => {
    const make = (extra) => makeAgent('gemini', base, API_KEY, extra);
    make({ thinking: { budgetTokens: 2048 } });
    make({ thinking: { level: 'low' } });
    assert.throws(() => make({ thinking: { budgetTokens: 1024, level: 'low' } }), (e) => e instanceof ConfigError && /thinking: expected \{ budgetTokens \} or \{ level \}, one of them/.test(e.message));
    assert.throws(() => make({ thinking: { level: 'max' } }), (e) => e instanceof ConfigError && /thinking\.level: expected one of 'minimal', 'low', 'medium', 'high'/.test(e.message));
    assert.throws(() => makeAgent('gemini', base, '', {}), (e) => e instanceof ConfigError && /gemini\(options\): apiKey is required/.test(e.message));
  });

  test('thinkingConfig goes in generationConfig beside other settings', async () => {
    const r = await makeAgent('gemini', base, API_KEY, { maxTokens: 900, thinking: { level: 'low' }, extraBody: { generationConfig: { temperature: 0.3 } } }).prompt('scenario:text');
    seen.push(r.checkpoint);
    const sent = requestsFor('text').filter((q) => q.provider === 'gemini').at(-1).body;
    assert.deepEqual(sent.generationConfig, { maxOutputTokens: 900, thinkingConfig: { thinkingLevel: 'LOW', includeThoughts: true }, temperature: 0.3 });
  });
});

test('anthropic: thinking and redacted_thinking blocks are kept and sent back unchanged before the tool_use', async () => {
  const r = await makeAgent('anthropic', base, API_KEY, { maxTokens: 4096, thinking: { budgetTokens: 2048 } }).prompt('scenario:thinking');
  seen.push(r.checkpoint);
  assert.equal(r.text, 'Thought it through.');
  assert.deepEqual(r.checkpoint.messages[1].content.map((b) => b.type), ['thinking', 'redacted_thinking', 'tool_use']);
  assert.equal(r.checkpoint.messages[1].content[0].signature, 'EqQBCgIYAhIM1gbcDa9GJwZA');
  // The same history through OpenAI: thinking is Anthropic's, so it is left out of the request.
  const o = await makeAgent('openai', base, API_KEY).resume(r.checkpoint, 'And now?');
  assert.equal(o.text, 'No thinking here.');
});

test('openai: tool arguments that are not valid JSON reach the model as an error result it can recover from', async () => {
  const r = await makeAgent('openai', base, API_KEY).prompt('scenario:badargs');
  seen.push(r.checkpoint);
  assert.match(r.text, /^Recovered after: Error: the arguments of this call are not a JSON object, so lookup did not run: \{"key": "a",/);
  assert.equal(r.iterations, 3);
});

test('provider options are checked at once', () => {
  assert.throws(() => anthropic({ model: 'x' }), (e) => e instanceof ConfigError && /apiKey is required/.test(e.message));
  assert.throws(() => anthropic({ apiKey: 'k', model: 'x', thinking: { budgetTokens: 512 } }), (e) => e instanceof ConfigError && /thinking\.budgetTokens/.test(e.message));
  assert.throws(() => anthropic({ apiKey: 'k', model: 'x', maxTokens: 2000, thinking: { budgetTokens: 2000 } }), (e) => e instanceof ConfigError && /below maxTokens \(2000\)/.test(e.message));
  assert.throws(() => anthropic({ apiKey: 'k', model: 'x', maxRetries: -1 }), ConfigError);
});

test('workersAI: a Chat Completions body to env.AI.run, both answer shapes mapped (stand-in binding)', async () => {
  const { workersAI, agent, defineTool } = await import('resumable-agent');
  const calls = [];
  // Workers AI itself needs Cloudflare's network; this stands in for the binding's `run` only.
  const binding = {
    async run(model, inputs) {
      calls.push({ model, inputs: structuredClone(inputs) });
      if (calls.length === 1) return { response: '', tool_calls: [{ name: 'lookup', arguments: { key: 'a' } }], usage: { prompt_tokens: 7, completion_tokens: 3 } };
      return { choices: [{ message: { role: 'assistant', content: 'done via choices' } }], usage: { prompt_tokens: 9, completion_tokens: 2 } };
    },
  };
  const lookup = defineTool({ name: 'lookup', schema: (s) => ({ key: s.string().required() }), handle: ({ key }) => `v-${key}` });
  const r = await agent({ instructions: 'Be brief.', tools: [lookup], model: workersAI(binding, { model: '@cf/test/model' }) }).prompt('hi');
  assert.equal(r.text, 'done via choices');
  assert.deepEqual(r.usage, { inputTokens: 16, outputTokens: 5 });
  assert.equal(calls[0].model, '@cf/test/model');
  assert.deepEqual(calls[0].inputs.messages, [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }]);
  assert.equal(calls[0].inputs.tools[0].function.name, 'lookup');
  const toolMessage = calls[1].inputs.messages.find((m) => m.role === 'tool');
  assert.equal(toolMessage.content, 'v-a');
  assert.equal(toolMessage.tool_call_id, calls[1].inputs.messages.find((m) => m.tool_calls).tool_calls[0].id);
  assert.throws(() => workersAI({}, { model: 'x' }), ConfigError);
});

test('workersAI: toolChoice and extraBody reach env.AI.run as Chat Completions inputs; one it writes itself is refused', async () => {
  const { workersAI, agent, defineTool } = await import('resumable-agent');
  const calls = [];
  const binding = { async run(model, inputs) { calls.push(structuredClone(inputs)); return { response: 'ok' }; } };
  const lookup = defineTool({ name: 'lookup', schema: (s) => ({ key: s.string().required() }), handle: ({ key }) => key });
  const model = workersAI(binding, { model: 'm', toolChoice: { name: 'lookup' }, extraBody: { temperature: 0.1, max_tokens: 256 } });
  await agent({ tools: [lookup], model }).prompt('hi');
  assert.deepEqual(calls[0].tool_choice, { type: 'function', function: { name: 'lookup' } });
  assert.equal(calls[0].temperature, 0.1);
  assert.equal(calls[0].max_tokens, 256);
  await agent({ model: workersAI(binding, { model: 'm', toolChoice: 'auto' }) }).prompt('no tools');
  assert.equal(calls[1].tool_choice, undefined, 'no tools, no tool_choice');
  const err = await agent({ tools: [lookup], model: workersAI(binding, { model: 'm', toolChoice: { name: 'serach' } }) }).prompt('hi').catch((e) => e);
  assert.ok(err instanceof ModelError && /toolChoice: no tool named "serach"/.test(err.message), String(err));
  assert.equal(calls.length, 2, 'nothing sent');
  assert.throws(() => workersAI(binding, { model: 'm', extraBody: { messages: [] } }), (e) => e instanceof ConfigError && /extraBody\.messages: written by the provider itself/.test(e.message));
});

test('workersAI streams: { response } events as text-delta, a tool call in a chunk, [DONE]; a model that does not stream answers whole', async () => {
  const { workersAI, agent, defineTool } = await import('resumable-agent');
  const enc = new TextEncoder();
  const sse = (...datas) => new ReadableStream({
    start(c) {
      for (const d of datas) c.enqueue(enc.encode(`data: ${typeof d === 'string' ? d : JSON.stringify(d)}\n\n`));
      c.close();
    },
  });
  const calls = [];
  // Stands in for env.AI (Workers AI needs Cloudflare's network): with stream: true it answers a ReadableStream of SSE.
  const binding = {
    async run(model, inputs) {
      calls.push(structuredClone(inputs));
      if (calls.length === 1) return sse({ response: '' }, { response: '', tool_calls: [{ name: 'lookup', arguments: { key: 'a' } }] }, { response: '', usage: { prompt_tokens: 4, completion_tokens: 2 } }, '[DONE]');
      return sse({ response: 'Found ' }, { response: 'it.' }, { response: '', usage: { prompt_tokens: 5, completion_tokens: 3 } }, '[DONE]');
    },
  };
  const lookup = defineTool({ name: 'lookup', schema: (s) => ({ key: s.string().required() }), handle: ({ key }) => `v-${key}` });
  const a = agent({ tools: [lookup], model: workersAI(binding, { model: '@cf/test/model' }) });
  const events = [];
  const s = a.stream({ prompt: 'hi' });
  for await (const e of s) events.push(e);
  const r = await s.result;
  assert.equal(r.text, 'Found it.');
  assert.deepEqual(r.usage, { inputTokens: 9, outputTokens: 5 });
  assert.ok(calls.every((c) => c.stream === true));
  assert.deepEqual(events.filter((e) => e.type === 'text-delta').map((e) => e.text), ['Found ', 'it.']);
  assert.deepEqual(events.filter((e) => e.type === 'tool-call-delta').map((e) => [e.toolName, e.inputDelta]), [['lookup', '{"key":"a"}']]);
  // A stream cut before [DONE] is a retryable error carrying the checkpoint.
  const cut = agent({ model: workersAI({ run: async () => sse({ response: 'Hal' }) }, { model: 'm' }) }).stream({ prompt: 'hi' });
  for await (const _ of cut); // eslint-disable-line no-unused-vars
  const err = await cut.result.catch((e) => e);
  assert.ok(err instanceof ModelError && err.retryable === true && /ended before the answer was complete/.test(err.message), String(err));
  // A model that ignores stream: true answers whole.
  const whole = agent({ model: workersAI({ run: async () => ({ response: 'whole' }) }, { model: 'm' }) }).stream({ prompt: 'hi' });
  for await (const _ of whole); // eslint-disable-line no-unused-vars
  assert.equal((await whole.result).text, 'whole');
  // Without a listener: no stream asked for.
  const plain = await agent({ model: workersAI({ run: async (m, i) => ({ response: `stream=${i.stream}` }) }, { model: 'm' }) }).prompt('hi');
  assert.equal(plain.text, 'stream=undefined');
});
