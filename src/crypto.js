// Web Crypto for signed and sealed checkpoints (see crypto.rs). Every byte argument is a view into wasm
// memory that a later allocation may move, so each is copied before the first await.
const subtle = () => {
  const s = globalThis.crypto?.subtle;
  if (!s) throw new Error('this host has no Web Crypto (globalThis.crypto.subtle); signed checkpoints need it (Node 20 or later, Workers, browsers)');
  return s;
};

const HMAC = { name: 'HMAC', hash: 'SHA-256' };

export async function hmacSign(key, data) {
  const [k, d] = [key.slice(), data.slice()];
  const imported = await subtle().importKey('raw', k, HMAC, false, ['sign']);
  return new Uint8Array(await subtle().sign('HMAC', imported, d));
}

export async function hmacVerify(key, data, tag) {
  const [k, d, t] = [key.slice(), data.slice(), tag.slice()];
  const imported = await subtle().importKey('raw', k, HMAC, false, ['verify']);
  return subtle().verify('HMAC', imported, t, d);
}

export async function aesSeal(key, aad, plaintext) {
  const [k, a, p] = [key.slice(), aad.slice(), plaintext.slice()];
  const iv = globalThis.crypto.getRandomValues(new Uint8Array(12));
  const imported = await subtle().importKey('raw', k, 'AES-GCM', false, ['encrypt']);
  const sealed = new Uint8Array(await subtle().encrypt({ name: 'AES-GCM', iv, additionalData: a }, imported, p));
  const out = new Uint8Array(12 + sealed.length);
  out.set(iv, 0);
  out.set(sealed, 12);
  return out;
}

export async function aesOpen(key, aad, blob) {
  const [k, a, b] = [key.slice(), aad.slice(), blob.slice()];
  if (b.length < 12) return null;
  const imported = await subtle().importKey('raw', k, 'AES-GCM', false, ['decrypt']);
  try {
    return new Uint8Array(await subtle().decrypt({ name: 'AES-GCM', iv: b.subarray(0, 12), additionalData: a }, imported, b.subarray(12)));
  } catch {
    return null; // tampered, or another key: the caller reports it
  }
}
