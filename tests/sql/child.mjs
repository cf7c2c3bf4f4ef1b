// A process of the SQL saver tests. `node child.mjs <mode> <store JSON> …`:
//   reply <session> <answer>  loads the package and the saver, prints "ready", waits for "go" on stdin, replies to
//                             the session once and prints { ok, text, ran } or { ok: false, name, code, message }
//   churn <sessions>          saves steps of <sessions> sessions for ever, with large tool results (killed by the
//                             test with SIGKILL in the middle of a save; it resumes what an earlier one left)
import { DatabaseSync } from 'node:sqlite';
import { createInterface } from 'node:readline';
import { loadWasm, sqliteSaver, postgresSaver } from 'resumable-agent';
import { countingAgent } from './helpers.mjs';

const [mode, storeText, ...rest] = process.argv.slice(2);
const store = JSON.parse(storeText);
let close = () => {};

async function open() {
  if (store.kind === 'sqlite') {
    const db = new DatabaseSync(store.file);
    close = () => db.close();
    return sqliteSaver(db, { table: store.table });
  }
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ ...store.config, max: 2 });
  close = () => pool.end();
  return postgresSaver(pool, { table: store.table });
}

const saver = await open();
await loadWasm();

if (mode === 'reply') {
  const [session, answer] = rest;
  const { a, ran } = countingAgent();
  console.log('ready');
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) if (line === 'go') break;
  try {
    const out = await a.session(saver, session).reply(answer);
    console.log(JSON.stringify({ ok: true, text: out.text, ran }));
  } catch (e) {
    console.log(JSON.stringify({ ok: false, name: e?.name, code: e?.code, message: String(e?.message).slice(0, 300), ran }));
  }
  await close();
  process.exit(0);
}

if (mode === 'churn') {
  const sessions = Number(rest[0]);
  const { a } = countingAgent({ size: 200_000 });
  console.log('ready');
  for (let round = 0; ; round += 1) {
    for (let i = 0; i < sessions; i += 1) {
      const s = a.session(saver, `s${i}`);
      // Paused sessions get their answer, a run an earlier (killed) process left half-way is resumed, and a
      // completed session (deleted) starts again.
      // A completed session whose deletion a killed process left half-way is busy for a while (a later prompt
      // finishes the deletion once it is stale): left alone this round.
      const cp = await s.checkpoint();
      try {
        if (cp === null) await s.prompt(`round ${round}`);
        else if (cp.interrupts?.length) await s.reply(`r${round}`);
        else await s.resume();
      } catch (e) {
        if (!(e?.name === 'SessionBusyError' && /being deleted/.test(e.message))) throw e;
      }
    }
  }
}
