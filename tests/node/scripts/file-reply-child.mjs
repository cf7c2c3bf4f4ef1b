// Replies "yes" to session `id` in a fileSaver directory, from its own process; prints the answer or the
// error's name.   node file-reply-child.mjs <dir> <id>
import { agent, defineTool, InterruptError, scriptedModel, fileSaver } from 'resumable-agent';

const [dir, id] = process.argv.slice(2);
const call = (i, name, input) => ({ type: 'tool_use', id: i, name, input });
const ask = defineTool({ name: 'ask', handle: () => { throw new InterruptError('Pay Ann 10?'); } });
const pay = defineTool({ name: 'pay', handle: () => 'paid' });
const model = scriptedModel([{ content: [call('q', 'ask', {})] }, { content: [call('p', 'pay', {})] }, 'Paid.']);
try {
  const r = await agent({ tools: [ask, pay], model }).session(fileSaver({ dir }), id).reply('yes');
  process.stdout.write(r.text);
} catch (e) {
  // The names the test expects alone; anything else with what it says, so a failure explains itself.
  const expected = ['SessionBusyError', 'SessionNotFoundError'].includes(e.name);
  process.stdout.write(expected ? e.name : `${e.name} ${e.code ?? ''} ${e.message}`);
}
