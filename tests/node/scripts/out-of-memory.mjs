// Run by hardening.test.mjs with a small wasm memory cap: concurrent resumes of large checkpoints run the
// instance out of memory while a session is in flight. Prints a JSON report as its last line.
import { agent, memorySaver, memoryUsage, InstanceLostError, defineTool, InterruptError } from 'resumable-agent';

const slow = async () => { await new Promise((r) => setTimeout(r, 20)); return { content: [{ type: 'text', text: 'ok' }] }; };
const big = agent({ model: slow, limits: { maxCheckpointBytes: 1e9 } });
const text = JSON.stringify({ version: 2, messages: [{ role: 'user', content: 'x'.repeat(20e6) }], iterations: 0, usage: { inputTokens: 0, outputTokens: 0 } });

// A session whose model is slow: its first step is saved before the instance is lost.
let turn = 0;
const sessionModel = async () => {
  turn += 1;
  await new Promise((r) => setTimeout(r, 50));
  return turn === 1
    ? { content: [{ type: 'tool_use', id: 'c1', name: 'ask', input: {} }] }
    : { content: [{ type: 'text', text: 'Done.' }] };
};
const ask = defineTool({ name: 'ask', description: 'a', schema: { type: 'object' }, handle: () => { throw new InterruptError('Which?'); } });
const saver = memorySaver();
const session = agent({ model: sessionModel, tools: [ask] }).session(saver, 's1');

const calls = [session.prompt('Go.'), ...Array.from({ length: 8 }, () => big.resume(text, ''))];
const settled = await Promise.allSettled(calls);
const lost = settled.filter((r) => r.status === 'rejected' && r.reason instanceof InstanceLostError).length;
const other = settled.filter((r) => r.status === 'rejected' && !(r.reason instanceof InstanceLostError)).map((r) => `${r.reason?.name}: ${r.reason?.message}`);
if (other.length) throw new Error(`untyped failures: ${other.join('; ')}`);

// Later calls work on the new instance, and the session continues from what it saved.
const after = (await big.prompt('hi')).text;
turn = 1;
const resumed = await session.resume();
const sessionAfter = resumed.interrupted ? (await session.reply('this')).text : resumed.text;
console.log(JSON.stringify({ started: calls.length, settled: settled.length, lost, after, sessionAfter, ...memoryUsage() }));
