// MCP tools in real headless Chromium: the built package (pkg/browser.js) lists the tools of a v2 SDK server on
// another origin (127.0.0.1, CORS), a call pauses on the server's request for input, the checkpoint goes
// through localStorage, the page reloads, and the answer resumes the run — the elicitation survives a reload.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { serve } from '../../scripts/serve-browser.mjs';
import { modernServer, TOKEN } from '../mcp/servers.mjs';

let server;
let browser;
let mcp;

before(async () => {
  server = await serve(0);
  mcp = await modernServer();
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await browser?.close();
  server?.close();
  await mcp?.close();
});

test('an MCP elicitation pauses a run in the page, survives a reload, and the answer completes it', { timeout: 60_000 }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const origin = `http://127.0.0.1:${server.address().port}`;
  await page.goto(`${origin}/pkg/package.json`);
  const run = (answer) => page.evaluate(async ({ url, token, answer }) => {
    const { agent, mcpTools, isInterrupted } = await import('/pkg/browser.js');
    const tools = await mcpTools({ url, headers: { authorization: `Bearer ${token}` } });
    const model = async (request) => (request.messages.length === 1
      ? { content: [{ type: 'tool_use', id: 'b1', name: 'book', input: { city: 'Lyon' } }] }
      : { content: [{ type: 'text', text: `read: ${request.messages.at(-1).content[0].content}` }] });
    const a = agent({ model, tools });
    const result = answer === undefined ? await a.prompt('book') : await a.resume(localStorage.getItem('cp'), answer);
    if (isInterrupted(result)) localStorage.setItem('cp', JSON.stringify(result.checkpoint));
    return { interrupted: isInterrupted(result), text: result.text, interrupts: result.checkpoint.interrupts ?? [] };
  }, { url: mcp.url, token: TOKEN, answer });
  const paused = await run(undefined);
  assert.equal(paused.interrupted, true);
  assert.deepEqual(paused.interrupts.map((i) => [i.kind, i.id, i.message]), [['elicitation', 'b1/date', 'Which day in Lyon?']]);
  await page.reload();
  const done = await run({ type: 'accept', content: { date: '2026-11-30' } });
  assert.equal(done.text, 'read: booked Lyon on 2026-11-30');
  assert.deepEqual(errors, []);
  await context.close();
});
