// Summarizing compaction (issue 36, item 5) through the real wasm: 400 steps summarized within their bounds, paused
// at step 200 and resumed in a new process from the checkpoint's JSON; the bytes against dropping; a summary model of
// its own and a failed summary; a session's summaries replayed; the core variant refusing it; bad options.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { agent, ConfigError, memorySaver } from 'resumable-agent';
import { calls, summarizingAgent } from './scripts/summarize-agent.mjs';
import { assertProviderValid } from './helpers.mjs';

const CHILD = fileURLToPath(new URL('./scripts/summarize-agent.mjs', import.meta.url));

test('400 steps summarized within their bounds; paused at step 200 and resumed in a new process', async () => {
  const events = [];
  const paused = await summarizingAgent().prompt('go', { onEvent: (e) => { if (e.type === 'summarized') events.push(e); } });
  assert.equal(paused.question, 'Which day?');
  const s = paused.checkpoint.summarized;
  assert.match(s.hash, /^fnv1a64:[0-9a-f]{16}$/);
  assert.equal(s.messages + paused.checkpoint.messages.length, 2 * 201, 'every message kept or summarized');
  assert.ok(calls.largest <= 40, `at most 40 messages reached the model (${calls.largest})`);
  assert.equal(events.length, calls.summaries);
  assert.equal(events.at(-1).summary, `S${calls.summaries - 1}`);
  assert.ok(calls.systems.at(-1).startsWith('Be brief.\n\nA summary of the '), calls.systems.at(-1));

  const file = join(mkdtempSync(join(tmpdir(), 'sum-')), 'checkpoint.json');
  writeFileSync(file, JSON.stringify(paused.checkpoint));
  const { stdout } = await promisify(execFile)(process.execPath, [CHILD, file, 'Friday'], { encoding: 'utf8', timeout: 60_000 });
  const child = JSON.parse(stdout);
  assert.notEqual(child.pid, process.pid);
  assert.equal(child.text, 'all done');
  assert.equal(child.calls.lookups, 199, 'the new process ran the 199 lookups left (steps 201 to 399), none again');
  assert.equal(child.summarized.messages + child.messages, 2 * 400 + 2);
  assert.ok(child.calls.largest <= 40);
  assert.ok(child.calls.summaries >= 15, `${child.calls.summaries} summaries in the new process`);
  assertProviderValid(child.finalMessages);
});

test('bytes: a 400-step run summarized keeps a small checkpoint; dropping keeps one as small with no memory of what went', async () => {
  const summarized = await summarizingAgent({ askAt: -1 }).prompt('go');
  const dropped = await summarizingAgent({ askAt: -1, compaction: { maxMessages: 40 } }).prompt('go');
  const whole = await summarizingAgent({ askAt: -1, compaction: null }).prompt('go');
  const size = (r) => JSON.stringify(r.checkpoint).length;
  assert.ok(size(summarized) < size(whole) / 10, `${size(summarized)} vs ${size(whole)}`);
  assert.ok(dropped.checkpoint.summarized === undefined && summarized.checkpoint.summarized.text.startsWith('S'));
  assert.ok(Math.abs(size(summarized) - size(dropped)) < 2000, `${size(summarized)} vs ${size(dropped)}`);
});

test('a summary model of its own; a failed summary leaves the run as it was, says so, and the next step tries again', async () => {
  let n = 0;
  const seen = [];
  const summaryModel = async (request) => {
    n += 1;
    seen.push(request);
    if (n === 1) throw new Error('summarizer overloaded');
    return { content: [{ type: 'text', text: `cheap summary ${n}` }] };
  };
  const events = [];
  const r = await summarizingAgent({ steps: 40, askAt: -1, summaryModel }).prompt('go', { onEvent: (e) => { if (e.type.startsWith('summar')) events.push(e); } });
  assert.equal(r.text, 'all done');
  assert.deepEqual(events[0], { type: 'summary-failed', error: 'model call failed: summarizer overloaded' });
  assert.equal(events[1].type, 'summarized');
  assert.equal(r.checkpoint.summarized.text, `cheap summary ${n}`);
  // The summarizer is shown no tools, one user message, and the instructions for summarizing.
  assert.deepEqual(seen[0].tools, []);
  assert.equal(seen[0].messages.length, 1);
  assert.match(seen[0].system, /^Summarize the conversation below/);
  assert.match(seen[1].messages[0].content, /Assistant called lookup with \{"key":"k0"\}/);
});

test('a session logs its summaries: replayed as they happened, and its checkpoint keeps the latest', async () => {
  const saver = memorySaver();
  const live = [];
  const a = summarizingAgent({ steps: 80, askAt: -1 });
  await a.session(saver, 's', { keepCompleted: true }).prompt('go', { onEvent: (e) => { if (e.type === 'summarized') live.push(e); } });
  const replayed = [];
  for await (const e of a.session(saver, 's').replay()) if (e.type === 'summarized') replayed.push(e);
  assert.ok(live.length >= 3);
  assert.deepEqual(replayed.map(({ seq, ...e }) => e), live.map(({ seq, ...e }) => e));
  const cp = await a.session(saver, 's').checkpoint();
  assert.equal(cp.summarized.text, live.at(-1).summary);
});

test("bad options; 'resumable-agent/core' has no summarizing compaction", async () => {
  const m = () => ({ content: [{ type: 'text', text: 'x' }] });
  for (const [compaction, why] of [
    [{ summarize: true }, /give maxBytes, maxMessages or both/],
    [{ summarize: 'yes' }, /config\.compaction\.summarize: expected true or/],
    [{ summarize: { maxMessages: 10, prompt: 'x' } }, /config\.compaction\.summarize\.prompt: unknown option; did you mean "instructions"\?/],
    [{ summarize: { maxMessages: 10, model: 'gpt' } }, /config\.compaction\.summarize\.model: expected a model function/],
  ]) assert.throws(() => agent({ model: m, compaction }), (e) => e instanceof ConfigError && why.test(e.message), JSON.stringify(compaction));
  const { execFileSync } = await import('node:child_process');
  const script = `import { agent, scriptedModel } from 'resumable-agent/core';
try { agent({ model: scriptedModel(['x']), compaction: { summarize: { maxMessages: 10 } } }); console.log('no error'); }
catch (e) { console.log(e.name + ': ' + e.message); }`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('.', import.meta.url)), encoding: 'utf8', timeout: 20_000 });
  assert.match(out, /^ConfigError: config\.compaction\.summarize needs summaries, which 'resumable-agent\/core' does not have/);
});
