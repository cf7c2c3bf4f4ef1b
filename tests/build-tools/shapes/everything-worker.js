// Shape "everything Worker": every export of the package kept (each provider, every saver, MCP), and the provider +
// KV session flow run through openai().
import * as everything from 'resumable-agent';

const { agent, openai, defineTool, InterruptError, kvSaver } = everything;
const lookup = defineTool({ name: 'lookup', schema: (s) => ({ key: s.string() }), handle: () => { throw new InterruptError('Which day?'); } });

export default {
  async fetch(request, env) {
    try {
      if (new URL(request.url).pathname === '/exports') return new Response(Object.keys(everything).sort().join(' '));
      const model = openai({ apiKey: env.API_KEY, model: 'gpt-test', baseURL: `${env.MODEL_URL}/openai` });
      const session = agent({ tools: [lookup], model }).session(kvSaver(env.SESSIONS), 'shape');
      const step = new URL(request.url).searchParams.get('step');
      const r = step === '1' ? await session.prompt('scenario:tool') : await session.reply('Friday');
      return new Response(r.interrupted ? `asks: ${r.question}` : r.text);
    } catch (e) {
      return new Response(`${e.name}: ${e.message}`, { status: 500 });
    }
  },
};
