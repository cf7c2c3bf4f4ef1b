// What a subagent costs against the same work done flat (part of `make bench`; alone: `node bench/subagents.mjs`): a
// run whose n model calls (n−1 `lookup` calls, then a `send` that waits for approval) are made by one agent (flat) or by
// a child the parent calls through agentTool (nested: two more model calls, the parent's). Per n: the paused
// checkpoint's bytes (JSON text), ms per step of the run to its pause and of its resume to the end (approved), warm
// (median of 7 after 2 warm-up rounds) and cold (the first run of a fresh process, the wasm loaded). Then: a child whose
// model fails at its last call (the bytes its run adds to the parent's checkpoint, and resuming that run), and the flat
// and nested runs in a session (the bytes the step log writes). Prints markdown tables; writes bench/subagents.json.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { countingTextStore } from './lib/text-store.mjs';

const SIZES = [20, 400];
const MODES = ['flat', 'nested'];
// A child that fails at its last model call (its run kept in the parent's checkpoint), and both runs in a session.
const MORE = ['failed', 'flat-session', 'nested-session'];
const REPS = 7;
const WARMUP = 2;

async function child(mode, n) {
  const { agent, agentTool, defineTool, loadWasm, textStoreSaver } = await import('resumable-agent');
  await loadWasm();
  const lookup = defineTool({ name: 'lookup', schema: (s) => ({ key: s.string() }), handle: ({ key }) => ({ key, value: 'x'.repeat(200) }) });
  const send = defineTool({ name: 'send', needsApproval: true, handle: () => 'sent' });
  // The worker's model: n−1 lookups, a send, then its answer (by the number of its turns so far, as a resumed run asks).
  const worker = async ({ messages }) => {
    const turns = messages.filter((m) => m.role === 'assistant').length;
    const usage = { inputTokens: 100, outputTokens: 10 };
    if (turns < n - 1) return { content: [{ type: 'tool_use', id: `c${turns}`, name: 'lookup', input: { key: `k${turns}` } }], usage };
    if (turns === n - 1) return { content: [{ type: 'tool_use', id: 'send1', name: 'send', input: {} }], usage };
    return { content: [{ type: 'text', text: 'done' }], usage };
  };
  const lead = async ({ messages }) => (messages.length === 1
    ? { content: [{ type: 'tool_use', id: 'w1', name: 'worker', input: { task: 'go' } }] }
    : { content: [{ type: 'text', text: 'done' }] });
  // The worker's model down at its last call (after its n−1 lookups).
  const down = async (request) => {
    if (request.messages.filter((m) => m.role === 'assistant').length === n - 1) throw new Error('overloaded');
    return worker(request);
  };
  const flat = mode.startsWith('flat');
  const make = () => {
    const w = agent({ model: mode === 'failed' ? down : worker, tools: [lookup, send], maxIterations: n + 2 });
    return flat ? w : agent({ model: lead, tools: [agentTool({ name: 'worker', agent: w })] });
  };
  const id = flat ? 'send1' : 'w1/send1';
  const run = mode === 'failed' ? async () => {
    const t0 = performance.now();
    const done = await make().prompt('go');
    const t1 = performance.now();
    const text = JSON.stringify(done.checkpoint);
    const kept = JSON.parse(text).failedSubagents?.[0]?.checkpoint;
    if (done.text !== 'done' || !kept) throw new Error(`failed ${n}: no kept run`);
    const t2 = performance.now();
    const resumed = await agent({ model: worker, tools: [lookup, send], maxIterations: n + 2 }).resume(kept, '');
    const t3 = performance.now();
    if (resumed.interrupts?.[0]?.id !== 'send1') throw new Error(`failed ${n}: the resumed run did not go on`);
    return { pauseMs: t1 - t0, resumeMs: t3 - t2, bytes: text.length, keptBytes: JSON.stringify(kept).length };
  } : mode.endsWith('session') ? async () => {
    const { saver, counts } = countingTextStore(textStoreSaver);
    const t0 = performance.now();
    const paused = await make().session(saver, 's').prompt('go');
    const t1 = performance.now();
    if (paused.interrupts?.[0]?.id !== id) throw new Error(`${mode} ${n}: not paused on ${id}`);
    return { pauseMs: t1 - t0, resumeMs: 0, bytes: counts.bytesWritten };
  } : async () => {
    const t0 = performance.now();
    const paused = await make().prompt('go');
    const t1 = performance.now();
    if (paused.interrupts?.[0]?.id !== id) throw new Error(`${mode} ${n}: not paused on ${id}`);
    const text = JSON.stringify(paused.checkpoint);
    const t2 = performance.now();
    const done = await make().resume(text, { decisions: { [id]: { type: 'approve' } } });
    const t3 = performance.now();
    if (done.text !== 'done') throw new Error(`${mode} ${n}: ${done.text}`);
    return { pauseMs: t1 - t0, resumeMs: t3 - t2, bytes: text.length };
  };
  const cold = await run();
  for (let i = 0; i < WARMUP; i++) await run();
  const runs = [];
  for (let i = 0; i < REPS; i++) runs.push(await run());
  const median = (k) => runs.map((r) => r[k]).sort((a, b) => a - b)[REPS >> 1];
  process.stdout.write(JSON.stringify({
    bytes: cold.bytes,
    keptBytes: cold.keptBytes,
    pause: { warmMsPerStep: median('pauseMs') / n, coldMsPerStep: cold.pauseMs / n },
    resume: { warmMs: median('resumeMs'), coldMs: cold.resumeMs },
  }));
}

if (process.argv[2] === '--child') {
  await child(process.argv[3], Number(process.argv[4]));
} else {
  const results = {};
  for (const mode of [...MODES, ...MORE]) {
    results[mode] = {};
    for (const n of SIZES) {
      const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', mode, String(n)], { encoding: 'utf8', timeout: 600_000 });
      if (r.status !== 0) throw new Error(`subagents bench (${mode}, n = ${n}) failed: ${r.stderr}`);
      results[mode][n] = JSON.parse(r.stdout);
    }
  }
  const f = (x) => x.toFixed(3);
  const rows = SIZES.flatMap((n) => MODES.map((m) => {
    const r = results[m][n];
    return `| ${n} | ${m} | ${r.bytes} | ${f(r.pause.warmMsPerStep)} / ${f(r.pause.coldMsPerStep)} | ${f(r.resume.warmMs)} / ${f(r.resume.coldMs)} |`;
  }));
  const table = `Subagents (\`bench/subagents.mjs\`: n model calls — n−1 lookups, then a send that waits for approval — made by one agent (flat) or by a child its parent runs through agentTool (nested); the paused checkpoint as JSON text; warm / cold):

| n | run | paused checkpoint bytes | ms per step to the pause | ms to resume it, approved, to the end |
|---:|---|---:|---:|---:|
${rows.join('\n')}

A child that fails (its model down at its last call, after its n−1 lookups): the parent's final checkpoint keeps its run
(\`failedSubagents\`); ms per step of the parent's run to its end, and ms for the child's agent to resume the kept run
(to its pause on send; warm / cold):

| n | parent's checkpoint bytes | of which the kept run | ms per step, parent to its end | ms to resume the kept run |
|---:|---:|---:|---:|---:|
${SIZES.map((n) => { const r = results.failed[n]; return `| ${n} | ${r.bytes} | ${r.keptBytes} | ${f(r.pause.warmMsPerStep)} / ${f(r.pause.coldMsPerStep)} | ${f(r.resume.warmMs)} / ${f(r.resume.coldMs)} |`; }).join('\n')}

In a session (a text store): bytes written to the pause — the step log; nested, the child's step events are logged
with their payloads — and ms per step (warm / cold):

| n | run | bytes written | per step | ms per step to the pause |
|---:|---|---:|---:|---:|
${SIZES.flatMap((n) => ['flat-session', 'nested-session'].map((m) => { const r = results[m][n]; return `| ${n} | ${m.replace('-session', '')} | ${r.bytes} | ${Math.round(r.bytes / n)} | ${f(r.pause.warmMsPerStep)} / ${f(r.pause.coldMsPerStep)} |`; })).join('\n')}`;
  process.stdout.write(`${table}\n`);
  writeFileSync(fileURLToPath(new URL('./subagents.json', import.meta.url)), `${JSON.stringify({ node: process.version, results }, null, 2)}\n`);
}
