// Approvals, decisions, events and release in TypeScript; `tsc --noEmit` must accept it, and the
// expected-error lines fail the check if the types degrade.
import {
  agent, defineTool, scriptedModel, memorySaver, isInterrupted, InterruptError, DecisionError, InterruptExpiredError,
  type AgentEvent, type Decision, type Interrupt, type ResumeAnswer, type SavedCheckpoint, type ToolDefinition,
} from 'resumable-agent';

const send = defineTool({
  name: 'send',
  schema: (s) => ({ to: s.string().required(), body: s.string() }),
  needsApproval: async ({ to }) => (to.endsWith('@example.com') ? false : { expiresInMs: 3_600_000 }),
  onExpire: 'deny',
  handle: ({ to }) => `sent to ${to}`,
});

const pick = defineTool({
  name: 'pick',
  handle: () => {
    throw new InterruptError('Which plan?', { options: ['basic', 'pro'], data: { prices: [5, 20] }, expiresInMs: 60_000 });
  },
});

// @ts-expect-error onExpire is 'deny' or 'error'
defineTool({ name: 'x', handle: () => 1, onExpire: 'later' });

export async function approve(): Promise<string> {
  using a = agent({ tools: [send, pick], model: scriptedModel(['ok']) });
  const r = await a.prompt('Tell Ann.', { onEvent: (e) => console.log(e.type) });
  if (!isInterrupted(r)) return r.text;
  const decisions: Record<string, Decision> = {};
  for (const i of r.interrupts) {
    const interrupt: Interrupt = i;
    if (interrupt.kind === 'approval') decisions[interrupt.id] = { type: 'approve', modifiedArgs: { to: 'ann@example.com' } };
    else if (interrupt.kind === 'question') decisions[interrupt.id] = { type: 'answer', text: interrupt.options?.[0] ?? 'basic' };
    // An MCP server's request for input: content shaped by its requestedSchema.
    else if (interrupt.kind === 'elicitation') decisions[interrupt.id] = interrupt.requestedSchema.properties ? { type: 'accept', content: { plan: 'basic' } } : { type: 'decline' };
    // A spent token budget (an agent with budget.onExceeded 'ask'): go on with twice as much.
    else decisions[interrupt.id] = { type: 'approve', budget: { totalTokens: 2 * (interrupt.input.budget.totalTokens ?? 0) } };
    // @ts-expect-error an approval request has no question (fails if the union stops narrowing)
    if (interrupt.kind === 'approval') void interrupt.question;
  }
  const answer: ResumeAnswer = { decisions };
  // One pending question may be answered (or declined) by a decision directly.
  const direct: ResumeAnswer[] = [{ type: 'answer', text: 'Friday' }, { type: 'deny', message: 'not telling' }, 'Friday'];
  void direct;
  // @ts-expect-error a decision's type is approve, deny or answer
  const bad: Decision = { type: 'maybe' };
  void bad;
  try {
    const done = await a.resume(r.checkpoint, answer);
    return isInterrupted(done) ? done.question : done.text;
  } catch (e) {
    if (e instanceof DecisionError) return `fix decision ${e.interruptId ?? ''}`;
    if (e instanceof InterruptExpiredError) return `expired at ${e.expiresAt}: ${e.checkpoint.iterations}`;
    throw e;
  }
}

export async function watch(): Promise<number> {
  const s = agent({ tools: [send], model: scriptedModel(['ok']) }).stream({ prompt: 'go' });
  let steps = 0;
  for await (const e of s) {
    const event: AgentEvent = e;
    if (event.type === 'step-finish') steps += event.content.length;
    if (event.type === 'checkpoint') steps += event.checkpoint.messages.length;
    if (event.type === 'done' && !isInterrupted(event.result)) steps += event.result.iterations;
    // @ts-expect-error a step-start event has no content
    if (event.type === 'step-start') void event.content;
  }
  return steps + (await s.result.then(() => 0, () => 1));
}

export async function listing(): Promise<string[]> {
  using saver = memorySaver();
  const rows: SavedCheckpoint[] = await saver.list();
  const spec: ToolDefinition = { name: send.name, description: send.description, inputSchema: send.inputSchema };
  return [...rows.map((r) => `${r.key}: ${r.interrupted ? r.question : 'done'}`), spec.name, String(await saver.exists('k'))];
}
