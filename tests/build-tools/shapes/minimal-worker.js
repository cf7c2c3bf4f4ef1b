// Shape "minimal Worker": a JS model and a JS tool, a pause and a resume from the checkpoint's JSON text, through
// 'resumable-agent/core' (a Worker ships every .wasm it imports: this is how it ships the core's alone).
import { agent, defineTool, InterruptError, isInterrupted, scriptedModel } from 'resumable-agent/core';

const ask = defineTool({ name: 'ask', schema: (s) => ({ q: s.string() }), handle: ({ q }) => { throw new InterruptError(q); } });
const model = scriptedModel([
  { content: [{ type: 'tool_use', id: 't1', name: 'ask', input: { q: 'When?' } }] },
  (request) => `Done: ${request.messages.at(-1).content[0].content}`,
]);

export default {
  async fetch() {
    try {
      const paused = await agent({ tools: [ask], model }).prompt('Plan it.');
      if (!isInterrupted(paused)) return new Response('expected a pause', { status: 500 });
      const done = await agent({ tools: [ask], model }).resume(JSON.stringify(paused.checkpoint), 'Friday');
      return new Response(done.text);
    } catch (e) {
      return new Response(`${e.name}: ${e.message}`, { status: 500 });
    }
  },
};
