#!/usr/bin/env bash
# A header created where an #include would now find it first — beside the
# including file, or in an earlier include_dirs folder — is a changed input
# (issue 39): the warm build compiles again instead of serving the old
# module, `inspect --why` names the new candidate, and the module equals a
# clean store's. The same through the glslc launcher. A candidate that
# stays empty keeps the hit, and the depfile lists only files read.
source "$(dirname "$0")/lib.bash"
mkdir -p p/s p/a p/b
cat > p/s/k.comp <<'G'
#version 450
#extension GL_GOOGLE_include_directive : require
#include "value.glsl"
#include <scale.glsl>
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer B { float d[]; };
void main() { d[gl_GlobalInvocationID.x] = VALUE * SCALE; }
G
echo '#define VALUE 3.0' > p/b/value.glsl
echo '#define SCALE 5.0' > p/b/scale.glsl
cat > p/kcache.toml <<'T'
[[kernel]]
name = "k"
source = "s/k.comp"
include_dirs = ["a", "b"]
T

# built TEXT: the build ran one compile; then the next is a hit.
rebuilt() {
  expect_exit 0 "$KCACHE" build p/kcache.toml --json
  [[ $(counts out) == "0 0 1 0" || $(counts out) == "0 1 0 0" ]] || fail "$1: $(counts out), expected a compile"
  expect_exit 0 "$KCACHE" build p/kcache.toml --json
  [[ $(counts out) == "1 0 0 0" ]] || fail "$1, built again: $(counts out), expected a hit"
}
# same_as_clean: the stored module is what a clean store builds now.
same_as_clean() {
  expect_exit 0 "$KCACHE" get k -o warm.spv
  rm -rf clean && expect_exit 0 "$KCACHE" build p/kcache.toml --store clean
  expect_exit 0 "$KCACHE" get k --store clean -o clean.spv
  cmp -s warm.spv clean.spv || fail "$1: the warm store serves another module than a clean build makes"
}

rebuilt "cold"
expect_exit 0 "$KCACHE" inspect k --manifest p/kcache.toml
expect_in out "absent            s/value.glsl"
expect_in out "absent            a/value.glsl"
expect_in out "absent            a/scale.glsl"

note "an empty candidate folder changing elsewhere keeps the hit"
echo '#define OTHER 1' > p/a/other.glsl
expect_exit 0 "$KCACHE" build p/kcache.toml --json
[[ $(counts out) == "1 0 0 0" ]] || fail "an unrelated new file: $(counts out)"

note "a header in an earlier include_dirs folder"
echo '#define SCALE 7.0' > p/a/scale.glsl
expect_exit 0 "$KCACHE" inspect k --why --manifest p/kcache.toml
expect_in out "include candidate a/scale.glsl now exists"
rebuilt "a/scale.glsl appeared"
same_as_clean "a/scale.glsl"

note "a header beside the including file"
echo '#define VALUE 11.0' > p/s/value.glsl
expect_exit 0 "$KCACHE" inspect --why --manifest p/kcache.toml
expect_in out "include candidate s/value.glsl now exists"
rebuilt "s/value.glsl appeared"
same_as_clean "s/value.glsl"

note "the build's depfile lists files read, not candidates"
expect_exit 0 "$KCACHE" build p/kcache.toml --depfile deps.d
grep -q "a/value.glsl" deps.d && fail "the depfile lists an absent candidate"
expect_in deps.d "s/value.glsl"

note "the same through the glslc launcher"
command -v glslc >/dev/null || fail "glslc is needed (scripts/setup installs it)"
mkdir -p lp/.git lp/src lp/inc1 lp/inc2 bin
ln -s "$KCACHE" bin/glslc
cp p/s/k.comp lp/src/k.comp
echo '#define VALUE 3.0' > lp/inc2/value.glsl
echo '#define SCALE 5.0' > lp/inc2/scale.glsl
launch() { (cd lp && PATH="$WORK/bin:$PATH" glslc -I inc1 -I inc2 -MD -MF k.d -c src/k.comp -o k.spv); }
real() { (cd lp && glslc -I inc1 -I inc2 -c src/k.comp -o real.spv); }
launch || fail "launcher cold"
launch || fail "launcher warm"
grep -q "inc1/value.glsl" lp/k.d && fail "the launcher's depfile lists an absent candidate"
for f in inc1/scale.glsl src/value.glsl; do
  case $f in
    inc1/scale.glsl) echo '#define SCALE 9.0' > lp/$f ;;
    src/value.glsl) echo '#define VALUE 13.0' > lp/$f ;;
  esac
  launch || fail "launcher after $f appeared"
  real || fail "glslc after $f appeared"
  # glslc's generator word (word 2) differs from kcache's; the rest must not.
  python3 - lp/k.spv lp/real.spv "$f" <<'PY' || fail "launcher served a stale module after $f appeared"
import sys
a, b = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
sys.exit(0 if len(a) == len(b) and a[:8] == b[:8] and a[12:] == b[12:] else 1)
PY
done
