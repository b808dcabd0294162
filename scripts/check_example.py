#!/usr/bin/env python3
"""Compile and validate every kernel variant of a kcache manifest.

Reads a kcache.toml (default: bundles/example/kcache.toml), expands it the way
kcache does ([defaults] merged under each [[kernel]], the Cartesian product of
[kernel.variants] with each variant value added as a define, variant keys
sorted for the "name[K=v,...]" names), then for each variant runs

    glslangValidator -V --target-env <target> -e <entry> -D<NAME>=<VALUE>...
                     -I<include dir>... -S <stage> -o <tmp>.spv <source>
    spirv-val --target-env <target> <tmp>.spv

and reports the counts. Exits 1 if any variant fails (or the manifest is
malformed), 0 otherwise. Python 3.11+, standard library only.

Merging: scalar keys of a kernel replace the default; `defines` and
`spec_constants` tables are merged key by key (the kernel's value wins);
variant values override defines of the same name. Define values are passed
as written: strings verbatim, ints in decimal, floats via repr(), bools as
1 / 0 (so that `#if NAME` works; GLSL's preprocessor has no true/false).
Spec constants are only checked for form (they are applied at pipeline
creation, not at compile time).
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

TARGETS = {"vulkan1.0", "vulkan1.1", "vulkan1.2", "vulkan1.3"}
OPTIMIZE = {"none", "size", "performance"}
STAGES = {
    "compute": "comp", "vertex": "vert", "fragment": "frag", "geometry": "geom",
    "tess_control": "tesc", "tess_evaluation": "tese", "task": "task", "mesh": "mesh",
}
LANGUAGES = {"glsl", "hlsl"}
KERNEL_KEYS = {"name", "source", "entry", "stage", "language", "defines", "spec_constants",
               "variants", "target", "optimize", "include_dirs"}
DEFAULT_KEYS = KERNEL_KEYS - {"name", "source", "variants"}


class ManifestError(Exception):
    pass


@dataclass
class Variant:
    name: str
    source: Path
    entry: str
    stage: str
    language: str
    target: str
    optimize: str
    include_dirs: list[Path]
    defines: dict[str, object]
    spec_constants: dict[int, object] = field(default_factory=dict)


def value_text(v: object) -> str:
    """Text of a define / variant value."""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (int, str)):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    raise ManifestError(f"unsupported value {v!r} (want string, int, float or bool)")


def name_text(v: object) -> str:
    """Text of a variant value inside a kernel name."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return value_text(v)


def check_spec_constants(where: str, table: object) -> dict[int, object]:
    if not isinstance(table, dict):
        raise ManifestError(f"{where}: spec_constants must be a table")
    out: dict[int, object] = {}
    for k, v in table.items():
        try:
            cid = int(k)
        except ValueError:
            raise ManifestError(f"{where}: spec constant id {k!r} is not an integer") from None
        if cid < 0 or cid > 0xFFFFFFFF:
            raise ManifestError(f"{where}: spec constant id {cid} out of range")
        if isinstance(v, bool):
            pass
        elif isinstance(v, int):
            if not -(2**31) <= v <= 0xFFFFFFFF:
                raise ManifestError(f"{where}: spec constant {cid} = {v} does not fit 32 bits")
        elif isinstance(v, float):
            pass
        else:
            raise ManifestError(f"{where}: spec constant {cid} has unsupported value {v!r}")
        out[cid] = v
    return out


def expand(manifest_path: Path) -> list[Variant]:
    with open(manifest_path, "rb") as f:
        doc = tomllib.load(f)
    root = manifest_path.parent
    unknown_top = set(doc) - {"defaults", "kernel"}
    if unknown_top:
        raise ManifestError(f"unknown top-level keys: {sorted(unknown_top)}")
    defaults = doc.get("defaults", {})
    bad = set(defaults) - DEFAULT_KEYS
    if bad:
        raise ManifestError(f"[defaults]: unknown keys {sorted(bad)}")
    kernels = doc.get("kernel", [])
    if not isinstance(kernels, list) or not kernels:
        raise ManifestError("no [[kernel]] entries")

    out: list[Variant] = []
    seen: set[str] = set()
    for i, k in enumerate(kernels):
        where = f"kernel #{i + 1}"
        bad = set(k) - KERNEL_KEYS
        if bad:
            raise ManifestError(f"{where}: unknown keys {sorted(bad)}")
        if "name" not in k or "source" not in k:
            raise ManifestError(f"{where}: needs name and source")
        base = k["name"]
        where = f"kernel {base!r}"

        def get(key: str, default: object) -> object:
            return k.get(key, defaults.get(key, default))

        entry = get("entry", "main")
        stage = get("stage", "compute")
        language = get("language", "glsl")
        target = get("target", "vulkan1.2")
        optimize = get("optimize", "performance")
        if stage not in STAGES:
            raise ManifestError(f"{where}: unknown stage {stage!r}")
        if language not in LANGUAGES:
            raise ManifestError(f"{where}: unknown language {language!r}")
        if target not in TARGETS:
            raise ManifestError(f"{where}: unknown target {target!r}")
        if optimize not in OPTIMIZE:
            raise ManifestError(f"{where}: unknown optimize {optimize!r}")
        include_dirs = [root / d for d in get("include_dirs", [])]
        for d in include_dirs:
            if not d.is_dir():
                raise ManifestError(f"{where}: include dir {d} does not exist")
        source = root / k["source"]
        if not source.is_file():
            raise ManifestError(f"{where}: source {source} does not exist")

        defines = dict(defaults.get("defines", {}))
        defines.update(k.get("defines", {}))
        for dv in defines.values():
            value_text(dv)
        spec = check_spec_constants(where, defaults.get("spec_constants", {}))
        spec.update(check_spec_constants(where, k.get("spec_constants", {})))

        variants = k.get("variants", {})
        if not isinstance(variants, dict):
            raise ManifestError(f"{where}: variants must be a table")
        keys = sorted(variants)
        for key in keys:
            vals = variants[key]
            if not isinstance(vals, list) or not vals:
                raise ManifestError(f"{where}: variant {key!r} needs a non-empty array")
            if len({name_text(v) for v in vals}) != len(vals):
                raise ManifestError(f"{where}: variant {key!r} has duplicate values")
        for point in itertools.product(*(variants[key] for key in keys)):
            if keys:
                name = base + "[" + ",".join(f"{key}={name_text(v)}" for key, v in zip(keys, point)) + "]"
            else:
                name = base
            if name in seen:
                raise ManifestError(f"duplicate kernel name {name!r}")
            seen.add(name)
            d = dict(defines)
            d.update(zip(keys, point))
            out.append(Variant(name, source, entry, stage, language, target, optimize,
                               include_dirs, d, spec))
    return out


def run_one(v: Variant, tmpdir: Path, idx: int, glslang: str, spirv_val: str) -> tuple[Variant, bool, str]:
    spv = tmpdir / f"{idx}.spv"
    cmd = [glslang, "-V", "--target-env", v.target, "-e", v.entry]
    if v.language == "hlsl":
        cmd.append("-D")
    cmd += [f"-D{n}={value_text(val)}" for n, val in sorted(v.defines.items())]
    cmd += [f"-I{d}" for d in v.include_dirs]
    cmd += ["-S", STAGES[v.stage], "-o", str(spv), str(v.source)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 or not spv.exists():
        return v, False, "glslangValidator failed:\n  " + " ".join(cmd) + "\n" + r.stdout + r.stderr
    r2 = subprocess.run([spirv_val, "--target-env", v.target, str(spv)], capture_output=True, text=True)
    spv.unlink(missing_ok=True)
    if r2.returncode != 0:
        return v, False, "spirv-val failed:\n  " + " ".join(cmd) + "\n" + r2.stdout + r2.stderr
    return v, True, ""


def main() -> int:
    repo = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("manifest", nargs="?", default=str(repo / "bundles/example/kcache.toml"))
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("-v", "--verbose", action="store_true", help="print every variant")
    ap.add_argument("--list", action="store_true", help="only list the expanded variants")
    args = ap.parse_args()

    try:
        variants = expand(Path(args.manifest).resolve())
    except (ManifestError, tomllib.TOMLDecodeError, OSError) as e:
        print(f"error: {args.manifest}: {e}", file=sys.stderr)
        return 1

    if args.list:
        for v in variants:
            print(v.name)
        print(f"{len(variants)} variants")
        return 0

    glslang = shutil.which("glslangValidator")
    spirv_val = shutil.which("spirv-val")
    if not glslang or not spirv_val:
        print("error: glslangValidator and spirv-val must be on PATH", file=sys.stderr)
        return 1

    bases = {v.name.split("[", 1)[0] for v in variants}
    failed = 0
    with tempfile.TemporaryDirectory(prefix="kc_check_") as tmp, \
            ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_one, v, Path(tmp), i, glslang, spirv_val) for i, v in enumerate(variants)]
        for fut in futures:
            v, ok, msg = fut.result()
            if not ok:
                failed += 1
                print(f"FAIL {v.name}\n{msg}", file=sys.stderr)
            elif args.verbose:
                print(f"ok   {v.name}  ({v.target})")
    passed = len(variants) - failed
    print(f"{len(bases)} kernels, {len(variants)} variants: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
