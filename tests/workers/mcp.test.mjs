// MCP tools inside workerd (examples/worker-js under `wrangler dev`, no nodejs_compat): the Worker lists the
// tools of real MCP servers on 127.0.0.1, a run pauses on the server's request for input, and a later request —
// after the Worker was restarted — resumes it from the checkpoint's JSON. Both protocol eras, and a refused token.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startWorker, ROOT } from './harness.mjs';
import { modernServer, legacyServer, TOKEN } from '../mcp/servers.mjs';

const CONFIG = join(ROOT, 'examples/worker-js/wrangler.toml');

describe('js Worker: MCP tools', () => {
  let dir;
  let modern;
  let legacy;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kv-mcp-'));
    modern = await modernServer();
    legacy = await legacyServer();
  });
  after(async () => {
    await modern?.close();
    await legacy?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('an elicitation pauses the run in one request and is answered in a later one, after a restart (both eras)', { timeout: 240_000 }, async () => {
    let w = await startWorker({ config: CONFIG, persistTo: dir, vars: { TEST_ROUTES: 'true' } });
    try {
      const m = await w.post('/__test/mcp', { url: modern.url, token: TOKEN });
      assert.equal(m.body.interrupted, true, JSON.stringify(m.body));
      assert.deepEqual(m.body.checkpoint.interrupts.map((i) => [i.kind, i.id, i.message]), [['elicitation', 'b1/date', 'Which day in Lyon?']]);
      assert.ok(!JSON.stringify(m.body).includes(TOKEN.slice(4, 16)), 'no token in what the Worker got back');
      const l = await w.post('/__test/mcp', { url: legacy.url });
      assert.equal(l.body.interrupted, true, JSON.stringify(l.body));
      assert.equal(l.body.checkpoint.interrupts[0].id, 'b1/elicitation');
      const refused = await w.post('/__test/mcp', { url: modern.url, token: 'wrong-token-0000000' });
      assert.deepEqual([refused.body.err?.name, refused.body.err?.status], ['McpError', 401]);

      await w.stop();
      w = await startWorker({ config: CONFIG, persistTo: dir, vars: { TEST_ROUTES: 'true' } });
      const cp = JSON.parse(JSON.stringify(m.body.checkpoint));
      const done = await w.post('/__test/mcp', { url: modern.url, token: TOKEN, checkpoint: cp, answer: { type: 'accept', content: { date: '2026-11-30' } } });
      assert.equal(done.body.text, 'read: booked Lyon on 2026-11-30', JSON.stringify(done.body));
      const pushed = await w.post('/__test/mcp', { url: legacy.url, checkpoint: l.body.checkpoint, answer: { type: 'accept', content: { date: '2026-12-01' } } });
      assert.equal(pushed.body.text, 'read: booked Lyon on 2026-12-01', JSON.stringify(pushed.body));
      const bad = await w.post('/__test/mcp', { url: modern.url, token: TOKEN, checkpoint: cp, answer: { type: 'accept', content: { date: 'soon' } } });
      assert.deepEqual([bad.body.err?.name, bad.body.err?.message.includes('b1/date')], ['DecisionError', true]);
    } finally {
      await w.stop();
    }
  });
});
