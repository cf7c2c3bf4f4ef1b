// Shared by the SQL saver tests and their child processes: a small agent whose tools count their runs, and the
// savers opened from a description ({ kind: 'sqlite', file } or { kind: 'postgres', config }).
import { agent, defineTool, InterruptError } from 'resumable-agent';

/**
 * `lookup` (its result `size` bytes long), then `ask` pauses on "When?", then the answer "due <answer>".
 * `ran` counts each tool's runs in this process.
 */
export function countingAgent({ size = 5, limits } = {}) {
  const ran = { lookup: 0, ask: 0 };
  const call = (id, name) => ({ content: [{ type: 'tool_use', id, name, input: {} }] });
  const tools = [
    defineTool({ name: 'lookup', description: 'Look up.', schema: { type: 'object' }, handle: () => { ran.lookup += 1; return 'r'.repeat(size); } }),
    defineTool({ name: 'ask', description: 'Ask.', schema: { type: 'object' }, handle: () => { ran.ask += 1; throw new InterruptError('When?'); } }),
  ];
  const model = (request) => {
    const answers = request.messages.filter((m) => m.role === 'assistant').length;
    if (answers === 0) return call('l1', 'lookup');
    if (answers === 1) return call('a1', 'ask');
    const results = request.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((b) => b.type === 'tool_result');
    return { content: [{ type: 'text', text: `due ${results.at(-1).content}` }] };
  };
  return { ran, a: agent({ model, tools, maxIterations: 20, ...(limits ? { limits } : {}) }) };
}

/** A D1-shaped binding over a node:sqlite database (prepare/bind/run/all, batch in one transaction): the saver's
 * row splitting under SQLite's own rules, in Node. The real D1 runs in tests/workers (local workerd). */
export function d1Over(db) {
  const statement = (sql, params = []) => ({
    sql,
    params,
    bind: (...p) => statement(sql, p),
    run: async () => ({ success: true, meta: { changes: Number(db.prepare(sql).run(...params).changes) } }),
    all: async () => ({ success: true, results: db.prepare(sql).all(...params), meta: {} }),
  });
  return {
    prepare: (sql) => statement(sql),
    async batch(list) {
      db.exec('BEGIN IMMEDIATE');
      try {
        const out = list.map((s) => (/^\s*select/i.test(s.sql)
          ? { results: db.prepare(s.sql).all(...s.params), meta: {} }
          : { meta: { changes: Number(db.prepare(s.sql).run(...s.params).changes) } }));
        db.exec('COMMIT');
        return out;
      } catch (e) {
        db.exec('ROLLBACK');
        throw e;
      }
    },
  };
}
