// Sessions, history, state and savers in TypeScript; `tsc --noEmit` must accept it, and the expected-error
// lines fail the check if the types degrade.
import {
  agent, defineTool, scriptedModel, memorySaver, listSessions, isInterrupted, SessionBusyError,
  type HistoryEntry, type Saver, type PutCondition,
} from 'resumable-agent';

const todo = defineTool({
  name: 'todo',
  schema: (s) => ({ item: s.string().required() }),
  handle: ({ item }, ctx) => {
    const todos: string[] = ctx.state.todos;
    ctx.setState({ todos: [...todos, item] });
    return `${todos.length + 1} todos; key ${ctx.idempotencyKey}`;
  },
});

export async function sessions(): Promise<string[]> {
  const saver = memorySaver();
  const a = agent({ tools: [todo], model: scriptedModel(['ok']), state: { todos: [] } });
  const s = a.session(saver, 'plan', { keepCompleted: true, maxHistory: 50, autoSave: 'step' });
  // @ts-expect-error autoSave is 'step' or 'stop'
  a.session(saver, 'x', { autoSave: 'sometimes' });
  try {
    const r = await s.prompt('start');
    if (isInterrupted(r)) await s.reply({ decisions: [{ type: 'approve' }] });
  } catch (e) {
    if (e instanceof SessionBusyError) return [e.question];
  }
  const history: HistoryEntry[] = await s.history({ limit: 10 });
  await s.label(history[0].id, 'start');
  const restored = await s.restore('start');
  const step: number | undefined = restored.thread?.step;
  await s.resume();
  return [...(await listSessions(saver)).map((x) => x.key), String(step)];
}

/** A saver of one's own, with compare-and-set. */
export const mine: Saver = {
  compareAndSet: true,
  async get() { return null; },
  async put(_key, _cp, condition?: PutCondition) { if (condition && 'ifStep' in condition) void condition.ifStep; },
  async delete() {},
  async list() { return []; },
};
