// What an MCP tool costs on our side, against a 2026-07-28 server played by a fetch stand-in answering at once
// (so only the client is measured): a run of 400 steps whose every step calls the tool, beside the same run
// with a defineTool tool doing the same work — ms from the model's answer to the next model request at step 20
// and 400 (the call's JSON-RPC request written, its answer read, the result recorded) — and an elicitation:
// the pause, the checkpoint's bytes, and the resume that retries the call. Warm (median of 3 after 1 warm-up)
// and cold (the first).
//   node mcp.mjs     -> a markdown table on stdout
import { agent, defineTool, mcpTools } from 'resumable-agent';

const STEPS = 400;
const AT = [20, 400];
const payload = 'x'.repeat(480);

function server(_url, init) {
  const m = JSON.parse(init.body);
  const reply = (result) => Response.json({ jsonrpc: '2.0', id: m.id, result: { resultType: 'complete', ...result } });
  if (m.method === 'server/discover') return reply({ supportedVersions: ['2026-07-28'], capabilities: { tools: {} } });
  if (m.method === 'tools/list') {
    return reply({ tools: [
      { name: 'lookup', description: 'Looks up.', inputSchema: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] } },
      { name: 'book', description: 'Books.', inputSchema: { type: 'object', properties: { city: { type: 'string' } } } },
    ] });
  }
  if (m.params.name === 'lookup') return reply({ content: [{ type: 'text', text: `${m.params.arguments.key}:${payload}` }] });
  const date = m.params.inputResponses?.date?.content?.date;
  if (date) return reply({ content: [{ type: 'text', text: `booked on ${date}` }] });
  return Response.json({ jsonrpc: '2.0', id: m.id, result: { resultType: 'input_required', requestState: 's'.repeat(200), inputRequests: {
    date: { method: 'elicitation/create', params: { mode: 'form', message: 'Which day?', requestedSchema: { type: 'object', properties: { date: { type: 'string', format: 'date' } }, required: ['date'] } } },
  } } });
}

const local = defineTool({ name: 'lookup', schema: (s) => ({ key: s.string().required() }), handle: ({ key }) => `${key}:${payload}` });

/** One run of STEPS model calls, each answered with a call of `lookup`; ms from the answer to the next request. */
async function run(tools) {
  let step = 0;
  let answeredAt = 0;
  const seen = {};
  const model = async () => {
    step += 1;
    if (AT.includes(step)) seen[step] = performance.now() - answeredAt;
    answeredAt = performance.now();
    return step === STEPS ? { content: [{ type: 'text', text: 'done' }] } : { content: [{ type: 'tool_use', id: `c${step}`, name: 'lookup', input: { key: `k${step}` } }] };
  };
  const r = await agent({ model, tools, maxIterations: STEPS + 1 }).prompt('go');
  if (r.text !== 'done') throw new Error('the run did not finish');
  return seen;
}

/** An elicitation: ms to pause, the checkpoint's bytes, ms to resume (the call retried with the answer). */
async function elicit(tools) {
  const model = async (req) => (req.messages.length === 1
    ? { content: [{ type: 'tool_use', id: 'b1', name: 'book', input: { city: 'Oslo' } }] }
    : { content: [{ type: 'text', text: 'done' }] });
  const t0 = performance.now();
  const paused = await agent({ model, tools }).prompt('book');
  const t1 = performance.now();
  const text = JSON.stringify(paused.checkpoint);
  const t2 = performance.now();
  const done = await agent({ model, tools }).resume(text, { type: 'accept', content: { date: '2026-11-30' } });
  const t3 = performance.now();
  if (done.text !== 'done' || !paused.interrupted) throw new Error('the elicitation did not pause and resume');
  return { pause: t1 - t0, bytes: Buffer.byteLength(text), resume: t3 - t2 };
}

globalThis.fetch = server;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const l0 = performance.now();
const mcp = await mcpTools({ url: 'http://127.0.0.1:9/mcp', headers: { authorization: 'Bearer bench' } });
const listCold = performance.now() - l0;
const lists = [];
for (let i = 0; i < 4; i += 1) {
  const t = performance.now();
  await mcpTools({ url: 'http://127.0.0.1:9/mcp', headers: { authorization: 'Bearer bench' } });
  lists.push(performance.now() - t);
}
const rows = [];
for (const [name, tools] of [['MCP tool (2026-07-28)', mcp], ['defineTool tool', [local]]]) {
  const cold = await run(tools);
  const warm = [];
  for (let i = 0; i < 4; i += 1) warm.push(await run(tools));
  const w = (at) => median(warm.slice(1).map((s) => s[at]));
  rows.push(`| ${name} | ${w(20).toFixed(3)} / ${cold[20].toFixed(3)} | ${w(400).toFixed(3)} / ${cold[400].toFixed(3)} |`);
}
const e0 = await elicit(mcp);
const es = [];
for (let i = 0; i < 4; i += 1) es.push(await elicit(mcp));
const ew = (k) => median(es.slice(1).map((e) => e[k]));
process.stdout.write(`MCP tools, client side (\`bench/mcp.mjs\`: a fetch stand-in plays a 2026-07-28 server answering at once; ${STEPS} steps, each calling a tool that returns ~500 bytes):

| tool | ms answer → next request at step 20, warm / cold | at step 400, warm / cold |
|---|---:|---:|
${rows.join('\n')}

mcpTools() listing (discover + tools/list): ${median(lists.slice(1)).toFixed(3)} ms warm / ${listCold.toFixed(3)} ms cold. An elicitation: pause ${ew('pause').toFixed(3)} / ${e0.pause.toFixed(3)} ms, checkpoint ${e0.bytes} bytes (a 200-byte requestState), resume (the call retried with the answer) ${ew('resume').toFixed(3)} / ${e0.resume.toFixed(3)} ms, warm / cold.
`);
