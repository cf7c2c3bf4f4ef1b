// Builds each framework's minimal Worker (workers/<fw>.mjs) the way a Workers deploy would bundle it, measures
// it, and checks whether it needs `nodejs_compat` by running it in workerd (the Workers runtime) without and
// with that flag. Also builds a Node bundle of the same entry for the cold-start figure.
import { build } from 'esbuild';
import { builtinModules } from 'node:module';
import { gzipSync } from 'node:zlib';
import { readFileSync, writeFileSync, rmSync, mkdirSync, copyFileSync, readdirSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createServer, connect } from 'node:net';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const BENCH = fileURLToPath(new URL('../', import.meta.url));
const OUT = join(BENCH, 'out');
const WORKERD = join(BENCH, 'node_modules/.bin/workerd');
const NODE_BUILTINS = [...builtinModules, ...builtinModules.map((m) => `node:${m}`), 'node:*'];
export const COMPAT_DATE = '2025-09-01';

const gz = (buf) => gzipSync(buf, { level: 9 }).length;

/**
 * The Worker bundle: esbuild, ESM, minified, browser platform with the workerd/worker/browser conditions
 * (what wrangler uses), `.wasm` imports copied beside the bundle and kept as imports (workerd loads them as
 * compiled wasm modules). Without Node built-ins available; if that fails because the code imports them,
 * the bundle is rebuilt with them external (as wrangler does under nodejs_compat) and marked as needing it.
 */
export async function buildWorker(fw, entry = join(BENCH, 'workers', `${fw}.mjs`)) {
  const outdir = join(OUT, 'worker', fw);
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  const options = {
    entryPoints: { worker: entry },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    conditions: ['workerd', 'worker', 'browser'],
    minify: true,
    target: 'es2022',
    outdir,
    outExtension: { '.js': '.mjs' },
    loader: { '.wasm': 'copy' },
    assetNames: '[name]',
    metafile: true,
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
  };
  let builtinsImported = [];
  try {
    await build(options);
  } catch (err) {
    const unresolved = (err.errors ?? []).map((e) => e.text).filter((t) => /Could not resolve/.test(t));
    builtinsImported = unresolved
      .map((t) => t.match(/Could not resolve "([^"]+)"/)?.[1])
      .filter((m) => m && (m.startsWith('node:') || builtinModules.includes(m)));
    if (builtinsImported.length === 0 || builtinsImported.length !== unresolved.length) throw err;
    await build({ ...options, external: NODE_BUILTINS });
  }
  const js = readFileSync(join(outdir, 'worker.mjs'));
  const wasmFiles = readdirSync(outdir).filter((f) => f.endsWith('.wasm'));
  const wasm = wasmFiles.map((f) => readFileSync(join(outdir, f)));
  const nodeImportsLeft = [...new Set([...js.toString().matchAll(/from\s*"(node:[^"]+)"|import\s*\(\s*"(node:[^"]+)"\)/g)].map((m) => m[1] ?? m[2]))];
  return {
    fw,
    outdir,
    wasmFiles,
    builtinsImported: [...new Set(builtinsImported)],
    nodeImportsLeft,
    jsBytes: js.length,
    jsGzip: gz(js),
    wasmBytes: wasm.reduce((a, b) => a + b.length, 0),
    wasmGzip: wasm.reduce((a, b) => a + gz(b), 0),
  };
}

async function freePort() {
  const srv = createServer().listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const { port } = srv.address();
  srv.close();
  await once(srv, 'close');
  return port;
}

/** workerd serving `bundle` on a free 127.0.0.1 port: `{ child, port, log(), stop() }`. */
async function startWorkerd(bundle, nodejsCompat) {
  const port = await freePort();
  const modules = [`(name = "worker.mjs", esModule = embed "worker.mjs")`, ...bundle.wasmFiles.map((f) => `(name = "${f}", wasm = embed "${f}")`)];
  const flags = nodejsCompat ? '"nodejs_compat"' : '';
  const config = `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "main", worker = .bench)],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);
const bench :Workerd.Worker = (
  modules = [${modules.join(', ')}],
  compatibilityDate = "${COMPAT_DATE}",
  compatibilityFlags = [${flags}],
);
`;
  const file = join(bundle.outdir, nodejsCompat ? 'compat.capnp' : 'plain.capnp');
  writeFileSync(file, config);
  const child = spawn(WORKERD, ['serve', file, '--verbose'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let log = '';
  child.stdout.on('data', (d) => (log += d));
  child.stderr.on('data', (d) => (log += d));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
    await exited;
  };
  return { child, port, log: () => log.trim(), stop };
}

/** Serves the bundle in workerd on 127.0.0.1 and makes one request: `{ ok, status, body, log }`. */
export async function runInWorkerd(bundle, { nodejsCompat, expectText, timeoutMs = 30_000 }) {
  const w = await startWorkerd(bundle, nodejsCompat);
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      if (w.child.exitCode !== null) return { ok: false, status: 0, body: '', log: w.log() };
      try {
        const res = await fetch(`http://127.0.0.1:${w.port}/`, { signal: AbortSignal.timeout(10_000) });
        const body = await res.text();
        return { ok: res.status === 200 && body === expectText, status: res.status, body, log: w.log() };
      } catch {
        if (Date.now() > deadline) return { ok: false, status: 0, body: '', log: `timeout\n${w.log()}` };
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } finally {
    await w.stop();
  }
}

/** Resolves once a TCP connection to 127.0.0.1:port succeeds (tried every 2 ms), false after `timeoutMs`. */
async function whenListening(port, child, timeoutMs) {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline && child.exitCode === null) {
    const ok = await new Promise((resolve) => {
      const s = connect({ host: '127.0.0.1', port });
      s.once('connect', () => { s.destroy(); resolve(true); });
      s.once('error', () => { s.destroy(); resolve(false); });
    });
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 2));
  }
  return false;
}

/**
 * One fresh workerd isolate (a new workerd process) serving `bundle`: `{ startupMs, firstMs, secondMs }`, ms
 * from spawn until the socket accepts (workerd has loaded and evaluated the Worker's modules by then), then ms
 * of the first and the second request. The caller warms its own fetch first (`measureFresh` does), so that
 * fetch's first-use cost is not counted.
 */
export async function freshWorkerdOnce(bundle, { nodejsCompat, expectText, timeoutMs = 30_000 }) {
  const t0 = performance.now();
  const w = await startWorkerd(bundle, nodejsCompat);
  try {
    if (!(await whenListening(w.port, w.child, timeoutMs))) throw new Error(`workerd did not listen:\n${w.log()}`);
    const startupMs = performance.now() - t0;
    const ms = [];
    for (let i = 0; i < 2; i++) {
      const a = performance.now();
      const res = await fetch(`http://127.0.0.1:${w.port}/`, { signal: AbortSignal.timeout(timeoutMs) });
      const body = await res.text();
      ms.push(performance.now() - a);
      if (res.status !== 200 || body !== expectText) throw new Error(`unexpected answer ${res.status}: ${body.slice(0, 200)}\n${w.log()}`);
    }
    return { startupMs, firstMs: ms[0], secondMs: ms[1] };
  } finally {
    await w.stop();
  }
}

/** A Worker that answers every request with `text` at once: the baseline of `freshWorkerdOnce`. */
export async function buildBareWorker(text) {
  const outdir = join(OUT, 'worker', 'bare');
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  writeFileSync(join(outdir, 'worker.mjs'), `export default { fetch() { return new Response(${JSON.stringify(text)}, { headers: { 'content-type': 'text/plain' } }); } };\n`);
  return { fw: 'bare', outdir, wasmFiles: [] };
}

/**
 * The Node bundle for cold start: the same Worker entry, bundled for Node (ESM, minified); a `.wasm` the
 * package reads next to its module at run time is copied beside the bundle.
 */
export async function buildNode(fw) {
  const outdir = join(OUT, 'node', fw);
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  await build({
    entryPoints: { worker: join(BENCH, 'workers', `${fw}.mjs`) },
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    minify: true,
    outdir,
    outExtension: { '.js': '.mjs' },
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
    // Some CommonJS dependencies call require() for Node built-ins; give the ESM bundle a require.
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  });
  // The .wasm variants the bundle can load, read beside it at run time (the package's node entry).
  const bundled = readFileSync(join(outdir, 'worker.mjs'), 'utf8');
  for (const file of new Set(bundled.match(/resumable_agent_\w+_bg\.wasm/g) ?? [])) {
    copyFileSync(join(BENCH, 'node_modules/resumable-agent', file), join(outdir, file));
  }
  return join(outdir, 'worker.mjs');
}
