// 100,000 random resumes in one process (count from argv[2]): valid checkpoints, signed and sealed ones,
// checkpoints changed at random, garbage, with answers, decisions and nonsense — in batches that run
// concurrently. Every call must settle with a result or one of the package's typed errors; the process
// must exit by itself with status 0. Run under Node 20, 22 and 24 by scripts/stress.sh.
import {
  agent, scriptedModel, defineTool, InterruptError, memoryUsage, AgentError,
} from 'resumable-agent';

const total = Number(process.argv[2] ?? 100_000);
const batch = 16;
let seed = Number(process.argv[3] ?? 1);
const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
const pick = (xs) => xs[Math.floor(random() * xs.length)];

const KEYS = { current: 'k1', keys: { k1: 'stress test secret, not real' } };
const toolUse = (id, name, input) => ({ type: 'tool_use', id, name, input });
const tools = [
  defineTool({ name: 'lookup', description: 'l', schema: { type: 'object' }, handle: ({ key }) => ({ key, value: `v-${key}` }) }),
  defineTool({ name: 'ask', description: 'a', schema: { type: 'object' }, handle: ({ q }) => { throw new InterruptError(q ?? 'Which?', { options: ['a', 'b'] }); } }),
  defineTool({ name: 'send', description: 's', schema: (s) => ({ to: s.string() }), needsApproval: true, handle: ({ to }) => `sent to ${to}` }),
  defineTool({ name: 'boom', description: 'b', schema: { type: 'object' }, handle: () => { throw new Error('boom'); } }),
];
const script = [
  { content: [toolUse('c1', 'lookup', { key: 'a', n: 1.5e-7 }), toolUse('c2', 'send', { to: 'x' })] },
  { content: [toolUse('c3', 'ask', { q: 'When?' }), toolUse('c4', 'boom', {})] },
  { content: [{ type: 'text', text: 'Done.' }] },
];
const plain = agent({ model: scriptedModel(script), tools, maxIterations: 5 });
const signed = agent({ model: scriptedModel(script), tools, maxIterations: 5, checkpointKeys: KEYS });
const sealed = agent({ model: scriptedModel(script), tools, maxIterations: 5, checkpointKeys: KEYS, sealed: true });
const small = agent({ model: scriptedModel(script), tools, limits: { maxCheckpointBytes: 2_000, maxDepth: 8 } });
const agents = [plain, signed, sealed, small];

// A pool of real checkpoints: paused on approvals, paused on a question, finished.
const pool = [];
for (const a of [plain, signed, sealed]) {
  const first = await a.prompt('Go.');
  pool.push(first.checkpoint);
  const second = await a.resume(first.checkpoint, { decisions: [{ type: 'approve' }] });
  pool.push(second.checkpoint);
  const done = await a.resume(second.checkpoint, 'May');
  pool.push(done.checkpoint);
}

function mutate(cp) {
  const text = JSON.stringify(cp);
  switch (Math.floor(random() * 6)) {
    case 0: { const i = Math.floor(random() * text.length); return text.slice(0, i) + String.fromCharCode(32 + Math.floor(random() * 95)) + text.slice(i + 1); }
    case 1: return text.slice(0, Math.floor(random() * text.length));
    case 2: { const c = structuredClone(cp); c.iterations = pick([-1, 1e300, '2', null, 3]); return c; }
    case 3: { const c = structuredClone(cp); if (Array.isArray(c.messages)) c.messages.reverse(); return c; }
    case 4: { const c = structuredClone(cp); c.state = pick([[[[[[[[[[1]]]]]]]]], 'x'.repeat(3000), { a: '\ud800' }, 12345678901234567890]); return c; }
    default: return pick([null, 42, 'not json', '{}', '[]', { version: 99 }, { messages: 'x' }]);
  }
}

const answers = () => pick([
  'yes', '', undefined, 'x'.repeat(1000),
  { decisions: [{ type: 'approve' }] },
  { decisions: [{ type: 'deny', message: 'no' }] },
  { decisions: [{ type: 'approve', modifiedArgs: { to: 'y' } }] },
  { decisions: { c2: { type: 'approve' } } },
  { decisions: [{ type: 'answer', text: 'May' }] },
  { decisions: 'nonsense' }, { decisions: [1, 2, 3] }, 42, { other: true },
]);

const counts = {};
let untyped = 0;
const first = memoryUsage().wasmBytes;
for (let done = 0; done < total; done += batch) {
  const calls = [];
  for (let k = 0; k < batch && done + k < total; k += 1) {
    const cp = random() < 0.5 ? pick(pool) : mutate(pick(pool));
    calls.push(pick(agents).resume(cp, answers()));
  }
  for (const r of await Promise.allSettled(calls)) {
    const key = r.status === 'fulfilled' ? (r.value.interrupted ? 'paused' : 'complete') : r.reason?.name;
    counts[key] = (counts[key] ?? 0) + 1;
    if (r.status === 'rejected' && !(r.reason instanceof AgentError)) {
      untyped += 1;
      if (untyped < 5) console.error('untyped:', r.reason);
    }
  }
}
const last = memoryUsage();
console.log(JSON.stringify({ node: process.version, resumes: total, counts, untyped, wasmBytes: [first, last.wasmBytes], instancesReplaced: last.instancesReplaced }));
if (untyped > 0) process.exit(1);
