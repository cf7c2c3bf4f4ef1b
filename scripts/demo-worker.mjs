// `make demo`: starts the Rust example Worker with `wrangler dev` (local workerd, KV persisted under
// .wrangler/state in the repo, offline), shows how to call it with curl, and runs one conversation.
// With a terminal it then keeps serving until Ctrl-C; without one it stops.
import { startWorker, ROOT } from '../tests/workers/harness.mjs';
import { join } from 'node:path';

const persistTo = join(ROOT, '.wrangler/state');
console.log('Starting the example Worker (wrangler dev, local KV in .wrangler/state)...');
const w = await startWorker({ config: join(ROOT, 'wrangler.toml'), persistTo, timeoutMs: 600_000 });
const client = w.client();
const curl = (path, body) => `curl -s ${w.url}${path}`
  + (client.token ? ` -H 'authorization: Bearer ${client.token}'` : '')
  + (body ? ` -H 'content-type: application/json' -d '${JSON.stringify(body)}'` : '');

async function call(path, body) {
  console.log(`\n$ ${curl(path, body)}`);
  const r = body ? await client.post(path, body) : await client.get(path);
  console.log(`${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

try {
  // The server makes the session id and, for a new client, the owner token it answers with.
  const { sessionId } = await call('/start', { message: 'Plan my project launch.' });
  await call('/sessions');
  await call('/reply', { answer: 'the end of Q2', sessionId });
  await call('/reply', { answer: 'the end of Q2', sessionId });
  console.log(`\nThe Worker listens on ${w.url} (routes: POST /start, POST /reply, POST /message, GET /sessions).`);
  if (process.stdin.isTTY) {
    console.log('Try the curl commands above (with your own token, or none to get one). Ctrl-C stops it.');
    await new Promise((resolve) => process.once('SIGINT', resolve));
  }
} finally {
  await w.stop();
}
