// A text store over a Map for `textStoreSaver`, counting what it is given (writes, bytes of values and summaries):
// what bench/sessions.mjs and bench/subagents.mjs measure a session's log with.
const bytes = (s) => Buffer.byteLength(s);

/** A fresh store: `saver` (made with the package's `textStoreSaver`), its `counts`, and `kept()`: the bytes it holds. */
export function countingTextStore(textStoreSaver) {
  const map = new Map();
  const counts = { writes: 0, bytesWritten: 0 };
  const saver = textStoreSaver({
    compareAndSet: true,
    async getText(key) { return map.get(key)?.value ?? null; },
    async putText(key, value, summary, condition) {
      if (condition?.ifAbsent && map.has(key)) throw Object.assign(new Error('taken'), { code: 'CONFLICT' });
      counts.writes += 1;
      counts.bytesWritten += bytes(value) + bytes(summary);
      map.set(key, { value, summary });
    },
    async delete(key) { map.delete(key); },
    async list(prefix) { return [...map].filter(([k]) => k.startsWith(prefix)).sort().map(([key, { summary }]) => ({ key, summary })); },
  });
  return { saver, counts, kept: () => [...map.values()].reduce((n, e) => n + bytes(e.value) + bytes(e.summary), 0) };
}
