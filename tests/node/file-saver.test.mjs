// fileSaver under concurrency and crashes (issue 22, findings 6, 8, 11, 13): replies racing in one process
// and across processes, locks left by a dead process, long and case- or device-named session ids, and the
// temporary files a crash leaves behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, readdirSync, writeFileSync, statSync, utimesSync, mkdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  agent, defineTool, InterruptError, scriptedModel, fileSaver, SessionBusyError, SessionNotFoundError, SaverError,
  ConfigError,
} from 'resumable-agent';
import { sampleCheckpoint } from 'resumable-agent/testing';

const base = mkdtempSync(join(tmpdir(), 'file-saver-'));
process.on('exit', () => rmSync(base, { recursive: true, force: true }));
const here = fileURLToPath(new URL('.', import.meta.url));
let dirs = 0;
const fresh = () => join(base, `d${dirs++}`);

const call = (id, name, input) => ({ type: 'tool_use', id, name, input });

/** ask → (answer) → pay (counted) → done. */
function payAgent(paid) {
  const ask = defineTool({ name: 'ask', handle: () => { throw new InterruptError('Pay Ann 10?'); } });
  const pay = defineTool({ name: 'pay', handle: (_, ctx) => { paid.push(ctx.toolUseId); return 'paid'; } });
  const model = scriptedModel([
    { content: [call('q', 'ask', {})] },
    { content: [call('p', 'pay', {})] },
    'Paid.',
  ]);
  return agent({ tools: [ask, pay], model });
}

test('8 concurrent replies, 10 rounds: exactly one completes each time, the others are told busy, the tool runs once', async () => {
  for (let round = 0; round < 10; round += 1) {
    const dir = fresh();
    const paid = [];
    await payAgent(paid).session(fileSaver({ dir }), 'race').prompt('go');
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => payAgent(paid).session(fileSaver({ dir }), 'race').reply('yes')));
    const won = results.filter((r) => r.status === 'fulfilled');
    assert.equal(won.length, 1, `round ${round}: ${results.map((r) => r.reason?.message ?? 'ok').join(' | ')}`);
    assert.equal(won[0].value.text, 'Paid.');
    for (const r of results.filter((x) => x.status === 'rejected')) {
      assert.ok(r.reason instanceof SessionBusyError || r.reason instanceof SessionNotFoundError, `round ${round}: ${r.reason?.name}: ${r.reason?.message}`);
    }
    assert.deepEqual(paid, ['p'], `round ${round}`);
    assert.deepEqual(readdirSync(dir).filter((n) => !n.startsWith('.')), [], `round ${round}: the finished session is gone`);
  }
});

test('replies racing from 4 processes: one runs', async () => {
  const dir = fresh();
  const paid = [];
  await payAgent(paid).session(fileSaver({ dir }), 'procs').prompt('go');
  const child = join(here, 'scripts', 'file-reply-child.mjs');
  const outs = await Promise.all(Array.from({ length: 4 }, () => new Promise((resolve) => {
    const p = spawn(process.execPath, [child, dir, 'procs'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    p.on('close', () => resolve(out.trim()));
  })));
  assert.equal(outs.filter((o) => o === 'Paid.').length, 1, outs.join(' | '));
  assert.ok(outs.every((o) => o === 'Paid.' || /^(SessionBusyError|SessionNotFoundError)$/.test(o)), outs.join(' | '));
});

test('a lock left by a dead process is taken over at once, and by one writer alone', async () => {
  for (let round = 0; round < 10; round += 1) {
    const dir = fresh();
    const saver = fileSaver({ dir });
    await saver.put('head', sampleCheckpoint('start', { step: 1 }));
    // A crashed writer's lock: its pid is gone (a pid far above any running process).
    writeFileSync(join(dir, 'head.ckpt.lock'), JSON.stringify({ token: 'dead', pid: 4_000_000 + round, host: (await import('node:os')).hostname(), at: Date.now() }));
    const t0 = Date.now();
    const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => fileSaver({ dir }).put('head', sampleCheckpoint(`writer ${i}`, { step: 2 }), { ifStep: 1 })));
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1, `round ${round}: ${results.map((r) => r.reason?.message ?? 'won').join(' | ')}`);
    for (const r of results.filter((x) => x.status === 'rejected')) assert.equal(r.reason.code, 'CONFLICT');
    assert.ok(Date.now() - t0 < 2_000, 'no 30 s wait for a dead writer');
    assert.ok(!existsSync(join(dir, 'head.ckpt.lock')), 'the lock is released');
  }
  // An old lock of a live process elsewhere (another host): taken over after 30 s, by one writer.
  for (let round = 0; round < 5; round += 1) {
    const dir = fresh();
    const saver = fileSaver({ dir });
    await saver.put('head', sampleCheckpoint('start', { step: 1 }));
    const lock = join(dir, 'head.ckpt.lock');
    writeFileSync(lock, JSON.stringify({ token: 'old', pid: 1, host: 'another-host', at: 0 }));
    const old = new Date(Date.now() - 40_000);
    utimesSync(lock, old, old);
    const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => fileSaver({ dir }).put('head', sampleCheckpoint(`w${i}`, { step: 2 }), { ifStep: 1 })));
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1, `stale round ${round}`);
  }
});

test('a key that does not fit a file name is refused before anything is written; no path in any error', async () => {
  const dir = fresh();
  const saver = fileSaver({ dir });
  const paid = [];
  // 26 CJK characters: 78 bytes, 234 as a file name — the head would fit, its step records (16 bytes more
  // as a name) do not: refused at the first write, before anything is stored.
  const id = '会'.repeat(26);
  const err = await payAgent(paid).session(saver, id).prompt('go').catch((e) => e);
  assert.ok(err instanceof SaverError, String(err));
  assert.equal(err.code, 'KEY_LENGTH');
  assert.ok(!err.message.includes(dir) && !err.message.includes(base), err.message);
  assert.deepEqual(readdirSync(dir).filter((n) => !n.startsWith('.')), [], 'nothing stored');
  // One character shorter, it works from start to end (every suffix the saver adds is counted).
  const ok = '会'.repeat(25);
  await payAgent(paid).session(saver, ok).prompt('go');
  assert.equal((await payAgent(paid).session(saver, ok).reply('yes')).text, 'Paid.');
  // A failure of the file system names the key, never the directory.
  const blocked = join(fresh(), 'file-not-dir');
  mkdirSync(join(blocked, '..'), { recursive: true });
  writeFileSync(blocked, 'x');
  const e2 = await fileSaver({ dir: blocked }).put('k', sampleCheckpoint('x')).catch((e) => e);
  assert.ok(e2 instanceof SaverError);
  assert.ok(!e2.message.includes(blocked), e2.message);
});

test("'Alice' and 'alice' are two sessions on any file system; device names are files", async () => {
  const dir = fresh();
  const saver = fileSaver({ dir });
  for (const id of ['Alice', 'alice', 'CON', 'nul', 'com1', 'lpt9']) await saver.put(id, sampleCheckpoint(id));
  for (const id of ['Alice', 'alice', 'CON', 'nul', 'com1', 'lpt9']) assert.equal((await saver.get(id)).messages[0].content, id);
  const names = readdirSync(dir).filter((n) => n.endsWith('.ckpt'));
  assert.equal(new Set(names.map((n) => n.toLowerCase())).size, names.length, `distinct without case: ${names}`);
  assert.ok(names.every((n) => !/^(con|prn|aux|nul|com[0-9]|lpt[0-9])\./i.test(n)), names.join());
  assert.deepEqual((await saver.list('')).map((e) => e.key).sort(), ['Alice', 'CON', 'alice', 'com1', 'lpt9', 'nul']);
  // A file the previous release named (capitals kept) is still read, and replaced on the next write.
  writeFileSync(join(dir, 'Bob.ckpt'), `${JSON.stringify({ iterations: 0, usage: { inputTokens: 0, outputTokens: 0 }, interrupted: false, messageCount: 1 })}\n${JSON.stringify(sampleCheckpoint('old Bob'))}`);
  assert.equal((await saver.get('Bob')).messages[0].content, 'old Bob');
  await saver.put('Bob', sampleCheckpoint('new Bob'));
  assert.equal((await saver.get('Bob')).messages[0].content, 'new Bob');
  assert.deepEqual((await saver.list('B')).map((e) => e.key), ['Bob']);
  await saver.delete('Bob');
  assert.equal(await saver.get('Bob'), null);
});

test('temporary files a crash left are removed; files are private to their owner; unknown options refused', async () => {
  const dir = fresh();
  mkdirSync(dir);
  const left = join(dir, '.deadbeef.tmp');
  writeFileSync(left, 'half a checkpoint');
  const old = new Date(Date.now() - 120_000);
  utimesSync(left, old, old);
  const saver = fileSaver({ dir });
  await saver.put('k', sampleCheckpoint('x'));
  assert.ok(!existsSync(left), 'a crashed writer\'s temp file is gone');
  assert.equal(statSync(join(dir, 'k.ckpt')).mode & 0o777, 0o600);
  assert.throws(() => fileSaver({ dir, namespace: 'x' }), (e) => e instanceof ConfigError && /namespace/.test(e.message));
});
