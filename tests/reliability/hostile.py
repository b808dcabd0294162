#!/usr/bin/env python3
"""Hostile bundles for b_bundles_cli.sh, written from FORMAT.md
(lib/kcache/bundle/FORMAT.md) with correct digests, so that each reaches the
check it targets rather than a digest mismatch.

  hostile.py bomb BUNDLE OUT       BUNDLE's one zstd frame replaced by one that
                                   declares the indexed size but expands to 4 GiB
  hostile.py million OUT           a spirv/vulkan1.2 head indexing 10^6 tiny
                                   entries, then a trailer (no frames)
  hostile.py reseal BUNDLE         recompute BUNDLE's head digest and trailer in place
BLAKE2b-256 here is hashlib's (unkeyed, 32-byte digest = libsodium
crypto_generichash)."""
import hashlib
import struct
import sys


def b256(data):
    return hashlib.blake2b(data, digest_size=32).digest()


def head_size(b):
    header_size = struct.unpack_from("<I", b, 8)[0]
    signed = b[6] & 1
    return 12 + header_size + (105 if signed else 0) + 32


def trailer(before):
    t = b"KCBT" + struct.pack("<Q", len(before))
    return t + b256(before + t)


def reseal(b):
    h = head_size(b) - 32
    b = b[:h] + b256(b[:h]) + b[h + 32:]
    body = b[:-44]
    return body + trailer(body)


def frame(content, zeros, declared, window_log=20):
    """A zstd frame by hand (RFC 8878): raw blocks of `content`, then RLE
    blocks of `zeros` zero bytes, declaring `declared` bytes, no checksum."""
    f = bytearray(b"\x28\xb5\x2f\xfd\xc0" + bytes([(window_log - 10) << 3]) + struct.pack("<Q", declared))
    max_block = min(1 << window_log, 128 << 10)

    def block(last, kind, size):
        f.extend(struct.pack("<I", int(last) | kind << 1 | size << 3)[:3])

    pos = 0
    while pos < len(content):
        n = min(max_block, len(content) - pos)
        block(pos + n == len(content) and zeros == 0, 0, n)
        f.extend(content[pos:pos + n])
        pos += n
    while zeros > 0:
        n = min(max_block, zeros)
        zeros -= n
        block(zeros == 0, 1, n)
        f.append(0)
    return bytes(f)


def bomb_from(b):
    """`b` (one block) with its frame replaced by a 4 GiB bomb that declares
    the indexed total; returns the new bytes and the entry count."""
    h = head_size(b)
    body = b[12:12 + struct.unpack_from("<I", b, 8)[0]]
    # Walk the header body (FORMAT.md "Header body") to total_record_bytes.
    p = 8
    def s():
        nonlocal p
        n = struct.unpack_from("<I", body, p)[0]
        p += 4 + n
    def fields():
        nonlocal p
        n = struct.unpack_from("<I", body, p)[0]
        p += 4
        for _ in range(n):
            s(); s()
    s(); s(); fields(); fields()
    p += 1 + 4 + 1 + 1 + 4
    entries = struct.unpack_from("<I", body, p)[0]
    total = struct.unpack_from("<Q", body, p + 4)[0]
    blocks = struct.unpack_from("<I", body, p + 12)[0]
    if blocks != 1:
        raise SystemExit(f"bundle has {blocks} blocks; want 1")
    new = b[:h] + frame(b"", 4 << 30, total)
    return new + trailer(new), entries


def million(n=1_000_000, per_block=1000):
    def s(x):
        x = x.encode()
        return struct.pack("<I", len(x)) + x
    names = [f"k{i}" for i in range(n)]
    sizes = [104 + 4 + len(k) for k in names]
    body = bytearray()
    body += struct.pack("<Q", 1_700_000_000) + s("spirv") + s("vulkan1.2")
    body += struct.pack("<I", 1) + s("target") + s("vulkan1.2")
    body += struct.pack("<I", 0)  # tool versions
    body += struct.pack("<BiBBI", 1, 3, 20, 0, 1 << 20)
    body += struct.pack("<IQI", n, sum(sizes), n // per_block)
    body += struct.pack("<I", per_block) * (n // per_block)
    zeros = bytes(32)
    for k, size in zip(names, sizes):
        body += s(k) + zeros + b"\x01" + struct.pack("<QQ", 4, size) + zeros
    head = b"KCB\x1a" + struct.pack("<HHI", 1, 0, len(body)) + bytes(body)
    head += b256(head)
    return head + trailer(head)


def main():
    cmd = sys.argv[1]
    if cmd == "bomb":
        data, _ = bomb_from(open(sys.argv[2], "rb").read())
        open(sys.argv[3], "wb").write(data)
    elif cmd == "million":
        open(sys.argv[2], "wb").write(million())
    elif cmd == "reseal":
        b = open(sys.argv[2], "rb").read()
        open(sys.argv[2], "wb").write(reseal(b))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
