// fileSaver({ dir }) for Node: one file per key — the summary on its first line, the value after it — written
// to a temporary file, synced, and then moved into place. Safe for several processes sharing `dir`:
// - "write only if absent" (a session's step records) links the new file into place: exactly one writer wins;
// - "write only if at step n" holds a lock file while it compares and writes. A writer waits briefly for a
//   held lock; a lock left by a process that died (same host, pid gone) or older than 30 s is taken over by
//   one writer alone (renamed away first, checked, then replaced).
// File names are case-insensitive-safe ([a-z0-9_-] kept, every other byte %XX, so "Alice" and "alice" differ on
// macOS and Windows) and never a Windows device name; every suffix the saver adds is counted against the
// name length, so a key that does not fit is refused before anything is written. Errors never show `dir`.
import { link, mkdir, open, readFile, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { ConfigError } from './errors.js';
import { textStoreSaver, conditionHolds } from './sessions.js';

const SUFFIX = '.ckpt';
const LOCK = '.lock';
/** File names of at most 255 bytes (ext4, APFS, NTFS), with every suffix the saver adds. */
const MAX_NAME_BYTES = 255 - SUFFIX.length - LOCK.length;
const STALE_LOCK_MS = 30_000;
const LOCK_WAIT_MS = 3_000;
const STALE_TEMP_MS = 60_000;
const DEVICE = /^(con|prn|aux|nul|com[0-9]|lpt[0-9]|conin\$|conout\$)$/i;
/** This machine's name, asked when a lock is first taken (not at import: Deno asks permission for it). */
let host;
const HOST = () => (host ??= hostname());
/** Tokens of the locks this process holds now: a lock of this process with another token is an orphan. */
const HELD = new Set();

function storeError(code, message) {
  const e = new Error(message);
  e.code = code;
  return e;
}

/** A file system failure on `key`, without the path (it would show the server's directory). */
function failed(e, op, key) {
  if (e?.code === 'CONFLICT' || e?.code === 'KEY_LENGTH') return e;
  return storeError(e?.code ?? 'EIO', `file saver: ${op} of key ${JSON.stringify(key)} failed (${e?.code ?? e?.name ?? 'error'})`);
}

/** `key`'s bytes, those matching `kept` as they are, every other one as %XX. */
function escaped(key, kept) {
  let name = '';
  for (const b of new TextEncoder().encode(key)) {
    const c = String.fromCharCode(b);
    name += kept.test(c) ? c : `%${b.toString(16).padStart(2, '0').toUpperCase()}`;
  }
  return name;
}

/** A key as a file name: [a-z0-9_-] kept, every other byte %XX; a Windows device name escaped too. */
function fileName(key) {
  let name = escaped(key, /[a-z0-9_-]/);
  if (DEVICE.test(name)) name = `%${name.charCodeAt(0).toString(16).toUpperCase()}${name.slice(1)}`;
  if (key === '' || name.length > MAX_NAME_BYTES) {
    const e = storeError('KEY_LENGTH', `key ${JSON.stringify(key)} is ${name.length} bytes as a file name; at most ${MAX_NAME_BYTES}`);
    e.bytes = name.length;
    e.max = MAX_NAME_BYTES;
    throw e;
  }
  return name + SUFFIX;
}

/** The previous release's name for a key (capital letters kept), still read. */
function legacyFileName(key) {
  return escaped(key, /[A-Za-z0-9_-]/) + SUFFIX;
}

function keyOf(name) {
  return new TextDecoder().decode(Uint8Array.from(
    name.slice(0, -SUFFIX.length).match(/%[0-9A-F]{2}|[^%]/g) ?? [],
    (t) => (t.length === 3 ? parseInt(t.slice(1), 16) : t.charCodeAt(0)),
  ));
}

/** The first line of a file (the summary), without reading the rest. */
async function firstLine(path) {
  const handle = await open(path, 'r');
  try {
    let text = '';
    const buffer = Buffer.alloc(4096);
    for (let position = 0; ; position += buffer.length) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      const chunk = buffer.toString('utf8', 0, bytesRead);
      const end = chunk.indexOf('\n');
      if (end >= 0) return text + chunk.slice(0, end);
      text += chunk;
      if (bytesRead < buffer.length) return text;
    }
  } finally {
    await handle.close();
  }
}

const missing = (e) => e?.code === 'ENOENT';

/** A lock file's content (`{}` when unreadable as JSON), or null when it is gone. */
async function readJson(path) {
  return readFile(path, 'utf8').then((t) => { try { return JSON.parse(t); } catch { return {}; } }, () => null);
}

/**
 * True for a lock nobody holds any more: its process is gone (this host — this very process included, when
 * it holds no such token now), or it is older than 30 s. A lock being written is empty: not stale before 30 s.
 */
function stale(held, age) {
  if (held.host === HOST() && Number.isInteger(held.pid)) {
    if (held.pid === process.pid) return typeof held.token === 'string' && !HELD.has(held.token);
    if (dead(held.pid)) return true;
  }
  return age > STALE_LOCK_MS;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** True when process `pid` is gone (only knowable on this host). */
function dead(pid) {
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return e?.code === 'ESRCH';
  }
}

const KNOWN = new Set(['dir', 'mode']);

export function fileSaver(options) {
  const dir = options?.dir;
  if (typeof dir !== 'string' || dir === '') throw new ConfigError('fileSaver({ dir }): dir must be a directory path');
  for (const k of Object.keys(options)) {
    if (!KNOWN.has(k)) throw new ConfigError(`fileSaver options.${k}: unknown option (fileSaver takes dir and mode)`);
  }
  const mode = options.mode ?? 0o600;
  if (!Number.isInteger(mode) || mode < 0 || mode > 0o777) throw new ConfigError('fileSaver options.mode: expected file permissions such as 0o600');
  let made;
  // The directory, made once; temporary files a crashed writer left behind are removed then.
  const ready = () => (made ??= (async () => {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const now = Date.now();
    for (const name of await readdir(dir).catch(() => [])) {
      if (!name.endsWith('.tmp') && !name.includes('.lock.stale-')) continue;
      const at = await stat(join(dir, name)).then((s) => s.mtimeMs, () => now);
      if (now - at > STALE_TEMP_MS) await rm(join(dir, name), { force: true });
    }
  })().catch((e) => {
    made = undefined;
    throw storeError(e?.code ?? 'EIO', `file saver: the directory cannot be used (${e?.code ?? e?.name ?? 'error'})`);
  }));
  const path = (key) => join(dir, fileName(key));

  async function tempFile(content) {
    const temp = join(dir, `.${randomBytes(9).toString('hex')}.tmp`);
    const handle = await open(temp, 'wx', mode);
    try {
      await handle.writeFile(content);
      await handle.sync();
    } finally {
      await handle.close();
    }
    return temp;
  }

  /**
   * Creates `file` (only if absent: EEXIST otherwise) naming this process as its holder with `token`, which
   * counts as held until the caller forgets it (HELD).
   */
  async function createHeld(file, token) {
    const handle = await open(file, 'wx', mode);
    HELD.add(token);
    try {
      await handle.writeFile(JSON.stringify({ token, pid: process.pid, host: HOST(), at: Date.now() }));
    } finally {
      await handle.close();
    }
  }

  /** Runs `fn` holding the lock of `target`; waits for a held lock, takes over a dead writer's. */
  async function withLock(target, fn, key) {
    const lock = `${target}${LOCK}`;
    const token = randomBytes(9).toString('hex');
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (let attempt = 0; ; attempt += 1) {
      try {
        await createHeld(lock, token);
        break;
      } catch (e) {
        if (e?.code !== 'EEXIST') throw e;
      }
      const held = await readJson(lock);
      if (held === null) continue; // released meanwhile
      const age = await stat(lock).then((s) => Date.now() - s.mtimeMs, () => 0);
      if (stale(held, age)) {
        await takeOver(lock, held.token);
        continue;
      }
      if (Date.now() > deadline) {
        const who = held.host === HOST() ? `process ${held.pid}` : `process ${held.pid} on ${held.host}`;
        throw storeError('CONFLICT', `another writer (${who}) has held this key for ${Math.round(age)} ms`);
      }
      await sleep(Math.min(5 * 2 ** Math.min(attempt, 4), 50) * (0.5 + Math.random()));
    }
    try {
      // Still ours? (A writer that judged it stale after 30 s could have replaced it.)
      const mine = await readFile(lock, 'utf8').then((t) => t.includes(token), () => false);
      if (!mine) throw storeError('CONFLICT', `the lock on key ${JSON.stringify(key)} was taken over`);
      return await fn();
    } finally {
      // Released only if still ours (a takeover after 30 s may have replaced it).
      const mine = await readFile(lock, 'utf8').then((t) => t.includes(token), () => false);
      if (mine) await rm(lock, { force: true });
      HELD.delete(token);
    }
  }

  /**
   * Removes lock `lock` if it still holds `staleToken`. Only the holder of the takeover claim (a file made
   * with O_EXCL) may: so no taker ever removes a lock another taker made meanwhile.
   */
  async function takeOver(lock, staleToken) {
    const claim = `${lock}.takeover`;
    const token = randomBytes(9).toString('hex');
    try {
      await createHeld(claim, token);
    } catch (e) {
      if (e?.code !== 'EEXIST') throw e;
      // Another taker is at it; its claim lives microseconds, unless it died.
      const other = await readJson(claim);
      const age = await stat(claim).then((s) => Date.now() - s.mtimeMs, () => 0);
      if (other !== null && stale(other, age)) await rm(claim, { force: true });
      await sleep(2);
      return;
    }
    try {
      if ((await readJson(lock))?.token === staleToken) await rm(lock, { force: true });
    } finally {
      await rm(claim, { force: true });
      HELD.delete(token);
    }
  }

  /** The file holding `key`: this release's name, or the previous release's if only that exists. */
  async function existing(key) {
    const name = path(key);
    const legacy = join(dir, legacyFileName(key));
    if (legacy === name) return name;
    return stat(name).then(() => name, () => stat(legacy).then(() => legacy, () => name));
  }

  async function read(key) {
    try {
      const text = await readFile(await existing(key), 'utf8');
      return text.slice(text.indexOf('\n') + 1);
    } catch (e) {
      if (missing(e)) return null;
      throw failed(e, 'get', key);
    }
  }

  return textStoreSaver({
    compareAndSet: true,
    async getText(key) {
      await ready();
      return read(key);
    },
    async getMany(keys) {
      await ready();
      return Promise.all(keys.map(read));
    },
    async putText(key, value, summary, condition) {
      await ready();
      const target = path(key);
      const content = `${summary}\n${value}`;
      let temp;
      try {
        temp = await tempFile(content);
        if (condition?.ifAbsent) {
          // Linking fails if the name exists: the check and the write are one step.
          const legacy = join(dir, legacyFileName(key));
          if (legacy !== target && await stat(legacy).then(() => true, () => false)) throw storeError('CONFLICT', `key ${JSON.stringify(key)} exists`);
          await link(temp, target).catch((e) => { throw e?.code === 'EEXIST' ? storeError('CONFLICT', `key ${JSON.stringify(key)} exists`) : e; });
          return;
        }
        if (!condition) {
          await rename(temp, target);
          temp = undefined;
          return;
        }
        await withLock(target, async () => {
          const current = await firstLine(await existing(key)).catch((e) => { if (missing(e)) return undefined; throw e; });
          if (!conditionHolds(condition, current)) throw storeError('CONFLICT', `key ${JSON.stringify(key)} changed`);
          await rename(temp, target);
          temp = undefined;
        }, key);
      } catch (e) {
        throw failed(e, 'put', key);
      } finally {
        if (temp) await rm(temp, { force: true });
      }
    },
    async delete(key) {
      await ready();
      for (const name of new Set([path(key), join(dir, legacyFileName(key))])) {
        await unlink(name).catch((e) => { if (!missing(e)) throw failed(e, 'delete', key); });
      }
    },
    async list(prefix) {
      await ready();
      const names = (await readdir(dir)).filter((n) => n.endsWith(SUFFIX) && !n.startsWith('.')).sort();
      const found = new Map();
      for (const name of names) {
        const key = keyOf(name);
        if (!key.startsWith(prefix)) continue;
        const summary = await firstLine(join(dir, name)).catch((e) => (missing(e) ? undefined : Promise.reject(failed(e, 'list', key))));
        // This release's name wins over the previous release's for the same key.
        if (summary !== undefined && (!found.has(key) || name === fileName(key))) found.set(key, summary);
      }
      return [...found].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, summary]) => ({ key, summary }));
    },
  });
}
