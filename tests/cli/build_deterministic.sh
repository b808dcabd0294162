#!/usr/bin/env bash
# A compile is a pure function of its inputs, whatever the process did
# before it (issue 39): generated kernels (8-, 16- and 64-bit element types
# through a #define, literal conversions stored in branches, constant
# folding, a 116 KB include; tests/tools/gen_determinism.py) give the same
# module bytes
#   - all in one build, on one thread, in manifest order and reversed (each
#     compiled after others), and on two threads;
#   - each alone, as the first compile of a fresh process, from project
#     folders 1 to 6 levels deep (the folder names' lengths change the
#     heap's layout before the compile);
#   - through the glslc launcher, from two build folders;
# and `build --check-reproducible` finds every one reproducible.
source "$(dirname "$0")/lib.bash"
gen=$KCACHE_SOURCE_DIR/tests/tools/gen_determinism.py

python3 "$gen" ref --alone alone >listing
mapfile -t names < <(grep -v '^ALONE ' listing)
expect_exit 0 "$KCACHE" build ref/kcache.toml -j1 --store ref.store
mkdir -p mods
for n in "${names[@]}"; do
  expect_exit 0 "$KCACHE" get "$n" --store ref.store -o "mods/$n.spv"
done
compared=0
# same_modules STORE WHAT KERNEL...: each KERNEL in STORE equals the reference.
same_modules() {
  local store=$1 what=$2 n
  shift 2
  for n in "$@"; do
    expect_exit 0 "$KCACHE" get "$n" --store "$store" -o got.spv
    cmp -s got.spv "mods/$n.spv" || fail "$what: $n differs from the reference build's module"
    compared=$((compared + 1))
  done
}

note "one build, reversed order and two threads"
python3 "$gen" rev --reverse >/dev/null
expect_exit 0 "$KCACHE" build rev/kcache.toml -j1 --store rev.store
same_modules rev.store "reversed order" "${names[@]}"
expect_exit 0 "$KCACHE" build ref/kcache.toml -j2 --store j2.store
same_modules j2.store "-j2" "${names[@]}"

note "each kernel alone, first in a fresh process, from folders 1 to 6 deep"
while read -r _ project base; do
  expect_exit 0 "$KCACHE" build "$project/kcache.toml" -j1 --store "$project/store"
  same_modules "$project/store" "alone in $project" "$base" "${base}_opt"
done < <(grep '^ALONE ' listing)

note "through the glslc launcher, from two build folders, in fresh processes"
# glslc without -O writes glslang's unoptimised, unstripped module: the
# manifest's plain kernel. A store of its own for each launch: each compiles.
mkdir -p bin && ln -sf "$KCACHE" bin/glslc
mkdir -p lp/.git && cp -r ref/shaders lp/
for build in build-a very/long/folder/name/for/another/build; do
  mkdir -p "lp/$build"
  for base in k00_float16_t k01_int16_t k03_int8_t k06_double; do
    defines=$(python3 -c 'import re,sys; t=open(sys.argv[1]).read(); m=re.search(r"name = \"%s\"\n(?:.*\n)*?defines = \{ (.*) \}" % sys.argv[2], t); print(" ".join("-D%s=%s" % (k.strip(), v.strip().strip("\"")) for k, v in (d.split("=") for d in m.group(1).split(","))))' ref/kcache.toml "$base")
    # shellcheck disable=SC2086 # the -D options are words
    (cd "lp/$build" && PATH="$WORK/bin:$PATH" KCACHE_STORE="$WORK/launcher-$compared.store" \
      glslc --target-env=vulkan1.2 $defines -c "$WORK/lp/shaders/$base.comp" -o "$base.spv" 2>"$WORK/err") \
      || { cat "$WORK/err"; fail "launcher: $base"; }
    cmp -s "lp/$build/$base.spv" "mods/$base.spv" || fail "launcher in $build: $base differs from the manifest's module"
    compared=$((compared + 1))
  done
done

note "check-reproducible: the second compile in another process, under another heap"
expect_exit 0 "$KCACHE" build --check-reproducible -j2 ref/kcache.toml
expect_in out "${#names[@]} kernels compiled twice: ${#names[@]} reproducible, 0 differ, 0 failed"
echo "compared $compared modules with the reference build: all byte-identical"
