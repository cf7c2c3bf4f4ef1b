// Request shapes through 'resumable-agent/core' (the core variant alone), for the leak test: the same measurement as
// shapes.mjs, in a process that never imports the main entry.
//
//   node --expose-gc tests/leak/core-shapes.mjs <shape> [requests] [warmup]   -> one JSON line on stdout
import { agent, defineTool, InterruptError, scriptedModel, loadWasm, memoryUsage } from 'resumable-agent/core';
import { measureShape } from './measure.mjs';

await loadWasm();

const askUser = defineTool({
  name: 'ask_user', schema: (s) => ({ question: s.string().required() }),
  handle: ({ question }) => { throw new InterruptError(question); },
});
const asking = scriptedModel([{ content: [{ type: 'tool_use', id: 'q1', name: 'ask_user', input: { question: 'Deadline?' } }] }, (req) => `due ${req.messages.at(-1).content[0].content}`]);
const pausedText = JSON.stringify((await agent({ tools: [askUser], model: asking }).prompt('go')).checkpoint);
const expect = (cond, what) => { if (!cond) throw new Error(`shape check failed: ${what}`); };

export const SHAPES = {
  // A fresh agent per request, paused, then a fresh one resuming from the text.
  'core-pause-resume': async () => {
    const p = await agent({ tools: [askUser], model: asking }).prompt('go');
    expect(p.interrupted === true, 'paused');
    const r = await agent({ tools: [askUser], model: asking }).resume(pausedText, 'May');
    expect(r.text === 'due May', 'completed');
  },
};

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const [shape, requests = '20000', warmup = '2000'] = process.argv.slice(2);
  const r = await measureShape(SHAPES, shape, Number(requests), Number(warmup), () => memoryUsage().wasmBytes);
  process.stdout.write(`${JSON.stringify({ ...r, variant: memoryUsage().variant })}\n`);
}
