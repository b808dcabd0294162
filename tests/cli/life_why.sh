#!/usr/bin/env bash
# inspect --why names exactly the input that changed: each field of a stored
# entry changed alone (source, include, define, variant value, entry point,
# spec constant, target, optimize level, glslang / SPIRV-Tools version)
# gives exactly that reason, in text and JSON; build --explain prints the
# same reason for every kernel that did not hit.
source "$(dirname "$0")/lib.bash"
# KCACHE_TEST_* seams: only the test build obeys them, so this runs $KCACHE_TESTING.
mkdir -p p/inc p/s
cat > p/inc/h.glsl <<'G'
uint helper(uint x) { return x * 2u; }
G
cat > p/s/k.comp <<'G'
#version 450
#extension GL_GOOGLE_include_directive : require
#include <h.glsl>
layout(local_size_x = 1) in;
layout(constant_id = 0) const uint N = 1;
layout(std430, binding = 0) buffer B { uint d[]; };
void main() { d[0] = helper(VALUE) + N; }
G
# manifest SOURCE ENTRY VALUE SPEC TARGET OPT W2: writes p/kcache.toml.
manifest() {
  cat > p/kcache.toml <<T
[defaults]
include_dirs = ["inc"]
[[kernel]]
name = "k"
source = "$1"
entry = "$2"
defines = { VALUE = $3 }
spec_constants = { "0" = $4 }
target = "$5"
optimize = "$6"
[[kernel]]
name = "v"
source = "s/k.comp"
defines = { VALUE = 1 }
[kernel.variants]
W = [1, $7]
T
}
base() { manifest s/k.comp main 1 256 vulkan1.2 performance 2; }
base
expect_exit 0 "$KCACHE_TESTING" build p/kcache.toml
# why KERNEL: the changed field names, comma-separated, from --json.
why_fields() {
  expect_exit 0 "$KCACHE_TESTING" inspect "$1" --why --manifest p/kcache.toml --json
  json_get "$WORK/out" '",".join(c["field"] for c in j["why"]["changes"])'
}
why_state() { json_get "$WORK/out" 'j["why"]["state"]'; }
check() {  # check KERNEL EXPECTED_FIELDS EXPECTED_STATE
  local got; got=$(why_fields "$1")
  [[ $got == "$2" ]] || { cat "$WORK/out"; fail "expected changes '$2', got '$got'"; }
  [[ $(why_state) == "$3" ]] || fail "expected state $3 for $2, got $(why_state)"
}

check k "" fresh

note "source file"
cp p/s/k.comp p/s/k.orig
echo 'uint unused_extra() { return 5u; }' >> p/s/k.comp
check k "input:s/k.comp" stale
[[ $(json_get out 'j["why"]["changes"][0]["kind"]') == input ]] || fail "kind of a source change"
mv p/s/k.orig p/s/k.comp

note "include file"
cp p/inc/h.glsl p/inc/h.orig
sed -i 's/x \* 2u/x * 3u/' p/inc/h.glsl
check k "input:inc/h.glsl" stale
expect_exit 0 "$KCACHE_TESTING" inspect k --why --manifest p/kcache.toml
expect_in out "input:inc/h.glsl: stored "
echo "== inspect --why, include changed:"; cat out
expect_exit 0 "$KCACHE_TESTING" build p/kcache.toml --explain --no-record-usage --store "$WORK/scratch"
mv p/inc/h.orig p/inc/h.glsl

note "define"
manifest s/k.comp main 7 256 vulkan1.2 performance 2
check k "define:VALUE" stale
expect_exit 0 "$KCACHE_TESTING" inspect k --why --manifest p/kcache.toml
expect_in out "define:VALUE: stored 1 → current 7"

note "variant value (renames the kernel: explained by its nearest stored variant)"
manifest s/k.comp main 1 256 vulkan1.2 performance 3
check "v[W=3]" "variant:W" missing
[[ $(json_get out 'j["why"]["compared"]["kernel"]') == "v[W=1]" ]] || fail "nearest variant"

note "entry point"
manifest s/k.comp other_main 1 256 vulkan1.2 performance 2
check k "entry" stale

note "spec constant"
manifest s/k.comp main 1 128 vulkan1.2 performance 2
check k "spec_constant:0" stale
[[ $(json_get out 'j["why"]["changes"][0]["current"]') == "int:128" ]] || fail "spec constant value"

note "target (another namespace holds the kernel)"
manifest s/k.comp main 1 256 vulkan1.3 performance 2
check k "target" missing
[[ $(json_get out 'j["why"]["compared"]["namespace"]') == spirv/vulkan1.2 ]] || fail "target: compared namespace"
expect_exit 0 "$KCACHE_TESTING" inspect k --why --manifest p/kcache.toml
expect_in out "k: not in store (namespace spirv/vulkan1.3)"
expect_in out "spirv/vulkan1.2 has an entry of this kernel"

note "optimize level"
manifest s/k.comp main 1 256 vulkan1.2 size 2
check k "optimize" stale

base
note "toolchain: glslang and SPIRV-Tools versions (test hook KCACHE_TEST_TOOLCHAIN_SUFFIX)"
export KCACHE_TEST_TOOLCHAIN_SUFFIX=glslang:-next
check k "glslang" stale
expect_exit 0 "$KCACHE_TESTING" inspect k --why --manifest p/kcache.toml
echo "== inspect --why, toolchain changed:"; cat out
# Without a manifest the toolchain alone shows the entry can never hit again.
expect_exit 0 "$KCACHE_TESTING" inspect --stale --json
[[ $(json_get out 'len(j["entries"])') == 3 ]] || fail "toolchain-stale entries without a manifest"
export KCACHE_TEST_TOOLCHAIN_SUFFIX=spirv-tools:-next
check k "spirv-tools" stale
unset KCACHE_TEST_TOOLCHAIN_SUFFIX
check k "" fresh

note "never built"
expect_exit 3 "$KCACHE_TESTING" inspect nosuch --why --manifest p/kcache.toml
expect_in err "neither in the store nor in"

note "build --explain: one line per kernel that did not hit, with the same reason"
manifest s/k.comp main 7 256 vulkan1.2 performance 3
expect_exit 0 "$KCACHE_TESTING" build p/kcache.toml --explain
expect_in out "rebuilt k: stale: define:VALUE 1 → 7"
expect_in out "rebuilt v[W=3]: not in spirv/vulkan1.2; nearest stored variant v[W=1] differs in: variant:W 1 → 3"
[[ $(grep -c '^rebuilt ' out) == 2 ]] || { cat out; fail "expected exactly 2 explain lines"; }
# inspect --why without a kernel: every kernel that would not hit, one line each.
manifest s/k.comp main 8 256 vulkan1.2 performance 3
expect_exit 0 "$KCACHE_TESTING" inspect --why --manifest p/kcache.toml
expect_in out "k: stale: define:VALUE 7 → 8"
expect_in out "2 of 3 kernels fresh; 1 would be rebuilt"
