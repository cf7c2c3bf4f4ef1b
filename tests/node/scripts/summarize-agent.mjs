// An agent of the summarizing-compaction tests (tests/node/summarize.test.mjs), the same in each process: its model
// function makes `steps` lookups (a question at step `askAt`), then answers; a summary call (shown no tools) is answered
// by the same function, `S<n>` for the n-th one of this process. `calls` counts what each kind was asked.
//   node summarize-agent.mjs <checkpoint.json> <answer>   resumes the checkpoint and prints the result as JSON
import { readFileSync } from 'node:fs';
import { agent, defineTool, InterruptError } from 'resumable-agent';

export const calls = { steps: 0, summaries: 0, lookups: 0, largest: 0, systems: [] };

export function summarizingAgent({ steps = 400, askAt = 200, compaction, summaryModel } = {}) {
  const lookup = defineTool({ name: 'lookup', handle: ({ key }) => { calls.lookups += 1; return `v-${key}`; } });
  const ask = defineTool({ name: 'ask', handle: ({ q }) => { throw new InterruptError(q); } });
  const model = async (request) => {
    if (request.tools.length === 0) return { content: [{ type: 'text', text: `S${calls.summaries++}` }], usage: { inputTokens: 50, outputTokens: 5 } };
    calls.largest = Math.max(calls.largest, request.messages.length);
    calls.systems.push(request.system);
    // The step: one after the last call's (the last step is kept whatever is summarized or dropped).
    const last = request.messages.findLast((m) => m.role === 'assistant')?.content.find((b) => b.type === 'tool_use');
    const i = last ? Number(last.id.slice(1)) + 1 : 0;
    calls.steps += 1;
    const usage = { inputTokens: 10, outputTokens: 1 };
    if (i === askAt) return { content: [{ type: 'tool_use', id: `q${i}`, name: 'ask', input: { q: 'Which day?' } }], usage };
    if (i < steps) return { content: [{ type: 'tool_use', id: `c${i}`, name: 'lookup', input: { key: `k${i}` } }], usage };
    return { content: [{ type: 'text', text: 'all done' }], usage };
  };
  const summarize = summaryModel ? { maxMessages: 40, keepLast: 4, model: summaryModel } : { maxMessages: 40, keepLast: 4 };
  return agent({ model, tools: [lookup, ask], instructions: 'Be brief.', maxIterations: 1000, compaction: compaction === undefined ? { summarize } : compaction ?? undefined });
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const [file, answer] = process.argv.slice(2);
  const result = await summarizingAgent().resume(readFileSync(file, 'utf8'), answer);
  process.stdout.write(JSON.stringify({ pid: process.pid, text: result.text, summarized: result.checkpoint.summarized, messages: result.checkpoint.messages.length, finalMessages: result.checkpoint.messages, calls }));
}
