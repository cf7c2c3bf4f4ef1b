// Agents the telemetry tests share with their child process.
import { agent, defineTool, scriptedModel } from 'resumable-agent';

const toolUse = (id, name, input) => ({ type: 'tool_use', id, name, input });

/** An agent whose `pay` call needs approval: it pauses, and finishes once approved. */
export function pausingAgent(tracer) {
  return agent({
    instructions: 'Pay what is asked.',
    model: scriptedModel([
      { content: [toolUse('p1', 'pay', { amount: 5 })], usage: { inputTokens: 10, outputTokens: 3 } },
      { content: [{ type: 'text', text: 'Paid.' }], usage: { inputTokens: 20, outputTokens: 2 } },
    ]),
    tools: [defineTool({ name: 'pay', schema: (s) => ({ amount: s.number().required() }), needsApproval: true, handle: ({ amount }) => `paid ${amount}` })],
    telemetry: { tracer, agentName: 'payer' },
  });
}
