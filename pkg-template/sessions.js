// Savers and the sessions' listing: a capability of its own (the .wasm variant a program loads has sessions only when
// it imports this module, or opens a session on a saver of its own: api.js). Every saver here stores text by key in its
// store — a Map, files (file-saver.js), Workers KV, IndexedDB, a Durable Object, or the program's own text store — and
// the core (Rust) reads and writes checkpoints and session logs through it.
import { ConfigError, ReleasedError, describe } from './errors.js';
import { isLoaded, load, need } from './load.js';
import { Later, SAVERS, calls, needNow, optionsText, withLater } from './internal.js';

need('sessions');

const wasm = calls({
  async: ['listSessions', 'saverCall'],
  sync: ['saverSpec', 'saverAbout', 'conditionHolds'],
});
const check = calls({ sync: ['checkSession'] });

const dispose = Symbol.dispose ?? Symbol.for('Symbol.dispose');
const released = (what) => new ReleasedError(`${what} was released (free() or the end of a using block); create a new one`);
const detached = (cls, method) => new ConfigError(`${cls}.${method} was called without its ${cls.toLowerCase()} (a detached method?): call it as ${cls.toLowerCase()}.${method}(...)`);

/** The sessions stored in `saver` (their latest checkpoints' summaries, not their history). */
export async function listSessions(saver, prefix) {
  const store = Saver.spec(saver);
  if (store === null) throw released('this saver');
  await load();
  if (store === undefined) check.checkSession(saver, false, 'x', 'null');
  return wasm.listSessions(store?.get(), saver, prefix ?? '');
}

/** A saver implemented in Rust: `get`, `put`, `delete`, `exists`, `list(prefix?)`, each a promise. */
class Saver {
  #spec;
  constructor(spec) { this.#spec = spec; }

  /** The spec of a built-in saver (null once released); undefined for any other object. */
  static spec(saver) {
    return saver != null && typeof saver === 'object' && #spec in saver ? saver.#spec : undefined;
  }

  static #call(self, op, key, value, condition) {
    if (self == null || typeof self !== 'object' || !(#spec in self)) return Promise.reject(detached('Saver', op));
    const spec = self.#spec;
    if (spec === null) return Promise.reject(released('this saver'));
    return withLater(spec, (s) => wasm.saverCall(s, op, key, value, condition));
  }

  /** What the core says of its store (`{ compareAndSet, maxValueBytes }`), once the wasm is there. */
  static #about(self, what) {
    if (self.#spec === null) return undefined;
    needNow(`saver.${what}`);
    return wasm.saverAbout(self.#spec.get());
  }

  get(key) { return Saver.#call(this, 'get', key); }
  /** `condition`: `{ ifAbsent: true }` or `{ ifStep: n }` (compare-and-set; SaverError code CONFLICT). */
  put(key, checkpoint, condition) { return Saver.#call(this, 'put', key, checkpoint, condition); }
  /** True when conditional puts are atomic (memory, file, IndexedDB, Durable Object; not KV). */
  get compareAndSet() { return Saver.#about(this, 'compareAndSet')?.compareAndSet ?? false; }
  /** The largest value the store takes, in bytes, when it has a limit. */
  get maxValueBytes() { return Saver.#about(this, 'maxValueBytes')?.maxValueBytes; }
  delete(key) { return Saver.#call(this, 'delete', key); }
  exists(key) { return Saver.#call(this, 'exists', key); }
  list(prefix) { return Saver.#call(this, 'list', prefix); }

  free() {
    const spec = this.#spec;
    this.#spec = null;
    let slot;
    try {
      slot = isLoaded() ? spec?.get()?.slot : undefined;
    } catch {
      // a saver whose options were refused holds nothing
    }
    if (slot?.db) { slot.db.close(); slot.db = undefined; }
  }
  [dispose]() { this.free(); }
}

/** True when a put's `condition` holds for what is stored (`summary`: its stored summary text, or undefined):
 * the compare-and-set rule (the core's), for the savers written in JS (memory, file, Durable Object). */
export function conditionHolds(condition, summary) {
  if (condition == null) return true;
  needNow('conditionHolds()');
  return wasm.conditionHolds(condition, summary);
}

/** A saver in memory (this process or tab only): a text store over a Map, read and written synchronously. */
export function memorySaver() {
  const map = new Map();
  return textStoreSaver({
    compareAndSet: true,
    getText: (key) => map.get(key)?.[0] ?? null,
    getMany: (keys) => keys.map((key) => map.get(key)?.[0] ?? null),
    putText(key, value, summary, condition) {
      const held = map.get(key);
      if (!conditionHolds(condition, held?.[1])) {
        throw Object.assign(new Error(`key ${JSON.stringify(key)} changed`), { code: 'CONFLICT' });
      }
      map.set(key, [value, summary]);
    },
    delete(key) { map.delete(key); },
    list: (prefix = '') => [...map].filter(([k]) => k.startsWith(prefix)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, [, summary]]) => ({ key, summary })),
  });
}

/** Checkpoints in Workers KV; summaries in each key's metadata. */
export function kvSaver(namespace, options) {
  const text = optionsText(options, 'kvSaver options');
  return new Saver(new Later(() => wasm.saverSpec('kv', namespace, text)));
}

/** Checkpoints in IndexedDB (browsers, Web Workers). */
export function indexedDbSaver(options) {
  const text = optionsText(options, 'indexedDbSaver options');
  return new Saver(new Later(() => wasm.saverSpec('indexeddb', undefined, text)));
}

/**
 * A saver over a store written in JS at the text level: `{ getText(key), putText(key, value, summary,
 * condition), delete(key), list(prefix), getMany?(keys), listHeads?(prefix), compareAndSet, maxValueBytes? }` (the
 * memory, file, Durable Object and SQL savers; `putText` gets a fifth argument, the summary's step, which `{ ifStep }`
 * compares). `list` answers `[{ key, summary }]` sorted by key; `listHeads` the
 * same for sessions alone (keys without `#~`), when the store can list them without their step records.
 */
export function textStoreSaver(store) {
  return new Saver(new Later(() => wasm.saverSpec('text', store, 'null')));
}

// ---- Durable Objects -----------------------------------------------------------------------------------

const DO_MAX_VALUE_BYTES = 2 * 1024 * 1024;

function storeError(code, message) {
  const e = new Error(message);
  e.code = code;
  return e;
}

/**
 * Checkpoints in a Durable Object (`env.CHECKPOINTS`, bound to the exported CheckpointStore class): strongly
 * consistent, compare-and-set, values up to 2 MB. `name` picks the object (default "default"): one object
 * serialises every session in it; shard by giving each user or tenant its own name.
 */
export function durableObjectSaver(namespace, options = {}) {
  if (namespace == null || typeof namespace.idFromName !== 'function' || typeof namespace.get !== 'function') {
    throw new ConfigError('durableObjectSaver(namespace): expected a Durable Object namespace binding such as env.CHECKPOINTS');
  }
  for (const k of Object.keys(options ?? {})) if (k !== 'name') throw new ConfigError(`durableObjectSaver options.${k}: unknown option (known: name)`);
  const name = options?.name ?? 'default';
  if (typeof name !== 'string' || name === '') throw new ConfigError('durableObjectSaver options.name: expected a non-empty string');
  let stub;
  const call = async (body) => {
    stub ??= namespace.get(namespace.idFromName(name));
    const res = await stub.fetch('https://checkpoint-store.invalid/', { method: 'POST', body: JSON.stringify(body) });
    const out = await res.json();
    if (out.error) throw storeError(out.code ?? 'BACKEND', out.error);
    return out;
  };
  return textStoreSaver({
    compareAndSet: true,
    maxValueBytes: DO_MAX_VALUE_BYTES,
    async getText(key) { return (await call({ op: 'get', key })).value; },
    async getMany(keys) { return (await call({ op: 'getMany', keys })).values; },
    async putText(key, value, summary, condition) { await call({ op: 'put', key, value, summary, condition: condition ?? null }); },
    async delete(key) { await call({ op: 'delete', key }); },
    async list(prefix) { return (await call({ op: 'list', prefix })).entries; },
  });
}

/**
 * The Durable Object class behind durableObjectSaver: export it from your Worker and bind it
 * (`[[durable_objects.bindings]] name = "CHECKPOINTS", class_name = "CheckpointStore"`, with a
 * `new_sqlite_classes` migration). Each key is two entries — `v:<key>` (the checkpoint's JSON) and `s:<key>`
 * (its summary), written together — so a listing reads summaries only. A conditional write compares and
 * writes within one request, which nothing else interleaves with.
 */
export class CheckpointStore {
  constructor(ctx) {
    this.storage = ctx.storage;
  }

  async fetch(request) {
    let body;
    try {
      body = await request.json();
    } catch {
      return Response.json({ error: 'expected a JSON body', code: 'BACKEND' }, { status: 400 });
    }
    const { op, key, value, summary, condition, prefix } = body;
    try {
      switch (op) {
        case 'get': return Response.json({ value: (await this.storage.get(`v:${key}`)) ?? null });
        case 'getMany': {
          // storage.get takes at most 128 keys at once.
          const keys = Array.isArray(body.keys) ? body.keys.map((k) => `v:${k}`) : [];
          const values = [];
          for (let i = 0; i < keys.length; i += 128) {
            const found = await this.storage.get(keys.slice(i, i + 128));
            for (const k of keys.slice(i, i + 128)) values.push(found.get(k) ?? null);
          }
          return Response.json({ values });
        }
        case 'put': {
          if (new TextEncoder().encode(value).length > DO_MAX_VALUE_BYTES) {
            return Response.json({ error: `value for ${JSON.stringify(key)} is over ${DO_MAX_VALUE_BYTES} bytes`, code: 'TOO_LARGE' });
          }
          if (condition) {
            const current = await this.storage.get(`s:${key}`);
            if (!conditionHolds(condition, current)) {
              return Response.json({ error: `key ${JSON.stringify(key)} changed`, code: 'CONFLICT' });
            }
          }
          await this.storage.put({ [`v:${key}`]: value, [`s:${key}`]: summary });
          return Response.json({ ok: true });
        }
        case 'delete': await this.storage.delete([`v:${key}`, `s:${key}`]); return Response.json({ ok: true });
        case 'list': {
          const found = await this.storage.list({ prefix: `s:${prefix ?? ''}` });
          return Response.json({ entries: [...found].map(([k, s]) => ({ key: k.slice(2), summary: s })) });
        }
        default: return Response.json({ error: `unknown operation ${JSON.stringify(op)}`, code: 'BACKEND' }, { status: 400 });
      }
    } catch (e) {
      return Response.json({ error: String(e?.message ?? e), code: 'BACKEND' }, { status: 500 });
    }
  }
}


SAVERS.specOf = (saver) => Saver.spec(saver);
