#!/usr/bin/env bash
# `manifest from-commands` on the layout out-of-tree builds have (issue 29):
# outputs in a build folder elsewhere, a line without the program, a key set
# per matched kernel with --set/--for, --root and -o that disagree refused
# instead of writing a manifest that cannot load, and the written manifest
# built as written.
source "$(dirname "$0")/lib.bash"
mkdir -p src/shaders src/include build
cp "$KCACHE_SOURCE_DIR/tests/data/launcher_project/shaders/scale.comp" src/shaders/
cp "$KCACHE_SOURCE_DIR/tests/data/launcher_project/shaders/binop.comp" src/shaders/mul_dot2.comp
cp "$KCACHE_SOURCE_DIR/tests/data/launcher_project/include/"*.h src/include/
cat >log.txt <<LOG
glslc -O --target-env=vulkan1.2 -Isrc/include -DTYPE=float -DBLOCK=64 -o $WORK/build/spv/scale_f64.spv src/shaders/scale.comp
glslc -O --target-env=vulkan1.2 -Isrc/include -DTYPE=int -DBLOCK=64 -o build/spv/scale_i64.spv src/shaders/scale.comp
-O --target-env=vulkan1.2 -fshader-stage=compute -Isrc/include -DOP_MUL -o ../elsewhere/mul_dot2.spv src/shaders/mul_dot2.comp
LOG

note "outputs anywhere, a line without the program, --set for matching kernels"
expect_exit 0 "$KCACHE" manifest from-commands log.txt -o src/kcache.toml --set validate=known --for '*_dot2*'
expect_in "$WORK/out" "3 commands -> 3 kernels"
python3 - src/kcache.toml <<'PY'
import sys, tomllib
m = tomllib.load(open(sys.argv[1], "rb"))
kernels = {k["name"]: k for k in m["kernel"]}
assert kernels["mul_dot2"].get("validate") == "known", kernels
assert all(k.get("validate") is None for n, k in kernels.items() if n != "mul_dot2"), kernels
assert all(k["source"].startswith("shaders/") for k in kernels.values()), kernels
assert m["defaults"]["include_dirs"] == ["include"], m["defaults"]
PY
expect_exit 0 "$KCACHE" build src/kcache.toml --json
[[ $(counts "$WORK/out") == "0 3 0 0" ]] || fail "the written manifest did not build: $(cat "$WORK/out")"

note "--root and -o that disagree: refused, nothing written"
expect_exit 2 "$KCACHE" manifest from-commands log.txt --root src -o elsewhere/kcache.toml
expect_in "$WORK/err" "is not the folder of -o"
[[ ! -e elsewhere/kcache.toml ]] || fail "a manifest was written"
note "--root for stdout: paths relative to it"
expect_exit 0 "$KCACHE" manifest from-commands log.txt --root src
expect_in "$WORK/out" 'source = "shaders/scale.comp"'
note "a source outside the manifest's folder: the line and what to do"
expect_exit 2 "$KCACHE" manifest from-commands log.txt -o build/kcache.toml
expect_in "$WORK/err" "log.txt:1: source 'src/shaders/scale.comp' is outside the manifest's folder"
expect_in "$WORK/err" "outputs may be anywhere"
echo "PASS"
