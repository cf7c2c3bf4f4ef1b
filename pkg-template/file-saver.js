// fileSaver({ dir }) for Node: one file per key — the summary on its first line, the checkpoint's JSON after
// it — written to a temporary file, synced, and renamed over the old one (atomic on POSIX). A conditional
// write (a session's claim) holds an exclusive lock file (O_EXCL) while it compares and writes, so of several
// writers — in this process or others sharing the directory — exactly one wins.
import { mkdir, open, readFile, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { textStoreSaver, ConfigError } from './api.js';

const SUFFIX = '.ckpt';
const MAX_NAME_BYTES = 240;
const STALE_LOCK_MS = 30_000;

function storeError(code, message) {
  const e = new Error(message);
  e.code = code;
  return e;
}

/** A key as a safe file name: [A-Za-z0-9_-] kept, every other byte as %XX (so no '.', '/', '..' or case tricks). */
function fileName(key) {
  let name = '';
  for (const b of new TextEncoder().encode(key)) {
    const c = String.fromCharCode(b);
    name += /[A-Za-z0-9_-]/.test(c) ? c : `%${b.toString(16).padStart(2, '0').toUpperCase()}`;
  }
  if (name.length + SUFFIX.length > MAX_NAME_BYTES || key === '') {
    const e = storeError('KEY_LENGTH', `key ${JSON.stringify(key)} is ${name.length} bytes as a file name; at most ${MAX_NAME_BYTES - SUFFIX.length}`);
    e.bytes = name.length;
    e.max = MAX_NAME_BYTES - SUFFIX.length;
    throw e;
  }
  return name + SUFFIX;
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

export function fileSaver(options) {
  const dir = options?.dir;
  if (typeof dir !== 'string' || dir === '') throw new ConfigError('fileSaver({ dir }): dir must be a directory path');
  let made;
  const ready = () => (made ??= mkdir(dir, { recursive: true }));
  const path = (key) => join(dir, fileName(key));

  async function writeAtomically(target, content) {
    const temp = `${target}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    const handle = await open(temp, 'wx');
    try {
      await handle.writeFile(content);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, target);
  }

  async function withLock(target, fn) {
    const lock = `${target}.lock`;
    for (let attempt = 0; ; attempt++) {
      try {
        const handle = await open(lock, 'wx');
        await handle.close();
        break;
      } catch (e) {
        if (e?.code !== 'EEXIST') throw e;
        const age = await stat(lock).then((s) => Date.now() - s.mtimeMs, () => 0);
        if (attempt === 0 && age > STALE_LOCK_MS) { await rm(lock, { force: true }); continue; } // a crashed writer's
        throw storeError('CONFLICT', 'another writer holds this key');
      }
    }
    try {
      return await fn();
    } finally {
      await rm(lock, { force: true });
    }
  }

  return textStoreSaver({
    compareAndSet: true,
    async getText(key) {
      await ready();
      try {
        const text = await readFile(path(key), 'utf8');
        return text.slice(text.indexOf('\n') + 1);
      } catch (e) {
        if (missing(e)) return null;
        throw e;
      }
    },
    async putText(key, value, summary, condition) {
      await ready();
      const target = path(key);
      const content = `${summary}\n${value}`;
      if (!condition) return writeAtomically(target, content);
      return withLock(target, async () => {
        const current = await firstLine(target).then((l) => JSON.parse(l), (e) => { if (missing(e)) return undefined; throw e; });
        const ok = condition.ifAbsent ? current === undefined : current !== undefined && (current.step ?? 0) === condition.ifStep;
        if (!ok) throw storeError('CONFLICT', `key ${JSON.stringify(key)} changed`);
        await writeAtomically(target, content);
      });
    },
    async delete(key) {
      await ready();
      await unlink(path(key)).catch((e) => { if (!missing(e)) throw e; });
    },
    async list(prefix) {
      await ready();
      const names = (await readdir(dir)).filter((n) => n.endsWith(SUFFIX)).sort();
      const out = [];
      for (const name of names) {
        const key = keyOf(name);
        if (!key.startsWith(prefix)) continue;
        const summary = await firstLine(join(dir, name)).catch((e) => (missing(e) ? undefined : Promise.reject(e)));
        if (summary !== undefined) out.push({ key, summary });
      }
      return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    },
  });
}
