// Shape "provider + KV session Worker": anthropic() against MODEL_URL and a session in KV, paused by a tool's
// question in one request and answered in the next (GET /?step=1, then /?step=2).
import { agent, anthropic, defineTool, InterruptError, kvSaver } from 'resumable-agent';

const lookup = defineTool({ name: 'lookup', schema: (s) => ({ key: s.string() }), handle: () => { throw new InterruptError('Which day?'); } });

export default {
  async fetch(request, env) {
    try {
      const model = anthropic({ apiKey: env.API_KEY, model: 'claude-test', baseURL: `${env.MODEL_URL}/anthropic` });
      const session = agent({ tools: [lookup], model }).session(kvSaver(env.SESSIONS), 'shape');
      const step = new URL(request.url).searchParams.get('step');
      const r = step === '1' ? await session.prompt('scenario:tool') : await session.reply('Friday');
      return new Response(r.interrupted ? `asks: ${r.question}` : r.text);
    } catch (e) {
      return new Response(`${e.name}: ${e.message}`, { status: 500 });
    }
  },
};
