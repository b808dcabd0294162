#!/usr/bin/env bash
# Migration round trip (issue 18): the benchmark corpus's glslc command log
# (scripts/gen_corpus.py, 100 `glslc -O` calls with -D/-I/--target-env/
# -fshader-stage) is converted by `kcache manifest from-commands`, the
# manifest built by kcache, the commands run by the real glslc, and every
# output compared with its kernel's module: every word equal but the
# generator word (word 2: glslang 8 vs shaderc 13). Also glslangValidator
# lines, a compile_commands.json, and the refusals.
source "$(dirname "$0")/lib.bash"
N=100
python3 "$KCACHE_SOURCE_DIR/scripts/gen_corpus.py" corpus --variants $N >/dev/null
cd corpus
[[ $(wc -l <commands.txt) -ge $N ]] || fail "the log has fewer than $N commands"

note "convert $N glslc commands"
expect_exit 0 "$KCACHE" manifest from-commands commands.txt -o gen.toml --json
cp "$WORK/out" fc.json
[[ $(json_get fc.json 'j["commands"]') == "$N" ]] || fail "not $N commands read"
variant_tables=$(json_get fc.json 'j["variant_tables"]')
[[ $variant_tables -ge 10 ]] || fail "only $variant_tables variant tables: defines were not grouped"
grep -q '^\[kernel.variants\]' gen.toml || fail "no variants written"
grep -q '^include_dirs = \["include"\]' gen.toml || fail "the shared -I is not in [defaults]"
grep -q '^target = "vulkan1.2"' gen.toml || fail "--target-env not kept"
grep -q '^optimize = "performance"' gen.toml || fail "-O not kept"
grep -q '^strip = true' gen.toml || fail "glslc -O's stripping not stated"

note "build the generated manifest"
expect_exit 0 "$KCACHE" build gen.toml --store "$WORK/st" -j 2 --json
cp "$WORK/out" build.json
[[ $(counts build.json) == "0 $N 0 0" ]] || fail "build: $(counts build.json)"

note "run the same commands through glslc"
xargs -P 2 -I{} sh -c '{}' <commands.txt || fail "glslc failed"

note "compare module by module"
# One `kcache emit` writes every module of the namespace as C arrays; the
# table at its end maps each kernel name to its array. (One process: a
# `kcache get` per kernel cost most of this test's time under ASan.)
expect_exit 0 "$KCACHE" emit --store "$WORK/st" --lang c --name roundtrip -o emitted
python3 - emitted/roundtrip.c fc.json <<'PY'
import json, re, sys
source, fc = sys.argv[1:3]
text = open(source).read()
arrays = {m[1]: [int(w, 16) for w in m[2].replace(",", " ").split()]
          for m in re.finditer(r"static const uint32_t (kcache_spirv_\d+)\[\d+\] = \{(.*?)\};", text, re.S)}
modules = {m[1]: arrays[m[2]]
           for m in re.finditer(r'\{"((?:[^"\\]|\\.)*)", "[0-9a-f]+", "[0-9a-f]+",\s*"\w+", "\w+", (kcache_spirv_\d+), \d+,', text)}
outputs = json.load(open(fc))["outputs"]
def words(data):
    w = [int.from_bytes(data[i:i+4], "little") for i in range(0, len(data), 4)]
    w[2] = 0  # the generator word: glslang (8) vs shaderc (13)
    return w
identical = differ = 0
for o in outputs:
    ours = list(modules.get(o["kernel"], [0, 0, 0]))
    ours[2] = 0
    if ours == words(open(o["output"], "rb").read()):
        identical += 1
    else:
        differ += 1
        print(f"DIFFERENT: {o['kernel']} vs {o['output']}", file=sys.stderr)
print(f"round trip: {len(outputs)} commands, {len(modules)} modules emitted, {identical} identical, {differ} different")
sys.exit(0 if identical == len(outputs) and identical >= 100 else 1)
PY

note "the same log as glslangValidator lines and as compile_commands.json"
head -40 commands_glslang.txt | cut -d'&' -f1 >g.txt  # head first: cut | head would die of SIGPIPE under pipefail
expect_exit 0 "$KCACHE" manifest from-commands g.txt -o g.toml
grep -q '^optimize = "none"' g.toml || fail "glslangValidator without spirv-opt is optimize none"
python3 -c '
import json, shlex, os
lines = open("commands.txt").read().split("\n")[:30]
print(json.dumps([{"directory": os.getcwd(), "arguments": shlex.split(l)} for l in lines if l]))' >cc.json
expect_exit 0 "$KCACHE" manifest from-commands cc.json -o cc.toml --json
[[ $(json_get "$WORK/out" 'j["commands"]') == 30 ]] || fail "compile_commands: not 30 commands"
expect_exit 0 "$KCACHE" manifest from-commands - --no-variants <commands.txt
[[ $(grep -c '^\[\[kernel' "$WORK/out") == "$N" ]] || fail "--no-variants: not one table per command"
first=$(head -1 commands.txt | sed 's/.* -o spv\/\([^ ]*\)\.spv .*/\1/')
grep -qF "name = \"$first\"" "$WORK/out" || fail "--no-variants: kernel $first not named after its output"

note "refusals name the line and the option"
printf 'glslc -O -o a.spv shaders/matmul.comp\nglslc -g -o b.spv shaders/matmul.comp\n' >bad1.txt
expect_exit 2 "$KCACHE" manifest from-commands bad1.txt
expect_in "$WORK/err" "bad1.txt:2: glslc -g: kcache cannot express it"
printf 'glslc -o a.spv --frobnicate shaders/x.comp\n' >bad2.txt
expect_exit 2 "$KCACHE" manifest from-commands bad2.txt
expect_in "$WORK/err" "bad2.txt:1: glslc option '--frobnicate' is not one kcache understands"
printf 'glslc -o a.spv "shaders/x.comp\n' >bad3.txt
expect_exit 2 "$KCACHE" manifest from-commands bad3.txt
expect_in "$WORK/err" "bad3.txt:1: column 16: unterminated double quote"
printf 'glslc -o a.spv $(pwd)/x.comp\n' >bad4.txt
expect_exit 2 "$KCACHE" manifest from-commands bad4.txt
expect_in "$WORK/err" "'\$' outside single quotes"
printf 'glslc -o a.spv ../x.comp\n' >bad5.txt
expect_exit 2 "$KCACHE" manifest from-commands bad5.txt
expect_in "$WORK/err" "is outside the manifest's folder"
printf 'glslc --target-env=vulkan1.2 --target-spv=spv1.3 -o a.spv x.comp\nglslangValidator -V -Os -o b.spv x.comp\n' >bad6.txt
expect_exit 2 "$KCACHE" manifest from-commands bad6.txt
expect_in "$WORK/err" "bad6.txt:1: glslc --target-spv=spv1.3"
expect_in "$WORK/err" "bad6.txt:2: glslangValidator -Os"
expect_exit 2 "$KCACHE" manifest from-commands gen.toml -o gen.toml
expect_in "$WORK/err" "exists — pass --force"
note "ok"
