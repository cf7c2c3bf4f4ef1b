// The agent of tests/node/approval-policy.test.mjs, shared with the process that resumes its pauses
// (approver-child.mjs): payments over 100 wait for two approvers, smaller ones for one, `wipe` is never allowed.
import { agent, defineTool, scriptedModel } from 'resumable-agent';

export const runs = [];

export function paymentsAgent(script, extra = {}) {
  const pay = defineTool({
    name: 'pay',
    description: 'Pays an amount.',
    schema: (s) => ({ amount: s.number().required() }),
    handle: ({ amount }) => { runs.push(`pay ${amount}`); return `paid ${amount}`; },
  });
  const wipe = defineTool({ name: 'wipe', handle: () => { runs.push('wipe'); return 'wiped'; } });
  const look = defineTool({ name: 'look', handle: () => { runs.push('look'); return 'seen'; } });
  return agent({
    model: scriptedModel(script),
    tools: [pay, wipe, look],
    approval: async ({ toolName, input }) => {
      if (toolName === 'wipe') return { deny: true, message: 'wiping is never allowed' };
      if (toolName === 'pay') return input.amount > 100 ? { ask: true, approvers: 2 } : 'ask';
      return 'allow';
    },
    ...extra,
  });
}
