// Sessions as threads (issue 10): saved after every step, history, labels, restore, agent state,
// exactly one of concurrent replies, and recovery after a crash — on the memory and file savers.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  agent, defineTool, InterruptError, scriptedModel, memorySaver, fileSaver, listSessions, isInterrupted,
  SessionBusyError, ConfigError, SaverError,
} from 'resumable-agent';

const base = mkdtempSync(join(tmpdir(), 'threads-'));
process.on('exit', () => rmSync(base, { recursive: true, force: true }));
let dirs = 0;

const SAVERS = {
  memory: () => memorySaver(),
  file: () => fileSaver({ dir: join(base, `s${dirs++}`) }),
};

const call = (id, name, input) => ({ type: 'tool_use', id, name, input });
const turn = (...content) => ({ content });

/** lookup (records each run), ask_user (pauses). */
function tools(ran = []) {
  return [
    defineTool({ name: 'lookup', handle: ({ key }, ctx) => { ran.push(ctx.toolUseId); return `v-${key}`; } }),
    defineTool({ name: 'ask_user', handle: ({ question }) => { throw new InterruptError(question); } }),
  ];
}

// Three steps, a question, two more steps (all calls keyed by turn, so any fresh model continues any run).
const script = () => scriptedModel([
  turn(call('l1', 'lookup', { key: 'a' })),
  turn(call('q1', 'ask_user', { question: 'Which city?' }), call('l2', 'lookup', { key: 'b' })),
  (req) => `Done: ${req.messages.at(-1).content.map((b) => b.content).join(', ')}`,
]);

for (const [kind, makeSaver] of Object.entries(SAVERS)) {
  describe(`${kind} saver`, () => {
    test('saved after every step: each step is a history entry, the head is the latest', async () => {
      const saver = makeSaver();
      const ran = [];
      const s = agent({ tools: tools(ran), model: script() }).session(saver, 'trip', { keepCompleted: true });
      const saved = [];
      const paused = await s.prompt('Plan a trip', { onEvent: (e) => { if (e.type === 'checkpoint-saved') saved.push(e.messageCount); } });
      assert.ok(isInterrupted(paused));
      assert.deepEqual(saved, [1, 2, 2, 4, 4], 'prompt, model call, lookup result (in toolResults until the turn closes), model call, the pause');
      const history = await s.history();
      assert.deepEqual(history.map((h) => h.step), [5, 4, 3, 2, 1], 'newest first');
      assert.deepEqual(history.map((h) => h.id), ['5', '4', '3', '2', '1']);
      assert.deepEqual(history.map((h) => h.parentId ?? null), ['4', '3', '2', '1', null]);
      assert.equal(history[0].interrupted, true);
      assert.equal(history[0].question, 'Which city?');
      assert.equal(typeof history[0].createdAt, 'number');
      assert.deepEqual(history[0].usage, { inputTokens: 0, outputTokens: 0 });
      assert.deepEqual((await s.checkpoint()).thread, { id: 'trip', step: 5, parentStep: 4 });
      assert.equal((await s.checkpoint('2')).messages.length, 2, 'one step, loaded by id');
      assert.deepEqual((await s.history({ limit: 2, before: 4 })).map((h) => h.step), [3, 2]);
      const done = await s.reply('Paris');
      assert.equal(done.text, 'Done: Paris, v-b');
      assert.deepEqual(ran, ['l1', 'l2']);
      assert.deepEqual((await listSessions(saver)).map((x) => x.key), ['trip'], 'one session; history entries are not sessions');
    });

    test('label and restore: the next reply continues from the restored step as a branch; later steps stay', async () => {
      const saver = makeSaver();
      const a = agent({ tools: tools(), model: script() });
      const s = a.session(saver, 'b', { keepCompleted: true });
      await s.prompt('Plan a trip');
      const pauseStep = (await s.history())[0].step;
      await s.label(pauseStep, 'asked-city');
      const first = await s.reply('Paris');
      assert.equal(first.text, 'Done: Paris, v-b');
      const before = (await s.history()).length;
      const restored = await s.restore('asked-city');
      assert.equal(restored.question, 'Which city?');
      assert.equal(restored.thread.parentStep, pauseStep);
      const second = await s.reply('Rome');
      assert.equal(second.text, 'Done: Rome, v-b');
      const pausedAt = await s.checkpoint(String(pauseStep));
      assert.deepEqual(second.messages.slice(0, pausedAt.messages.length), pausedAt.messages, 'the branch starts with the restored transcript');
      const history = await s.history();
      assert.ok(history.length > before, 'later steps stay in the history');
      assert.ok(history.some((h) => h.label === 'asked-city' && h.step === pauseStep));
      assert.ok(history.some((h) => h.parentId === String(pauseStep) && h.step > pauseStep + 2), 'a new branch from the labelled step');
      await s.label(2, 'asked-city');
      assert.deepEqual((await s.history()).filter((h) => h.label === 'asked-city').map((h) => h.step), [2], 'a label names one step');
      await assert.rejects(s.restore('nope'), (e) => e instanceof ConfigError && /no step or label "nope"/.test(e.message));
    });

    test('exactly one of 50 concurrent replies runs; the others get SessionBusyError before any call', async () => {
      const saver = makeSaver();
      let modelCalls = 0;
      const ran = [];
      const model = script();
      const counting = async (req) => { modelCalls += 1; return model(req); };
      // One call at a time: the lookup after the question is left for the reply that wins.
      await agent({ tools: tools(ran), model: counting, toolConcurrency: 1 }).session(saver, 'race').prompt('Plan a trip');
      const before = { modelCalls, ran: ran.length };
      const results = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => agent({ tools: tools(ran), model: counting, toolConcurrency: 1 }).session(saver, 'race').reply(`city ${i}`)));
      const won = results.filter((r) => r.status === 'fulfilled');
      assert.equal(won.length, 1, 'exactly one reply ran');
      for (const r of results.filter((x) => x.status === 'rejected')) assert.ok(r.reason instanceof SessionBusyError, String(r.reason));
      assert.equal(ran.length - before.ran, 1, 'the remaining lookup ran once');
      assert.equal(modelCalls - before.modelCalls, 1, 'one model call');
    });

    test('agent state: read and replaced by tools, kept in the checkpoint, across pause, resume and restore', async () => {
      const saver = makeSaver();
      const todo = defineTool({
        name: 'todo',
        handle: ({ item }, ctx) => { ctx.setState({ todos: [...ctx.state.todos, item] }); return `${ctx.state.todos.length} todos`; },
      });
      const model = scriptedModel([
        turn(call('t1', 'todo', { item: 'book flights' })),
        turn(call('q', 'ask_user', { question: 'Hotel?' })),
        turn(call('t2', 'todo', { item: 'book hotel' })),
        'ok',
      ]);
      const a = agent({ tools: [todo, ...tools()], model, state: { todos: [] } });
      const changes = [];
      const paused = await a.session(saver, 'st', { keepCompleted: true }).prompt('plan', { onEvent: (e) => { if (e.type === 'state-changed') changes.push(e.state); } });
      assert.deepEqual(changes, [{ todos: ['book flights'] }]);
      assert.deepEqual(paused.checkpoint.state, { todos: ['book flights'] });
      const done = await agent({ tools: [todo, ...tools()], model, state: { todos: ['ignored: the checkpoint has state'] } }).session(saver, 'st', { keepCompleted: true }).reply('yes');
      assert.deepEqual(done.checkpoint.state, { todos: ['book flights', 'book hotel'] });
      assert.equal(done.messages.at(-2).content[0].content, '2 todos');
      const restored = await a.session(saver, 'st').restore('3');
      assert.deepEqual(restored.state, { todos: ['book flights'] }, 'restore brings back the state of then');
      assert.throws(() => agent({ model, state: { when: new Date() } }), (e) => e instanceof ConfigError && /config\.state\.when: a Date is not plain JSON/.test(e.message));
      const bad = defineTool({ name: 'bad', handle: (_, ctx) => { ctx.setState({ f: () => 1 }); return 'unreachable'; } });
      const r = await agent({ tools: [bad], model: scriptedModel([turn(call('b', 'bad', {})), (req) => req.messages.at(-1).content[0].content]), state: {} }).prompt('x');
      assert.match(r.text, /setState\(state\)\.f: a function is not JSON/);
    });

    test('recovery after a crash at every saved step: the same transcript, no completed tool run twice', async () => {
      // The uninterrupted run, for comparison.
      const clean = memorySaver();
      await agent({ tools: tools(), model: script() }).session(clean, 'c', { keepCompleted: true }).prompt('Plan a trip');
      const expected = await agent({ tools: tools(), model: script() }).session(clean, 'c', { keepCompleted: true }).reply('Paris');
      for (let crashAfter = 1; crashAfter <= 7; crashAfter++) {
        const inner = makeSaver();
        let saves = 0;
        let crashed = false;
        // The process "dies" right after the crashAfter-th save succeeded.
        const dying = {
          get: (k) => inner.get(k), delete: (k) => inner.delete(k), list: (p) => inner.list(p), compareAndSet: true,
          async put(k, cp, condition) {
            await inner.put(k, cp, condition);
            if (!k.includes('#~') && ++saves === crashAfter && !crashed) { crashed = true; throw new Error('process killed'); }
          },
        };
        const ran = [];
        const a = agent({ tools: tools(ran), model: script() });
        let r = await a.session(dying, 'x', { keepCompleted: true }).prompt('Plan a trip').catch((e) => e);
        const ranAtCrash = [...ran];
        for (let k = 0; k < 5 && !(r?.text); k++) {
          if (r instanceof SaverError || r instanceof Error) r = await a.session(inner, 'x', { keepCompleted: true }).resume();
          else if (isInterrupted(r)) r = await a.session(inner, 'x', { keepCompleted: true }).reply('Paris');
        }
        assert.equal(r.text, expected.text, `crash after save ${crashAfter}`);
        assert.deepEqual(r.messages, expected.messages, `crash after save ${crashAfter}`);
        const repeats = ran.filter((id, i) => ran.indexOf(id) !== i);
        // A tool whose result was saved never runs again; only one whose save the crash cut may repeat.
        assert.ok(repeats.every((id) => ranAtCrash.at(-1) === id), `crash after save ${crashAfter}: ${ran.join(',')}`);
      }
    });
  });
}

test('maxHistory bounds the history; labelled steps are kept', async () => {
  const saver = memorySaver();
  const model = scriptedModel([turn(call('l1', 'lookup', { key: 'a' })), turn(call('l2', 'lookup', { key: 'b' })), turn(call('l3', 'lookup', { key: 'c' })), 'done']);
  const s = agent({ tools: tools(), model }).session(saver, 'h', { keepCompleted: true, maxHistory: 3 });
  await s.prompt('go');
  assert.deepEqual((await s.history()).map((h) => h.step), [8, 7, 6]);
  assert.throws(() => agent({ tools: tools(), model }).session(saver, 'bad#~id'), ConfigError);
  assert.throws(() => agent({ tools: tools(), model }).session(saver, 'x', { autoSave: 'sometimes' }), ConfigError);
});

test('autoSave "stop": saved when the run starts and stops only', async () => {
  const saver = memorySaver();
  const saved = [];
  const s = agent({ tools: tools(), model: script() }).session(saver, 'few', { autoSave: 'stop', keepCompleted: true });
  await s.prompt('Plan a trip', { onEvent: (e) => { if (e.type === 'checkpoint-saved') saved.push(e.messageCount); } });
  assert.deepEqual(saved, [1, 4], 'the claim, then the pause');
  assert.equal((await s.history()).length, 2);
});
