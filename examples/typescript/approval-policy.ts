// An agent-level approval policy, remembered approvals, several approvers and a token budget in TypeScript;
// `tsc --noEmit` must accept it, and the expected-error lines fail the check if the types degrade.
import {
  agent, defineTool, scriptedModel, isInterrupted, BudgetExceededError,
  type ApprovalPolicy, type Decision, type PolicyDecision, type AgentEvent,
} from 'resumable-agent';

const pay = defineTool({
  name: 'pay',
  schema: (s) => ({ amount: s.number().required() }),
  handle: ({ amount }) => `paid ${amount}`,
});

const approval: ApprovalPolicy = async ({ toolName, input }, { usage }) => {
  if (usage.outputTokens > 50_000) return { deny: true, message: 'this run has written enough' };
  if (toolName === 'pay') return input.amount > 1000 ? { ask: true, approvers: 2, expiresInMs: 86_400_000 } : 'ask';
  return 'allow';
};

// @ts-expect-error a policy answers allow, ask, deny or one of the two objects
const wrong: PolicyDecision = 'maybe';
void wrong;

export async function payInvoices(user: string): Promise<string> {
  const a = agent({ model: scriptedModel(['ok']), tools: [pay], approval, budget: { totalTokens: 100_000, onExceeded: 'ask' } });
  try {
    const r = await a.prompt('Pay the invoices.', {
      onEvent: (e: AgentEvent) => {
        if (e.type === 'approval-response' && e.remembered) console.log(`${e.toolName} approved by a remembered approval`);
        if (e.type === 'approval-response' && e.pending) console.log(`${e.by} approved ${e.id}; it waits for more`);
      },
    });
    if (!isInterrupted(r)) return r.text;
    const decisions: Record<string, Decision> = {};
    for (const i of r.interrupts) {
      // The budget is spent: go on with twice as much.
      if (i.kind === 'budget') decisions[i.id] = { type: 'approve', budget: { totalTokens: 2 * (i.input.budget.totalTokens ?? 100_000) } };
      if (i.kind !== 'approval') continue;
      // `by` comes from your own login, never from what the client sent.
      decisions[i.id] = (i.approvers ?? 1) > 1 ? { type: 'approve', by: user } : { type: 'approve', remember: 'tool', by: user };
      console.log(i.approvals?.map((x) => `${x.by} at ${new Date(x.at).toISOString()}`));
    }
    // @ts-expect-error remember takes 'tool' only
    const bad: Decision = { type: 'approve', remember: 'forever' };
    void bad;
    const next = await a.resume(r.checkpoint, { decisions });
    return isInterrupted(next) ? next.question : next.text;
  } catch (e) {
    if (e instanceof BudgetExceededError) return `stopped at ${e.limit}: ${e.usage.inputTokens + e.usage.outputTokens} tokens`;
    throw e;
  }
}
