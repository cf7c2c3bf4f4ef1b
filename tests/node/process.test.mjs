// A paused run resumes in another Node process: the demo, run as `make demo` runs it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

test('examples/node: each answer is resumed from checkpoint.json by a new process', () => {
  const demo = fileURLToPath(new URL('../../examples/node/demo.mjs', import.meta.url));
  const run = spawnSync(process.execPath, [demo], { encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'pipe'] });
  assert.equal(run.status, 0, run.stderr);
  const out = run.stdout;
  assert.match(out, /What are you building\?/);
  assert.match(out, /What is your deadline\?/);
  assert.match(out, /Plan for "a recipe-sharing web app": 8 weeks of work, due the end of Q2\./);
  assert.match(out, /\(3 model calls, 600 input \/ 60 output tokens\)/);
  const pids = new Set([...out.matchAll(/\[process (\d+)\]/g)].map((m) => m[1]));
  assert.equal(pids.size, 3, `three processes took part:\n${out}`);
  assert.equal(existsSync(fileURLToPath(new URL('../../examples/node/checkpoint.json', import.meta.url))), false, 'removed when complete');
});
