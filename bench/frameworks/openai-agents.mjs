// OpenAI Agents SDK (JS): the idiomatic human-in-the-loop pattern. `ask_user` is a function tool with
// `needsApproval: true`, so the run stops with an interruption before executing it; the paused run is
// `result.state.toString()` (a RunState string). The fresh side builds a new Agent, restores the state with
// `RunState.fromStringWithContext(agent, string, context)` — the run context is how the SDK hands
// app data to tools, so the human's answer travels in it — approves the pending call, and runs the state
// again; the approved `ask_user` then executes and returns the answer as its output.
// Tracing is disabled (it would try to export traces to OpenAI; nothing here has a key or a network).
import { Agent, RunContext, RunState, Usage, run, tool, setTracingDisabled } from '@openai/agents';
import { z } from 'zod';
import { INSTRUCTIONS, PROMPT, ANSWER, decide, lookupResult, checkHistory, runResult } from '../lib/workload.mjs';

export const label = 'OpenAI Agents SDK';

setTracingDisabled(true);

const resultText = (item) => (typeof item.output === 'string' ? item.output : item.output?.text);

/** A Model (the SDK's interface) that answers instantly from the shared script. */
class FakeModel {
  constructor(n, probe) {
    this.n = n;
    this.probe = probe;
  }
  // The model sees the SDK's input items: [user message, (function_call, function_call_result) x k], so
  // k = (len - 1) / 2 and the final call (k = n) must see 2n + 1 items; instructions travel separately.
  async getResponse(request) {
    const items = request.input;
    const k = (items.length - 1) / 2;
    const d = decide(this.n, k, this.probe.answer);
    let output;
    if (d.kind === 'lookup') output = [{ type: 'function_call', callId: d.id, name: 'lookup', arguments: JSON.stringify({ key: d.key }), status: 'completed' }];
    else if (d.kind === 'ask') output = [{ type: 'function_call', callId: d.id, name: 'ask_user', arguments: JSON.stringify({ question: d.question }), status: 'completed' }];
    else {
      this.probe.finalCallAt ??= performance.now();
      this.probe.lastRequestMessageCount = items.length;
      if (request.systemInstructions !== INSTRUCTIONS) throw new Error('final call lost the instructions');
      const results = [];
      for (let i = 2; i < items.length; i += 2) results.push(resultText(items[i]));
      checkHistory(this.n, results, this.probe.answer);
      output = [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: d.text }] }];
    }
    return { output, usage: new Usage(), responseId: `resp_${k}` };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse() {
    throw new Error('not used');
  }
}

// Everything is built anew for the resume, as a new process would: tools, model, agent.
function build(n, probe) {
  const lookup = tool({
    name: 'lookup',
    description: 'Looks up a catalogue item by key.',
    parameters: z.object({ key: z.string() }),
    execute: async ({ key }) => lookupResult(key),
  });
  const askUser = tool({
    name: 'ask_user',
    description: 'Asks the human a question and waits for the answer.',
    parameters: z.object({ question: z.string() }),
    needsApproval: true,
    execute: async (_input, runContext) => runContext.context.answer,
  });
  return new Agent({ name: 'catalogue', instructions: INSTRUCTIONS, tools: [lookup, askUser], model: new FakeModel(n, probe) });
}

export async function pauseW(n, answer = ANSWER) {
  const probe = { answer };
  const agent = build(n, probe);
  const result = await run(agent, PROMPT, { maxTurns: 10_000, context: {} });
  if (result.interruptions?.length !== 1) throw new Error('expected one interruption');
  const t0 = performance.now();
  const checkpointString = result.state.toString();
  const t1 = performance.now();
  return { checkpointString, pauseMs: t1 - t0, held: { result, agent } };
}

export async function runW(n, answer = ANSWER) {
  const start = performance.now();
  const { checkpointString, pauseMs } = await pauseW(n, answer);
  // ---- "new process": nothing but the string crosses this line ----
  const probe = { answer };
  const t1 = performance.now();
  const agent = build(n, probe);
  const state = await RunState.fromStringWithContext(agent, checkpointString, new RunContext({ answer }));
  for (const interruption of state.getInterruptions()) state.approve(interruption);
  const result = await run(agent, state, { maxTurns: 10_000 });
  const end = performance.now();
  if (result.interruptions?.length) throw new Error('expected a final answer');
  return runResult({ text: result.finalOutput, probe, expectedLastRequestMessageCount: 2 * n + 1, pauseMs, t1, checkpointString, start, end });
}
