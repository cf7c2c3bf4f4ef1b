// POST /__test/saver: the kvSaver's own operations over the real binding, for the test suite.
// Served only when the TEST_ROUTES var is "true".
import { SaverError } from 'resumable-agent';

export async function saverTestRoute(request, env, saver) {
  const { op, key, checkpoint, prefix, value, metadata } = await request.json();
  try {
    switch (op) {
      case 'get': {
        const cp = await saver.get(key);
        return Response.json({ ok: cp === null ? null : JSON.stringify(cp) });
      }
      case 'put': return Response.json({ ok: (await saver.put(key, checkpoint)) ?? null });
      case 'delete': return Response.json({ ok: (await saver.delete(key)) ?? null });
      case 'list': return Response.json({ ok: await saver.list(prefix) });
      case 'raw-put': // around the saver: proves list reads metadata only and get names corruption
        await env.SESSIONS.put(`session:${key}`, value, { metadata });
        return Response.json({ ok: null });
      default: return Response.json({ error: `unknown op ${JSON.stringify(op)}` }, { status: 400 });
    }
  } catch (e) {
    if (e instanceof SaverError) return Response.json({ err: { kind: e.code, message: e.message } });
    return Response.json({ error: e.message }, { status: e.name === 'CheckpointError' ? 400 : 500 });
  }
}
