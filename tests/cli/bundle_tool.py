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

Operations that rewrite entry records or change lengths re-encode the whole
bundle (records, frames, head, trailer; unsigned, one frame per block as
before), every digest recomputed, the lie kept in both index and record:

    bundle_tool.py IN OUT set-kernel I NAME   entry I's kernel (index and record)
    bundle_tool.py IN OUT set-input I J PATH  entry I's recorded input J path
    bundle_tool.py IN OUT set-fingerprint FP  spirv bundle: fingerprint and
                                              record {target = FP}

    bundle_tool.py IN OUT set-payload-byte I OFF V  entry I's payload byte OFF
                                              becomes V (payload digest recomputed)
    bundle_tool.py IN OUT set-payload I FILE  entry I's payload becomes FILE's bytes
    bundle_tool.py IN OUT set-id-field I NAME VALUE
                                              entry I's id field NAME becomes VALUE
                                              (appended when absent) and its key.id
                                              the hash of its id fields again, as a
                                              writer of its own records would make it
    bundle_tool.py IN OUT set-created I SECONDS
                                              entry I's created time (not in its key)

A delta bundle (format 5 or 6, unsigned) of IN's namespace, as anyone can
write one (write_delta; tests/cli/hostile_delta.py writes the hostile ones):

    bundle_tool.py IN OUT delta SPEC          SPEC (JSON): {"version": 5|6,
                                              "created": N, "base_entries": N,
                                              "kept": [[NAME, KEY]], "removed":
                                              [[NAME, KEY]], "kept_digest": "right"
                                              | "wrong", "entries": [I, ...]}; KEY
                                              "in" (IN's key of NAME) or 64 hex digits

NAME and PATH take Python escapes (\\x1b, \\n). Records end in XXH3-128 and
frames are zstd: both come from the system's libxxhash and libzstd (ctypes),
the libraries kcache itself links.

BLAKE2b-256 (hashlib.blake2b, digest_size=32) is libsodium's
crypto_generichash with a 32-byte output and no key.
"""
import codecs
import ctypes
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
        assert self.version == 1, "bundle_tool.py edits format 1 only: export with --format-version 1"
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


class _Reader:
    def __init__(self, b: bytes, pos: int = 0):
        self.b, self.pos = b, pos

    def take(self, n):
        v = self.b[self.pos:self.pos + n]
        assert len(v) == n, "truncated"
        self.pos += n
        return v

    def u8(self):
        return self.take(1)[0]

    def u16(self):
        return struct.unpack("<H", self.take(2))[0]

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def bstr(self):
        return self.take(self.u32())

    def fields(self):
        return [(self.bstr(), self.bstr()) for _ in range(self.u32())]


def _str(v: bytes) -> bytes:
    return struct.pack("<I", len(v)) + v


def _fields(fs) -> bytes:
    return struct.pack("<I", len(fs)) + b"".join(_str(k) + _str(v) for k, v in fs)


class _XXH128(ctypes.Structure):
    _fields_ = [("low64", ctypes.c_uint64), ("high64", ctypes.c_uint64)]


def xxh3_128(data: bytes) -> bytes:
    """util::hash_bytes: XXH3-128 in canonical (big-endian) form."""
    lib = ctypes.CDLL("libxxhash.so.0")
    lib.XXH3_128bits.restype = _XXH128
    lib.XXH3_128bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    h = lib.XXH3_128bits(data, len(data))
    return struct.pack(">QQ", h.high64, h.low64)


def _zstd():
    lib = ctypes.CDLL("libzstd.so.1")
    p, n = ctypes.c_char_p, ctypes.c_size_t
    for name, res, args in (("ZSTD_findFrameCompressedSize", n, [p, n]),
                            ("ZSTD_getFrameContentSize", ctypes.c_ulonglong, [p, n]),
                            ("ZSTD_decompress", n, [p, n, p, n]),
                            ("ZSTD_compress", n, [p, n, p, n, ctypes.c_int]),
                            ("ZSTD_compressBound", n, [n]),
                            ("ZSTD_isError", ctypes.c_uint, [n])):
        getattr(lib, name).restype = res
        getattr(lib, name).argtypes = args
    return lib


class Record:
    """An entry record (core/entry.hpp, versions 1 to 3)."""

    def __init__(self, b: bytes):
        r = _Reader(b)
        assert r.take(4) == b"KCE\x01", "not an entry record"
        self.version = r.u16()
        self.kernel = r.bstr()
        self.key = r.take(32)
        self.id_fields = r.fields()
        self.ir_fields = r.fields()
        self.inputs = [(r.bstr(), r.take(16)) for _ in range(r.u32())]
        self.kind = r.u8()
        self.payload = r.bstr()
        self.payload_digest = r.take(16)
        self.created = r.u64()
        self.origin_kind = r.u8()
        self.origin = r.bstr()
        self.validation, self.validation_note = (r.u8(), r.bstr()) if self.version >= 2 else (1, b"")
        self.diagnostics = r.bstr() if self.version >= 3 else b""
        r.take(16)
        assert r.pos == len(b), "trailing bytes in a record"

    def encode(self) -> bytes:
        w = b"KCE\x01" + struct.pack("<H", self.version) + _str(self.kernel) + self.key
        w += _fields(self.id_fields) + _fields(self.ir_fields)
        w += struct.pack("<I", len(self.inputs)) + b"".join(_str(p) + h for p, h in self.inputs)
        w += bytes([self.kind]) + _str(self.payload) + self.payload_digest
        w += struct.pack("<Q", self.created) + bytes([self.origin_kind]) + _str(self.origin)
        if self.version >= 2:
            w += bytes([self.validation]) + _str(self.validation_note)
        if self.version >= 3:
            w += _str(self.diagnostics)
        return w + xxh3_128(w)


class Bundle:
    """A whole bundle, parsed (FORMAT.md), re-encodable with fresh digests."""

    def __init__(self, b: bytes):
        r = _Reader(b)
        assert r.take(4) == b"KCB\x1a", "not a bundle"
        self.version, flags, size = r.u16(), r.u16(), r.u32()
        self.created = r.u64()
        self.backend, self.fingerprint = r.bstr(), r.bstr()
        self.record_fields, self.tools = r.fields(), r.fields()
        self.codec, self.level, self.window_log, self.codec_flags, self.block_bytes = (
            r.u8(), r.u32(), r.u8(), r.u8(), r.u32())
        count = r.u32()
        r.u64()  # total_record_bytes: recomputed
        self.blocks = [r.u32() for _ in range(r.u32())]
        self.index = []
        for _ in range(count):
            self.index.append([r.bstr(), r.take(32), r.u8(), r.u64(), r.u64(), r.take(32)])
        assert r.pos == PREAMBLE + size, "header size"
        r.pos += (SIG_BLOCK if flags & 1 else 0) + 32
        z = _zstd()
        content = b""
        end = len(b) - TRAILER
        while r.pos < end:
            rest = b[r.pos:end]
            n = z.ZSTD_findFrameCompressedSize(rest, len(rest))
            assert not z.ZSTD_isError(n), "bad frame"
            cap = z.ZSTD_getFrameContentSize(rest, n)
            out = ctypes.create_string_buffer(max(cap, 1))
            got = z.ZSTD_decompress(out, cap, rest, n)
            assert not z.ZSTD_isError(got), "frame does not decompress"
            content += out.raw[:got]
            r.pos += n
        self.records, pos = [], 0
        for e in self.index:
            self.records.append(Record(content[pos:pos + e[4]]))
            pos += e[4]

    def encode(self) -> bytes:
        z = _zstd()
        frames, blobs, k = b"", [], 0
        for i, rec in enumerate(self.records):
            blob = rec.encode()
            e = self.index[i]
            e[0], e[3], e[4], e[5] = rec.kernel, len(rec.payload), len(blob), hashlib.blake2b(blob, digest_size=32).digest()
            blobs.append(blob)
        for n in self.blocks:
            data = b"".join(blobs[k:k + n])
            k += n
            cap = z.ZSTD_compressBound(len(data))
            out = ctypes.create_string_buffer(cap)
            got = z.ZSTD_compress(out, cap, data, len(data), 3)
            assert not z.ZSTD_isError(got)
            frames += out.raw[:got]
        body = struct.pack("<Q", self.created) + _str(self.backend) + _str(self.fingerprint)
        body += _fields(self.record_fields) + _fields(self.tools)
        body += struct.pack("<BIBBI", self.codec, self.level, self.window_log, self.codec_flags, self.block_bytes)
        body += struct.pack("<IQI", len(self.index), sum(e[4] for e in self.index), len(self.blocks))
        body += b"".join(struct.pack("<I", n) for n in self.blocks)
        for kernel, key, kind, psize, rsize, digest in self.index:
            body += _str(kernel) + key + struct.pack("<BQQ", kind, psize, rsize) + digest
        head = b"KCB\x1a" + struct.pack("<HHI", self.version, 0, len(body)) + body
        out = head + hashlib.blake2b(head, digest_size=32).digest() + frames
        out += b"KCBT" + struct.pack("<Q", len(out))
        return out + hashlib.blake2b(out, digest_size=32).digest()


def hash_fields(fields) -> bytes:
    """core hash_fields: each (name, value) as name, 0x00, u64 length, value;
    XXH3-128 of it all, canonical."""
    return xxh3_128(b"".join(k + b"\0" + struct.pack("<Q", len(v)) + v for k, v in fields))


def _compress(data: bytes) -> bytes:
    """One zstd frame of `data` that declares its size (ZSTD_compress does)."""
    z = _zstd()
    cap = z.ZSTD_compressBound(len(data))
    out = ctypes.create_string_buffer(max(cap, 1))
    got = z.ZSTD_compress(out, cap, data, len(data), 3)
    assert not z.ZSTD_isError(got)
    return out.raw[:got]


def write_delta(src: "Bundle", version: int, created: int, base_entries: int, kept, removed,
                kept_digest_right: bool = True, entries=(), base_name: bytes = b"base.kcb",
                base_digest: bytes = b"\xcd" * 32) -> bytes:
    """A delta bundle (FORMAT.md "Delta bundles, versions 5 and 6") of src's
    namespace, unsigned: kept and removed are [(name, 32-byte key)], entries
    src's records to ship (stored verbatim: form 0)."""
    assert version in (5, 6)
    recs = [src.records[i] for i in entries]
    blobs = [r.encode() for r in recs]
    body = struct.pack("<Q", created) + _str(src.backend) + _str(src.fingerprint)
    body += _fields(src.record_fields) + _fields(src.tools)
    body += struct.pack("<BIBBI", 1, 3, 20, 0, 64 << 20)
    body += struct.pack("<IQI", len(blobs), sum(len(b) for b in blobs), 1 if blobs else 0)
    if blobs:
        body += struct.pack("<I", len(blobs))
    for rec, blob in zip(recs, blobs):
        body += _str(rec.kernel) + rec.key + struct.pack("<BQQ", rec.kind, len(rec.payload), len(blob))
        body += hashlib.blake2b(blob, digest_size=32).digest()
    kept_digest = hashlib.blake2b(b"".join(_str(n) + k for n, k in kept), digest_size=32).digest()
    if not kept_digest_right:
        kept_digest = bytes([kept_digest[0] ^ 1]) + kept_digest[1:]
    body += base_digest + struct.pack("<I", base_entries)
    body += struct.pack("<I", len(kept)) + b"".join(_str(n) for n, _ in kept) + kept_digest
    body += struct.pack("<I", len(removed)) + b"".join(_str(n) for n, _ in removed)
    if version >= 6:
        body += _str(base_name)
        body += b"".join(hashlib.blake2b(_str(n) + k, digest_size=32).digest()[:4] for n, k in kept)
        body += b"".join(k for _, k in removed)
    stored = _compress(body)
    head = b"KCB\x1a" + struct.pack("<HHI", version, 0, len(stored)) + stored
    out = head + hashlib.blake2b(head, digest_size=32).digest()
    if blobs:  # one frame of transformed records, each verbatim (form 0)
        out += _compress(b"".join(bytes(14) + b for b in blobs))
    out += b"KCBT" + struct.pack("<Q", len(out))
    return out + hashlib.blake2b(out, digest_size=32).digest()


def _arg(text: str) -> bytes:
    return codecs.escape_decode(text.encode("utf-8", "surrogateescape"))[0]


def main():
    src, dst, op, *args = sys.argv[1:]
    b = bytearray(open(src, "rb").read())
    if op == "delta":
        import json
        m = Bundle(bytes(b))
        spec = json.load(open(args[0]))
        keys = {rec.kernel: rec.key for rec in m.records}

        def pairs(items):
            return [(n.encode(), keys[n.encode()] if k == "in" else bytes.fromhex(k)) for n, k in items]

        out = write_delta(m, spec["version"], spec["created"], spec["base_entries"], pairs(spec.get("kept", [])),
                          pairs(spec.get("removed", [])), spec.get("kept_digest", "right") == "right",
                          spec.get("entries", []))
        open(dst, "wb").write(out)
        return
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
    elif op in ("set-kernel", "set-input", "set-fingerprint", "set-payload-byte", "set-payload", "set-id-field",
                "set-created"):
        m = Bundle(bytes(b))
        if op == "set-created":
            m.records[int(args[0])].created = int(args[1])
        elif op == "set-id-field":
            rec = m.records[int(args[0])]
            name, value = _arg(args[1]), _arg(args[2])
            names = [k for k, _ in rec.id_fields]
            if name in names:
                rec.id_fields[names.index(name)] = (name, value)
            else:
                rec.id_fields.append((name, value))
            rec.key = hash_fields(rec.id_fields) + rec.key[16:]
            m.index[int(args[0])][1] = rec.key
        elif op in ("set-payload-byte", "set-payload"):
            rec = m.records[int(args[0])]
            if op == "set-payload":
                rec.payload = open(args[1], "rb").read()
            else:
                p = bytearray(rec.payload)
                p[int(args[1])] = int(args[2], 0)
                rec.payload = bytes(p)
            rec.payload_digest = xxh3_128(rec.payload)
        elif op == "set-kernel":
            m.records[int(args[0])].kernel = _arg(args[1])
        elif op == "set-input":
            rec = m.records[int(args[0])]
            j = int(args[1])
            rec.inputs[j] = (_arg(args[2]), rec.inputs[j][1])
        else:
            assert m.backend == b"spirv", "set-fingerprint is for spirv bundles"
            m.fingerprint = _arg(args[0])
            m.record_fields = [(b"target", m.fingerprint)]
        b = bytearray(m.encode())
    elif op == "version":
        struct.pack_into("<H", b, 4, int(args[0]))
    else:
        sys.exit(f"unknown operation {op}")
    open(dst, "wb").write(b)


if __name__ == "__main__":
    main()
