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
  assert.throws(() => agent({ model, compaction: { maxBytes: 10, summarize: true } }), (e) => e instanceof ConfigError && /summarize/.test(e.message));
  assert.throws(() => agent({ model, compaction: 5 }), ConfigError);
});
