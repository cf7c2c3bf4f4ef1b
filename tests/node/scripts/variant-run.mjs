// One run through one variant of the package's .wasm, as a fresh process: `node variant-run.mjs <variant>`. Registers
// that variant alone (the package's own loader, reading the built file), pins the clock and the random source so two
// processes make the same bytes, and prints one JSON line: the variant loaded, the paused checkpoint, the finished
// one, and — when the variant has sessions — every record a session wrote to a memory store.
const [variant] = process.argv.slice(2);
const T0 = 1_700_000_000_000;
let tick = 0;
Date.now = () => T0 + tick++;
Math.random = () => 0.5;

const pkg = new URL('../../../pkg/', import.meta.url);
const { addVariants } = await import(new URL('load.js', pkg));
const { nodeSource } = await import(new URL('sources-node.js', pkg));
const glue = await import(new URL(`resumable_agent_${variant}.js`, pkg));
const caps = { core: [], sessions: ['sessions', 'telemetry', 'guardrails'], providers: ['providers', 'telemetry', 'guardrails'], providers_sessions: ['sessions', 'providers', 'telemetry', 'guardrails'], full: ['sessions', 'providers', 'mcp', 'telemetry', 'guardrails', 'subagents'] }[variant];
addVariants([{ name: variant, file: `resumable_agent_${variant}_bg.wasm`, caps, glue, ...nodeSource(() => new URL(`resumable_agent_${variant}_bg.wasm`, pkg)) }]);
const api = await import(new URL('api.js', pkg));
const { agent, defineTool, InterruptError, scriptedModel, memoryUsage } = api;

const ask = defineTool({ name: 'ask', description: 'Asks the human.', schema: (s) => ({ q: s.string().required() }), handle: ({ q }) => { throw new InterruptError(q); } });
const lookup = defineTool({ name: 'lookup', schema: (s) => ({ key: s.string() }), handle: ({ key }) => ({ key, value: `value of ${key} — ünïcode ✓`, n: 1.1e-7 }) });
const model = scriptedModel([
  { content: [{ type: 'text', text: 'Looking.' }, { type: 'tool_use', id: 't0', name: 'lookup', input: { key: 'a' } }], usage: { inputTokens: 10, outputTokens: 3 } },
  { content: [{ type: 'tool_use', id: 't1', name: 'ask', input: { q: 'When?' } }] },
  (request) => `Done: ${request.messages.at(-1).content[0].content}`,
]);
const make = () => agent({ tools: [ask, lookup], model, instructions: 'Plan carefully.' });
const paused = await make().prompt('Plan it.');
const done = await make().resume(JSON.stringify(paused.checkpoint), 'Friday');
// A run that keeps a failed subagent's run (as the full package writes it): every variant carries it, byte for byte.
const failedSubagents = [{ id: 't9', toolName: 'mailer', error: { name: 'ModelError', message: 'model call failed: down' }, checkpoint: { version: 2, messages: [{ role: 'user', content: 'Mail it.' }], iterations: 0, usage: { inputTokens: 0, outputTokens: 0 } } }];
const carried = await make().resume(JSON.stringify({ ...paused.checkpoint, failedSubagents }), 'Friday');
const out = { variant: memoryUsage().variant, capabilities: glue.capabilities(), paused: JSON.stringify(paused.checkpoint), done: JSON.stringify(done.checkpoint), carried: JSON.stringify(carried.checkpoint), text: done.text };
if (caps.includes('sessions')) {
  const { memorySaver } = await import(new URL('sessions.js', pkg));
  const records = new Map();
  const saver = memorySaver();
  const spy = { get: (k) => saver.get(k), put: (k, v, c) => { records.set(k, JSON.stringify(v)); return saver.put(k, v, c); }, delete: (k) => saver.delete(k), list: (p) => saver.list(p) };
  const session = make().session(spy, 'variant-session');
  await session.prompt('Plan it.');
  await session.reply('Friday');
  out.session = [...records].sort(([a], [b]) => (a < b ? -1 : 1));
}
process.stdout.write(`${JSON.stringify(out)}\n`);
