#!/usr/bin/env bash
# The glslc launcher in a build that calls glslc from a generator program
# (tests/tools/kcache_test_glslc_generator.cpp: -O, -I, -D, --target-env,
# -MD, -mfmt=c, outputs in a build folder), run through a link named glslc:
#   - every output is byte-identical to the real glslc's apart from the
#     SPIR-V generator word (word 2), depfiles identical;
#   - a second build is served from the store (all hits, nothing compiled);
#   - a second checkout in another folder, with an empty store and the first
#     one's remote, compiles nothing;
#   - an option kcache cannot reproduce runs the real glslc and is counted in
#     stats; a compile error is glslc's own message and exit code; a copy of
#     kcache found as the "real" glslc is named, not run in a loop;
#   - from-commands --from-store writes a manifest that builds the same modules.
source "$(dirname "$0")/lib.bash"
GEN="$KCACHE_BUILD_DIR/tests/kcache_test_glslc_generator"
[[ -x $GEN ]] || fail "missing $GEN"
command -v glslc >/dev/null || fail "glslc is needed (scripts/setup installs it)"

checkout() { mkdir -p "$1/.git" "$1/build"; cp -r "$KCACHE_SOURCE_DIR/tests/data/launcher_project/." "$1/src/"; }
checkout one
mkdir -p bin reference
ln -s "$KCACHE" bin/glslc
REMOTE="file://$WORK/remote"
mkdir -p remote

note "the real glslc"
(cd one/build && "$GEN" "$WORK/one/src" "$WORK/reference")
n_spv=$(ls reference/*.spv | wc -l)
[[ $n_spv -eq 10 ]] || fail "expected 10 modules from glslc, got $n_spv"

# compare DIR: DIR's outputs against reference/, the generator word aside.
compare() {
  python3 - "$WORK/reference" "$1" <<'PY'
import pathlib, re, sys
ref, got = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
names = sorted(p.name for p in ref.iterdir())
assert names == sorted(p.name for p in got.iterdir()), (names, sorted(p.name for p in got.iterdir()))
for name in names:
    a, b = (ref / name).read_bytes(), (got / name).read_bytes()
    if name.endswith(".spv"):
        assert len(a) == len(b) and a[:8] == b[:8] and a[12:] == b[12:], f"{name}: modules differ beyond word 2"
    elif name.endswith(".txt"):  # -mfmt=c: the third number is the generator word
        strip = lambda t: re.sub(rb"^(\{0x[0-9a-f]{8},0x[0-9a-f]{8},)0x[0-9a-f]{8}", rb"\1G", t)
        assert strip(a) == strip(b), f"{name}: text differs beyond the generator word"
    else:  # a depfile: its target is the output, in the folder it was written to
        assert a.replace(bytes(ref), bytes(got.resolve())) == b, f"{name}: {a!r} != {b!r}"
print(f"{len(names)} files identical (apart from the generator word)")
PY
}

note "through the link: first build compiles, outputs as glslc's"
(cd one/build && PATH="$WORK/bin:$PATH" KCACHE_REMOTE="$REMOTE" "$GEN" "$WORK/one/src" "$WORK/one/build")
compare one/build
expect_exit 0 "$KCACHE" stats --json
[[ $(json_get "$WORK/out" 'j["totals"]["compiled"]') -eq 11 ]] || fail "expected 11 compiled: $(cat "$WORK/out")"

note "second build: every output from the store"
rm -f one/build/*
(cd one/build && PATH="$WORK/bin:$PATH" "$GEN" "$WORK/one/src" "$WORK/one/build")
compare one/build
expect_exit 0 "$KCACHE" stats --json --last 11
[[ $(json_get "$WORK/out" '(j["totals"]["hit"], j["totals"]["compiled"], j["totals"]["launcher"]["commands"])') == "(11, 0, 11)" ]] \
  || fail "second build not all hits: $(cat "$WORK/out")"

note "a second checkout elsewhere, empty store, the remote: compiles nothing"
checkout two/deeper
(cd two/deeper/build && PATH="$WORK/bin:$PATH" KCACHE_STORE="$WORK/store2" KCACHE_REMOTE="$REMOTE" \
  "$GEN" "$WORK/two/deeper/src" "$WORK/two/deeper/build")
expect_exit 0 env KCACHE_STORE="$WORK/store2" "$KCACHE" stats --json
[[ $(json_get "$WORK/out" '(j["totals"]["compiled"], j["totals"]["remote"]["remote_hit"])') == "(0, 11)" ]] \
  || fail "the second checkout compiled: $(cat "$WORK/out")"
# Its depfiles name its own files; its modules are the first checkout's.
expect_in two/deeper/build/scale_int_64.spv.d "$WORK/two/deeper/src/include/common.h"
cmp one/build/scale_int_64.spv two/deeper/build/scale_int_64.spv || fail "the checkouts' modules differ"

note "not cacheable: the real glslc runs, and stats counts why"
(cd one/build && PATH="$WORK/bin:$PATH" glslc -S -O "$WORK/one/src/shaders/binop.comp" -I../src/include -DOP_ADD -o binop.s)
expect_in one/build/binop.s "OpEntryPoint GLCompute"
expect_exit 0 "$KCACHE" stats
expect_in "$WORK/out" "not cacheable: glslc -S: kcache cannot express it: 1"

note "a compile error: glslc's message and exit code"
printf '#version 450\nvoid main() { undefined_thing = 1; }\n' >one/src/shaders/broken.comp
expect_exit 1 env PATH="$WORK/bin:$PATH" glslc -c one/src/shaders/broken.comp -o broken.spv
glslc -c one/src/shaders/broken.comp -o broken.spv 2>"$WORK/glslc.err" && fail "glslc accepted broken.comp"
diff "$WORK/glslc.err" "$WORK/err" || fail "the error differs from glslc's"
[[ ! -e broken.spv ]] || fail "a failed compile wrote an output"

note "a copy of kcache as the 'real' glslc: said, not run for ever"
mkdir -p copy1 copy2
ln "$KCACHE" copy1/glslc && ln "$KCACHE" copy2/glslc  # hard links: no path tells them from a real glslc
expect_exit 1 env PATH="$WORK/copy1:$WORK/copy2:$PATH" timeout 20 glslc -S one/src/shaders/binop.comp -o x.s
expect_in "$WORK/err" "copy2/glslc was run as the real glslc, but it is kcache too"

note "kcache glslc, without a link, serves the same"
expect_exit 0 "$KCACHE" glslc -O -Ione/src/include --target-env=vulkan1.2 -DTYPE=uint -DBLOCK=256 -c one/src/shaders/scale.comp -o direct.spv
cmp direct.spv one/build/scale_uint_256.spv || fail "kcache glslc wrote another module"

note "the store's max_size holds after a launcher command that stored a module, never evicting what it served; stats tells, stderr does not"
expect_exit 0 "$KCACHE" config set max_size 1K
# A hit stores nothing and evicts nothing (the hit path loads no maintenance);
# the next command that compiles does.
expect_exit 0 env PATH="$WORK/bin:$PATH" glslc -O -Ione/src/include --target-env=vulkan1.2 -DTYPE=uint -DBLOCK=256 -c one/src/shaders/scale.comp -o hit.spv
expect_exit 0 "$KCACHE" stats --json
[[ $(json_get "$WORK/out" 'j["totals"]["evicted"]["entries"]') == 0 ]] || fail "a hit evicted: $(cat "$WORK/out")"
expect_exit 0 env PATH="$WORK/bin:$PATH" glslc -O -Ione/src/include --target-env=vulkan1.2 -DTYPE=uint -DBLOCK=512 -c one/src/shaders/scale.comp -o evict.spv
[[ ! -s $WORK/err ]] || fail "the launcher printed on stderr, where glslc prints nothing: $(cat "$WORK/err")"
expect_exit 0 "$KCACHE" stats
expect_in "$WORK/out" "evicted by max_size:"
expect_exit 0 "$KCACHE" stats --json
[[ $(json_get "$WORK/out" 'j["totals"]["evicted"]["entries"] > 0') == True ]] || fail "stats counts no eviction: $(cat "$WORK/out")"
expect_exit 0 "$KCACHE" inspect --json
[[ $(json_get "$WORK/out" 'len(j["entries"])') == 1 ]] || fail "eviction kept more than the served entry"
expect_exit 0 "$KCACHE" config unset max_size

note "from-commands --from-store: a manifest that builds the same modules"
expect_exit 0 "$KCACHE" manifest from-commands --from-store -o one/src/kcache.toml
expect_in "$WORK/out" "14 commands"  # the generator's 11, kcache glslc's, hit.spv and evict.spv; not -S, not the failed one
expect_exit 0 "$KCACHE" build --store "$WORK/store3" --json one/src/kcache.toml
[[ $(counts "$WORK/out") == "0 14 0 0" ]] || fail "the migrated manifest did not build 14 kernels: $(cat "$WORK/out")"
python3 - "$WORK/out" <<'PY' >"$WORK/kernels"
import json, sys
print("\n".join(r["kernel"] for r in json.load(open(sys.argv[1]))["kernels"]))
PY
while read -r kernel; do
  # The manifest names kernels after outputs: scale[BLOCK=64,TYPE=float] is scale_float_64.spv.
  expect_exit 0 "$KCACHE" get --store "$WORK/store3" "$kernel" -o "$WORK/got.spv"
  python3 - "$WORK/got.spv" one/build/*.spv evict.spv one/build/scale.h.txt <<'PY' || fail "the manifest's $kernel is none of the launcher's modules"
import pathlib, struct, sys
got = pathlib.Path(sys.argv[1]).read_bytes()
words = struct.unpack(f"<{len(got) // 4}I", got)
text = "{" + ",".join(f"0x{w:08x}" + ("\n" if i % 4 == 3 and i + 1 < len(words) else "") for i, w in enumerate(words)).replace("\n,", ",\n") + "}\n"
sys.exit(0 if any(pathlib.Path(f).read_bytes() in (got, text.encode()) for f in sys.argv[2:]) else 1)
PY
done <"$WORK/kernels"
echo "PASS"
