// resumable-agent (this repository's package, built into ../pkg): InterruptError pauses, the checkpoint is
// plain JSON (JSON.stringify), and a brand-new agent resumes from the string with `resume(string, answer)`.
// W(n) over the package's API as `api` gives it: ours.mjs imports it from 'resumable-agent', ours-core.mjs from
// 'resumable-agent/core' (named imports, so a bundler keeps only what W(n) uses).
import { INSTRUCTIONS, PROMPT, ANSWER, decide, lookupResult, checkHistory, runResult } from '../lib/workload.mjs';

export function oursWith({ agent, defineTool, InterruptError, isInterrupted }) {
  // Everything is built anew for the resume, as a new process would: tools, model, agent.
  function build(n, probe) {
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks up a catalogue item by key.',
      schema: (s) => ({ key: s.string().required() }),
      handle: ({ key }) => lookupResult(key),
    });
    const askUser = defineTool({
      name: 'ask_user',
      description: 'Asks the human a question and waits for the answer.',
      schema: (s) => ({ question: s.string().required() }),
      handle: ({ question }) => {
        throw new InterruptError(question);
      },
    });
    // The model sees our message representation: [user prompt, (assistant tool_use, user tool_result) x k].
    // So k = (messages.length - 1) / 2, and the final call (k = n) must see 2n + 1 messages; the system prompt
    // travels separately as request.system.
    const model = async (request) => {
      const messages = request.messages;
      const k = (messages.length - 1) / 2;
      const d = decide(n, k, probe.answer);
      if (d.kind === 'lookup') return { content: [{ type: 'tool_use', id: d.id, name: 'lookup', input: { key: d.key } }] };
      if (d.kind === 'ask') return { content: [{ type: 'tool_use', id: d.id, name: 'ask_user', input: { question: d.question } }] };
      probe.finalCallAt = performance.now();
      probe.lastRequestMessageCount = messages.length;
      if (request.system !== INSTRUCTIONS) throw new Error('final call lost the instructions');
      const results = [];
      for (let i = 2; i < messages.length; i += 2) results.push(messages[i].content[0].content);
      checkHistory(n, results, probe.answer);
      return { content: [{ type: 'text', text: d.text }], usage: { inputTokens: 0, outputTokens: 0 } };
    };
    return agent({ instructions: INSTRUCTIONS, tools: [lookup, askUser], model, maxIterations: 1000 });
  }

  /** Runs W(n) to the pause; returns the string and what a live process holds while paused. */
  async function pauseW(n, answer = ANSWER) {
    const probe = { answer };
    const paused = await build(n, probe).prompt(PROMPT);
    if (!isInterrupted(paused)) throw new Error('expected a pause');
    const t0 = performance.now();
    const checkpointString = JSON.stringify(paused.checkpoint);
    const t1 = performance.now();
    return { checkpointString, pauseMs: t1 - t0, held: paused };
  }

  async function runW(n, answer = ANSWER) {
    const start = performance.now();
    const { checkpointString, pauseMs } = await pauseW(n, answer);
    // ---- "new process": nothing but the string crosses this line ----
    const probe = { answer };
    const t1 = performance.now();
    const done = await build(n, probe).resume(checkpointString, answer);
    const end = performance.now();
    if (isInterrupted(done)) throw new Error('expected a final answer');
    return runResult({ text: done.text, probe, expectedLastRequestMessageCount: 2 * n + 1, pauseMs, t1, checkpointString, start, end });
  }

  return { pauseW, runW };
}
