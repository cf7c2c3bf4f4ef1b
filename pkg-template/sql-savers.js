// SQL savers: Cloudflare D1 (d1Saver), SQLite (sqliteSaver: node:sqlite, better-sqlite3) and Postgres (postgresSaver:
// a pg Pool or Client). Text stores (sessions.js) over one table, whose rows are the keys a saver stores — a session's
// head and each of its step records — so a save is one row:
//
//   key      TEXT     the saver key (Postgres: COLLATE "C", so keys compare and list in byte order everywhere)
//   part     INTEGER  0: the key's head row; 1, 2, …: the rest of a value longer than the store's row limit (D1)
//   step     INTEGER  head row: the summary's step, which compare-and-set compares
//   parts    INTEGER  head row: the rows the value spans
//   token    TEXT     the write that made the row (a value's other rows are written only under their head's token)
//   summary  TEXT     head row: the checkpoint's summary (what a listing reads)
//   value    TEXT     the checkpoint's JSON, or this part of it
//   PRIMARY KEY (key, part); partial indexes on (key, summary) WHERE part = 0 list keys without reading values,
//   and the sessions alone (not their step records: listSessions reads one entry per session).
//
// Every write is a single statement, or (D1, a value split over several rows) one batch: no transaction is held
// across calls, so a Postgres Client shared by concurrent calls, several processes on one SQLite file and many
// isolates on one D1 database all stay consistent. Compare-and-set is the statement's own condition:
//   ifAbsent → INSERT … ON CONFLICT DO NOTHING;  ifStep n → UPDATE … WHERE step = n;  none → an upsert;
// a statement that changed no row is a CONFLICT.
import { ConfigError, describe } from './errors.js';
import { textStoreSaver } from './sessions.js';

const DEFAULT_TABLE = 'resumable_agent_checkpoints';
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
/** D1 (and Durable Object SQLite): a row or string of at most 2,000,000 bytes. */
const D1_MAX_ROW_BYTES = 2_000_000;
/** What a row takes besides its key, summary and value (integers, the token, SQLite's record header), rounded up. */
const ROW_OVERHEAD = 128;
/** Keys per `IN (…)` list: D1 binds at most 100 parameters in a statement. */
const KEYS_PER_READ = 50;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const bytesOf = (text) => encoder.encode(text).length;

function storeError(code, message, extra) {
  return Object.assign(new Error(message), { code }, extra);
}

/** A table or schema name, checked (never interpolated unchecked) and double-quoted. */
function identifier(name, what, reserved) {
  if (typeof name !== 'string' || !IDENTIFIER.test(name)) {
    throw new ConfigError(`${what}: expected a name of letters, digits and _ (not starting with a digit, at most 63), got ${describe(name)}`);
  }
  const taken = reserved.find((p) => name.toLowerCase().startsWith(p));
  if (taken) throw new ConfigError(`${what}: names starting with ${JSON.stringify(taken)} are reserved by the database, got ${JSON.stringify(name)}`);
  return `"${name}"`;
}

function checkOptions(options, what, known) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) throw new ConfigError(`${what}: expected an object, got ${describe(options)}`);
  for (const k of Object.keys(options)) {
    if (!known.includes(k)) throw new ConfigError(`${what}.${k}: unknown option (known: ${known.join(', ')})`);
  }
  return options;
}

/** The least string after every string that starts with `prefix` (code point order = UTF-8 byte order), or null. */
function after(prefix) {
  const points = [...prefix];
  while (points.length > 0 && points.at(-1) === '\u{10FFFF}') points.pop();
  if (points.length === 0) return null;
  let c = points.pop().codePointAt(0) + 1;
  if (c === 0xd800) c = 0xe000;
  return points.join('') + String.fromCodePoint(c);
}

/** `text` cut into pieces of at most `first` UTF-8 bytes, then `rest` each, never inside a character. */
function pieces(text, first, rest) {
  // A UTF-16 unit is at most 3 UTF-8 bytes: most records fit without being encoded (a copy per save).
  if (text.length * 3 <= first) return [text];
  const bytes = encoder.encode(text);
  if (bytes.length <= first) return [text];
  const out = [];
  let at = 0;
  let budget = first;
  while (at < bytes.length) {
    let end = Math.min(at + budget, bytes.length);
    while (end < bytes.length && (bytes[end] & 0xc0) === 0x80) end -= 1; // not inside a character
    out.push(decoder.decode(bytes.subarray(at, end)));
    at = end;
    budget = rest;
  }
  return out;
}

const random = () => (globalThis.crypto?.randomUUID?.() ?? `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`);

/**
 * The statements of one table, in a dialect: `?` parameters (SQLite, D1) or `$n` (Postgres). Each builder answers
 * `{ sql, params }`.
 */
function statements(table, dialect) {
  const pg = dialect === 'postgres';
  // A tagged template: `${T}` is the table's quoted name, spliced into the SQL text; every other value is a parameter.
  const T = Symbol('table');
  const q = (parts, ...values) => {
    let sql = parts[0];
    const params = [];
    values.forEach((v, i) => {
      if (v === T) {
        sql += table;
      } else {
        params.push(v);
        sql += pg ? `$${params.length}` : '?';
      }
      sql += parts[i + 1];
    });
    return { sql, params };
  };
  const index = table.replace(/"$/, '_heads"').replace(/^"[^"]*"\./, '');
  const sessionsIndex = table.replace(/"$/, '_sessions"').replace(/^"[^"]*"\./, '');
  // Keys of sessions, not of their step records (`<id>#~<n>`): the same expression in the index and the query.
  const head = pg ? "strpos(key, '#~') = 0" : "instr(key, '#~') = 0";
  return {
    create: [
      `CREATE TABLE IF NOT EXISTS ${table} (key TEXT${pg ? ' COLLATE "C"' : ''} NOT NULL, part INTEGER NOT NULL, step ${pg ? 'BIGINT' : 'INTEGER'}, parts INTEGER, token TEXT, summary TEXT, value TEXT NOT NULL, PRIMARY KEY (key, part))`,
      `CREATE INDEX IF NOT EXISTS ${index} ON ${table} (key, summary) WHERE part = 0`,
      `CREATE INDEX IF NOT EXISTS ${sessionsIndex} ON ${table} (key, summary) WHERE part = 0 AND ${head}`,
    ],
    read: (key) => q`SELECT part, parts, token, value FROM ${T} WHERE key = ${key} ORDER BY part`,
    readMany: (keys) => {
      const list = keys.map((_, i) => (pg ? `$${i + 1}` : '?')).join(', ');
      return { sql: `SELECT key, part, parts, token, value FROM ${table} WHERE key IN (${list}) ORDER BY key, part`, params: keys };
    },
    upsert: (key, step, parts, token, summary, value) => q`INSERT INTO ${T} (key, part, step, parts, token, summary, value) VALUES (${key}, 0, ${step}, ${parts}, ${token}, ${summary}, ${value}) ON CONFLICT (key, part) DO UPDATE SET step = excluded.step, parts = excluded.parts, token = excluded.token, summary = excluded.summary, value = excluded.value`,
    insert: (key, step, parts, token, summary, value) => q`INSERT INTO ${T} (key, part, step, parts, token, summary, value) VALUES (${key}, 0, ${step}, ${parts}, ${token}, ${summary}, ${value}) ON CONFLICT (key, part) DO NOTHING`,
    update: (key, expected, step, parts, token, summary, value) => q`UPDATE ${T} SET step = ${step}, parts = ${parts}, token = ${token}, summary = ${summary}, value = ${value} WHERE key = ${key} AND part = 0 AND COALESCE(step, 0) = ${expected}`,
    // A value's further rows, written only under the head row this write made (in the same batch).
    dropParts: (key, token) => q`DELETE FROM ${T} WHERE key = ${key} AND part > 0 AND EXISTS (SELECT 1 FROM ${T} WHERE key = ${key} AND part = 0 AND token = ${token})`,
    addPart: (key, part, token, value) => q`INSERT INTO ${T} (key, part, token, value) SELECT ${key}, ${part}, ${token}, ${value} WHERE EXISTS (SELECT 1 FROM ${T} WHERE key = ${key} AND part = 0 AND token = ${token})`,
    remove: (key) => q`DELETE FROM ${T} WHERE key = ${key}`,
    // Every key under `prefix` (heads: only sessions, read from their own index: one entry per session).
    list: (prefix, heads = false) => {
      const where = heads ? `part = 0 AND ${head}` : 'part = 0';
      const end = after(prefix);
      if (prefix === '') return { sql: `SELECT key, summary FROM ${table} WHERE ${where} ORDER BY key`, params: [] };
      if (end === null) return q([`SELECT key, summary FROM `, ` WHERE ${where} AND key >= `, ' ORDER BY key'], T, prefix);
      return q([`SELECT key, summary FROM `, ` WHERE ${where} AND key >= `, ' AND key < ', ' ORDER BY key'], T, prefix, end);
    },
  };
}

/** A value from its rows (`part` ascending), checked whole: each part present, each of the head's write. */
function assemble(key, rows, what) {
  if (rows.length === 0) return null;
  const head = rows[0];
  const parts = Number(head.parts ?? 1);
  if (Number(head.part) !== 0) throw storeError('CORRUPT', `${what}: key ${JSON.stringify(key)} has rows but no head row`);
  if (parts === 1) return head.value;
  const mine = rows.filter((r) => Number(r.part) < parts);
  const whole = mine.length === parts && mine.every((r, i) => Number(r.part) === i && r.token === head.token);
  if (!whole) {
    const ours = mine.filter((r) => r.token === head.token).length;
    throw storeError('CORRUPT', `${what}: the value of key ${JSON.stringify(key)} spans ${parts} rows; ${ours} of them are there from the write that made it`);
  }
  return mine.map((r) => r.value).join('');
}

/**
 * The text store over a database: `db.run(statement)` → rows changed, `db.all(statement)` → rows,
 * `db.batch(statements)` → rows changed by each (atomically), `db.ready()` → creates the table once.
 */
function sqlStore(db, what, maxRowBytes) {
  const s = db.statements;
  const failed = (e, op, key) => {
    if (e?.code === 'CONFLICT' || e?.code === 'TOO_LARGE' || e?.code === 'CORRUPT') return e;
    const why = String(e?.message ?? e).split('\n')[0].slice(0, 300);
    return storeError('BACKEND', `${what}: ${op}${key === undefined ? '' : ` of key ${JSON.stringify(key)}`} failed: ${why}`);
  };
  const guarded = (op, fn) => async (key, ...rest) => {
    try {
      await db.ready();
      return await fn(key, ...rest);
    } catch (e) {
      throw failed(e, op, op === 'list' ? undefined : key);
    }
  };
  return {
    compareAndSet: true,
    getText: guarded('get', async (key) => assemble(key, await db.all(s.read(key)), what)),
    getMany: guarded('get', async (keys) => {
      const found = new Map();
      for (let i = 0; i < keys.length; i += KEYS_PER_READ) {
        const batch = [...new Set(keys.slice(i, i + KEYS_PER_READ))];
        // Rows come ordered by key, then part: grouped in one pass.
        const byKey = new Map();
        for (const r of await db.all(s.readMany(batch))) {
          if (!byKey.has(r.key)) byKey.set(r.key, []);
          byKey.get(r.key).push(r);
        }
        for (const k of batch) found.set(k, assemble(k, byKey.get(k) ?? [], what));
      }
      return keys.map((k) => found.get(k) ?? null);
    }),
    // `step`: the summary's step as the core compares it (Condition::allows), passed by the core with each put.
    putText: guarded('put', async (key, value, summary, condition, step) => {
      const token = random();
      let values = [value];
      if (maxRowBytes !== undefined) {
        const fixed = bytesOf(key) + ROW_OVERHEAD;
        const first = maxRowBytes - fixed - bytesOf(summary);
        if (first < 1024) {
          throw storeError('TOO_LARGE', `${what}: key ${JSON.stringify(key)} and its summary take ${maxRowBytes - first} of a row's ${maxRowBytes} bytes (the store's row limit); nothing was written`, { bytes: maxRowBytes - first, max: maxRowBytes });
        }
        values = pieces(value, first, maxRowBytes - fixed);
      }
      const n = values.length;
      let head;
      if (condition?.ifAbsent) head = s.insert(key, step, n, token, summary, values[0]);
      else if (condition && Number.isSafeInteger(condition.ifStep)) head = s.update(key, condition.ifStep, step, n, token, summary, values[0]);
      else if (condition == null) head = s.upsert(key, step, n, token, summary, values[0]);
      else throw new ConfigError(`${what}: condition must be { ifAbsent: true } or { ifStep: n }, got ${describe(condition)}`);
      let changed;
      if (maxRowBytes === undefined) {
        changed = await db.run(head);
      } else {
        // The head, then the value's other rows under its token: one batch, so a reader sees the old value or the new.
        const rest = values.slice(1).map((v, i) => s.addPart(key, i + 1, token, v));
        [changed] = await db.batch([head, s.dropParts(key, token), ...rest]);
      }
      if (changed === 0) throw storeError('CONFLICT', `key ${JSON.stringify(key)} ${condition?.ifAbsent ? 'exists' : 'changed'}`);
    }),
    delete: guarded('delete', async (key) => { await db.run(s.remove(key)); }),
    list: guarded('list', async (prefix = '') => (await db.all(s.list(prefix ?? ''))).map((r) => ({ key: r.key, summary: r.summary }))),
    listHeads: guarded('list', async (prefix = '') => (await db.all(s.list(prefix ?? '', true))).map((r) => ({ key: r.key, summary: r.summary }))),
  };
}

/** The tables made so far, per database object: a saver built per request (as a Worker does) makes it once. */
const MADE = new WeakMap();
/** A SQLite connection's prepared statements, by SQL text. */
const PREPARED = new WeakMap();

/**
 * `make()` (which creates `table` in `db`) once per database object and table, for every saver over them; a
 * failure is forgotten, so the next call tries again.
 */
function once(db, table, make) {
  return () => {
    let tables = MADE.get(db);
    if (!tables) MADE.set(db, (tables = new Map()));
    let done = tables.get(table);
    if (!done) {
      done = Promise.resolve().then(make).catch((e) => { tables.delete(table); throw e; });
      tables.set(table, done);
    }
    return done;
  };
}

/**
 * Checkpoints in SQLite, for Node, Bun and Deno: `db` is a `node:sqlite` `DatabaseSync` or a better-sqlite3
 * `Database` (anything with `prepare(sql)` → `{ run, all }` and `exec(sql)`). One row per stored key; each save one
 * statement (its own transaction); works with WAL (`PRAGMA journal_mode = WAL`, recommended for several processes).
 * A connection whose busy timeout is 0 (node:sqlite's default) gets `busyTimeoutMs` (default 5000), so a second
 * process waits for the lock instead of failing at once with "database is locked".
 */
export function sqliteSaver(db, options) {
  const what = 'sqliteSaver';
  if (db == null || typeof db.prepare !== 'function' || typeof db.exec !== 'function') {
    throw new ConfigError(`sqliteSaver(db): expected a node:sqlite DatabaseSync or a better-sqlite3 Database (with prepare and exec), got ${describe(db)}`);
  }
  const o = checkOptions(options, 'sqliteSaver options', ['table', 'busyTimeoutMs']);
  const table = identifier(o.table === undefined ? DEFAULT_TABLE : o.table, 'sqliteSaver options.table', ['sqlite_']);
  const busy = o.busyTimeoutMs;
  if (busy !== undefined && !(Number.isInteger(busy) && busy >= 0)) throw new ConfigError(`sqliteSaver options.busyTimeoutMs: expected a whole number of milliseconds, got ${describe(busy)}`);
  // Statements prepared once per connection, for every saver over it.
  let prepared = PREPARED.get(db);
  if (!prepared) PREPARED.set(db, (prepared = new Map()));
  const prepare = (sql) => {
    let st = prepared.get(sql);
    if (!st) {
      st = db.prepare(sql);
      prepared.set(sql, st);
    }
    return st;
  };
  return textStoreSaver(sqlStore({
    statements: statements(table, 'sqlite'),
    ready: once(db, table, () => {
      const current = db.prepare('PRAGMA busy_timeout').all()[0];
      const ms = current ? Number(Object.values(current)[0]) : 0;
      if (busy !== undefined || ms === 0) db.exec(`PRAGMA busy_timeout = ${busy ?? 5000}`);
      for (const sql of statements(table, 'sqlite').create) db.exec(sql);
    }),
    run: async ({ sql, params }) => Number(prepare(sql).run(...params).changes),
    all: async ({ sql, params }) => prepare(sql).all(...params),
    batch: async (list) => {
      // Synchronous: nothing else in this process runs between BEGIN and COMMIT; IMMEDIATE takes the write lock first.
      db.exec('BEGIN IMMEDIATE');
      try {
        const out = list.map(({ sql, params }) => Number(prepare(sql).run(...params).changes));
        db.exec('COMMIT');
        return out;
      } catch (e) {
        try { db.exec('ROLLBACK'); } catch { /* already rolled back */ }
        throw e;
      }
    },
  }, what, undefined));
}

/**
 * Checkpoints in Cloudflare D1 (`env.DB`, or a session of it: `env.DB.withSession()`). One row per stored key; a
 * value over D1's 2,000,000-byte row limit is stored in several rows written in one batch (D1's atomic unit) and
 * read back whole. Listing reads a key range of an index (D1 limits LIKE patterns to 50 bytes), never values.
 */
export function d1Saver(db, options) {
  const what = 'd1Saver';
  if (db == null || typeof db.prepare !== 'function' || typeof db.batch !== 'function') {
    throw new ConfigError(`d1Saver(db): expected a D1 database binding such as env.DB (with prepare and batch), got ${describe(db)}`);
  }
  const o = checkOptions(options, 'd1Saver options', ['table']);
  const table = identifier(o.table === undefined ? DEFAULT_TABLE : o.table, 'd1Saver options.table', ['_cf_', 'sqlite_']);
  const bound = ({ sql, params }) => db.prepare(sql).bind(...params);
  const st = statements(table, 'sqlite');
  return textStoreSaver(sqlStore({
    statements: st,
    ready: once(db, table, async () => { await db.batch(st.create.map((sql) => db.prepare(sql))); }),
    run: async (s) => Number((await bound(s).run()).meta?.changes ?? 0),
    all: async (s) => (await bound(s).all()).results ?? [],
    batch: async (list) => (await db.batch(list.map(bound))).map((r) => Number(r.meta?.changes ?? 0)),
  }, what, D1_MAX_ROW_BYTES));
}

/** The last query queued on each single connection (postgresSaver). */
const QUEUES = new WeakMap();

/**
 * Checkpoints in Postgres: `client` is anything with `query(text, params)` → `Promise<{ rows, rowCount }>` (a `pg`
 * Pool or Client; the package depends on no driver). Every write is one conditional statement (no BEGIN…COMMIT), so
 * a Client shared by concurrent calls and many processes on one database are both safe; `{ schema }` must exist.
 */
export function postgresSaver(client, options) {
  const what = 'postgresSaver';
  if (client == null || typeof client.query !== 'function') {
    throw new ConfigError(`postgresSaver(client): expected a pg Pool or Client (anything with query(text, params)), got ${describe(client)}`);
  }
  const o = checkOptions(options, 'postgresSaver options', ['table', 'schema']);
  const name = identifier(o.table === undefined ? DEFAULT_TABLE : o.table, 'postgresSaver options.table', ['pg_']);
  const table = o.schema === undefined ? name : `${identifier(o.schema, 'postgresSaver options.schema', ['pg_'])}.${name}`;
  const st = statements(table, 'postgres');
  // One connection (a pg Client) runs one query at a time: calls on it queue here (pg 8 queues them itself but warns
  // that pg 9 will not); a Pool (it counts its clients) runs them side by side.
  const pooled = typeof client.totalCount === 'number';
  const query = (sql, params) => {
    if (pooled) return client.query(sql, params);
    const next = (QUEUES.get(client) ?? Promise.resolve()).then(() => client.query(sql, params));
    QUEUES.set(client, next.catch(() => {}));
    return next;
  };
  return textStoreSaver(sqlStore({
    statements: st,
    ready: once(client, table, async () => {
      for (const sql of st.create) {
        try {
          await query(sql, []);
        } catch (e) {
          // Two processes creating the table at once: one of them is told it exists (pg_type's unique index).
          if (e?.code !== '23505' && e?.code !== '42P07') throw e;
        }
      }
    }),
    run: async ({ sql, params }) => Number((await query(sql, params)).rowCount ?? 0),
    all: async ({ sql, params }) => (await query(sql, params)).rows,
    batch: async () => { throw new Error('postgresSaver writes no value over several rows'); },
  }, what, undefined));
}
