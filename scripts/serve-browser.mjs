// Serves examples/browser at / and the built package at /pkg/ on 127.0.0.1 (no framework, no bundler); what a
// browser test built for its pages (target/browser-test/) at /__test/.
//   node scripts/serve-browser.mjs [port]     (port 0 or none: any free port; the URL is printed)
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.wasm': 'application/wasm', '.json': 'application/json' };

export function serve(port = 0) {
  const server = createServer(async (req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname));
    const file = path.startsWith('/pkg/') ? join(ROOT, path)
      : path.startsWith('/__test/') ? join(ROOT, 'target/browser-test', path.slice('/__test/'.length))
      : join(ROOT, 'examples/browser', path === '/' ? 'index.html' : path);
    if (!file.startsWith(ROOT) || path.includes('..')) { res.writeHead(403).end(); return; }
    try {
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' }).end(body);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    }
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const server = await serve(Number(process.argv[2] ?? 8788));
  console.log(`The in-browser agent: http://127.0.0.1:${server.address().port}/  (Ctrl-C stops it)`);
}
