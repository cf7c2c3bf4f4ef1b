// A server of a test's own on 127.0.0.1 whose answers the test sets, recording every request it gets; and
// what hostile servers send (floods, a minimal 2026-07-28 MCP server).
import http from 'node:http';

/** An HTTP server on 127.0.0.1 answering with `s.handle(req, res, body)`; `s.requests` lists what it got. */
export async function server(handle = (req, res) => res.writeHead(404).end()) {
  const s = { requests: [], handle };
  const srv = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks).toString();
    s.requests.push({ method: req.method, url: req.url, headers: req.headers, body });
    try {
      await s.handle(req, res, body);
    } catch {
      res.destroy();
    }
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  s.origin = `http://127.0.0.1:${srv.address().port}`;
  s.close = () => new Promise((r) => { srv.closeAllConnections(); srv.close(r); });
  return s;
}

export const json = (res, status, value, headers = {}) => res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(value));

/** Writes `chunk` again and again, up to `total` bytes, as fast as the client reads (it stops when it hangs up). */
export async function flood(res, chunk, total) {
  let sent = 0;
  let wake = () => {};
  res.on('close', () => { sent = Infinity; wake(); });
  res.on('drain', () => wake());
  while (sent < total) {
    const more = res.write(chunk);
    sent += chunk.length;
    if (!more && sent < Infinity) await new Promise((r) => { wake = r; });
  }
  res.end();
}

/** A minimal 2026-07-28 MCP server's answer to message `m`: one tool `echo`; `call` answers tools/call. */
export function modernAnswer(m, res, call = (args) => ({ content: [{ type: 'text', text: JSON.stringify(args) }] })) {
  const reply = (result) => json(res, 200, { jsonrpc: '2.0', id: m.id, result });
  if (m.method === 'server/discover') return reply({ supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, serverInfo: { name: 'h', version: '1' } });
  if (m.method === 'tools/list') return reply({ tools: [{ name: 'echo', description: 'Echoes.', inputSchema: { type: 'object' } }] });
  if (m.method === 'tools/call') return reply(call(m.params.arguments));
  return json(res, 200, { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no such method' } });
}
