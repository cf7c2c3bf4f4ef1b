// Streaming latency: from the moment a provider's first SSE byte is written to the moment the first
// `text-delta` event reaches the caller, through the npm package (openai() streaming, the fetch body
// reader, the SSE parser, the wire mapping, the event sink) — and the floor: the same first chunk read with
// plain fetch + getReader + a split on "\n\n" + JSON.parse.
//
//   node first-delta.mjs <warmup> <measured>   -> one JSON line: medians in ms, and the first request's
//
// The provider stand-in listens on 127.0.0.1 in this process; it writes the first frame as soon as the
// request arrives and the rest 20 ms later, so the first delta is timed alone.
import { createServer } from 'node:http';
import { agent, openai } from 'resumable-agent';
import { median } from './lib/stats.mjs';

const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
let firstByteAt = 0;
const server = createServer(async (req, res) => {
  for await (const _ of req); // eslint-disable-line no-unused-vars
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  firstByteAt = performance.now();
  res.write(chunk({ role: 'assistant', content: 'Hello' }));
  setTimeout(() => {
    res.write(chunk({ content: ' there.' }) + chunk({}, 'stop'));
    res.end(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 2 } })}\n\ndata: [DONE]\n\n`);
  }, 20);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}/v1`;

async function ours() {
  let at = 0;
  const a = agent({ model: openai({ apiKey: 'bench-key', model: 'm', baseURL: base }) });
  const r = await a.prompt('hi', { onEvent: (e) => { if (e.type === 'text-delta' && !at) at = performance.now(); } });
  if (r.text !== 'Hello there.') throw new Error(`unexpected answer ${r.text}`);
  return at - firstByteAt;
}

async function floor() {
  const res = await fetch(`${base}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"stream":true}' });
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let at = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    const end = buffer.indexOf('\n\n');
    if (!at && end >= 0) {
      const text = JSON.parse(buffer.slice(6, end)).choices[0].delta.content;
      if (text) at = performance.now();
    }
  }
  return at - firstByteAt;
}

const [warmup = '20', measured = '50'] = process.argv.slice(2);
const out = { oursFirst: await ours(), floorFirst: await floor() };
for (let i = 1; i < Number(warmup); i++) {
  await ours();
  await floor();
}
const o = [];
const f = [];
for (let i = 0; i < Number(measured); i++) {
  o.push(await ours());
  f.push(await floor());
}
out.ours = median(o);
out.floor = median(f);
server.close();
process.stdout.write(`${JSON.stringify(out)}\n`);
