// The fixed cost of one request, phase by phase (µs, mean of 5,000 after 300 warm-up): defining tools,
// building an agent, a prompt answered at once, a prompt that pauses, a resume from JSON text. Run after
// `make link`: node phases.mjs
import { agent, defineTool, InterruptError, isInterrupted } from 'resumable-agent';
const N = 5000;
function tools() {
  return [defineTool({ name: 'lookup', description: 'Looks up.', schema: (s) => ({ key: s.string().required() }), handle: ({ key }) => ({ key }) }),
   defineTool({ name: 'ask_user', description: 'Asks.', schema: (s) => ({ question: s.string().required() }), handle: ({ question }) => { throw new InterruptError(question); } })];
}
let k = 0;
const model = async (req) => (req.messages.length === 1 ? { content: [{ type: 'tool_use', id: 'c1', name: 'ask_user', input: { question: 'Q?' } }] } : { content: [{ type: 'text', text: 'done' }] });
const plainModel = async (req) => ({ content: [{ type: 'text', text: 'done' }] });
async function time(label, f) {
  for (let i = 0; i < 300; i++) await f();
  const t = performance.now();
  for (let i = 0; i < N; i++) await f();
  console.log(label.padEnd(30), ((performance.now() - t) / N * 1000).toFixed(1), 'µs');
}
const ts = tools();
const a = agent({ instructions: 'x', tools: ts, model, maxIterations: 1000 });
const b = agent({ instructions: 'x', tools: ts, model: plainModel });
const paused = await a.prompt('hi');
const cpText = JSON.stringify(paused.checkpoint);
await time('defineTool x2', () => tools());
await time('agent() (tools given)', () => agent({ instructions: 'x', tools: ts, model, maxIterations: 1000 }));
await time('agent() no tools', () => agent({ instructions: 'x', model }));
await time('prompt→text (no tool)', () => b.prompt('hi'));
await time('prompt→pause', () => a.prompt('hi'));
await time('resume text→done', () => a.resume(cpText, 'ans'));
await time('JSON.stringify cp', () => JSON.stringify(paused.checkpoint));
await time('noop await', async () => {});
