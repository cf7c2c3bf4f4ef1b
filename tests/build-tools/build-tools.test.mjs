// The package as users get it (`npm pack` of pkg/), built into the smallest app by every build tool users build
// with and run for real (issue 32): pages in Chromium (esbuild ESM and IIFE, Rollup, Vite build and dev server,
// webpack, Next.js client pages), HTTP for Next.js route handlers (Node and edge, Turbopack and webpack) and a
// Worker under `wrangler dev` (plus `wrangler deploy --dry-run`), and the runtimes themselves (Node 18, 20 and 22
// with import and require, Deno, Bun). No tool gets a plugin, a copy step or any configuration for the package.
// A page whose .wasm cannot be had shows WasmLoadError and keeps running its own code.
//
// Each figure — the bytes a page downloads (gzip) and how long its first result took — is printed as a `#` line
// and written to out/figures.json.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { cpSync, mkdirSync, rmSync, readFileSync, writeFileSync, readdirSync, symlinkSync, existsSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as netServer } from 'node:net';
import { once } from 'node:events';
import { join, extname, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { startWorker } from '../workers/harness.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '../..');
const OUT = join(HERE, 'out');
const MODULES = join(HERE, 'node_modules');
const BIN = join(MODULES, '.bin');
const need = (what) => import(pathToFileURL(join(MODULES, what)).href);

const figures = {};
const note = (key, value) => {
  figures[key] = value;
  process.stdout.write(`${key}: ${JSON.stringify(value)}\n`);
};

/** Runs `cmd args` in `cwd`; resolves with its output, rejects with it. */
function run(cmd, args, { cwd = OUT, env = {}, timeout = 300_000 } = {}) {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd, timeout, maxBuffer: 64 << 20, env: { ...process.env, ...env } }, (e, stdout, stderr) => {
      if (e) reject(new Error(`${cmd} ${args.join(' ')} failed: ${e.message}\n${stdout}\n${stderr}`));
      else resolve(`${stdout}${stderr}`);
    });
  });
}

async function freePort() {
  const srv = netServer().listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const { port } = srv.address();
  srv.close();
  await once(srv, 'close');
  return port;
}

/** A fresh directory under out/ holding the app's files and a link to the tools' node_modules. */
function workDir(name, files = ['smallest.js', 'main.js', 'missing.js', 'index.html']) {
  const dir = join(OUT, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const f of files) cpSync(join(HERE, 'app', f), join(dir, f));
  symlinkSync(MODULES, join(dir, 'node_modules'));
  return dir;
}

// ---- the package, packed and installed as a user installs it ---------------------------------------------

before(async () => {
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  const packed = (await run('npm', ['pack', join(ROOT, 'pkg'), '--pack-destination', OUT, '--silent'])).trim().split('\n').at(-1);
  const tgz = join(OUT, packed);
  note('npm pack', { file: packed, bytes: statSync(tgz).size });
  const installed = join(MODULES, 'resumable-agent');
  rmSync(installed, { recursive: true, force: true });
  mkdirSync(join(OUT, 'unpacked'), { recursive: true });
  await run('tar', ['xzf', tgz, '-C', join(OUT, 'unpacked')]);
  cpSync(join(OUT, 'unpacked', 'package'), installed, { recursive: true });
});

// ---- pages in Chromium -------------------------------------------------------------------------------------

let server;
let browser;
let base;

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm' };

before(async () => {
  server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const file = join(OUT, path.endsWith('/') ? `${path}index.html` : path);
    if (!file.startsWith(OUT) || !existsSync(file) || statSync(file).isDirectory()) return res.writeHead(404).end('not found');
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${server.address().port}`;
  const { chromium } = await import(pathToFileURL(join(ROOT, 'node_modules/playwright-core/index.mjs')).href);
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
});

after(async () => {
  await browser?.close();
  server?.close();
  writeFileSync(join(OUT, 'figures.json'), `${JSON.stringify(figures, null, 2)}\n`);
});

/**
 * Loads `url` in a fresh page and waits (at most 30 s) for #out to say `result:` or `error:`: its text, the ms
 * from navigation to it, the bytes the page downloaded (gzip, as a server would send them) and its console.
 */
async function page(url, { serveRoot = OUT, sizeOf = true } = {}) {
  const context = await browser.newContext();
  const p = await context.newPage();
  const console = [];
  const downloaded = new Set();
  p.on('console', (m) => console.push(`${m.type()}: ${m.text()}`));
  p.on('pageerror', (e) => console.push(`pageerror: ${e.message}`));
  p.on('response', (r) => { if (r.status() === 200) downloaded.add(new URL(r.url()).pathname); });
  const t0 = performance.now();
  await p.goto(url);
  let text = '';
  for (let i = 0; i < 300; i++) {
    text = (await p.textContent('#out').catch(() => '')) ?? '';
    if (/^(result|error):/.test(text)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const ms = Math.round(performance.now() - t0);
  const checked = (await p.textContent('#checked').catch(() => '')) ?? '';
  await context.close();
  let gzip = 0;
  if (sizeOf) {
    for (const path of downloaded) {
      const file = join(serveRoot, path.endsWith('/') ? `${path}index.html` : path);
      if (existsSync(file) && statSync(file).isFile()) gzip += gzipSync(readFileSync(file), { level: 9 }).length;
    }
  }
  return { text, ms, checked, gzipKiB: Math.round(gzip / 102.4) / 10, downloaded: [...downloaded], console };
}

/** A page's HTML for a classic (IIFE) script. */
const classic = (dir) => writeFileSync(join(dir, 'index.html'), readFileSync(join(dir, 'index.html'), 'utf8').replace('type="module" ', ''));

const FRIDAY = 'result: Done: Friday';

describe('browser builds (no plugin, no copy step, no configuration)', () => {
  test('esbuild, ESM (minified): runs; the .wasm travels inlined (esbuild ships no new URL assets)', async () => {
    const { build } = await need('esbuild/lib/main.js');
    const dir = workDir('esbuild-esm');
    await build({ entryPoints: [join(dir, 'main.js')], bundle: true, format: 'esm', minify: true, platform: 'browser', outdir: join(dir, 'dist'), logLevel: 'warning' });
    cpSync(join(dir, 'index.html'), join(dir, 'dist/index.html'));
    const r = await page(`${base}/esbuild-esm/dist/`);
    note('esbuild esm', { result: r.text, gzipKiB: r.gzipKiB, firstResultMs: r.ms, files: r.downloaded });
    assert.equal(r.text, FRIDAY, r.console.join('\n'));
    assert.ok(!r.downloaded.some((f) => f.endsWith('.wasm')), 'no .wasm request: it is inlined');
    assert.equal(r.checked, 'refused at once (ConfigError)', 'inlined, the .wasm compiles synchronously: a bad tool throws from defineTool()');
  });

  test('esbuild, IIFE (a classic script, no import.meta): runs', async () => {
    const { build } = await need('esbuild/lib/main.js');
    const dir = workDir('esbuild-iife');
    const built = await build({ entryPoints: [join(dir, 'main.js')], bundle: true, format: 'iife', minify: true, platform: 'browser', outdir: join(dir, 'dist'), logLevel: 'silent', write: true });
    assert.deepEqual(built.warnings.map((w) => w.text), [], 'esbuild warns about nothing (no import.meta in what the package ships it)');
    cpSync(join(dir, 'index.html'), join(dir, 'dist/index.html'));
    classic(join(dir, 'dist'));
    const r = await page(`${base}/esbuild-iife/dist/`);
    note('esbuild iife', { result: r.text, gzipKiB: r.gzipKiB, firstResultMs: r.ms });
    assert.equal(r.text, FRIDAY, r.console.join('\n'));
  });

  test('Rollup with @rollup/plugin-node-resolve (browser): runs', async () => {
    const { rollup } = await need('rollup/dist/es/rollup.js');
    const { default: resolve } = await need('@rollup/plugin-node-resolve/dist/es/index.js');
    const dir = workDir('rollup');
    const bundle = await rollup({ input: join(dir, 'main.js'), plugins: [resolve({ browser: true })], onwarn: () => {} });
    await bundle.write({ dir: join(dir, 'dist'), format: 'es' });
    cpSync(join(dir, 'index.html'), join(dir, 'dist/index.html'));
    const r = await page(`${base}/rollup/dist/`);
    note('rollup', { result: r.text, gzipKiB: r.gzipKiB, firstResultMs: r.ms, files: r.downloaded });
    assert.equal(r.text, FRIDAY, r.console.join('\n'));
  });

  test('Vite build: runs; the .wasm is its own file, fetched once', async () => {
    const { build } = await need('vite/dist/node/index.js');
    const dir = workDir('vite');
    await build({ root: dir, base: './', logLevel: 'silent', configFile: false, build: { outDir: join(dir, 'dist'), emptyOutDir: true } });
    const r = await page(`${base}/vite/dist/`);
    note('vite build', { result: r.text, gzipKiB: r.gzipKiB, firstResultMs: r.ms, files: r.downloaded });
    assert.equal(r.text, FRIDAY, r.console.join('\n'));
    // The app imports no provider, saver or MCP: the page fetches the core variant alone.
    assert.deepEqual(r.downloaded.filter((f) => f.endsWith('.wasm')).map((f) => f.replace(/.*\/|-[\w-]+\./g, (m) => (m.startsWith('-') ? '.' : ''))), ['resumable_agent_core_bg.wasm']);
    assert.ok(!r.downloaded.some((f) => /wasm-\w+-inline/.test(f)), 'the inlined copy is not downloaded');
    assert.equal(r.checked, 'checked by the first call', 'fetched, the .wasm is not there yet when the page defines its tools');
  });

  test('Vite dev server: runs', async () => {
    const { createServer: viteServer } = await need('vite/dist/node/index.js');
    const dir = workDir('vite-dev');
    const port = await freePort();
    const dev = await viteServer({ root: dir, logLevel: 'silent', configFile: false, server: { host: '127.0.0.1', port, strictPort: true } });
    await dev.listen();
    try {
      const r = await page(`http://127.0.0.1:${port}/`, { sizeOf: false });
      note('vite dev', { result: r.text, firstResultMs: r.ms });
      assert.equal(r.text, FRIDAY, r.console.join('\n'));
    } finally {
      await dev.close();
    }
  });

  test('Vite 6 (build, default targets, and its dev server, whose dependency optimizer moves the package): runs', async () => {
    const { build, createServer: viteServer } = await need('vite6/dist/node/index.js');
    const dir = workDir('vite6');
    await build({ root: dir, base: './', logLevel: 'silent', configFile: false, build: { outDir: join(dir, 'dist'), emptyOutDir: true } });
    const built = await page(`${base}/vite6/dist/`);
    note('vite 6 build', { result: built.text, gzipKiB: built.gzipKiB, firstResultMs: built.ms });
    assert.equal(built.text, FRIDAY, built.console.join('\n'));
    const port = await freePort();
    const dev = await viteServer({ root: dir, logLevel: 'silent', configFile: false, server: { host: '127.0.0.1', port, strictPort: true } });
    await dev.listen();
    try {
      const r = await page(`http://127.0.0.1:${port}/`, { sizeOf: false });
      note('vite 6 dev', { result: r.text, firstResultMs: r.ms, warned: r.console.filter((l) => l.startsWith('warning: resumable-agent')) });
      assert.equal(r.text, FRIDAY, r.console.join('\n'));
    } finally {
      await dev.close();
    }
  });

  test('webpack 5: runs; the .wasm is its own file', async () => {
    const { default: webpack } = await need('webpack/lib/index.js');
    const dir = workDir('webpack');
    const stats = await new Promise((resolve, reject) => {
      webpack({ mode: 'production', context: dir, entry: './main.js', output: { path: join(dir, 'dist'), filename: 'main.js', publicPath: 'auto' }, performance: { hints: false } })
        .run((e, s) => (e ? reject(e) : resolve(s)));
    });
    assert.equal(stats.hasErrors(), false, stats.toString('errors-only'));
    cpSync(join(dir, 'index.html'), join(dir, 'dist/index.html'));
    classic(join(dir, 'dist'));
    const r = await page(`${base}/webpack/dist/`);
    note('webpack', { result: r.text, gzipKiB: r.gzipKiB, firstResultMs: r.ms, files: r.downloaded });
    assert.equal(r.text, FRIDAY, r.console.join('\n'));
    assert.equal(r.downloaded.filter((f) => f.endsWith('.wasm')).length, 1);
  });

  test('a .wasm the build did not ship: the inlined copy is used, with a warning that says how to ship it', async () => {
    const { build } = await need('vite/dist/node/index.js');
    const dir = workDir('vite-no-wasm');
    await build({ root: dir, base: './', logLevel: 'silent', configFile: false, build: { outDir: join(dir, 'dist'), emptyOutDir: true } });
    for (const f of readdirSync(join(dir, 'dist/assets'))) if (f.endsWith('.wasm')) rmSync(join(dir, 'dist/assets', f));
    const r = await page(`${base}/vite-no-wasm/dist/`);
    assert.equal(r.text, FRIDAY, r.console.join('\n'));
    assert.ok(r.console.some((l) => /warning: resumable-agent: .*answered HTTP 404, so an inlined copy/.test(l)), r.console.join('\n'));
  });

  test('no .wasm at all: the app\'s own code runs, and the first call is a WasmLoadError naming the URL, 404 and the fix', async () => {
    const { build } = await need('vite/dist/node/index.js');
    const dir = workDir('vite-nothing');
    await build({ root: dir, base: './', logLevel: 'silent', configFile: false, build: { outDir: join(dir, 'dist'), emptyOutDir: true } });
    // Vite emits every variant's file and inlined copy (the page fetches only the one it needs): all removed.
    const removed = readdirSync(join(dir, 'dist/assets')).filter((f) => f.endsWith('.wasm') || /^wasm-\w+-inline/.test(f));
    assert.equal(removed.length, 7, removed.join(' '));
    for (const f of removed) rmSync(join(dir, 'dist/assets', f));
    const r = await page(`${base}/vite-nothing/dist/`);
    assert.match(r.text, /^error: WasmLoadError: resumable-agent: could not load its WebAssembly \(resumable_agent_core_bg\.wasm\) from http:\/\/127\.0\.0\.1:\d+\/vite-nothing\/dist\/assets\/resumable_agent_core_bg-[\w-]+\.wasm: http:.* answered HTTP 404, and the inlined copy could not be loaded either .* Fix: serve node_modules\/resumable-agent\/resumable_agent_core_bg\.wasm/, r.text);
  });

  test('loadWasm(url) where nothing is: WasmLoadError (instanceof, .status 404); the app\'s own code ran', async () => {
    const { build } = await need('esbuild/lib/main.js');
    const dir = workDir('missing');
    await build({ entryPoints: [join(dir, 'missing.js')], bundle: true, format: 'esm', platform: 'browser', outfile: join(dir, 'dist/main.js'), logLevel: 'warning' });
    cpSync(join(dir, 'index.html'), join(dir, 'dist/index.html'));
    const r = await page(`${base}/missing/dist/`, { sizeOf: false });
    assert.match(r.text, /^error: typed WasmLoadError: status 404: resumable-agent: could not load its WebAssembly \(resumable_agent_full_bg\.wasm\) from http:\/\/127\.0\.0\.1:\d+\/missing\/dist\/no-such\.wasm: HTTP 404/, r.text);
  });
});

// ---- Next.js ---------------------------------------------------------------------------------------------

/** Starts `next start` in `dir` on 127.0.0.1; `{ url, stop }` once it answers. */
async function nextStart(dir) {
  const port = await freePort();
  const child = spawn(join(BIN, 'next'), ['start', '-H', '127.0.0.1', '-p', String(port)], {
    cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1' },
  });
  let output = '';
  child.stdout.on('data', (d) => { output += d; });
  child.stderr.on('data', (d) => { output += d; });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`next start exited:\n${output}`);
    try {
      await (await fetch(`${url}/api/run`, { signal: AbortSignal.timeout(20_000) })).arrayBuffer();
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`next start did not answer:\n${output}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  const stop = async () => {
    try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
    if (child.exitCode === null) await once(child, 'exit');
  };
  return { url, stop, output: () => output };
}

for (const bundler of ['turbopack', 'webpack']) {
  describe(`Next.js 16 (${bundler}), no configuration`, () => {
    let next;
    before(async () => {
      const dir = workDir(`next-${bundler}`, ['smallest.js']);
      cpSync(join(HERE, 'next'), dir, { recursive: true });
      const out = await run(join(BIN, 'next'), ['build', ...(bundler === 'webpack' ? ['--webpack'] : [])], { cwd: dir, env: { NEXT_TELEMETRY_DISABLED: '1' } });
      assert.doesNotMatch(out, /resumable-agent|resumable_agent/i, 'the build says nothing about the package');
      next = await nextStart(dir);
    });
    after(() => next?.stop());

    test('a Node.js route handler builds and runs', async () => {
      const res = await fetch(`${next.url}/api/run`);
      assert.equal(await res.text(), 'Done: Friday');
    });

    test('an edge route builds and runs (the .wasm imported as a module)', async () => {
      const res = await fetch(`${next.url}/api/edge`);
      assert.equal(await res.text(), 'Done: Friday');
    });

    test('a client page runs in Chromium', async () => {
      const r = await page(`${next.url}/`, { sizeOf: false });
      note(`next ${bundler} client page`, { result: r.text, firstResultMs: r.ms, wasm: r.downloaded.filter((f) => f.endsWith('.wasm')) });
      assert.equal(r.text, FRIDAY, `${r.console.join('\n')}\n${next.output()}`);
    });
  });
}

// ---- Cloudflare Workers --------------------------------------------------------------------------------

describe('wrangler', () => {
  let dir;
  before(() => {
    dir = workDir('worker', ['smallest.js']);
    cpSync(join(HERE, 'worker'), dir, { recursive: true });
  });

  test('deploy --dry-run: the .wasm is a module of the upload', async () => {
    const out = await run(join(ROOT, 'node_modules/.bin/wrangler'), ['deploy', '--dry-run', '--outdir', join(dir, 'dist'), '--config', join(dir, 'wrangler.toml')], {
      cwd: dir, env: { CI: 'true', WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', NO_COLOR: '1' },
    });
    const wasm = readdirSync(join(dir, 'dist')).filter((f) => f.endsWith('.wasm'));
    assert.equal(wasm.length, 1, out);
    const js = readdirSync(join(dir, 'dist')).filter((f) => f.endsWith('.js'));
    const gzip = [...js, ...wasm].reduce((a, f) => a + gzipSync(readFileSync(join(dir, 'dist', f)), { level: 9 }).length, 0);
    note('wrangler bundle', { gzipKiB: Math.round(gzip / 102.4) / 10, files: [...js, ...wasm] });
    assert.ok(!js.some((f) => readFileSync(join(dir, 'dist', f), 'utf8').includes('-inline.js')), 'no inlined copy in a Worker');
  });

  test('wrangler dev: the smallest app, and a session in KV across requests', async () => {
    const w = await startWorker({ config: join(dir, 'wrangler.toml'), persistTo: join(dir, 'state') });
    try {
      assert.equal(await (await fetch(`${w.url}/run`)).text(), 'Done: Friday');
      assert.equal(await (await fetch(`${w.url}/session?step=1`)).text(), 'asks: When?');
      assert.equal(await (await fetch(`${w.url}/session?step=2`)).text(), 'Done: Friday');
    } finally {
      await w.stop();
    }
  });
});

// ---- the README's shapes: what each ships, within tests/budgets.json, and that it runs ------------------------

describe('shapes and their size budgets (tests/budgets.json)', () => {
  const budgets = JSON.parse(readFileSync(join(ROOT, 'tests/budgets.json'), 'utf8')).shapesGzipKiB;
  let model;
  before(async () => {
    const { startServer } = await import(pathToFileURL(join(ROOT, 'tests/providers/server.mjs')).href);
    model = await startServer();
  });
  after(() => model?.server.close());

  const within = (shape, kib) => {
    assert.ok(budgets[shape] !== undefined, `tests/budgets.json has no budget for "${shape}"`);
    assert.ok(kib <= budgets[shape], `${shape}: ${kib} KiB gzip is over its budget of ${budgets[shape]} KiB (tests/budgets.json)`);
  };
  const variantOf = (files) => files.filter((f) => f.endsWith('.wasm')).map((f) => f.match(/resumable_agent_(\w+?)_bg/)?.[1] ?? f);

  /** Builds the Worker `shape` as `wrangler deploy` would (--dry-run): its directory, files and gzip KiB. */
  async function worker(shape) {
    const dir = workDir(`shape-${shape}`, []);
    cpSync(join(HERE, 'shapes', `${shape}.js`), join(dir, 'index.js'));
    writeFileSync(join(dir, 'wrangler.toml'), `name = "${shape}"\nmain = "index.js"\ncompatibility_date = "2025-09-01"\nsend_metrics = false\n\n[[kv_namespaces]]\nbinding = "SESSIONS"\nid = "00000000000000000000000000000000"\n`);
    const out = await run(join(ROOT, 'node_modules/.bin/wrangler'), ['deploy', '--dry-run', '--outdir', join(dir, 'dist'), '--config', join(dir, 'wrangler.toml')], {
      cwd: dir, env: { CI: 'true', WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', NO_COLOR: '1' },
    });
    const files = readdirSync(join(dir, 'dist')).filter((f) => f.endsWith('.js') || f.endsWith('.wasm'));
    const gzip = files.reduce((a, f) => a + gzipSync(readFileSync(join(dir, 'dist', f)), { level: 9 }).length, 0);
    return { dir, files, out, kib: Math.round(gzip / 102.4) / 10 };
  }

  /** Runs the Worker in `dir` under wrangler dev (real local workerd, KV) against the model server: step 1, step 2. */
  async function sessionTurns(dir) {
    const w = await startWorker({ config: join(dir, 'wrangler.toml'), persistTo: join(dir, 'state'), vars: { MODEL_URL: `http://127.0.0.1:${model.port}`, API_KEY: 'sk-test-6f1c2a9be0d44c1f8a7e-SECRET' } });
    try {
      const one = await (await fetch(`${w.url}/?step=1`)).text();
      const two = await (await fetch(`${w.url}/?step=2`)).text();
      return { one, two, w };
    } finally {
      await w.stop();
    }
  }

  test('minimal page (Vite; a JS model and tools): the core variant alone', async () => {
    const { build } = await need('vite/dist/node/index.js');
    const dir = workDir('shape-minimal-page');
    await build({ root: dir, base: './', logLevel: 'silent', configFile: false, build: { outDir: join(dir, 'dist'), emptyOutDir: true } });
    const r = await page(`${base}/shape-minimal-page/dist/`);
    note('shape: minimal page', { gzipKiB: r.gzipKiB, wasm: variantOf(r.downloaded) });
    assert.equal(r.text, FRIDAY, r.console.join('\n'));
    assert.deepEqual(variantOf(r.downloaded), ['core']);
    within('minimal page', r.gzipKiB);
  });

  test('browser + IndexedDB page (Vite; openai() and an IndexedDB session): the providers + sessions variant', async () => {
    const { build } = await need('vite/dist/node/index.js');
    const dir = workDir('shape-idb-page', ['index.html']);
    cpSync(join(HERE, 'shapes/provider-idb-page.js'), join(dir, 'main.js'));
    await build({ root: dir, base: './', logLevel: 'silent', configFile: false, build: { outDir: join(dir, 'dist'), emptyOutDir: true } });
    const r = await page(`${base}/shape-idb-page/dist/?model=http://127.0.0.1:${model.port}`);
    note('shape: browser + IndexedDB page', { gzipKiB: r.gzipKiB, wasm: variantOf(r.downloaded) });
    assert.equal(r.text, 'result: Found Friday.', r.console.join('\n'));
    assert.deepEqual(variantOf(r.downloaded), ['providers_sessions']);
    within('browser + IndexedDB page', r.gzipKiB);
  });

  test("minimal Worker ('resumable-agent/core'): ships the core variant alone, and runs", async () => {
    const { dir, files, kib } = await worker('minimal-worker');
    note('shape: minimal Worker', { gzipKiB: kib, files });
    assert.deepEqual(variantOf(files), ['core']);
    within('minimal Worker', kib);
    const w = await startWorker({ config: join(dir, 'wrangler.toml'), persistTo: join(dir, 'state') });
    try {
      assert.equal(await (await fetch(`${w.url}/`)).text(), 'Done: Friday');
    } finally {
      await w.stop();
    }
  });

  test('provider + KV session Worker (anthropic(), kvSaver): pauses in one request, answered in the next', async () => {
    const { dir, files, kib } = await worker('provider-kv-worker');
    note('shape: provider + KV session Worker', { gzipKiB: kib, files });
    assert.deepEqual(variantOf(files), ['full'], 'a Worker ships every .wasm it imports: the main entry has one, the full variant');
    within('provider + KV session Worker', kib);
    const { one, two, w } = await sessionTurns(dir);
    assert.equal(one, 'asks: Which day?', w.output());
    assert.equal(two, 'Found Friday.', w.output());
  });

  test('everything Worker (every export kept): ships no more than the full variant, and runs', async () => {
    const { dir, files, kib } = await worker('everything-worker');
    note('shape: everything Worker', { gzipKiB: kib, files });
    assert.deepEqual(variantOf(files), ['full']);
    within('everything Worker', kib);
    const { one, two, w } = await sessionTurns(dir);
    assert.equal(one, 'asks: Which day?', w.output());
    assert.equal(two, 'Found Friday.', w.output());
    assert.deepEqual(model.state.errors, [], 'every model request followed the wire format');
  });
});

// ---- runtimes ------------------------------------------------------------------------------------------------

describe('runtimes', () => {
  let dir;
  before(() => {
    dir = workDir('runtimes', ['smallest.js', 'runtime.mjs', 'runtime.cjs']);
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  });
  const nodes = { 18: join(ROOT, 'target/node-versions/18/node_modules/.bin/node'), 20: join(ROOT, 'target/node-versions/20/node_modules/.bin/node'), 22: join(ROOT, 'node_modules/.bin/node') };

  for (const [major, bin] of Object.entries(nodes)) {
    test(`Node ${major}: import`, async () => {
      assert.equal((await run(bin, ['runtime.mjs'], { cwd: dir })).trim(), 'Done: Friday');
    });
    if (major !== '18') {
      test(`Node ${major}: require() (no top-level await anywhere)`, async () => {
        assert.equal((await run(bin, ['runtime.cjs'], { cwd: dir })).trim(), 'Done: required');
      });
    }
  }

  test('Deno with --allow-read alone', async () => {
    const out = await run(join(BIN, 'deno'), ['run', '--allow-read', '--no-prompt', 'runtime.mjs'], { cwd: dir, env: { DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' } });
    assert.equal(out.trim(), 'Done: Friday');
  });

  test('Bun', async () => {
    assert.equal((await run(join(BIN, 'bun'), ['runtime.mjs'], { cwd: dir })).trim(), 'Done: Friday');
  });
});
