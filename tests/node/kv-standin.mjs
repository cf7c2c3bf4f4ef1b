// A Workers KV binding stand-in with production's rules, which local workerd does not enforce: one write
// (put or delete) per second to a key — a faster one fails as production answers, `429 Too Many Requests` —,
// keys of at most 512 bytes, values of at most 25 MiB, metadata of at most 1024 bytes, bulk reads of at
// most 100 keys. It counts what it is given.

const MAX_KEY = 512;
const MAX_VALUE = 25 * 1024 * 1024;
const MAX_METADATA = 1024;
const MAX_BULK = 100;

export function kvStandIn({ now = () => Date.now(), interval = 1000 } = {}) {
  const data = new Map();
  const lastWrite = new Map();
  const counts = { puts: 0, deletes: 0, gets: 0, bulkGets: 0, lists: 0, bytesWritten: 0, refused: 0 };
  const bytes = (s) => new TextEncoder().encode(s).length;
  const write = (key) => {
    if (bytes(key) > MAX_KEY) throw new Error(`KV PUT failed: 414 UTF-8 encoded length of ${bytes(key)} exceeds key length limit of ${MAX_KEY}.`);
    const t = now();
    const last = lastWrite.get(key);
    if (last !== undefined && t - last < interval) {
      counts.refused += 1;
      throw new Error(`KV PUT failed: 429 Too Many Requests (${JSON.stringify(key)} written ${t - last} ms ago)`);
    }
    lastWrite.set(key, t);
  };
  return {
    data,
    counts,
    /** Bytes kept: every value and its metadata. */
    kept() {
      let n = 0;
      for (const v of data.values()) n += bytes(v.value) + (v.metadata === undefined ? 0 : bytes(JSON.stringify(v.metadata)));
      return n;
    },
    async get(key, type) {
      if (Array.isArray(key)) {
        if (key.length > MAX_BULK) throw new Error(`KV GET_BULK failed: at most ${MAX_BULK} keys`);
        counts.bulkGets += 1;
        return new Map(key.map((k) => [k, data.get(k)?.value ?? null]));
      }
      counts.gets += 1;
      void type;
      return data.get(key)?.value ?? null;
    },
    async getWithMetadata(key) {
      counts.gets += 1;
      const e = data.get(key);
      return { value: e?.value ?? null, metadata: e?.metadata ?? null };
    },
    async put(key, value, options = {}) {
      write(key);
      if (bytes(value) > MAX_VALUE) throw new Error('KV PUT failed: 413 Value length exceeds limit');
      const metadata = options.metadata === undefined ? undefined : JSON.parse(JSON.stringify(options.metadata));
      if (metadata !== undefined && bytes(JSON.stringify(metadata)) > MAX_METADATA) throw new Error('KV PUT failed: 413 Metadata length exceeds limit');
      counts.puts += 1;
      counts.bytesWritten += bytes(value) + (metadata === undefined ? 0 : bytes(JSON.stringify(metadata)));
      data.set(key, { value, metadata, ttl: options.expirationTtl });
    },
    async delete(key) {
      write(key);
      counts.deletes += 1;
      data.delete(key);
    },
    async list({ prefix = '', cursor } = {}) {
      counts.lists += 1;
      const all = [...data.keys()].filter((k) => k.startsWith(prefix)).sort();
      const start = cursor ? Number(cursor) : 0;
      const page = all.slice(start, start + 1000);
      const done = start + 1000 >= all.length;
      return { keys: page.map((name) => ({ name, metadata: data.get(name).metadata })), list_complete: done, cursor: done ? undefined : String(start + 1000) };
    },
  };
}
