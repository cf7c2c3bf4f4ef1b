// What running a turn's tool calls together buys and costs (part of `make bench`; alone: `node bench/concurrency.mjs`),
// against one at a time (`toolConcurrency: 1`, the behaviour before it). First, the wall time of a turn whose model
// calls three tools that each take 100 ms. Then the machinery's own cost: n model turns of three instant lookups each,
// ms per step (a step: one turn and its three calls), the final checkpoint's bytes, and in a session (a text store) the
// writes and bytes of the step log. Warm: median of 7 after 2 warm-up rounds; cold: the first run of a fresh process
// (the wasm loaded). Prints markdown tables; writes bench/concurrency.json.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { countingTextStore } from './lib/text-store.mjs';

const MODES = ['together', 'one at a time'];
const SIZES = [20, 400];
const REPS = 7;
const WARMUP = 2;

async function child(kind, mode, n) {
  const { agent, defineTool, loadWasm, textStoreSaver } = await import('resumable-agent');
  await loadWasm();
  const toolConcurrency = mode === 'together' ? undefined : 1;
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const lookup = defineTool({ name: 'lookup', schema: (s) => ({ key: s.string() }), handle: ({ key }) => ({ key, value: 'x'.repeat(100) }) });
  const slow = defineTool({ name: 'slow', schema: (s) => ({ key: s.string() }), handle: async ({ key }) => { await sleep(100); return `v-${key}`; } });
  const three = (turns, name) => ['a', 'b', 'c'].map((k) => ({ type: 'tool_use', id: `t${turns}${k}`, name, input: { key: k } }));
  // n turns of three calls, then the answer (by the number of turns so far).
  const model = (name, turns) => async ({ messages }) => {
    const done = messages.filter((m) => m.role === 'assistant').length;
    return done < turns ? { content: three(done, name) } : { content: [{ type: 'text', text: 'done' }] };
  };
  const run = kind === 'wall' ? async () => {
    const t0 = performance.now();
    const r = await agent({ model: model('slow', 1), tools: [slow], toolConcurrency }).prompt('go');
    const ms = performance.now() - t0;
    if (r.text !== 'done') throw new Error(r.text);
    return { ms };
  } : kind === 'session' ? async () => {
    const { saver, counts } = countingTextStore(textStoreSaver);
    const t0 = performance.now();
    const r = await agent({ model: model('lookup', n), tools: [lookup], toolConcurrency, maxIterations: n + 1 }).session(saver, 's').prompt('go');
    const ms = performance.now() - t0;
    if (r.text !== 'done') throw new Error(r.text);
    return { ms, writes: counts.writes, bytes: counts.bytesWritten };
  } : async () => {
    const t0 = performance.now();
    const r = await agent({ model: model('lookup', n), tools: [lookup], toolConcurrency, maxIterations: n + 1 }).prompt('go');
    const ms = performance.now() - t0;
    if (r.text !== 'done') throw new Error(r.text);
    return { ms, bytes: JSON.stringify(r.checkpoint).length };
  };
  const cold = await run();
  for (let i = 0; i < WARMUP; i++) await run();
  const runs = [];
  for (let i = 0; i < REPS; i++) runs.push(await run());
  const warm = runs.map((r) => r.ms).sort((a, b) => a - b)[REPS >> 1];
  process.stdout.write(JSON.stringify({ ...cold, warmMs: warm, coldMs: cold.ms }));
}

if (process.argv[2] === '--child') {
  await child(process.argv[3], process.argv[4], Number(process.argv[5]));
} else {
  const measure = (kind, mode, n = 1) => {
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', kind, mode, String(n)], { encoding: 'utf8', timeout: 600_000 });
    if (r.status !== 0) throw new Error(`concurrency bench (${kind}, ${mode}, n = ${n}) failed: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  const results = { wall: {}, steps: {}, session: {} };
  for (const mode of MODES) {
    results.wall[mode] = measure('wall', mode);
    for (const kind of ['steps', 'session']) {
      results[kind][mode] = {};
      for (const n of SIZES) results[kind][mode][n] = measure(kind, mode, n);
    }
  }
  const f = (x) => x.toFixed(3);
  const f0 = (x) => x.toFixed(0);
  const table = `Concurrent tool calls (\`bench/concurrency.mjs\`; together: the default, one at a time: \`toolConcurrency: 1\`; warm / cold):

| a turn of three 100 ms tools | ms, model call to answer |
|---|---:|
${MODES.map((m) => `| ${m} | ${f0(results.wall[m].warmMs)} / ${f0(results.wall[m].coldMs)} |`).join('\n')}

n turns of three instant lookups (the machinery's own cost), ms per step (a turn and its three calls), the final
checkpoint's bytes, and in a session (a text store) the step log's writes and bytes:

| n | calls | ms per step | checkpoint bytes | session: ms per step | writes | bytes written |
|---:|---|---:|---:|---:|---:|---:|
${SIZES.flatMap((n) => MODES.map((m) => {
    const s = results.steps[m][n];
    const w = results.session[m][n];
    return `| ${n} | ${m} | ${f(s.warmMs / n)} / ${f(s.coldMs / n)} | ${s.bytes} | ${f(w.warmMs / n)} / ${f(w.coldMs / n)} | ${w.writes} | ${w.bytes} |`;
  })).join('\n')}`;
  process.stdout.write(`${table}\n`);
  writeFileSync(fileURLToPath(new URL('./concurrency.json', import.meta.url)), `${JSON.stringify({ node: process.version, results }, null, 2)}\n`);
}
