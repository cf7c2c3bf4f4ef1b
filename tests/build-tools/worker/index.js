// The smallest app in a Worker, plus a session kept in KV across two requests: GET /run, then GET /session?step=1
// (paused on the question) and /session?step=2 (answered).
import { agent, defineTool, InterruptError, kvSaver, scriptedModel } from 'resumable-agent';
import { smallest } from './smallest.js';

const ask = defineTool({ name: 'ask', schema: (s) => ({ q: s.string() }), handle: ({ q }) => { throw new InterruptError(q); } });
const model = scriptedModel([
  { content: [{ type: 'tool_use', id: 't1', name: 'ask', input: { q: 'When?' } }] },
  (request) => `Done: ${request.messages.at(-1).content[0].content}`,
]);

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    try {
      if (url.pathname === '/run') return new Response(await smallest());
      const session = agent({ tools: [ask], model }).session(kvSaver(env.SESSIONS), 'build-tools');
      const r = url.searchParams.get('step') === '1' ? await session.prompt('Plan it.') : await session.reply('Friday');
      return new Response(r.interrupted ? `asks: ${r.question}` : r.text);
    } catch (e) {
      return new Response(`${e.name}: ${e.message}`, { status: 500 });
    }
  },
};
