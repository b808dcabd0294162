#!/usr/bin/env python3
"""Test helper (tests/cli/hostile_delta.sh): writes delta bundles as an
attacker can, unsigned, from a format-1 export IN of a namespace (its names
and keys are public: they are in every bundle of it), with
bundle_tool.write_delta.

    hostile_delta.py hostile IN OUT VERSION   no entries, nothing kept, every
                                              kernel of IN removed (format 6:
                                              under IN's own keys)
    hostile_delta.py random IN DIR N SEED     N random deltas DIR/r0.kcb ...:
                                              format 5 or 6, kernels of IN kept
                                              or removed under their keys or
                                              random ones, names IN lacks, kept
                                              digests right or wrong, some of IN's
                                              entries shipped
"""
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bundle_tool  # noqa: E402


def main():
    op, src, *args = sys.argv[1:]
    m = bundle_tool.Bundle(open(src, "rb").read())
    names = [(rec.kernel, rec.key) for rec in m.records]
    now = int(time.time())
    if op == "hostile":
        out, version = args[0], int(args[1])
        # Dated as late as an importer's clock allows: a format-5 delta then
        # names every stored build as one it may have seen.
        data = bundle_tool.write_delta(m, version, now + 120, len(names), [], names)
        open(out, "wb").write(data)
        print(f"{out}: {len(data)} bytes, format {version}, 0 entries, 0 kept, {len(names)} removed")
        return
    assert op == "random", f"unknown operation {op}"
    folder, count, seed = args[0], int(args[1]), int(args[2])
    rng = random.Random(seed)
    for i in range(count):
        kept, removed = [], []
        # Each delta its own mix: how much it keeps and removes, and how
        # often under the kernel's real key.
        p_keep, p_remove, p_right = rng.choice([0, 0.1, 0.3]), rng.choice([0.1, 0.5, 1]), rng.choice([0, 0.5, 1])
        for name, key in names:
            roll = rng.random()
            k = key if rng.random() < p_right else rng.randbytes(32)
            if roll < p_keep:
                kept.append((name, k))
            elif roll < p_keep + p_remove:
                removed.append((name, k))
        if rng.randrange(4) == 0:
            removed.append((f"absent{i}".encode(), rng.randbytes(32)))
        shipped = [j for j in range(len(m.records)) if rng.randrange(20) == 0]
        shipped_names = {m.records[j].kernel for j in shipped}
        kept = [p for p in kept if p[0] not in shipped_names]
        removed = [p for p in removed if p[0] not in shipped_names]
        data = bundle_tool.write_delta(m, rng.choice([5, 6]), now + 120 - rng.randrange(10**8),
                                       len(kept) + len(removed) + rng.randrange(3), kept, removed,
                                       rng.randrange(5) != 0, shipped)
        open(os.path.join(folder, f"r{i}.kcb"), "wb").write(data)


if __name__ == "__main__":
    main()
