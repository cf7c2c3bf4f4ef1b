// Shape "browser + IndexedDB page": openai() against the model server the page names (?model=<url>) and a session
// in IndexedDB, paused by a tool's question and answered; the outcome is the page's text.
import { agent, defineTool, indexedDbSaver, InterruptError, openai } from 'resumable-agent';

const out = document.getElementById('out');
const lookup = defineTool({ name: 'lookup', schema: (s) => ({ key: s.string() }), handle: () => { throw new InterruptError('Which day?'); } });
const model = openai({ apiKey: 'sk-test-6f1c2a9be0d44c1f8a7e-SECRET', model: 'gpt-test', baseURL: `${new URL(location.href).searchParams.get('model')}/openai` });

async function main() {
  const session = agent({ tools: [lookup], model }).session(indexedDbSaver({ dbName: 'shape' }), 'shape');
  const paused = await session.prompt('scenario:tool');
  if (!paused.interrupted) throw new Error('expected a pause');
  return (await session.reply('Friday')).text;
}
main().then(
  (text) => { out.textContent = `result: ${text}`; },
  (e) => { out.textContent = `error: ${e?.name}: ${e?.message}`; },
);
