// POST /__test/saver: the saver's own operations over the real binding (KV, the Durable Object or D1), for the
// test suite and the saver conformance suite. Served only when the TEST_ROUTES var is "true".
import { SaverError } from 'resumable-agent';

export async function saverTestRoute(request, env, saver) {
  const { op, key, checkpoint, prefix, value, metadata, condition } = await request.json();
  try {
    switch (op) {
      case 'get': {
        const cp = await saver.get(key);
        return Response.json({ ok: cp === null ? null : JSON.stringify(cp) });
      }
      case 'get-text': { // the stored text as it is (a sealed envelope too)
        const cp = await saver.get(key);
        return Response.json({ ok: cp === null ? null : JSON.stringify(cp) });
      }
      case 'put': return Response.json({ ok: (await saver.put(key, checkpoint, condition ?? undefined)) ?? null });
      case 'exists': return Response.json({ ok: await saver.exists(key) });
      case 'about': return Response.json({ ok: { compareAndSet: saver.compareAndSet, maxValueBytes: saver.maxValueBytes ?? null } });
      case 'delete': return Response.json({ ok: (await saver.delete(key)) ?? null });
      case 'list': return Response.json({ ok: await saver.list(prefix) });
      case 'raw-put': // around the saver: proves list reads metadata only and get names corruption
        if (env.SAVER === 'd1') {
          await env.DB.prepare('UPDATE resumable_agent_checkpoints SET value = ? WHERE key = ?').bind(value, key).run();
        } else {
          await env.SESSIONS.put(`session:${key}`, value, { metadata });
        }
        return Response.json({ ok: null });
      case 'raw-rows': // D1: the rows a key's value takes, and the largest row's bytes (key + summary + value)
        return Response.json({ ok: (await env.DB.prepare(`SELECT part, length(CAST(key AS BLOB)) + length(CAST(coalesce(summary, '') AS BLOB))
          + length(CAST(value AS BLOB)) AS bytes FROM resumable_agent_checkpoints WHERE key >= ? AND key < ? ORDER BY key, part`).bind(key, `${key}\u{10FFFF}`).all()).results });
      default: return Response.json({ error: `unknown op ${JSON.stringify(op)}` }, { status: 400 });
    }
  } catch (e) {
    if (e instanceof SaverError) return Response.json({ err: { kind: e.code, message: e.message } });
    return Response.json({ error: e.message }, { status: e.name === 'CheckpointError' ? 400 : 500 });
  }
}

// POST /__test/steps {sessionId, steps, autoSave}: one session of `steps` model calls (lookups, then an
// answer) on the Worker's saver, for `make bench` (time per auto-save). Served only with TEST_ROUTES.
export async function stepsTestRoute(request, saver, { agent, defineTool, scriptedModel }) {
  const { sessionId, steps, autoSave, valueBytes = 480, events = true } = await request.json();
  const lookup = defineTool({ name: 'lookup', handle: ({ key }) => ({ key, value: 'x'.repeat(valueBytes) }) });
  const model = scriptedModel(Array.from({ length: steps }, (_, k) => (k < steps - 1
    ? { content: [{ type: 'tool_use', id: `c${k}`, name: 'lookup', input: { key: `k${k}` } }] }
    : 'done')));
  let saves = 0;
  let bytes = 0;
  // Without events the run reports no checkpoint per step (a long run's would be copied to JS each time).
  const onEvent = events ? (e) => { if (e.type === 'checkpoint-saved') saves += 1; } : undefined;
  const result = await agent({ tools: [lookup], model, maxIterations: steps + 1 })
    .session(saver, sessionId, { autoSave, keepCompleted: true })
    .prompt('go', { onEvent });
  bytes = JSON.stringify(result.checkpoint).length;
  return Response.json({ text: result.text, saves, lastCheckpointBytes: bytes });
}

// POST /__test/session {sessionId, op, args}: a kept session's history operations on the Worker's saver
// (history, label, restore, checkpoint, prompt, reply), for the test suite. Served only with TEST_ROUTES.
export async function sessionTestRoute(request, session) {
  const { op, args = [] } = await request.json();
  try {
    const out = await session[op](...args);
    return Response.json({ ok: out ?? null });
  } catch (e) {
    return Response.json({ err: { name: e.name, message: e.message } });
  }
}

// POST /__test/mcp {url, token?, checkpoint?, answer?}: an agent with an MCP server's tools and a model that
// books Lyon and then reads the result — prompted, or `checkpoint` resumed with `answer` (in a later request).
// Served only with TEST_ROUTES.
export async function mcpTestRoute(request, { agent, mcpTools, isInterrupted }) {
  const { url, token, checkpoint, answer } = await request.json();
  try {
    const tools = await mcpTools({ url, headers: token ? { authorization: `Bearer ${token}` } : undefined });
    const model = async (req) => (req.messages.length === 1
      ? { content: [{ type: 'tool_use', id: 'b1', name: 'book', input: { city: 'Lyon' } }] }
      : { content: [{ type: 'text', text: `read: ${req.messages.at(-1).content[0].content}` }] });
    const bot = agent({ model, tools });
    const result = checkpoint ? await bot.resume(checkpoint, answer) : await bot.prompt('book');
    return Response.json({ interrupted: isInterrupted(result), text: result.text, checkpoint: result.checkpoint });
  } catch (e) {
    return Response.json({ err: { name: e.name, message: e.message, status: e.status, server: e.server, checkpoint: e.checkpoint } });
  }
}
