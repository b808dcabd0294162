#!/usr/bin/env python3
"""Test helper: compares two kcache stores entry for entry through the CLI.

    bundle_compare.py KCACHE STORE_A STORE_B [--origin-b imported] [--every N]

Same (namespace, kernel) set; per entry the same `kcache inspect KERNEL
--json` record (keys, identity, toolchain, inputs, size, created) apart from
origin, last use and write times, and byte-identical `kcache get` output.
With --origin-b, every checked entry of B must have that origin. With
--every N, the listings (namespace, kernel, id, ir, size, created) are
compared for every entry but the full record and bytes only for every Nth
kernel (each check runs kcache four times). Prints the count.
"""
import argparse
import json
import subprocess
import sys

IGNORED = {"origin", "origin_detail", "last_used", "written", "record_bytes"}


def run(*args):
    return subprocess.run(args, check=True, capture_output=True).stdout


def listing(kcache, store):
    j = json.loads(run(kcache, "inspect", "--store", store, "--json"))
    return {(e["namespace"], e["kernel"], e["id"], e["ir"], e["bytes"], e["created"]) for e in j["entries"]}


def detail(kcache, store, kernel):
    j = json.loads(run(kcache, "inspect", kernel, "--store", store, "--json"))
    return {e["namespace"]: e for e in j["entries"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kcache")
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--origin-b")
    ap.add_argument("--every", type=int, default=1)
    args = ap.parse_args()
    kcache, a, b, origin_b = args.kcache, args.a, args.b, args.origin_b
    la, lb = listing(kcache, a), listing(kcache, b)
    if la != lb:
        sys.exit(f"entry sets differ: only in A {sorted(la - lb)[:5]}, only in B {sorted(lb - la)[:5]}")
    kernels = sorted({e[1] for e in la})[::args.every]
    for kernel in kernels:
        da, db = detail(kcache, a, kernel), detail(kcache, b, kernel)
        for ns, ea in da.items():
            eb = db[ns]
            if origin_b and eb["origin"] != origin_b:
                sys.exit(f"{ns} {kernel}: origin {eb['origin']}, expected {origin_b}")
            fa = {k: v for k, v in ea.items() if k not in IGNORED}
            fb = {k: v for k, v in eb.items() if k not in IGNORED}
            if fa != fb:
                diff = {k: (fa.get(k), fb.get(k)) for k in set(fa) | set(fb) if fa.get(k) != fb.get(k)}
                sys.exit(f"{ns} {kernel}: records differ: {diff}")
            ga = run(kcache, "get", kernel, "--namespace", ns, "--store", a, "-o", "-")
            gb = run(kcache, "get", kernel, "--namespace", ns, "--store", b, "-o", "-")
            if ga != gb:
                sys.exit(f"{ns} {kernel}: module bytes differ ({len(ga)} vs {len(gb)} bytes)")
    print(f"{len(la)} entries identical ({len(kernels)} kernels compared in full)")


if __name__ == "__main__":
    main()
