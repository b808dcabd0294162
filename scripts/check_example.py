#!/usr/bin/env python3
"""Compile and validate every kernel of a kcache manifest with the stock tools.

    scripts/check_example.py [MANIFEST] [--kcache PATH] [-j N] [-v] [--list]

The expansion (defaults, variants, defines) is kcache's own: `kcache manifest
--json` prints every kernel kcache would build with all its options, so this
script holds no copy of the manifest rules. For each kernel it runs

    glslangValidator -V --target-env <target> -e <entry> -D<NAME>=<VALUE>...
                     -I<include dir>... -S <stage> -o <tmp>.spv <source>
    spirv-val --target-env <target> <tmp>.spv

and reports the counts: an independent check that the manifest's kernels
compile and validate outside kcache. Exits 1 if any kernel fails (or the
manifest is malformed: kcache's message is shown), 0 otherwise. MANIFEST
defaults to bundles/example/kcache.toml, --kcache to build/tools/kcache/kcache.
Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# glslangValidator's -S names of kcache's stages.
STAGES = {
    "compute": "comp", "vertex": "vert", "fragment": "frag", "geometry": "geom",
    "tess_control": "tesc", "tess_evaluation": "tese", "task": "task", "mesh": "mesh",
}


def expand(kcache: str, manifest: str) -> tuple[Path, list[dict]]:
    """The manifest's folder and its kernels, as kcache expands them."""
    r = subprocess.run([kcache, "manifest", "--json", manifest], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip() or f"kcache manifest exited {r.returncode}")
    doc = json.loads(r.stdout)
    if doc.get("schema") != "kcache.manifest/1":
        raise RuntimeError(f"unexpected schema {doc.get('schema')!r} from kcache manifest --json")
    return Path(doc["root"]), doc["kernels"]


def run_one(k: dict, root: Path, tmpdir: Path, idx: int, glslang: str, spirv_val: str) -> tuple[dict, bool, str]:
    spv = tmpdir / f"{idx}.spv"
    cmd = [glslang, "-V", "--target-env", k["target"], "-e", k["entry"]]
    if k["language"] == "hlsl":
        cmd.append("-D")
    cmd += [f"-D{n}={v}" for n, v in sorted(k["defines"].items())]
    cmd += [f"-I{root / d}" for d in k["include_dirs"]]
    cmd += ["-S", STAGES[k["stage"]], "-o", str(spv), str(root / k["source"])]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 or not spv.exists():
        return k, False, "glslangValidator failed:\n  " + " ".join(cmd) + "\n" + r.stdout + r.stderr
    r2 = subprocess.run([spirv_val, "--target-env", k["target"], str(spv)], capture_output=True, text=True)
    spv.unlink(missing_ok=True)
    if r2.returncode != 0:
        return k, False, "spirv-val failed:\n  " + " ".join(cmd) + "\n" + r2.stdout + r2.stderr
    return k, True, ""


def main() -> int:
    repo = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("manifest", nargs="?", default=str(repo / "bundles/example/kcache.toml"))
    ap.add_argument("--kcache", default=str(repo / "build/tools/kcache/kcache"), help="the kcache binary")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("-v", "--verbose", action="store_true", help="print every kernel")
    ap.add_argument("--list", action="store_true", help="only list the expanded kernels")
    args = ap.parse_args()

    try:
        root, kernels = expand(args.kcache, args.manifest)
    except (RuntimeError, OSError, json.JSONDecodeError) as e:
        print(f"error: {args.manifest}: {e}", file=sys.stderr)
        return 1
    if args.list:
        for k in kernels:
            print(k["name"])
        print(f"{len(kernels)} variants")
        return 0

    glslang = shutil.which("glslangValidator")
    spirv_val = shutil.which("spirv-val")
    if not glslang or not spirv_val:
        print("error: glslangValidator and spirv-val must be on PATH", file=sys.stderr)
        return 1
    bases = {k["base_name"] for k in kernels}
    failed = 0
    with tempfile.TemporaryDirectory(prefix="kc_check_") as tmp, \
            ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_one, k, root, Path(tmp), i, glslang, spirv_val) for i, k in enumerate(kernels)]
        for fut in futures:
            k, ok, msg = fut.result()
            if not ok:
                failed += 1
                print(f"FAIL {k['name']}\n{msg}", file=sys.stderr)
            elif args.verbose:
                print(f"ok   {k['name']}  ({k['target']})")
    passed = len(kernels) - failed
    print(f"{len(bases)} kernels, {len(kernels)} variants: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
