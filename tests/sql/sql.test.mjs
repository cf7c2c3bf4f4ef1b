// The SQL savers against the real databases: SQLite through node:sqlite (files in a temporary directory) and
// Postgres (Debian's server, started here on 127.0.0.1: tests/sql/postgres.mjs) through the `pg` client. D1 runs in
// local workerd (tests/workers/savers.test.mjs); its row splitting is also checked here over node:sqlite.
// The saver conformance suite, hostile names, two processes racing replies, SIGKILL in the middle of a save, a
// Postgres connection killed in the middle of a save, SQLite's busy timeout, rows over D1's limit.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { sqliteSaver, d1Saver, postgresSaver, listSessions, ConfigError, SaverError, SessionBusyError } from 'resumable-agent';
import { runSaverConformance } from 'resumable-agent/testing';
import { startPostgres } from './postgres.mjs';
import { countingAgent, d1Over } from './helpers.mjs';

const CHILD = new URL('./child.mjs', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'sql-savers-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
let tables = 0;
const tableName = (ns) => `t_${ns.replace(/[^a-z0-9]/gi, '_')}_${tables++}`;

/** The conformance suite; `corrupt` writes a broken value behind the saver's back (the summary kept). */
async function conformance(make, corrupt) {
  const made = new Map();
  const results = await runSaverConformance((ns) => {
    const table = tableName(ns);
    const saver = make(table);
    made.set(saver, table);
    return saver;
  }, { corrupt: (saver, key) => corrupt(made.get(saver), key) });
  assert.deepEqual(results.filter((r) => !r.ok).map((r) => `${r.name}: ${r.error?.message}`), []);
  assert.deepEqual(results.filter((r) => r.skipped).map((r) => r.name), [], 'every case applies');
}

/** Starts `count` child processes in `mode`, each ready, then lets them go at once; answers their JSON lines. */
async function race(count, args) {
  const children = Array.from({ length: count }, () => spawn(process.execPath, ['--no-warnings', CHILD, ...args], { stdio: ['pipe', 'pipe', 'inherit'] }));
  const lines = children.map((c) => createInterface({ input: c.stdout })[Symbol.asyncIterator]());
  for (const l of lines) assert.equal((await l.next()).value, 'ready');
  for (const c of children) c.stdin.write('go\n');
  const out = [];
  for (const l of lines) out.push(JSON.parse((await l.next()).value));
  await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r() : c.once('exit', r)))));
  return out;
}

const HOSTILE = ['', '1abc', 'a b', 'x; DROP TABLE users', 'x"', 'tab\u00e9', 'a'.repeat(64), 'a.b', 'a-b', null, 42];

describe('sqliteSaver (node:sqlite)', () => {
  test('passes the saver conformance suite (a file database in WAL mode)', { timeout: 120_000 }, async () => {
    const db = new DatabaseSync(join(dir, 'conformance.db'));
    db.exec('PRAGMA journal_mode = WAL');
    await conformance((table) => sqliteSaver(db, { table }), async (table, key) => {
      db.prepare(`UPDATE "${table}" SET value = 'not a checkpoint' WHERE key = ?`).run(key);
    });
    db.close();
  });

  test('hostile table names and options are a ConfigError, before the database is touched', () => {
    const db = new DatabaseSync(':memory:');
    for (const table of [...HOSTILE, 'sqlite_master', 'SQLITE_x']) {
      assert.throws(() => sqliteSaver(db, { table }), (e) => e instanceof ConfigError && /options\.table/.test(e.message), String(table));
    }
    assert.throws(() => sqliteSaver(db, { tabel: 'x' }), /options\.tabel: unknown option/);
    assert.throws(() => sqliteSaver(db, { busyTimeoutMs: -1 }), /busyTimeoutMs/);
    assert.throws(() => sqliteSaver({}), /sqliteSaver\(db\): expected a node:sqlite DatabaseSync/);
    assert.deepEqual(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all(), [], 'no table was made');
  });

  test('the table is made on first use, keys list in byte order, values are never read by a listing', async () => {
    const db = new DatabaseSync(':memory:');
    const saver = sqliteSaver(db, { table: 'cps' });
    assert.deepEqual(db.prepare("SELECT name FROM sqlite_master WHERE name = 'cps'").all(), [], 'nothing before the first call');
    const { a } = countingAgent();
    // Code point order (= UTF-8 byte order): 'Z' < 'a' < 'é' < '\uFFFD' < '😀' (UTF-16 order would put 😀 first).
    for (const id of ['😀', '\uFFFD', 'é', 'a', 'Z']) await a.session(saver, id).prompt('Plan.');
    assert.deepEqual((await listSessions(saver)).map((s) => s.key), ['Z', 'a', 'é', '\uFFFD', '😀']);
    const plan = db.prepare("EXPLAIN QUERY PLAN SELECT key, summary FROM cps WHERE part = 0 AND key >= 'a' AND key < 'b' ORDER BY key").all();
    assert.match(plan.map((r) => r.detail).join('; '), /USING COVERING INDEX cps_heads/, 'the listing reads the partial index only');
    const sessions = db.prepare("EXPLAIN QUERY PLAN SELECT key, summary FROM cps WHERE part = 0 AND instr(key, '#~') = 0 AND key >= 'a' AND key < 'b' ORDER BY key").all();
    assert.match(sessions.map((r) => r.detail).join('; '), /USING COVERING INDEX cps_sessions/, 'listSessions reads the index of sessions');
    // What listSessions asks the store: sessions only, from that index (a store without listHeads lists all).
    const asked = [];
    const trace = new DatabaseSync(':memory:');
    const original = trace.prepare.bind(trace);
    trace.prepare = (sql) => { asked.push(sql); return original(sql); };
    const traced = sqliteSaver(trace, { table: 'cps' });
    await a.session(traced, 'one').prompt('Plan.');
    asked.length = 0;
    assert.deepEqual((await listSessions(traced)).map((s) => s.key), ['one']);
    assert.deepEqual(asked.filter((q) => /^SELECT key, summary/.test(q)), [`SELECT key, summary FROM "cps" WHERE part = 0 AND instr(key, '#~') = 0 ORDER BY key`]);
  });

  test("the README's schema is the table sqliteSaver makes", async () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const sql = readme.match(/^```sql\n([\s\S]*?)^```/m)?.[1];
    assert.ok(sql, 'a ```sql block in the README');
    const documented = new DatabaseSync(':memory:');
    documented.exec(sql);
    const made = new DatabaseSync(':memory:');
    await sqliteSaver(made).list('');
    const shape = (db) => ({
      columns: db.prepare("SELECT name, type, \"notnull\", pk FROM pragma_table_info('resumable_agent_checkpoints')").all().map((r) => ({ ...r })),
      indexes: db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL").all().map((r) => r.name),
    });
    assert.deepEqual(shape(documented), shape(made));
  });

  test('two processes racing replies on one database file: exactly one runs', { timeout: 120_000 }, async () => {
    const file = join(dir, 'race.db');
    const db = new DatabaseSync(file);
    db.exec('PRAGMA journal_mode = WAL');
    const store = { kind: 'sqlite', file, table: 'race' };
    const { a, ran } = countingAgent();
    const paused = await a.session(sqliteSaver(db, { table: 'race' }), 'conv').prompt('Plan.');
    assert.equal(paused.question, 'When?');
    const out = await race(6, ['reply', JSON.stringify(store), 'conv', 'Friday']);
    const won = out.filter((o) => o.ok);
    assert.equal(won.length, 1, JSON.stringify(out));
    assert.equal(won[0].text, 'due Friday');
    for (const o of out.filter((x) => !x.ok)) assert.ok(['SessionBusyError', 'SessionNotFoundError', 'DecisionError'].includes(o.name), JSON.stringify(o));
    assert.equal(out.reduce((n, o) => n + o.ran.lookup + o.ran.ask, 0) + ran.lookup + ran.ask, 2, 'each tool ran once, over all processes');
    db.close();
  });

  test('SIGKILL in the middle of saves leaves every session loadable, and it goes on', { timeout: 120_000 }, async () => {
    const file = join(dir, 'killed.db');
    const setup = new DatabaseSync(file);
    setup.exec('PRAGMA journal_mode = WAL');
    setup.close();
    const store = { kind: 'sqlite', file, table: 'killed' };
    for (const wait of [150, 400, 900]) {
      const child = spawn(process.execPath, ['--no-warnings', CHILD, 'churn', JSON.stringify(store), '3'], { stdio: ['ignore', 'pipe', 'inherit'] });
      const exited = new Promise((r) => child.once('exit', (code, signal) => r(signal ?? code)));
      const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
      assert.equal((await lines.next()).value, 'ready');
      await new Promise((r) => setTimeout(r, wait));
      child.kill('SIGKILL');
      assert.equal(await exited, 'SIGKILL', 'the writer was still saving when killed');
      const db = new DatabaseSync(file);
      assert.equal(db.prepare('PRAGMA integrity_check').get().integrity_check, 'ok');
      const saver = sqliteSaver(db, { table: 'killed' });
      const { a } = countingAgent({ size: 200_000 });
      for (const s of await listSessions(saver)) {
        const session = a.session(saver, s.key);
        const cp = await session.checkpoint();
        assert.ok(cp === null || Array.isArray(cp.messages), `session ${s.key} loads`);
        if (cp === null) continue;
        // Paused: answered; killed half-way: resumed from its last step (then answered if it pauses); killed
        // while its completed run was being deleted: busy until that deletion is stale (a later prompt ends it).
        let out;
        try {
          out = cp.interrupts?.length ? await session.reply('after') : await session.resume();
        } catch (e) {
          assert.ok(e instanceof SessionBusyError && /being deleted/.test(e.message), `session ${s.key}: ${e}`);
          assert.match(cp.messages.at(-1).content.find?.((b) => b.type === 'text')?.text ?? String(cp.messages.at(-1).content), /^due /, 'its run had completed');
          continue;
        }
        if (out.question) out = await session.reply('after');
        assert.match(out.text, /^due /, `session ${s.key} goes on`);
      }
      db.close();
    }
  });

  test('a second connection waits for the write lock (busy timeout), or fails at once when it is 0', { timeout: 60_000 }, async () => {
    const file = join(dir, 'busy.db');
    const db = new DatabaseSync(file);
    const saver = sqliteSaver(db, { table: 'busy' });
    const { a } = countingAgent();
    await a.session(saver, 'first').prompt('Plan.');
    // Another process holds the write lock for 400 ms.
    const holder = spawn(process.execPath, ['--no-warnings', '-e', `
      const { DatabaseSync } = require('node:sqlite');
      const db = new DatabaseSync(${JSON.stringify(file)});
      db.exec('BEGIN IMMEDIATE'); console.log('locked');
      setTimeout(() => { db.exec('COMMIT'); db.close(); }, 400);`], { stdio: ['ignore', 'pipe', 'inherit'] });
    await createInterface({ input: holder.stdout })[Symbol.asyncIterator]().next();
    const started = Date.now();
    const paused = await a.session(saver, 'second').prompt('Plan.');
    assert.equal(paused.question, 'When?', 'saved after the lock was released');
    assert.ok(Date.now() - started >= 200, 'it waited');
    await new Promise((r) => holder.once('exit', r));

    const impatient = new DatabaseSync(file);
    const refusing = sqliteSaver(impatient, { table: 'busy', busyTimeoutMs: 0 });
    const holder2 = spawn(process.execPath, ['--no-warnings', '-e', `
      const { DatabaseSync } = require('node:sqlite');
      const db = new DatabaseSync(${JSON.stringify(file)});
      db.exec('BEGIN IMMEDIATE'); console.log('locked');
      setTimeout(() => { db.exec('COMMIT'); db.close(); }, 300);`], { stdio: ['ignore', 'pipe', 'inherit'] });
    await createInterface({ input: holder2.stdout })[Symbol.asyncIterator]().next();
    await assert.rejects(a.session(refusing, 'third').prompt('Plan.'), (e) => e instanceof SaverError && e.code === 'BACKEND' && /locked/.test(e.message));
    await new Promise((r) => holder2.once('exit', r));
    db.close();
    impatient.close();
  });

  test('a tool result past maxCheckpointBytes is not kept (the model is told, naming the limit); nothing over it is written', { timeout: 60_000 }, async () => {
    const db = new DatabaseSync(':memory:');
    const saver = sqliteSaver(db, { table: 'limits' });
    const { a, ran } = countingAgent({ size: 5_000_000, limits: { maxCheckpointBytes: 4 * 1024 * 1024 } });
    const paused = await a.session(saver, 'conv').prompt('Plan.');
    const result = paused.checkpoint.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).find((b) => b.type === 'tool_result');
    assert.equal(result.isError, true);
    assert.match(result.content, /at most 4194304 \(limits\.maxCheckpointBytes\)/);
    assert.equal(db.prepare('SELECT max(length(value)) AS n FROM limits').get().n < 4194304, true, 'no value over the limit was written');
    assert.equal((await a.session(saver, 'conv').reply('Monday')).text, 'due Monday', 'the session goes on');
    assert.deepEqual(ran, { lookup: 1, ask: 1 });
  });
});

describe('d1Saver row splitting (over node:sqlite; the real D1 runs in tests/workers)', () => {
  test('hostile names, _cf_ included, are a ConfigError', () => {
    const db = d1Over(new DatabaseSync(':memory:'));
    for (const table of [...HOSTILE, '_cf_KV', '_CF_x', 'sqlite_x']) {
      assert.throws(() => d1Saver(db, { table }), (e) => e instanceof ConfigError && /d1Saver options\.table/.test(e.message), String(table));
    }
    assert.throws(() => d1Saver({ prepare() {} }), /d1Saver\(db\): expected a D1 database binding/);
  });

  test('passes the conformance suite', { timeout: 120_000 }, async () => {
    const raw = new DatabaseSync(':memory:');
    await conformance((table) => d1Saver(d1Over(raw), { table }), async (table, key) => {
      raw.prepare(`UPDATE "${table}" SET value = 'not a checkpoint' WHERE key = ?`).run(key);
    });
  });

  test('a 3 MB tool result is stored in rows of at most 2,000,000 bytes and reads back whole; a torn value is refused', { timeout: 60_000 }, async () => {
    const raw = new DatabaseSync(':memory:');
    const saver = d1Saver(d1Over(raw), { table: 'big' });
    const { a, ran } = countingAgent({ size: 3_000_000 });
    const paused = await a.session(saver, 'conv').prompt('Plan.');
    const rows = raw.prepare('SELECT key, part, length(CAST(key AS BLOB)) + length(CAST(coalesce(summary, \'\') AS BLOB)) + length(CAST(value AS BLOB)) AS bytes FROM big ORDER BY key, part').all();
    assert.ok(rows.every((r) => r.bytes <= 2_000_000), `every row within D1's limit: ${Math.max(...rows.map((r) => r.bytes))}`);
    assert.ok(rows.some((r) => r.part > 0), 'some value spans several rows');
    assert.deepEqual(await a.session(saver, 'conv').checkpoint(), paused.checkpoint, 'reads back whole');
    assert.equal((await a.session(saver, 'conv', { keepCompleted: true }).reply('Tuesday')).text, 'due Tuesday');
    assert.deepEqual(ran, { lookup: 1, ask: 1 });
    // Behind the saver's back: a value's second row from another write.
    const split = raw.prepare('SELECT key FROM big WHERE part = 1 LIMIT 1').get();
    raw.prepare("UPDATE big SET token = 'someone else' WHERE key = ? AND part = 1").run(split.key);
    await assert.rejects(saver.get(split.key), (e) => e instanceof SaverError && /spans 2 rows; 1 of them are there/.test(e.message));
  });

  test('a key and summary that leave no room in a row are TOO_LARGE, naming the row limit, before anything is written', async () => {
    const raw = new DatabaseSync(':memory:');
    const saver = d1Saver(d1Over(raw), { table: 'wide' });
    const cp = { version: 2, messages: [{ role: 'user', content: 'x' }], iterations: 0, usage: { inputTokens: 0, outputTokens: 0 } };
    await assert.rejects(saver.put('k'.repeat(1_999_000), cp), (e) => e instanceof SaverError && e.code === 'TOO_LARGE' && /2000000/.test(e.message));
    assert.equal(raw.prepare('SELECT count(*) AS n FROM wide').get().n, 0);
  });

  test('an overwrite with a shorter value leaves no rows of the longer one', async () => {
    const raw = new DatabaseSync(':memory:');
    const saver = d1Saver(d1Over(raw), { table: 'shrink' });
    const cp = (n) => ({ version: 2, messages: [{ role: 'user', content: 'x'.repeat(n) }], iterations: 0, usage: { inputTokens: 0, outputTokens: 0 } });
    await saver.put('k', cp(4_500_000));
    assert.equal(raw.prepare('SELECT count(*) AS n FROM shrink').get().n, 3);
    await saver.put('k', cp(10));
    assert.equal(raw.prepare('SELECT count(*) AS n FROM shrink').get().n, 1);
    assert.equal((await saver.get('k')).messages[0].content, 'x'.repeat(10));
    // A conditional write that loses writes no row at all.
    await assert.rejects(saver.put('k', cp(4_500_000), { ifStep: 9 }), (e) => e.code === 'CONFLICT');
    assert.equal(raw.prepare('SELECT count(*) AS n FROM shrink').get().n, 1);
  });
});

describe('postgresSaver (a real server on 127.0.0.1)', () => {
  let server;
  let pool;
  before(async () => {
    server = await startPostgres();
    pool = new pg.Pool({ ...server.config, max: 10 });
  });
  after(async () => {
    await pool?.end();
    server?.stop();
  });

  test('passes the saver conformance suite through a Pool and through one shared Client', { timeout: 180_000 }, async () => {
    const corrupt = async (table, key) => { await pool.query(`UPDATE "${table}" SET value = 'not a checkpoint' WHERE key = $1`, [key]); };
    await conformance((table) => postgresSaver(pool, { table }), corrupt);
    const client = new pg.Client(server.config);
    await client.connect();
    const warnings = [];
    const onWarning = (w) => warnings.push(w.message);
    process.on('warning', onWarning);
    await conformance((table) => postgresSaver(client, { table }), corrupt);
    process.off('warning', onWarning);
    assert.deepEqual(warnings.filter((w) => /already executing a query/.test(w)), [], 'no overlapping queries on the Client');
    await client.end();
  });

  test('hostile table and schema names are a ConfigError; a schema is used when given', async () => {
    for (const table of [...HOSTILE, 'pg_class']) {
      assert.throws(() => postgresSaver(pool, { table }), (e) => e instanceof ConfigError && /options\.table/.test(e.message), String(table));
      assert.throws(() => postgresSaver(pool, { schema: table, table: 'ok' }), (e) => e instanceof ConfigError && /options\.schema/.test(e.message), String(table));
    }
    assert.throws(() => postgresSaver({}), /expected a pg Pool or Client/);
    await pool.query('CREATE SCHEMA IF NOT EXISTS agents');
    const saver = postgresSaver(pool, { schema: 'agents', table: 'runs' });
    const { a } = countingAgent();
    await a.session(saver, 'conv').prompt('Plan.');
    const { rows } = await pool.query("SELECT count(*)::int AS n FROM agents.runs WHERE key = 'conv'");
    assert.equal(rows[0].n, 1);
    const missing = postgresSaver(pool, { schema: 'nowhere', table: 'runs' });
    await assert.rejects(a.session(missing, 'conv').prompt('Plan.'), (e) => e instanceof SaverError && /schema "nowhere" does not exist/.test(e.message));
  });

  test('keys list in byte order (COLLATE "C"), in a database whose collation is another (ICU en-US)', async () => {
    await pool.query("CREATE DATABASE ordered TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C'");
    const other = new pg.Pool({ ...server.config, database: 'ordered', max: 2 });
    try {
      const { rows } = await other.query("SELECT array_agg(k ORDER BY k) AS o FROM (VALUES ('Z'), ('a')) AS t(k)");
      assert.deepEqual(rows[0].o, ['a', 'Z'], "the database's own order is not byte order");
      const saver = postgresSaver(other, { table: 'ordered' });
      const { a } = countingAgent();
      for (const id of ['😀', '\uFFFD', 'é', 'a', 'Z']) await a.session(saver, id).prompt('Plan.');
      assert.deepEqual((await listSessions(saver)).map((s) => s.key), ['Z', 'a', 'é', '\uFFFD', '😀']);
      assert.deepEqual((await listSessions(saver, 'Z')).map((s) => s.key), ['Z'], 'a prefix is a byte range');
    } finally {
      await other.end();
    }
  });

  test('many processes replying to one paused session at once: exactly one runs', { timeout: 120_000 }, async () => {
    const store = { kind: 'postgres', config: server.config, table: 'race' };
    const { a, ran } = countingAgent();
    await a.session(postgresSaver(pool, { table: 'race' }), 'conv').prompt('Plan.');
    const out = await race(6, ['reply', JSON.stringify(store), 'conv', 'Friday']);
    const won = out.filter((o) => o.ok);
    assert.equal(won.length, 1, JSON.stringify(out));
    for (const o of out.filter((x) => !x.ok)) assert.ok(['SessionBusyError', 'SessionNotFoundError', 'DecisionError'].includes(o.name), JSON.stringify(o));
    assert.equal(out.reduce((n, o) => n + o.ran.lookup + o.ran.ask, 0) + ran.lookup + ran.ask, 2, 'each tool ran once, over all processes');
    // And 30 concurrent replies in this process, through the one pool.
    await a.session(postgresSaver(pool, { table: 'race' }), 'conv2').prompt('Plan.');
    const local = await Promise.allSettled(Array.from({ length: 30 }, (_, i) => a.session(postgresSaver(pool, { table: 'race' }), 'conv2').reply(`d${i}`)));
    assert.equal(local.filter((r) => r.status === 'fulfilled').length, 1);
  });

  test('a connection killed in the middle of a save is a SaverError; nothing is torn and the next call works', { timeout: 60_000 }, async () => {
    const saver = postgresSaver(pool, { table: 'killed' });
    const { a, ran } = countingAgent();
    const paused = await a.session(saver, 'conv').prompt('Plan.');
    // Another transaction writes the key of the reply's second record and holds it uncommitted, so the reply's
    // write of it waits (after its first record, with the tool's result, is saved); then that connection is killed.
    const second = `conv#~${String(paused.checkpoint.thread.step + 2).padStart(10, '0')}`;
    const holder = await pool.connect();
    await holder.query('BEGIN');
    await holder.query("INSERT INTO killed (key, part, value) VALUES ($1, 0, 'held')", [second]);
    const reply = a.session(saver, 'conv', { keepCompleted: true }).reply('Friday');
    reply.catch(() => {});
    let killed = [];
    try {
      for (let i = 0; i < 200 && killed.length === 0; i += 1) {
        await new Promise((r) => setTimeout(r, 25));
        const { rows } = await pool.query(`SELECT query, pg_terminate_backend(pid) AS t FROM pg_stat_activity
          WHERE wait_event_type = 'Lock' AND query LIKE '%"killed"%' AND pid <> $1`, [holder.processID]);
        killed = rows.map((r) => r.query.slice(0, 40));
      }
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    assert.equal(killed.length, 1, 'the saving connection was found waiting and killed');
    await assert.rejects(reply, (e) => e instanceof SaverError && e.code === 'BACKEND' && /postgresSaver: put of key "conv#~\d+" failed: terminating connection/.test(e.message)
      && Array.isArray(e.checkpoint?.messages), 'a SaverError naming the key, with the last checkpoint');
    // Loads whole (the reply's first record is there), and resume() finishes what the killed save cut short.
    const cp = await a.session(saver, 'conv').checkpoint();
    assert.ok(cp && cp.messages.length >= paused.checkpoint.messages.length, 'the session loads');
    const next = await a.session(saver, 'conv', { keepCompleted: true }).resume();
    assert.equal(next.text, 'due Friday', 'the next call works through the same pool');
    assert.deepEqual(ran, { lookup: 1, ask: 1 }, 'no tool ran twice');
  });
});
