// The smallest app, as a new user writes it: one turn paused on an InterruptError tool, the checkpoint as JSON
// text, and a new agent resuming it with the answer.
import { agent, defineTool, InterruptError, isInterrupted, scriptedModel } from 'resumable-agent';

export async function smallest() {
  const ask = defineTool({
    name: 'ask',
    description: 'Asks the human.',
    schema: (s) => ({ q: s.string().required() }),
    handle: ({ q }) => { throw new InterruptError(q); },
  });
  const model = scriptedModel([
    { content: [{ type: 'tool_use', id: 't1', name: 'ask', input: { q: 'When?' } }] },
    (request) => `Done: ${request.messages.at(-1).content[0].content}`,
  ]);
  const paused = await agent({ tools: [ask], model }).prompt('Plan it.');
  if (!isInterrupted(paused)) throw new Error('expected a pause');
  const text = JSON.stringify(paused.checkpoint);
  const done = await agent({ tools: [ask], model }).resume(text, 'Friday');
  return done.text;
}
