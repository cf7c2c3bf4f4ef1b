// MCP tools and elicitation, as types: a request handler that prompts or answers a paused run. Compiled by
// `make test` (tsc); nothing here calls a network.
import {
  agent, anthropic, defineTool, isInterrupted, mcpTools, McpError, type Checkpoint, type Decision, type Interrupt,
} from 'resumable-agent';

export async function handle(env: { MCP_URL: string; MCP_TOKEN: string; KEY: string }, body: { checkpoint?: Checkpoint; form?: Record<string, string> }) {
  const tools = await mcpTools({ url: env.MCP_URL, headers: { authorization: `Bearer ${env.MCP_TOKEN}` }, prefix: 'crm_', timeoutMs: 10_000 });
  const local = defineTool({ name: 'now', handle: () => new Date().toISOString() });
  const bot = agent({ model: anthropic({ apiKey: env.KEY, model: 'claude-sonnet-4-5' }), tools: [...tools, local] });
  try {
    const result = body.checkpoint ? await bot.resume(body.checkpoint, answers(body.checkpoint, body.form ?? {})) : await bot.prompt('Book a table.');
    if (!isInterrupted(result)) return { text: result.text };
    return { waiting: result.checkpoint.interrupts.map((i) => (i.kind === 'elicitation' ? { id: i.id, ask: i.message, fields: Object.keys(i.requestedSchema) } : { id: i.id })), checkpoint: result.checkpoint };
  } catch (e) {
    // The server was down: e.checkpoint is the run before the call, which is made again when resumed.
    if (e instanceof McpError) return { retryLater: e.server, status: e.status, checkpoint: e.checkpoint };
    throw e;
  }
}

/** One decision per pending interrupt: the form's fields for an elicitation, declined when empty. */
function answers(checkpoint: Checkpoint, form: Record<string, string>): { decisions: Record<string, Decision> } {
  const decisions: Record<string, Decision> = {};
  for (const i of checkpoint.interrupts ?? []) decisions[i.id] = decide(i, form);
  return { decisions };
}

function decide(i: Interrupt, form: Record<string, string>): Decision {
  switch (i.kind) {
    case 'elicitation': return Object.keys(form).length ? { type: 'accept', content: form } : { type: 'decline' };
    case 'question': return { type: 'answer', text: form.answer ?? '' };
    case 'approval': return { type: 'deny', message: 'not from this form' };
    case 'budget': return { type: 'deny', message: 'not from this form' };
  }
}

// @ts-expect-error an elicitation is accepted with content, not text
export const wrong: Decision = { type: 'accept', text: 'yes' };
// @ts-expect-error mcpTools needs the server's URL
mcpTools({ headers: {} });
