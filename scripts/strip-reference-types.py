#!/usr/bin/env python3
"""Removes `reference-types` from a .wasm's `target_features` custom section, in place.

The precompiled std for wasm32-unknown-unknown is built with +reference-types, so the linked module
claims the feature even when our code is compiled with `-C target-feature=-reference-types`. wasm-bindgen
reads that section to choose its ABI; without the claim it keeps JS values in its JS heap slab instead of an
externref table. Only this custom section changes; code and the other sections are copied byte for byte.
"""
import sys


def leb(data, i):
    n = shift = 0
    while True:
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return n, i


def enc(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def main(path):
    data = open(path, 'rb').read()
    if data[:8] != b'\0asm\x01\0\0\0':
        sys.exit(f'{path}: not a wasm module')
    out, i, changed = bytearray(data[:8]), 8, False
    while i < len(data):
        sid = data[i]
        size, body = leb(data, i + 1)
        end = body + size
        section = data[i:end]
        if sid == 0:
            name_len, p = leb(data, body)
            if data[p:p + name_len] == b'target_features':
                p += name_len
                count, p = leb(data, p)
                kept = []
                for _ in range(count):
                    prefix = data[p]
                    n, q = leb(data, p + 1)
                    name = data[q:q + n]
                    if name != b'reference-types':
                        kept.append(bytes([prefix]) + enc(n) + name)
                    p = q + n
                payload = enc(name_len) + b'target_features' + enc(len(kept)) + b''.join(kept)
                section = bytes([0]) + enc(len(payload)) + payload
                changed = True
        out += section
        i = end
    if not changed:
        sys.exit(f'{path}: no target_features section')
    open(path, 'wb').write(out)


if __name__ == '__main__':
    main(sys.argv[1])
