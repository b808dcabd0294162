#!/usr/bin/env python3
"""Cross-checks kcache against independent tools: for every kernel in the
store (built with optimize = none), Debian's spirv-val accepts the module and
glslangValidator -V, given the same source, defines, entry and target as
kcache recorded, produces byte-identical output.

usage: crosscheck.py KCACHE STORE PROJECT_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

kcache, store, project = sys.argv[1:4]
listing = json.loads(subprocess.check_output([kcache, "inspect", "--store", store, "--json"]))
stages = {"compute": "comp", "vertex": "vert", "fragment": "frag", "geometry": "geom",
          "tess_control": "tesc", "tess_evaluation": "tese", "task": "task", "mesh": "mesh"}
checked = identical = 0
with tempfile.TemporaryDirectory() as tmp:
    for row in listing["entries"]:
        name = row["kernel"]
        detail = json.loads(subprocess.check_output([kcache, "inspect", name, "--store", store, "--json"]))
        ident = detail["entries"][0]["identity"]
        assert ident["optimize"] == "none", f"{name}: built with optimize={ident['optimize']}"
        ours = os.path.join(tmp, "ours.spv")
        theirs = os.path.join(tmp, "theirs.spv")
        subprocess.check_call([kcache, "get", name, "--store", store, "-o", ours])
        subprocess.check_call(["spirv-val", "--target-env", ident["target"], ours])
        cmd = ["glslangValidator", "-V", "--target-env", ident["target"], "-S", stages[ident["stage"]],
               "-o", theirs]
        if ident["entry"] != "main":
            cmd += ["-e", ident["entry"], "--source-entrypoint", ident["entry"]]
        if ident["language"] == "hlsl":
            cmd += ["-D"]
        for key, value in ident.items():
            if key.startswith("define:"):
                cmd.append(f"-D{key[len('define:'):]}={value}")
            elif key.startswith("include_dir:"):
                cmd.append("-I" + value)
        cmd.append(ident["source"])
        subprocess.check_call(cmd, cwd=project, stdout=subprocess.DEVNULL)
        checked += 1
        if open(ours, "rb").read() == open(theirs, "rb").read():
            identical += 1
        else:
            print(f"DIFFERENT: {name}: {' '.join(cmd)}", file=sys.stderr)
print(f"crosscheck: {checked} modules accepted by spirv-val, {identical} byte-identical to glslangValidator -V")
sys.exit(0 if checked > 0 and identical == checked else 1)
