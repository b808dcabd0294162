#!/usr/bin/env bash
# inspect --foreign: a device namespace matching no local device (here: no
# Vulkan loader at all, KCACHE_VULKAN_LOADER pointing nowhere), and a spirv
# namespace of a target the manifest no longer uses; the per-namespace
# summary (entries, last used, origin) in JSON.
source "$(dirname "$0")/lib.bash"
mkdir -p p
printf '#version 450\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer B { uint d[]; };\nvoid main() { d[0] = 1u; }\n' > p/k.comp
printf '[[kernel]]\nname = "k"\nsource = "k.comp"\n' > p/kcache.toml
expect_exit 0 "$KCACHE" build p/kcache.toml --backend vulkan
expect_exit 0 "$KCACHE" inspect --foreign
expect_in out "no foreign namespaces"
KCACHE_VULKAN_LOADER=/nonexistent/libvulkan.so.1 expect_exit 0 "$KCACHE" inspect --foreign --json
[[ $(json_get out '",".join(n["backend"] for n in j["namespaces"])') == vulkan ]] || { cat out; fail "vulkan namespace not foreign without a device"; }
expect_in out "no local device to match"
printf '[[kernel]]\nname = "k"\nsource = "k.comp"\ntarget = "vulkan1.3"\n' > p/k13.toml
expect_exit 0 "$KCACHE" inspect --foreign --manifest p/k13.toml --json
[[ $(json_get out '",".join(n["name"] for n in j["namespaces"])') == spirv/vulkan1.2 ]] || { cat out; fail "unused target not foreign"; }
expect_exit 0 "$KCACHE" inspect --json
[[ $(json_get out '[n["entries"] for n in j["namespaces"]]') == "[1, 1]" ]] || fail "entry counts"
[[ $(json_get out 'j["namespaces"][0]["origins"][0]["origin"]') == built ]] || fail "origin"
[[ $(json_get out 'j["namespaces"][0]["last_used"] is not None') == True ]] || fail "last used"
