#!/usr/bin/env bash
# Editing an include recompiles exactly the kernels that read it; a change the
# preprocessor erases (a comment) recompiles nothing.
source "$(dirname "$0")/lib.bash"
mkdir -p p/inc p/s
cat > p/inc/a.glsl <<'G'
float fa(float x) { return x * 2.0; }
G
cat > p/inc/b.glsl <<'G'
float fb(float x) { return x + 1.0; }
G
for k in a b; do
cat > p/s/$k.comp <<G
#version 450
#extension GL_GOOGLE_include_directive : require
#include <$k.glsl>
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer B { float d[]; };
void main() { d[gl_GlobalInvocationID.x] = f$k(d[gl_GlobalInvocationID.x]) * SCALE; }
G
done
cat > p/kcache.toml <<'T'
[defaults]
include_dirs = ["inc"]
[[kernel]]
name = "ka"
source = "s/a.comp"
[kernel.variants]
SCALE = [1.0, 2.0, 3.0]
[[kernel]]
name = "kb"
source = "s/b.comp"
[kernel.variants]
SCALE = [1.0, 2.0]
T
expect_exit 0 "$KCACHE" build p/kcache.toml --json
read -r hit compiled stale failed < <(counts out)
[[ $compiled -eq 5 ]] || fail "cold compiled $compiled"

echo "// a comment only" >> p/inc/a.glsl
expect_exit 0 "$KCACHE" build p/kcache.toml --json
read -r hit compiled stale failed < <(counts out)
[[ $hit -eq 5 && $stale -eq 0 ]] || fail "comment edit: $hit hit, $stale stale"
# ...and the refreshed input hashes put the next run back on the fast path.
expect_exit 0 "$KCACHE" build p/kcache.toml --json
[[ $(json_get out 'j["phases"]["expand"]["wall_ms"] == 0') == True ]] || fail "inputs were not refreshed"

sed -i 's/x \* 2.0/x * 4.0/' p/inc/a.glsl
expect_exit 0 "$KCACHE" build p/kcache.toml --json --explain
read -r hit compiled stale failed < <(counts out)
[[ $stale -eq 3 && $hit -eq 2 ]] || fail "include edit: $stale stale replaced, $hit hit"
[[ $(json_get out '",".join(sorted(k["kernel"] for k in j["kernels"] if k["outcome"]=="stale_replaced"))') == "ka[SCALE=1.0],ka[SCALE=2.0],ka[SCALE=3.0]" ]] \
  || fail "wrong kernels rebuilt"
[[ $(json_get out '[k["reason"] for k in j["kernels"] if k["outcome"]=="stale_replaced"][0]') == *"input:inc/a.glsl changed"* ]] \
  || fail "reason does not name the include"
expect_exit 0 "$KCACHE" build p/kcache.toml --explain
expect_in out "5 kernels: 5 hit"
