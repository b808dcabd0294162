#!/usr/bin/env python3
"""Cross-checks kcache against glslc, the reference it promises to match
(README "How it works"): for every kernel in the store, Debian's spirv-val
accepts the module, and glslc given the same source, defines, include dirs,
entry, target and optimisation (-O0 / -O / -Os; kcache's `strip` default is
glslc's) produces the same module apart from the generator word (word 2:
"Khronos Glslang" vs "Google Shaderc over Glslang"). Kernels whose options
glslc cannot express (an unusual strip, extensions or a preamble) and modules
stored unvalidated (validate = "known" / "off") are counted apart. Prints the counts and bytes; exits 1 unless every comparable module
is identical.

usage: crosscheck.py KCACHE STORE PROJECT_DIR [--allow-different N]
"""
import json
import os
import subprocess
import sys
import tempfile

kcache, store, project = sys.argv[1:4]
allowed = int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[4] == "--allow-different" else 0
listing = json.loads(subprocess.check_output([kcache, "inspect", "--store", store, "--json"]))
stages = {"compute": "comp", "vertex": "vert", "fragment": "frag", "geometry": "geom",
          "tess_control": "tesc", "tess_evaluation": "tese", "task": "task", "mesh": "mesh"}
levels = {"none": "-O0", "performance": "-O", "size": "-Os"}
checked = identical = other = ours_bytes = theirs_bytes = 0
with tempfile.TemporaryDirectory() as tmp:
    for row in listing["entries"]:
        name = row["kernel"]
        detail = json.loads(subprocess.check_output([kcache, "inspect", name, "--store", store, "--json"]))
        ident = detail["entries"][0]["identity"]
        ours = os.path.join(tmp, "ours.spv")
        theirs = os.path.join(tmp, "theirs.spv")
        subprocess.check_call([kcache, "get", name, "--store", store, "-o", ours])
        if detail["entries"][0]["validation"] != "validated":  # stored under validate = "known" / "off"
            other += 1
            continue
        subprocess.check_call(["spirv-val", "--target-env", ident["target"], ours])
        default_strip = "false" if ident["optimize"] == "none" else "true"
        if ident.get("strip", default_strip) != default_strip or any(
                k.startswith("extension:") or k.startswith("preamble")
                for k in ident):
            other += 1
            continue
        cmd = ["glslc", levels[ident["optimize"]], f"--target-env={ident['target']}",
               f"-fshader-stage={stages[ident['stage']]}", "-o", theirs]
        if ident["entry"] != "main":
            cmd.append(f"-fentry-point={ident['entry']}")
        if ident["language"] == "hlsl":
            cmd.append("-xhlsl")
        for key, value in ident.items():
            if key.startswith("define:"):
                cmd.append(f"-D{key[len('define:'):]}={value}")
            elif key.startswith("include_dir:"):
                cmd.append("-I" + value)
        cmd.append(ident["source"])
        subprocess.check_call(cmd, cwd=project, stdout=subprocess.DEVNULL)
        checked += 1
        a, b = open(ours, "rb").read(), open(theirs, "rb").read()
        ours_bytes += len(a)
        theirs_bytes += len(b)
        if len(a) == len(b) and a[:8] == b[:8] and a[12:] == b[12:]:
            identical += 1
        else:
            print(f"DIFFERENT ({len(a)} vs {len(b)} bytes): {name}: {' '.join(cmd)}", file=sys.stderr)
print(f"crosscheck: {checked} modules accepted by spirv-val and compared with glslc: {identical} identical apart "
      f"from the generator word, {checked - identical} differ; bytes kcache {ours_bytes} vs glslc {theirs_bytes}; "
      f"{other} not comparable (options glslc cannot express, or not validated)")
sys.exit(0 if checked > 0 and checked - identical <= allowed and ours_bytes <= theirs_bytes else 1)
