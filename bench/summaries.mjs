// What a summarizing compaction keeps and costs (part of `make bench`; alone: `node bench/summaries.mjs`): a run of n
// lookups (each result ~200 bytes) with no compaction, with dropping (`maxMessages: 40`) and with summaries
// (`summarize: { maxMessages: 40 }`, the agent's own model function writing ~300-byte summaries). Per n = 20/400: the
// final checkpoint's bytes, the largest request (messages), the summary calls, and ms per step warm (median of 7 after
// 2 warm-up rounds) / cold (the first run of a fresh process). Prints a markdown table; writes bench/summaries.json.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const MODES = ['none', 'drop', 'summarize'];
const SIZES = [20, 400];
const REPS = 7;
const WARMUP = 2;

async function child(mode, n) {
  const { agent, defineTool, loadWasm } = await import('resumable-agent');
  await loadWasm();
  const lookup = defineTool({ name: 'lookup', handle: ({ key }) => `${key}: ${'v'.repeat(200)}` });
  let summaries = 0;
  let largest = 0;
  const model = async (request) => {
    if (request.tools.length === 0) {
      summaries += 1;
      return { content: [{ type: 'text', text: `So far: ${'s'.repeat(300)}` }] };
    }
    largest = Math.max(largest, request.messages.length);
    const last = request.messages.findLast((m) => m.role === 'assistant')?.content.find((b) => b.type === 'tool_use');
    const i = last ? Number(last.id.slice(1)) + 1 : 0;
    return i < n ? { content: [{ type: 'tool_use', id: `c${i}`, name: 'lookup', input: { key: `k${i}` } }] } : { content: [{ type: 'text', text: 'done' }] };
  };
  const compaction = { none: undefined, drop: { maxMessages: 40 }, summarize: { summarize: { maxMessages: 40 } } }[mode];
  const run = async () => {
    summaries = 0;
    largest = 0;
    const t0 = performance.now();
    const r = await agent({ model, tools: [lookup], maxIterations: n + 1, compaction }).prompt('go');
    const ms = performance.now() - t0;
    if (r.text !== 'done') throw new Error(r.text);
    return { ms, bytes: JSON.stringify(r.checkpoint).length, summaries, largest };
  };
  const cold = await run();
  for (let i = 0; i < WARMUP; i++) await run();
  const runs = [];
  for (let i = 0; i < REPS; i++) runs.push(await run());
  const warm = runs.map((r) => r.ms).sort((a, b) => a - b)[REPS >> 1];
  process.stdout.write(JSON.stringify({ ...cold, warmMs: warm, coldMs: cold.ms }));
}

if (process.argv[2] === '--child') {
  await child(process.argv[3], Number(process.argv[4]));
} else {
  const results = {};
  for (const mode of MODES) {
    results[mode] = {};
    for (const n of SIZES) {
      const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', mode, String(n)], { encoding: 'utf8', timeout: 600_000 });
      if (r.status !== 0) throw new Error(`summaries bench (${mode}, n = ${n}) failed: ${r.stderr}`);
      results[mode][n] = JSON.parse(r.stdout);
    }
  }
  const f = (x) => x.toFixed(3);
  const table = `Compaction (\`bench/summaries.mjs\`: n lookups of ~200-byte results; drop and summarize at \`maxMessages: 40\`, summaries of ~300 bytes by the agent's own model function; warm / cold):

| n | compaction | final checkpoint bytes | largest request (messages) | summary calls | ms per step |
|---:|---|---:|---:|---:|---:|
${SIZES.flatMap((n) => MODES.map((m) => { const r = results[m][n]; return `| ${n} | ${m} | ${r.bytes} | ${r.largest} | ${r.summaries} | ${f(r.warmMs / n)} / ${f(r.coldMs / n)} |`; })).join('\n')}`;
  process.stdout.write(`${table}\n`);
  writeFileSync(fileURLToPath(new URL('./summaries.json', import.meta.url)), `${JSON.stringify({ node: process.version, results }, null, 2)}\n`);
}
