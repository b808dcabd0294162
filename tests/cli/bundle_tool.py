#!/usr/bin/env python3
"""Test helper: rewrites fields of a kcache bundle (format v1, FORMAT.md) and
recomputes its head and trailer digests, so a test can hand `kcache import`
a bundle that is well-formed except for exactly the lie under test.

    bundle_tool.py IN OUT record-size I N     entry I declares record_size N
                                               (total_record_bytes adjusted)
    bundle_tool.py IN OUT rename I J          entry J gets entry I's kernel name
                                               (names must be equally long)
    bundle_tool.py IN OUT set-name I NAME     entry I's kernel name becomes NAME
                                               (as long as the old one)
    bundle_tool.py IN OUT version V           preamble format_version = V
                                               (digests left alone: readers
                                               check the version first)
    bundle_tool.py IN - info                  prints entry names and offsets

BLAKE2b-256 (hashlib.blake2b, digest_size=32) is libsodium's
crypto_generichash with a 32-byte output and no key.
"""
import hashlib
import struct
import sys

PREAMBLE = 12
SIG_BLOCK = 105
TRAILER = 44


class Head:
    def __init__(self, b: bytes):
        assert b[:4] == b"KCB\x1a", "not a bundle"
        self.version, self.flags, self.size = struct.unpack_from("<HHI", b, 4)
        self.pos = PREAMBLE
        self.b = b
        self.u64("created")
        self.str()  # backend
        self.str()  # fingerprint
        self.fields()
        self.fields()
        self.pos += 1 + 4 + 1 + 1 + 4  # codec, level, window_log, codec_flags, block_bytes
        self.count = self.u32()
        self.total_at = self.pos
        self.pos += 8
        blocks = self.u32()
        self.pos += 4 * blocks
        self.entries = []
        for _ in range(self.count):
            name_at = self.pos
            name = self.str()
            self.pos += 32 + 1 + 8  # key, kind, payload_size
            rs_at = self.pos
            self.pos += 8 + 32
            self.entries.append((name, name_at, rs_at))
        self.end = PREAMBLE + self.size + (SIG_BLOCK if self.flags & 1 else 0)

    def u32(self):
        v = struct.unpack_from("<I", self.b, self.pos)[0]
        self.pos += 4
        return v

    def u64(self, _=None):
        v = struct.unpack_from("<Q", self.b, self.pos)[0]
        self.pos += 8
        return v

    def str(self):
        n = self.u32()
        s = self.b[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def fields(self):
        for _ in range(self.u32()):
            self.str()
            self.str()


def redigest(b: bytearray, head: Head) -> bytearray:
    b[head.end:head.end + 32] = hashlib.blake2b(bytes(b[:head.end]), digest_size=32).digest()
    t = len(b) - TRAILER
    b[t + 12:] = hashlib.blake2b(bytes(b[:t + 12]), digest_size=32).digest()
    return b


def main():
    src, dst, op, *args = sys.argv[1:]
    b = bytearray(open(src, "rb").read())
    h = Head(bytes(b))
    if op == "info":
        for i, (name, _, _) in enumerate(h.entries):
            print(i, name)
        return
    if op == "record-size":
        i, n = int(args[0]), int(args[1])
        old = struct.unpack_from("<Q", b, h.entries[i][2])[0]
        struct.pack_into("<Q", b, h.entries[i][2], n)
        total = struct.unpack_from("<Q", b, h.total_at)[0]
        struct.pack_into("<Q", b, h.total_at, total - old + n)
        redigest(b, h)
    elif op == "rename":
        i, j = int(args[0]), int(args[1])
        ni, ai, _ = h.entries[i]
        nj, aj, _ = h.entries[j]
        assert len(ni.encode()) == len(nj.encode()), "names differ in length"
        b[aj:aj + 4 + len(nj.encode())] = b[ai:ai + 4 + len(ni.encode())]
        redigest(b, h)
    elif op == "set-name":
        i, name = int(args[0]), args[1].encode()
        old, at, _ = h.entries[i]
        assert len(old.encode()) == len(name), "names differ in length"
        b[at + 4:at + 4 + len(name)] = name
        redigest(b, h)
    elif op == "version":
        struct.pack_into("<H", b, 4, int(args[0]))
    else:
        sys.exit(f"unknown operation {op}")
    open(dst, "wb").write(b)


if __name__ == "__main__":
    main()
