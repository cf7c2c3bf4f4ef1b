// Starts a Worker with `wrangler dev` (local workerd, KV persisted on disk) as a child process on
// 127.0.0.1, and stops it entirely. Offline and quiet: no login, telemetry or network.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WRANGLER = `${ROOT}node_modules/.bin/wrangler`;

async function freePort() {
  const srv = createServer().listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const { port } = srv.address();
  srv.close();
  await once(srv, 'close');
  return port;
}

/**
 * Starts `wrangler dev --config <config>` with KV under `persistTo`; `vars` become `--var K:V`.
 * Resolves once it answers HTTP; rejects (with its output) if it does not within `timeoutMs`.
 */
export async function startWorker(options) {
  // A port another workerd was still releasing (its socket lingers briefly after the process group is gone):
  // started again, at most twice, on fresh ports.
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await startOnce(options);
    } catch (e) {
      if (attempt >= 2 || !/Address already in use/.test(e.message)) throw e;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

async function startOnce({ config, persistTo, vars = {}, timeoutMs = 120_000 }) {
  const port = await freePort();
  const args = ['dev', '--config', config, '--ip', '127.0.0.1', '--port', String(port), '--persist-to', persistTo,
    '--inspector-port', String(await freePort()), '--show-interactive-dev-session=false', '--log-level', 'warn'];
  for (const [k, v] of Object.entries(vars)) args.push('--var', `${k}:${v}`);
  const child = spawn(WRANGLER, args, {
    cwd: ROOT,
    detached: true, // its own process group, so stop() ends workerd too
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env, CI: 'true', WRANGLER_SEND_METRICS: 'false', WRANGLER_SEND_ERROR_REPORTS: 'false',
      CLOUDFLARE_CF_FETCH_ENABLED: 'false', DO_NOT_TRACK: '1', NO_COLOR: '1',
    },
  });
  let output = '';
  child.stdout.on('data', (d) => { output += d; });
  child.stderr.on('data', (d) => { output += d; });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited with ${child.exitCode}:\n${output}`);
    try {
      const res = await fetch(`${url}/sessions`, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      break;
    } catch {
      if (Date.now() > deadline) {
        process.kill(-child.pid, 'SIGKILL');
        throw new Error(`wrangler dev did not answer within ${timeoutMs} ms:\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  return {
    url,
    output: () => output,
    /** POSTs JSON (or a raw string body) and returns `{ status, body }`. */
    async post(path, body) {
      const res = await fetch(url + path, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body) });
      return { status: res.status, body: await res.json() };
    },
    async get(path) {
      const res = await fetch(url + path);
      return { status: res.status, body: await res.json() };
    },
    /** A client of the example Worker's API: it keeps the owner token the Worker gives it. */
    client(token) {
      const me = {
        token,
        headers(extra = {}) {
          return { 'content-type': 'application/json', ...(me.token ? { authorization: `Bearer ${me.token}` } : {}), ...extra };
        },
        async post(path, body, extra) {
          const res = await fetch(url + path, { method: 'POST', headers: me.headers(extra), body: typeof body === 'string' ? body : JSON.stringify(body) });
          const out = { status: res.status, headers: res.headers, body: await res.json() };
          if (out.body?.token) me.token = out.body.token;
          return out;
        },
        async get(path, extra) {
          const res = await fetch(url + path, { headers: me.headers(extra) });
          const out = { status: res.status, headers: res.headers, body: await res.json() };
          if (out.body?.token) me.token = out.body.token;
          return out;
        },
        /** POST /start { message }: `{ status, body: { sessionId, question | answer } }`. */
        start(message) { return me.post('/start', { message }); },
        reply(sessionId, answer) { return me.post('/reply', { sessionId, answer }); },
        sessions() { return me.get('/sessions'); },
        /** The hash its sessions are stored under (what the Worker computes from the token). */
        async owner() {
          const { createHash } = await import('node:crypto');
          return createHash('sha256').update(me.token).digest('hex').slice(0, 32);
        },
      };
      return me;
    },
    /** Ends wrangler and workerd (the whole process group) and waits for them to exit. */
    async stop() {
      if (child.exitCode === null) {
        const exited = once(child, 'exit');
        try { process.kill(-child.pid, 'SIGTERM'); } catch { /* already gone */ }
        const timer = setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } }, 5000);
        await exited;
        clearTimeout(timer);
      }
      // wrangler can exit before its workerd: wait until the whole group is gone, so the next Worker finds its
      // sockets free (a lingering workerd once held the Durable Object's direct socket: EADDRINUSE).
      // Bounded: a member the system never reaps (a zombie) must not hang the suite.
      const start = Date.now();
      while (Date.now() - start < 15_000) {
        try { process.kill(-child.pid, 0); } catch { return; }
        if (Date.now() - start > 10_000) {
          try { process.kill(-child.pid, 'SIGKILL'); } catch { return; }
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}

/**
 * Polls `read()` until `accept(value)` holds, for at most `ms` (Workers KV: a write the store's one-per-second
 * rule held back happens in the request's `waitUntil` about a second later). Returns the last value read.
 */
export async function eventually(read, accept, ms = 5000) {
  const until = Date.now() + ms;
  let value = await read();
  while (!accept(value) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    value = await read();
  }
  return value;
}
