#!/usr/bin/env bash
# kcache-launcher, what the glslc links run (tools/kcache-launcher): it
# serves a hit itself, with no compiler and without kcache, and hands every
# other command to kcache. Shown by a copy of it in a folder where no kcache
# can be found: a hit is served (the module byte-identical, the run counted
# as a hit), and each command that is not a hit by the direct rule — an
# include edited, a header appearing earlier on the include path, an
# option changed — reaches for kcache and says it is not there. Beside
# kcache (the build tree), the same misses are compiled.
source "$(dirname "$0")/lib.bash"
LEAN=$(dirname "$KCACHE")/kcache-launcher
[[ -x $LEAN ]] || fail "kcache-launcher is not built beside kcache"
mkdir -p proj/.git proj/shaders proj/inc proj/early o alone beside
printf '#version 450\n#include "scale.h"\nlayout(local_size_x = 64) in;\nlayout(std430, binding = 0) buffer B { float d[]; };\nvoid main() { d[gl_GlobalInvocationID.x] *= SCALE; }\n' \
  >proj/shaders/k.comp
printf '#define SCALE 2.0\n' >proj/inc/scale.h
cp "$LEAN" alone/kcache-launcher
ln -s kcache-launcher alone/glslc
ln -s "$LEAN" beside/glslc
args=(-O -Iproj/early -Iproj/inc -MD -MF o/k.d -c proj/shaders/k.comp -o o/k.spv)

note "--help teaches; a call naming no tool is a usage error"
expect_exit 0 "$LEAN" --help
expect_in out 'README "Drop-in glslc"'
expect_exit 2 "$LEAN" cc -c x.c
expect_in err "usage: glslc ARGS..."

note "kcache compiles; the launcher alone serves the hit"
expect_exit 0 "$KCACHE" glslc "${args[@]}"
cp o/k.spv compiled.spv
rm o/k.spv o/k.d
expect_exit 0 alone/glslc "${args[@]}"
cmp -s o/k.spv compiled.spv || fail "the hit's module differs from the compiled one"
expect_in o/k.d "o/k.spv: proj/shaders/k.comp proj/inc/scale.h"
expect_exit 0 "$KCACHE" stats --json --last 1
[[ $(json_get out '(j["totals"]["hit"], j["totals"]["launcher"]["commands"])') == "(1, 1)" ]] \
  || fail "the hit was not recorded: $(cat out)"

note "not a hit by the direct rule: handed to kcache (absent here)"
printf '#define SCALE 3.0\n' >proj/inc/scale.h
expect_exit 1 alone/glslc "${args[@]}"
expect_in err "kcache is not installed beside kcache-launcher"
printf '#define SCALE 2.0\n' >proj/inc/scale.h
expect_exit 0 alone/glslc "${args[@]}"  # back as it was: a hit again
printf '#define SCALE 4.0\n' >proj/early/scale.h
expect_exit 1 alone/glslc "${args[@]}"
rm proj/early/scale.h
expect_exit 1 alone/glslc "${args[@]/-O/-O0}"

note "beside kcache: the misses are compiled, and hit next time"
printf '#define SCALE 3.0\n' >proj/inc/scale.h
expect_exit 0 beside/glslc "${args[@]}"
cmp -s o/k.spv compiled.spv && fail "the edited include did not change the module"
expect_exit 0 "$KCACHE" stats --json --last 1
[[ $(json_get out 'j["totals"]["stale_replaced"]') == 1 ]] || fail "not recompiled: $(cat out)"
expect_exit 0 alone/glslc "${args[@]}"
echo "PASS"
