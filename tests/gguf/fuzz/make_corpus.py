#!/usr/bin/env python3
"""Writes the fuzz seeds in corpus/: tiny valid GGUF files (v2 and v3, every value type, nested
arrays, alignment 64, several tensor types). Run once; the outputs are committed."""
import os
import struct

here = os.path.dirname(os.path.abspath(__file__))


def s(x):
    x = x.encode()
    return struct.pack('<Q', len(x)) + x


def gguf(version, kvs, tensors, alignment=32):
    """kvs: list of (key, type id, encoded value); tensors: (name, dims, type, nbytes)."""
    out = struct.pack('<IIQQ', 0x46554747, version, len(tensors), len(kvs))
    for key, t, v in kvs:
        out += s(key) + struct.pack('<I', t) + v
    offset = 0
    for name, dims, t, nbytes in tensors:
        out += s(name) + struct.pack('<I', len(dims)) + b''.join(struct.pack('<Q', d) for d in dims)
        out += struct.pack('<IQ', t, offset)
        offset += (nbytes + alignment - 1) // alignment * alignment
    out += b'\0' * (-len(out) % alignment)
    for _, _, _, nbytes in tensors:
        out += bytes(range(nbytes % 256)) + b'\x01' * (nbytes - nbytes % 256)
        out += b'\0' * (-len(out) % alignment)
    return out


def arr(t, items):
    return struct.pack('<IQ', t, len(items)) + b''.join(items)


scalars = [
    ('t.u8', 0, struct.pack('<B', 7)), ('t.i8', 1, struct.pack('<b', -7)),
    ('t.u16', 2, struct.pack('<H', 7)), ('t.i16', 3, struct.pack('<h', -7)),
    ('t.u32', 4, struct.pack('<I', 7)), ('t.i32', 5, struct.pack('<i', -7)),
    ('t.f32', 6, struct.pack('<f', 0.5)), ('t.bool', 7, b'\x01'),
    ('t.str', 8, s('héllo')), ('t.u64', 10, struct.pack('<Q', 7)),
    ('t.i64', 11, struct.pack('<q', -7)), ('t.f64', 12, struct.pack('<d', 0.25)),
]
files = {
    'v3_values.gguf': gguf(3, scalars + [
        ('t.arr', 9, arr(4, [struct.pack('<I', i) for i in range(3)])),
        ('t.strs', 9, arr(8, [s('a'), s('bc')])),
        ('t.nested', 9, arr(9, [arr(0, [b'\x01', b'\x02']), arr(8, [s('x')])])),
    ], []),
    'v3_tensors.gguf': gguf(3, [('general.architecture', 8, s('deepseek2'))], [
        ('w.f32', [4, 2], 0, 32), ('w.q8_0', [32], 8, 34), ('w.f16', [2, 1, 1, 2], 1, 8)]),
    'v2_one_tensor.gguf': gguf(2, [('general.name', 8, s('v2'))], [('w', [4], 0, 16)]),
    'align64.gguf': gguf(3, [('general.alignment', 4, struct.pack('<I', 64))],
                         [('a', [8], 0, 32), ('b', [256], 12, 144)], alignment=64),
}
os.makedirs(os.path.join(here, 'corpus'), exist_ok=True)
for name, data in files.items():
    with open(os.path.join(here, 'corpus', name), 'wb') as f:
        f.write(data)
