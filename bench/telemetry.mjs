// What tracing, guardrails, tool policies and approval policies cost (part of `make bench`; alone: `node bench/telemetry.mjs`): time
// per step of a run of n model calls (n−1 `lookup` calls, then an answer) without any, with a tracer (the real
// OpenTelemetry SDK, its spans exported to nowhere), with recordContent too, with an input and an output guardrail
// (the output one is shown the whole conversation), with a timeout and retries on the tool (never used), with an
// async approval policy that allows every call plus a token budget, and with one that asks for every call, answered by
// a remembered approval (`remember: 'tool'`, carried in the checkpoint); and the checkpoint bytes the trace context adds.
// Each mode and n runs in a process of its own: cold is its first run (the wasm loaded, nothing else warmed), warm
// the median of 7 runs after 2 warm-up rounds. Prints a markdown table; writes bench/telemetry.json.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const SIZES = [10, 20, 200, 400];
const MODES = ['none', 'tracer', 'tracer + content', 'guardrails', 'tool timeout + retry', 'approval policy + budget', 'policy asks, remembered'];
const REPS = 7;
const WARMUP = 2;

async function child(mode, n) {
  const { BasicTracerProvider, SimpleSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const { agent, defineTool, loadWasm } = await import('resumable-agent');
  await loadWasm();
  const dropping = { export(spans, done) { done({ code: 0 }); }, async shutdown() {} };
  const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(dropping)] }).getTracer('bench');
  const telemetry = mode.startsWith('tracer') ? { tracer, agentName: 'bench', recordContent: mode === 'tracer + content' } : undefined;
  const pass = () => undefined;
  const guardrails = mode === 'guardrails' ? { input: [pass], output: [({ messages }) => (messages.length > 0 ? undefined : { tripwire: true })] } : undefined;
  const policy = mode === 'tool timeout + retry' ? { timeoutMs: 60_000, retry: { maxAttempts: 3, backoffMs: 10 } } : {};
  const approval = mode === 'approval policy + budget' ? async () => 'allow' : mode === 'policy asks, remembered' ? async () => 'ask' : undefined;
  const budget = mode === 'approval policy + budget' ? { totalTokens: 1e12 } : undefined;
  // The remembered approval is in the checkpoint the run starts from (a resume of the user's message).
  const start = (a) => (mode === 'policy asks, remembered'
    ? a.resume({ messages: [{ role: 'user', content: 'go' }], iterations: 0, usage: { inputTokens: 0, outputTokens: 0 }, remembered: ['lookup'] }, '')
    : a.prompt('go'));
  const lookup = defineTool({ name: 'lookup', schema: (s) => ({ key: s.string() }), ...policy, handle: ({ key }) => ({ key, value: 'x'.repeat(200) }) });
  const run = async (n) => {
    let calls = 0;
    const model = async () => {
      calls += 1;
      return calls < n
        ? { content: [{ type: 'tool_use', id: `c${calls}`, name: 'lookup', input: { key: `k${calls}` } }], usage: { inputTokens: 100, outputTokens: 10 } }
        : { content: [{ type: 'text', text: 'done' }], usage: { inputTokens: 100, outputTokens: 2 } };
    };
    const t0 = performance.now();
    const r = await start(agent({ model, tools: [lookup], maxIterations: n + 1, telemetry, guardrails, approval, budget }));
    const ms = performance.now() - t0;
    if (r.text !== 'done' || calls !== n) throw new Error(`run of ${n}: ${r.text}, ${calls} calls`);
    return { ms, bytes: JSON.stringify(r.checkpoint).length, traceBytes: r.checkpoint.traceparent === undefined ? 0 : `,"traceparent":"${r.checkpoint.traceparent}"`.length };
  };
  const cold = await run(n);
  for (let i = 0; i < WARMUP; i++) await run(n);
  const times = [];
  for (let i = 0; i < REPS; i++) times.push((await run(n)).ms);
  times.sort((a, b) => a - b);
  process.stdout.write(JSON.stringify({ coldMsPerStep: cold.ms / n, warmMsPerStep: times[REPS >> 1] / n, bytes: cold.bytes, traceBytes: cold.traceBytes }));
}

if (process.argv[2] === '--child') {
  await child(process.argv[3], Number(process.argv[4]));
} else {
  const results = {};
  for (const mode of MODES) {
    results[mode] = {};
    for (const n of SIZES) {
      const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', mode, String(n)], { encoding: 'utf8', timeout: 600_000 });
      if (r.status !== 0) throw new Error(`telemetry bench (${mode}, n = ${n}) failed: ${r.stderr}`);
      results[mode][n] = JSON.parse(r.stdout);
    }
  }
  const f = (x) => x.toFixed(3);
  const rows = SIZES.map((n) => `| ${n} | ${MODES.map((m) => `${f(results[m][n].warmMsPerStep)} / ${f(results[m][n].coldMsPerStep)}`).join(' | ')} | ${results.none[n].bytes} | ${results.tracer[n].traceBytes} |`);
  const table = `Tracing, guardrails, tool and approval policies (\`bench/telemetry.mjs\`: ms per step, warm / cold, a run of n model calls with a JS model and tool; the tracer is the OpenTelemetry SDK exporting to nowhere; the guardrails pass, the output one shown the whole conversation; the tool's timeout and retries never fire; the approval policy is async and allows every call, beside a token budget; the asking policy is answered for every call by a remembered approval, in a run resumed from its first message):

| n | none | tracer | tracer + recordContent | input + output guardrail | tool timeout + retry | approval policy + budget | policy asks, remembered | checkpoint bytes | bytes the trace context adds |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}`;
  process.stdout.write(`${table}\n`);
  writeFileSync(fileURLToPath(new URL('./telemetry.json', import.meta.url)), `${JSON.stringify({ node: process.version, results }, null, 2)}\n`);
}
