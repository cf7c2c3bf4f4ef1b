// What a provider's request costs as the run grows: every API here is stateless (the request carries the whole
// history), so each model call writes the whole conversation again. For each wire format, a run of 400 model
// calls (a ~500-byte tool result per step) against a fetch stand-in answering at once in that format; at step 20
// and step 400: bytes of the request body, and ms from the previous answer handed back to this request handed to
// fetch (the answer read and recorded, the tool run, the whole history written into the next body), warm (median
// of 3 runs after 1 warm-up run) and cold (the first run).
//   node providers.mjs     -> a markdown table on stdout
import { agent, defineTool, anthropic, openai, openaiResponses, gemini } from 'resumable-agent';

const STEPS = 400;
const AT = [20, 400];
const payload = 'x'.repeat(480);

// One answer per format: a call of `lookup` (step < STEPS) or the final text.
const answers = {
  anthropic: (step, last) => (last
    ? { content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 } }
    : { content: [{ type: 'tool_use', id: `toolu_${step}`, name: 'lookup', input: { key: `k${step}` } }], stop_reason: 'tool_use', usage: { input_tokens: 1, output_tokens: 1 } }),
  openai: (step, last) => ({
    choices: [{ index: 0, finish_reason: last ? 'stop' : 'tool_calls', message: last ? { role: 'assistant', content: 'done' } : { role: 'assistant', content: null, tool_calls: [{ id: `call_${step}`, type: 'function', function: { name: 'lookup', arguments: `{"key":"k${step}"}` } }] } }],
    usage: { prompt_tokens: 1, completion_tokens: 1 },
  }),
  'openai-responses': (step, last) => ({
    status: 'completed',
    output: [
      { type: 'reasoning', id: `rs_${step}`, summary: [], encrypted_content: 'e'.repeat(200) },
      last ? { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'done' }] } : { type: 'function_call', call_id: `call_${step}`, name: 'lookup', arguments: `{"key":"k${step}"}` },
    ],
    usage: { input_tokens: 1, output_tokens: 1 },
  }),
  gemini: (step, last) => ({
    candidates: [{ content: { role: 'model', parts: [last ? { text: 'done' } : { functionCall: { name: 'lookup', args: { key: `k${step}` } }, thoughtSignature: 's'.repeat(200) }] }, finishReason: 'STOP' }],
    usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1 }, responseId: `r${step}`,
  }),
};
const models = {
  anthropic: () => anthropic({ apiKey: 'k', model: 'm', baseURL: 'http://127.0.0.1:9', maxRetries: 0 }),
  openai: () => openai({ apiKey: 'k', model: 'm', baseURL: 'http://127.0.0.1:9/v1', maxRetries: 0 }),
  'openai-responses': () => openaiResponses({ apiKey: 'k', model: 'm', baseURL: 'http://127.0.0.1:9/v1', maxRetries: 0 }),
  gemini: () => gemini({ apiKey: 'k', model: 'm', baseURL: 'http://127.0.0.1:9/v1beta', maxRetries: 0 }),
};
const lookup = defineTool({ name: 'lookup', schema: (s) => ({ key: s.string().required() }), handle: ({ key }) => `${key}:${payload}` });

/** One run of STEPS model calls; per step in AT: request body bytes and ms from the model call to fetch. */
async function run(format) {
  let step = 0;
  let answeredAt = 0;
  const seen = {};
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (url, init) => {
    step += 1;
    if (AT.includes(step)) seen[step] = { bytes: Buffer.byteLength(init.body), ms: performance.now() - answeredAt };
    const answer = Response.json(answers[format](step, step === STEPS));
    answeredAt = performance.now();
    return answer;
  };
  try {
    const a = agent({ model: models[format](), tools: [lookup], maxIterations: STEPS + 1 });
    const r = await a.prompt('go').catch((e) => e);
    if (r instanceof Error || r.text !== 'done' || step !== STEPS) throw new Error(`${format}: ${r instanceof Error ? r.message : `${step} steps, ${r.text}`}`);
  } finally {
    globalThis.fetch = realFetch;
  }
  return seen;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rows = [];
for (const format of Object.keys(models)) {
  const cold = await run(format);
  const warm = [];
  for (let i = 0; i < 4; i += 1) warm.push(await run(format));
  const w = (at) => median(warm.slice(1).map((s) => s[at].ms));
  rows.push(`| ${format} | ${cold[20].bytes} / ${cold[400].bytes} | ${(cold[400].bytes / cold[20].bytes).toFixed(1)}× | ${w(20).toFixed(3)} / ${cold[20].ms.toFixed(3)} | ${w(400).toFixed(3)} / ${cold[400].ms.toFixed(3)} |`);
}
process.stdout.write(`Provider requests against the run's length (\`bench/providers.mjs\`: ${STEPS} model calls with ~500-byte tool results, a fetch stand-in answering at once; every API here is stateless, so each request carries the whole history):

| wire format | request bytes at step 20 / 400 | growth | ms answer → next request at step 20, warm / cold | at step 400, warm / cold |
|---|---:|---:|---:|---:|
${rows.join('\n')}
`);
