// How the package loads its WebAssembly (issue 32), through copies of the built package in which a test removes
// what a broken deployment lacks, each run in its own process: nothing happens at import (no top-level await, so
// `require()` works too), the first call that needs the .wasm loads it, a failure is a WasmLoadError from that call
// and never from the import, a bundled Node app falls back to the inlined copy, and loadWasm() takes another source.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, mkdirSync, readdirSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PKG = fileURLToPath(new URL('../../pkg/', import.meta.url));
let dir;

/** The package's .wasm files (one per variant). */
const WASM = readdirSync(PKG).filter((f) => f.endsWith('_bg.wasm'));

/** A copy of the package under `name`/node_modules, without `remove`; the app directory. */
function copy(name, remove = []) {
  const app = join(dir, name);
  const at = join(app, 'node_modules/resumable-agent');
  mkdirSync(at, { recursive: true });
  cpSync(PKG, at, { recursive: true, dereference: true });
  for (const f of remove) rmSync(join(at, f));
  writeFileSync(join(app, 'package.json'), '{ "type": "module" }\n');
  return app;
}

/** Runs `code` (an ES module, or CommonJS for `.cjs`) in `app`; its stdout, parsed as JSON. */
function run(app, code, file = 'main.mjs') {
  writeFileSync(join(app, file), code);
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [file], { cwd: app, timeout: 30_000 }, (e, out, err) => {
      if (e) reject(new Error(`${e.message}\n${out}\n${err}`));
      else resolve(JSON.parse(out.trim().split('\n').at(-1)));
    });
  });
}

const SMALLEST = `
const model = scriptedModel([{ content: [{ type: 'tool_use', id: 't', name: 'ask', input: {} }] }, 'Done.']);
const ask = defineTool({ name: 'ask', handle: () => { throw new InterruptError('When?'); } });
const paused = await agent({ tools: [ask], model }).prompt('go');
const done = await agent({ tools: [ask], model }).resume(JSON.stringify(paused.checkpoint), 'Friday');
`;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'ra-loading-'));
});

describe('loading the WebAssembly', () => {
  test('importing loads nothing; the first call does (memoryUsage is 0 until then)', async () => {
    const app = copy('lazy');
    const out = await run(app, `import { agent, defineTool, InterruptError, scriptedModel, memoryUsage } from 'resumable-agent';
const before = memoryUsage().wasmBytes;
${SMALLEST}
console.log(JSON.stringify({ before, after: memoryUsage().wasmBytes, text: done.text }));`);
    assert.equal(out.before, 0);
    assert.ok(out.after > 0);
    assert.equal(out.text, 'Done.');
  });

  test('require() of the package (no top-level await anywhere)', async () => {
    const app = copy('require');
    const out = await run(app, `const { agent, scriptedModel, WasmLoadError } = require('resumable-agent');
agent({ model: scriptedModel(['hi']) }).prompt('x').then((r) => console.log(JSON.stringify({ text: r.text, typed: typeof WasmLoadError })));`, 'main.cjs');
    assert.deepEqual(out, { text: 'hi', typed: 'function' });
  });

  test('no .wasm anywhere: the import works, config calls do not throw it, the first call rejects with WasmLoadError', async () => {
    const app = copy('nothing', [...WASM, 'wasm-full-inline.js']);
    const out = await run(app, `import { agent, defineTool, scriptedModel, WasmLoadError, AgentError } from 'resumable-agent';
const tool = defineTool({ name: 'ok', handle: () => 1 });
const a = agent({ tools: [tool], model: scriptedModel(['x']) });
const e = await a.prompt('go').catch((e) => e);
const again = await a.prompt('go').catch((e) => e);
console.log(JSON.stringify({ name: e.name, typed: e instanceof WasmLoadError, agentError: e instanceof AgentError, message: e.message, url: e.url, fix: e.fix, again: again.name }));`);
    assert.equal(out.name, 'WasmLoadError');
    assert.equal(out.typed, true);
    assert.equal(out.agentError, false, 'not an AgentError: nothing ran');
    assert.match(out.message, /^resumable-agent: could not load its WebAssembly \(resumable_agent_full_bg\.wasm\) from file:\/\/.*\/resumable_agent_full_bg\.wasm: file:\/\/.* could not be read \(ENOENT\), and the inlined copy could not be loaded either/);
    assert.match(out.url, /^file:\/\/.*resumable_agent_full_bg\.wasm$/);
    assert.match(out.fix, /keep node_modules\/resumable-agent\/resumable_agent_full_bg\.wasm beside the package's modules/);
    assert.match(out.message, /Fix: keep node_modules/);
    assert.equal(out.again, 'WasmLoadError', 'a failed load is tried again, and fails the same way');
  });

  test('the .wasm file missing (a bundled Node app): the inlined copy is loaded; config checks wait for it', async () => {
    const app = copy('inline-only', WASM);
    const out = await run(app, `import { agent, defineTool, InterruptError, scriptedModel, ConfigError } from 'resumable-agent';
let threw = false;
let bad;
try { bad = defineTool({ name: 'not a name!', handle: () => 1 }); } catch { threw = true; }
const refused = await agent({ tools: [bad], model: scriptedModel(['x']) }).prompt('go').catch((e) => e);
${SMALLEST}
console.log(JSON.stringify({ threw, refused: refused.name, where: refused.message, text: done.text }));`);
    assert.equal(out.threw, false, 'the check waits for the wasm');
    assert.equal(out.refused, 'ConfigError');
    assert.match(out.where, /config\.tools\[0\]\.name/);
    assert.equal(out.text, 'Done.');
  });

  test('loadWasm(bytes) and loadWasm(module) load from what they are given; bad bytes are WasmLoadError', async () => {
    const app = copy('given', [...WASM, 'wasm-full-inline.js']);
    const bytes = readFileSync(join(PKG, 'resumable_agent_full_bg.wasm'));
    writeFileSync(join(app, 'elsewhere.wasm'), bytes);
    const out = await run(app, `import { readFileSync } from 'node:fs';
import { agent, scriptedModel, loadWasm, WasmLoadError } from 'resumable-agent';
const bad = await loadWasm(new Uint8Array([0, 1, 2, 3])).then(() => 'loaded', (e) => e);
await loadWasm(new WebAssembly.Module(readFileSync('elsewhere.wasm')));
const r = await agent({ model: scriptedModel(['from a module']) }).prompt('go');
console.log(JSON.stringify({ bad: bad.name, badTyped: bad instanceof WasmLoadError, message: bad.message, text: r.text }));`);
    assert.equal(out.bad, 'WasmLoadError');
    assert.equal(out.badTyped, true);
    assert.match(out.message, /the module or bytes given to loadWasm\(\): what it got is not WebAssembly \(.*\)\. Fix: give loadWasm\(\) the bytes of node_modules\/resumable-agent\/resumable_agent_full_bg\.wasm/);
    assert.equal(out.text, 'from a module');
  });
});
