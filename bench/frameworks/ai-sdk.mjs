// Vercel AI SDK: the idiomatic pause is a tool without `execute`. generateText runs the tool loop
// (stopWhen: stepCountIs(...)) until the model calls `ask_user`, which has no execute, so the loop stops with
// that call unanswered. The paused state is the conversation itself: the input messages plus
// `result.response.messages`, serialized with JSON.stringify. The fresh side parses the array, appends a
// `tool` message with the human's answer as the ask_user result, and calls generateText again with new
// tools and a new model object.
//
// The fake model is a minimal LanguageModelV3 object (the provider spec of this major version, the same as
// `MockLanguageModelV3` from `ai/test` implements) so that no test utilities end up in the Worker bundle.
import { generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';
import { INSTRUCTIONS, PROMPT, ANSWER, decide, lookupResult, checkHistory, runResult } from '../lib/workload.mjs';

export const label = 'AI SDK';

const usage = () => ({
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
});
const resultText = (part) => (part.output.type === 'text' ? part.output.value : JSON.stringify(part.output.value));

function fakeModel(n, probe) {
  return {
    specificationVersion: 'v3',
    provider: 'fake',
    modelId: 'fake-bench',
    supportedUrls: {},
    // The model sees the provider prompt: [system, user, (assistant tool-call, tool tool-result) x k], so
    // k = (len - 2) / 2 and the final call (k = n) must see 2n + 2 messages.
    async doGenerate(options) {
      const prompt = options.prompt;
      const k = (prompt.length - 2) / 2;
      const d = decide(n, k, probe.answer);
      if (d.kind !== 'final') {
        const input = JSON.stringify(d.kind === 'lookup' ? { key: d.key } : { question: d.question });
        const toolName = d.kind === 'lookup' ? 'lookup' : 'ask_user';
        return {
          content: [{ type: 'tool-call', toolCallId: d.id, toolName, input }],
          finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
          usage: usage(),
          warnings: [],
        };
      }
      probe.finalCallAt ??= performance.now();
      probe.lastRequestMessageCount = prompt.length;
      if (prompt[0].role !== 'system' || prompt[0].content !== INSTRUCTIONS) throw new Error('final call lost the instructions');
      const results = [];
      for (let i = 3; i < prompt.length; i += 2) results.push(resultText(prompt[i].content[0]));
      checkHistory(n, results, probe.answer);
      return { content: [{ type: 'text', text: d.text }], finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(), warnings: [] };
    },
    async doStream() {
      throw new Error('not used');
    },
  };
}

// Everything is built anew for the resume, as a new process would: tools and model.
function build(n, probe) {
  const tools = {
    lookup: tool({
      description: 'Looks up a catalogue item by key.',
      inputSchema: z.object({ key: z.string() }),
      execute: async ({ key }) => lookupResult(key),
    }),
    // No execute: the loop stops at this call and the app answers it later.
    ask_user: tool({
      description: 'Asks the human a question and waits for the answer.',
      inputSchema: z.object({ question: z.string() }),
    }),
  };
  return { model: fakeModel(n, probe), tools };
}

const generate = (n, probe, messages) => {
  const { model, tools } = build(n, probe);
  return generateText({ model, tools, system: INSTRUCTIONS, messages, stopWhen: stepCountIs(10_000) });
};

export async function pauseW(n, answer = ANSWER) {
  const probe = { answer };
  const input = [{ role: 'user', content: PROMPT }];
  const result = await generate(n, probe, input);
  const pending = result.toolCalls.find((c) => c.toolName === 'ask_user');
  if (!pending) throw new Error('expected a pending ask_user call');
  const t0 = performance.now();
  const checkpointString = JSON.stringify([...input, ...result.response.messages]);
  const t1 = performance.now();
  return { checkpointString, pauseMs: t1 - t0, held: { result } };
}

export async function runW(n, answer = ANSWER) {
  const start = performance.now();
  const { checkpointString, pauseMs } = await pauseW(n, answer);
  // ---- "new process": nothing but the string crosses this line ----
  const probe = { answer };
  const t1 = performance.now();
  const messages = JSON.parse(checkpointString);
  const call = messages.at(-1).content.find((p) => p.type === 'tool-call' && p.toolName === 'ask_user');
  messages.push({
    role: 'tool',
    content: [{ type: 'tool-result', toolCallId: call.toolCallId, toolName: call.toolName, output: { type: 'text', value: answer } }],
  });
  const result = await generate(n, probe, messages);
  const end = performance.now();
  return runResult({ text: result.text, probe, expectedLastRequestMessageCount: 2 * n + 2, pauseMs, t1, checkpointString, start, end });
}
