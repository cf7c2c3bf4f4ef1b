// Subagents in TypeScript: a lead agent hands work to a payments agent through agentTool; the payment's approval
// surfaces in the lead's result by a nested id and is decided there. `tsc --noEmit` must accept it, and the
// expected-error lines fail the check if the types degrade.
import {
  agent, agentTool, defineTool, scriptedModel, isInterrupted,
  type AgentEvent, type Checkpoint, type Decision, type FailedSubagent, type Interrupt,
} from 'resumable-agent';

const pay = defineTool({
  name: 'pay',
  schema: (s) => ({ amount: s.number().required() }),
  needsApproval: true,
  handle: ({ amount }) => `paid ${amount}`,
});

const payments = agent({ model: scriptedModel(['Paid.']), instructions: 'You pay invoices.', tools: [pay] });
const payTool = agentTool({ name: 'payments', description: 'Pays an invoice.', agent: payments });
// A config works as well as an agent; `input` gives another schema (the child's prompt is then the input's JSON).
const census = agentTool({ name: 'census', agent: { model: scriptedModel(['2 million']) }, input: (s) => ({ city: s.string().required() }) });

// @ts-expect-error the child agent is required
agentTool({ name: 'nobody' });

/** Where an interrupt comes from: the lead's own, or a subagent's (its path of calls). */
export function origin(i: Interrupt): string {
  return i.path === undefined ? 'the lead' : `the subagent under ${i.path.join(' > ')}`;
}

export async function settle(approver: string): Promise<string> {
  const lead = agent({ model: scriptedModel(['ok']), tools: [payTool, census], approval: ({ toolName }) => (toolName === 'pay' ? 'ask' : 'allow') });
  const r = await lead.prompt('Pay the ACME invoice.', {
    onEvent: (e: AgentEvent) => {
      if (e.path !== undefined && e.type === 'tool-call') console.log(`${e.path.join('/')}: ${e.toolName}`);
    },
  });
  if (!isInterrupted(r)) return r.text;
  const decisions: Record<string, Decision> = {};
  for (const i of r.interrupts) {
    console.log(`${i.id} from ${origin(i)}`);
    if (i.kind === 'approval') decisions[i.id] = { type: 'approve', by: approver };
  }
  const done = await lead.resume(r.checkpoint, { decisions });
  return isInterrupted(done) ? 'still waiting' : done.text;
}

/** After a provider outage: resume each subagent run the lead kept when it failed (its tools do not run again). */
export async function retryFailed(checkpoint: Checkpoint): Promise<string[]> {
  const kept: FailedSubagent[] = checkpoint.failedSubagents ?? [];
  const answers: string[] = [];
  for (const f of kept) {
    console.log(`${f.toolName} (${f.id}) failed: ${f.error.message}`);
    if (f.toolName !== 'payments') continue;
    const r = await payments.resume(f.checkpoint, '');
    answers.push(isInterrupted(r) ? `${f.id}: waits for ${r.interrupts.length}` : r.text);
  }
  return answers;
}
