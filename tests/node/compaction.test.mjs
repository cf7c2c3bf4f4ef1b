// Compaction through the npm package: a long run in a session stays under the bound, every request
// provider-valid, and the `compacted` event reports what went.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agent, defineTool, memorySaver, ConfigError } from 'resumable-agent';
import { assertProviderValid } from './helpers.mjs';

test('a 300-step run in a session stays under maxBytes; the first message is kept; every request is valid', async () => {
  const pad = 'y'.repeat(2000);
  let calls = 0;
  let largestRequest = 0;
  const model = async (req) => {
    assertProviderValid(req.messages);
    assert.equal(req.messages[0].content, 'Fill the table.');
    largestRequest = Math.max(largestRequest, JSON.stringify(req.messages).length);
    calls += 1;
    return calls <= 300 ? { content: [{ type: 'tool_use', id: `t${calls}`, name: 'put', input: { row: calls, pad } }] } : { content: [{ type: 'text', text: 'table full' }] };
  };
  let ran = 0;
  const put = defineTool({ name: 'put', handle: ({ row }) => { ran += 1; return `row ${row} stored`; } });
  const events = [];
  const saver = memorySaver();
  const session = agent({ model, tools: [put], maxIterations: 400, compaction: { maxBytes: 100_000 } }).session(saver, 'long', { keepCompleted: true, maxHistory: 3 });
  const r = await session.prompt('Fill the table.', { onEvent: (e) => { if (e.type === 'compacted') events.push(e); } });
  assert.equal(r.text, 'table full');
  assert.equal(ran, 300);
  assert.ok(events.length > 100, `${events.length} compactions`);
  assert.ok(events.every((e) => e.removedMessages >= 2 && e.removedBytes > 0 && e.messages >= 3));
  assert.ok(largestRequest < 110_000, `largest request ${largestRequest}`);
  const saved = await session.checkpoint();
  assert.ok(JSON.stringify(saved).length < 110_000, 'the saved checkpoint is compacted too');
  assert.equal(saved.messages[0].content, 'Fill the table.');
});

test('compaction settings are checked at agent()', () => {
  const model = async () => ({ content: [{ type: 'text', text: 'x' }] });
  assert.throws(() => agent({ model, compaction: {} }), (e) => e instanceof ConfigError && /maxBytes, maxMessages or both/.test(e.message));
  assert.throws(() => agent({ model, compaction: { maxBytes: 10, keepFirst: 0 } }), (e) => e instanceof ConfigError && /keepFirst/.test(e.message));
  assert.throws(() => agent({ model, compaction: { maxBytes: -5 } }), (e) => e instanceof ConfigError && /maxBytes/.test(e.message));
  assert.throws(() => agent({ model, compaction: { summarize: { keepLast: 2 } } }), (e) => e instanceof ConfigError && /maxBytes, maxMessages or both \(in compaction or in compaction\.summarize\)/.test(e.message));
  assert.throws(() => agent({ model, compaction: { maxBytes: 10, keepLast: -1 } }), (e) => e instanceof ConfigError && /keepLast/.test(e.message));
  assert.throws(() => agent({ model, compaction: 5 }), ConfigError);
});

test('a JS model sees each compacted history as it is: its latest tool results, the count the event reports', async () => {
  const pad = 'z'.repeat(2000);
  let calls = 0;
  let compactedTo = null;
  const seen = [];
  const model = async (req) => {
    assertProviderValid(req.messages);
    if (calls > 0) {
      // The last message answers the call this model made a moment ago, whatever was dropped before it.
      const last = req.messages.at(-1);
      assert.equal(last.role, 'user');
      assert.equal(last.content[0].toolUseId, `t${calls}`, `request ${calls + 1} ends with the result of t${calls}`);
      assert.equal(last.content[0].content, `row ${calls} stored`);
    }
    if (compactedTo !== null) {
      assert.equal(req.messages.length, compactedTo, 'the request holds what the compacted event says is left');
      compactedTo = null;
    }
    seen.push(req.messages.length);
    calls += 1;
    return calls <= 60 ? { content: [{ type: 'tool_use', id: `t${calls}`, name: 'put', input: { row: calls, pad } }] } : { content: [{ type: 'text', text: 'table full' }] };
  };
  const put = defineTool({ name: 'put', handle: ({ row }) => `row ${row} stored` });
  let events = 0;
  const r = await agent({ model, tools: [put], maxIterations: 100, compaction: { maxBytes: 20_000 } }).prompt('Fill the table.', {
    onEvent: (e) => { if (e.type === 'compacted') { events += 1; compactedTo = e.messages; } },
  });
  assert.equal(r.text, 'table full');
  assert.ok(events > 20, `${events} compactions`);
  assert.ok(Math.max(...seen) < 20, `requests stay short: ${Math.max(...seen)} messages at most`);
  // The result's messages are the checkpoint's, compacted too.
  assert.deepEqual(r.messages, r.checkpoint.messages);
  assert.equal(r.messages.at(-2).content[0].toolUseId, 't60');
});
