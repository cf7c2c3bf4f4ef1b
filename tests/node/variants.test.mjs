// The package's .wasm variants (issue 33): every variant makes the same checkpoint bytes and session records for the
// same run; 'resumable-agent/core' exports what core.d.ts declares and loads the core alone; a program that imports
// the main entry later moves to a larger variant and resumes what the core made; the core refuses a session with a
// ConfigError that names the fix. Each in a fresh process (the variant is chosen once per process).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const VARIANTS = ['core', 'sessions', 'providers', 'providers_sessions', 'full'];

function node(args, cwd = HERE) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { cwd, timeout: 60_000 }, (e, stdout, stderr) => (e ? reject(new Error(`${e.message}\n${stderr}`)) : resolve(stdout)));
  });
}
const lastJson = (out) => JSON.parse(out.trim().split('\n').at(-1));

/** A program in a fresh process, next to the tests (it imports the package by its name). */
async function program(code) {
  const dir = mkdtempSync(join(HERE, '.variant-'));
  try {
    writeFileSync(join(dir, 'main.mjs'), code);
    return lastJson(await node([join(dir, 'main.mjs')], dir));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('every variant makes the same checkpoints, byte for byte, and the same session records', async () => {
  const runs = {};
  for (const v of VARIANTS) runs[v] = lastJson(await node([join(HERE, 'scripts/variant-run.mjs'), v]));
  for (const v of VARIANTS) assert.equal(runs[v].variant, v, `the ${v} run loaded the ${runs[v].variant} variant`);
  const caps = { core: [], sessions: ['sessions', 'telemetry', 'guardrails'], providers: ['providers', 'telemetry', 'guardrails'], providers_sessions: ['sessions', 'providers', 'telemetry', 'guardrails'], full: ['sessions', 'providers', 'mcp', 'telemetry', 'guardrails', 'subagents'] };
  for (const v of VARIANTS) assert.deepEqual(runs[v].capabilities, caps[v], `what the ${v} .wasm says it has`);
  assert.equal(runs.core.text, 'Done: Friday');
  for (const v of VARIANTS.slice(1)) {
    assert.equal(runs[v].paused, runs.core.paused, `${v}: the paused checkpoint differs from the core's`);
    assert.equal(runs[v].done, runs.core.done, `${v}: the finished checkpoint differs from the core's`);
    assert.equal(runs[v].carried, runs.core.carried, `${v}: the checkpoint keeping a failed subagent's run differs from the core's`);
  }
  assert.equal(JSON.parse(runs.core.carried).failedSubagents[0].checkpoint.messages[0].content, 'Mail it.', 'the core carries a failed subagent\'s run');
  const withSessions = VARIANTS.filter((v) => runs[v].session);
  assert.deepEqual(withSessions, ['sessions', 'providers_sessions', 'full']);
  assert.ok(runs.sessions.session.length >= 2, 'the session wrote its records');
  for (const v of withSessions) assert.deepEqual(runs[v].session, runs.sessions.session, `${v}: the session's records differ`);
});

test("'resumable-agent/core' exports exactly the values core.d.ts declares, and loads the core variant", async () => {
  const declared = readFileSync(new URL('../../pkg/core.d.ts', import.meta.url), 'utf8')
    .match(/export \{([^}]*)\} from/)[1].split(',').map((s) => s.trim()).filter(Boolean).sort();
  const out = await program(`
    import * as core from 'resumable-agent/core';
    const { agent, scriptedModel, memoryUsage } = core;
    const before = memoryUsage().variant;
    const r = await agent({ model: scriptedModel(['hi']) }).prompt('x');
    console.log(JSON.stringify({ names: Object.keys(core).sort(), before, after: memoryUsage().variant, text: r.text }));
  `);
  assert.deepEqual(out.names, declared);
  assert.equal(out.before, null, 'nothing is loaded before the first call');
  assert.equal(out.after, 'core');
  assert.equal(out.text, 'hi');
});

test('a program that imports the main entry later moves to the full variant and resumes what the core made', async () => {
  const out = await program(`
    const core = await import('resumable-agent/core');
    const ask = core.defineTool({ name: 'ask', schema: (s) => ({ q: s.string() }), handle: ({ q }) => { throw new core.InterruptError(q); } });
    const model = core.scriptedModel([{ content: [{ type: 'tool_use', id: 't1', name: 'ask', input: { q: 'When?' } }] }, (r) => 'Done: ' + r.messages.at(-1).content[0].content]);
    const paused = await core.agent({ tools: [ask], model }).prompt('Plan it.');
    const first = core.memoryUsage().variant;
    const main = await import('resumable-agent');
    const saver = main.memorySaver();
    await saver.put('s', paused.checkpoint);
    const session = main.agent({ tools: [ask], model }).session(saver, 's');
    const done = await session.reply('Friday');
    // The core's objects still work after the move (a tool defined before it, in an agent made after it).
    const again = await core.agent({ tools: [ask], model }).resume(paused.checkpoint, 'Monday');
    console.log(JSON.stringify({ first, then: main.memoryUsage().variant, text: done.text, again: again.text }));
  `);
  assert.deepEqual(out, { first: 'core', then: 'full', text: 'Done: Friday', again: 'Done: Monday' });
});

test("'resumable-agent/core' alone: no agentTool, and resuming a run that waits for a subagent is a DecisionError naming the fix", async () => {
  // A run paused on a subagent's approval, made by the full package (its checkpoint as JSON text).
  const full = await program(`
    import { agent, agentTool, defineTool, scriptedModel } from 'resumable-agent';
    const send = defineTool({ name: 'send', needsApproval: true, handle: () => 'sent' });
    const child = agent({ model: scriptedModel([{ content: [{ type: 'tool_use', id: 'k', name: 'send', input: {} }] }, 'ok']), tools: [send] });
    const a = agent({ model: scriptedModel([{ content: [{ type: 'tool_use', id: 'm', name: 'mailer', input: { task: 't' } }] }, 'done']), tools: [agentTool({ name: 'mailer', agent: child })] });
    const p = await a.prompt('go');
    console.log(JSON.stringify({ checkpoint: p.checkpoint }));
  `);
  const out = await program(`
    import * as core from 'resumable-agent/core';
    const { agent, defineTool, scriptedModel, DecisionError } = core;
    const exported = 'agentTool' in core;
    // The same names, as plain tools: the core cannot go on with the subagent's run, and says so before anything runs.
    const a = agent({ model: scriptedModel(['done']), tools: [defineTool({ name: 'mailer', handle: () => 'x' })], onDrift: 'continue' });
    let refused;
    try { await a.resume(${JSON.stringify(JSON.stringify(full.checkpoint))}, { decisions: { 'm/k': { type: 'approve' } } }); } catch (e) { refused = { isDecision: e instanceof DecisionError, message: e.message }; }
    console.log(JSON.stringify({ exported, refused }));
  `);
  assert.equal(out.exported, false, "agentTool comes from 'resumable-agent' (subagents.js), as mcpTools does");
  assert.equal(out.refused?.isDecision, true, JSON.stringify(out.refused));
  assert.match(out.refused.message, /waits for a subagent \(agentTool\), and the loaded WebAssembly has no subagents/);
});

test("'resumable-agent/core' alone: a session is a ConfigError naming what is missing and the fix; the run is untouched", async () => {
  const out = await program(`
    import { agent, scriptedModel, ConfigError } from 'resumable-agent/core';
    const store = new Map();
    const saver = { get: async (k) => store.get(k) ?? null, put: async (k, v) => { store.set(k, v); }, delete: async (k) => { store.delete(k); }, list: async () => [] };
    const a = agent({ model: scriptedModel(['hi', 'again']) });
    const first = await a.prompt('x');
    let error;
    try { await a.session(saver, 's').prompt('x'); } catch (e) { error = { name: e.name, isConfig: e instanceof ConfigError, message: e.message }; }
    const after = await agent({ model: scriptedModel(['still here']) }).prompt('y');
    console.log(JSON.stringify({ first: first.text, error, after: after.text, stored: store.size }));
  `);
  assert.equal(out.first, 'hi');
  assert.equal(out.error?.isConfig, true, JSON.stringify(out.error));
  assert.match(out.error.message, /agent\.session\(\) needs sessions, which 'resumable-agent\/core' does not have: import it from 'resumable-agent'/);
  assert.equal(out.stored, 0, 'nothing was written');
  assert.equal(out.after, 'still here', 'the core keeps working');
});
