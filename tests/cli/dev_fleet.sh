#!/usr/bin/env bash
# Fleet: a vulkan namespace is a GPU model + driver, not one card. The bundle
# in tests/data/fleet/ was exported by kcache 0.1.0 on one NVIDIA H200 (card
# 1f224b44…), when the namespace id still included deviceUUID (schema 1). It
# must import here for the H200 class (vulkan/8740c22bd9de6f22), its blobs
# re-wrapped for that class; a vulkan bundle whose SPIR-V the store lacks is
# refused naming the namespace; a refused first import leaves no store.
# The pipelines were built from the example's modules as kcache 0.1 compiled
# them (before glslc's implicit include extension and debug stripping), so
# the test imports those modules (example-spirv-*.kcb, exported by kcache
# 0.1 at commit 8d5849d) rather than building them with this kcache.
source "$(dirname "$0")/lib.bash"
data="$KCACHE_SOURCE_DIR/tests/data/fleet"
bundle="$data/h200-card-a-schema1.kcb"
h200=8740c22bd9de6f22   # the H200 class: vendor 0x10de, device 0x2335, driver 580.159.04

note "the bundle names the card's old namespace; its head still reads"
expect_exit 0 "$KCACHE" inspect "$bundle"
expect_in out "vulkan/b26b75c9563346ec"

note "a vulkan bundle alone is refused, naming the SPIR-V namespace it needs; no store is left behind"
export KCACHE_STORE="$WORK/new-store"
expect_exit 6 "$KCACHE" import "$bundle" --fingerprint $h200
expect_in err "its SPIR-V module is not in spirv/vulkan1.2 of this store"
expect_in err "import the spirv/vulkan1.2 bundle first"
[[ ! -e $KCACHE_STORE ]] || fail "a refused first import left a store at $KCACHE_STORE"

note "another class is refused by fingerprint (exit 5), store still absent"
expect_exit 5 "$KCACHE" import "$bundle" --fingerprint 0123456789abcdef
expect_in err "fingerprint: bundle $h200 ≠ target 0123456789abcdef"
[[ ! -e $KCACHE_STORE ]] || fail "a refused first import left a store at $KCACHE_STORE"

# The portable SPIR-V the pipelines were built from, as kcache 0.1 built it.
import_spirv() {
  local t
  for t in 1.1 1.2 1.3; do expect_exit 0 "$KCACHE" import "$data/example-spirv-vulkan$t.kcb"; done
}

note "with its SPIR-V in the store (portable), the card-A bundle imports into the H200 class"
import_spirv
expect_exit 0 "$KCACHE" import "$bundle" --fingerprint $h200 --json
cp out import.json
[[ $(json_get import.json 'j["counts"]["imported"]') == 76 ]] || fail "imported $(json_get import.json 'j["counts"]')"
[[ $(json_get import.json 'j["counts"]["refused"]') == 0 ]] || fail "refused entries"
expect_exit 0 "$KCACHE" inspect --json
cp out inspect.json
[[ $(json_get inspect.json '[n["entries"] for n in j["namespaces"] if n["name"] == "vulkan/'$h200'"][0]') == 76 ]] \
  || fail "vulkan/$h200 does not hold 76 entries"
[[ $(json_get inspect.json '[n for n in j["namespaces"] if n["name"] == "vulkan/b26b75c9563346ec"]') == "[]" ]] \
  || fail "the card's schema-1 namespace was created"
[[ $(json_get inspect.json '"deviceUUID" in [n for n in j["namespaces"] if n["backend"] == "vulkan"][0]["record"]') == False ]] \
  || fail "deviceUUID is in the stored namespace record"

note "every re-wrapped blob passes verify against the class record; importing again changes nothing"
expect_exit 0 "$KCACHE" verify
expect_in out "no problems"
expect_exit 0 "$KCACHE" import "$bundle" --fingerprint $h200
expect_in out "imported 0, already present 76, replaced (stale) 0, refused 0"

note "the bundle card b9a9891f exported under schema 2 names the same class, and imports as it is"
expect_exit 0 "$KCACHE" inspect "$data/h200-card-b-schema2.kcb"
expect_in out "vulkan/$h200"
export KCACHE_STORE="$WORK/store-b"
import_spirv
expect_exit 0 "$KCACHE" import "$data/h200-card-b-schema2.kcb" --fingerprint $h200
expect_in out "imported 76, already present 0, replaced (stale) 0, refused 0"
expect_exit 0 "$KCACHE" verify
expect_in out "no problems"
