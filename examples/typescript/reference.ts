// The reference's examples in TypeScript, with only the import changed; `tsc --noEmit` must accept it.
import {
  agent, openai, isInterrupted, assertComplete, InterruptError, defineTool, scriptedModel, memorySaver,
  CheckpointError, ModelError, MaxIterationsError,
  type AgentResponse, type InterruptedResponse, type Checkpoint, type Model, type Saver,
} from 'resumable-agent';

const askUser = defineTool({
  name: 'ask_user',
  description: 'Ask the human a clarifying question before continuing.',
  schema: (s) => ({ question: s.string().required(), urgency: s.enum(['low', 'high']) }),
  handle: ({ question, urgency }) => {
    const q: string = question; // inferred from the schema: a required string
    const u: 'low' | 'high' | undefined = urgency;
    // @ts-expect-error an optional field may be undefined (fails if the input degrades to `any`)
    const strict: 'low' | 'high' = urgency;
    void u, strict;
    throw new InterruptError(q as string);
  },
});

const lookup = defineTool<{ key: string }>({
  name: 'lookup',
  schema: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
  handle: async ({ key }, { toolUseId, runId }) => ({ key, toolUseId, runId }),
});

const model: Model = scriptedModel(['Hello!']);
const agentConfig = {
  instructions: 'You are a helpful assistant. Ask the user for any missing information.',
  tools: [askUser, lookup],
  model,
};

interface KVNamespace {
  get(key: string): Promise<string | null>;
  put(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
}

export async function handleStart(request: Request, kv: KVNamespace): Promise<Response> {
  const { message, sessionId } = (await request.json()) as { message: string; sessionId: string };
  const result = await agent(agentConfig).prompt(message);
  if (isInterrupted(result)) {
    await kv.put(sessionId, JSON.stringify(result.checkpoint));
    return Response.json({ question: result.question });
  }
  // @ts-expect-error a finished response has no question (fails if the union stops narrowing)
  void result.question;
  return Response.json({ answer: result.text });
}

export async function handleReply(request: Request, kv: KVNamespace): Promise<Response> {
  const { answer, sessionId } = (await request.json()) as { answer: string; sessionId: string };
  const checkpoint = JSON.parse((await kv.get(sessionId)) ?? 'null');
  if (!checkpoint) return new Response('Session not found', { status: 404 });
  const result = await agent(agentConfig).resume(checkpoint, answer);
  if (isInterrupted(result)) {
    await kv.put(sessionId, JSON.stringify(result.checkpoint));
    return Response.json({ question: result.question });
  }
  await kv.delete(sessionId);
  return Response.json({ answer: result.text });
}

export async function loop(ask: (q: string) => Promise<string>): Promise<string> {
  let result: AgentResponse | InterruptedResponse = await agent(agentConfig).prompt('Plan my project.');
  while (isInterrupted(result)) {
    const pending: string = result.checkpoint.pendingToolUseId;
    void pending;
    result = await agent(agentConfig).resume(result.checkpoint, await ask(result.question));
  }
  return result.text;
}

export async function recover(db: Saver): Promise<void> {
  const result = assertComplete(await agent(agentConfig).prompt('Analyse the codebase.'));
  await db.put('last-run', result.checkpoint);
  const saved: Checkpoint | null = await db.get('last-run');
  if (saved) {
    try {
      const resumed = assertComplete(await agent(agentConfig).resume(saved, ''));
      console.log(resumed.text, resumed.usage.inputTokens, resumed.iterations);
    } catch (e) {
      if (e instanceof CheckpointError) console.log(e.path);
      if (e instanceof ModelError || e instanceof MaxIterationsError) console.log(e.checkpoint.iterations);
    }
  }
  const summaries = await db.list();
  for (const s of summaries) console.log(s.key, s.interrupted, s.question ?? '');
}

void recover(memorySaver());

// @ts-expect-error the model is required
agent({ tools: [askUser] });
// Misspelled or foreign options are type errors, as they are ConfigErrors at run time (issue 24):
// @ts-expect-error `system` is `instructions` here
agent({ system: 'Be brief.', model: scriptedModel(['ok']) });
// @ts-expect-error there is no `maxSteps` (the bound is `maxIterations`)
agent({ model: scriptedModel(['ok']), maxSteps: 5 });
// @ts-expect-error `tool` is `tools`
agent({ model: scriptedModel(['ok']), tool: [askUser] });
// @ts-expect-error `baseUrl` is `baseURL`
openai({ model: 'gpt-4.1-mini', baseUrl: 'http://127.0.0.1:1/v1' });
