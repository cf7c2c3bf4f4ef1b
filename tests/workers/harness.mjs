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
export async function startWorker({ config, persistTo, vars = {}, timeoutMs = 120_000 }) {
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
    /** Ends wrangler and workerd (the whole process group) and waits for them to exit. */
    async stop() {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      try { process.kill(-child.pid, 'SIGTERM'); } catch { /* already gone */ }
      const timer = setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } }, 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}
