// The agents of tests/node/subagents.test.mjs, shared with the process that resumes their pauses (team-child.mjs): a
// lead that looks, hands a payment to a `payments` subagent (whose `pay` needs approval), and looks again, in one turn.
import { agent, agentTool, defineTool, scriptedModel } from 'resumable-agent';

export const runs = [];

const toolUse = (id, name, input) => ({ type: 'tool_use', id, name, input });
const turn = (...content) => ({ content });

/** A tool that records its run and answers `done <name>`. */
export const counted = (name, extra = {}) => defineTool({ name, handle: () => { runs.push(name); return `done ${name}`; }, ...extra });

/** The payments subagent: calls `pay` (approval needed, `amount` a number), then answers. */
export function payer(script = [turn(toolUse('k1', 'pay', { amount: 20 })), 'Paid.']) {
  return agent({
    instructions: 'You pay invoices.',
    model: scriptedModel(script),
    tools: [counted('pay', { needsApproval: true, schema: (s) => ({ amount: s.number().required() }) })],
  });
}

/** The lead: `look`, the `payments` subagent, `look` again, in one turn; then its answer. */
export function lead({ child = payer(), script, ...options } = {}) {
  return agent({
    model: scriptedModel(script ?? [turn(toolUse('c0', 'look', {}), toolUse('c1', 'payments', { task: 'pay the invoice' }), toolUse('c2', 'look', {})), 'All settled.']),
    tools: [counted('look'), agentTool({ name: 'payments', description: 'Pays invoices.', agent: child })],
    ...options,
  });
}
