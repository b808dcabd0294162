#!/usr/bin/env bash
# Delta bundles (format version 6): `export --since BASE.kcb` ships only the
# entries added or replaced since BASE, names BASE by digest and file name
# and lists what it keeps and removes (with BASE's keys). Applied to a store
# holding BASE it gives the same entries as the full export; a store without
# BASE is refused, naming the missing kernels, and left as it was (no store
# at all when there was none). Its removals need --replace or a trusted
# signature (tests/cli/hostile_delta.sh: what a hostile delta cannot do).
# merge and push take whole bundles and say so of a delta.
source "$(dirname "$0")/lib.bash"
example_store built proj
expect_exit 0 "$KCACHE" export --store built --namespace spirv/vulkan1.2 -o base.kcb

note "one kernel changed: the delta holds its variants only, a fraction of the whole"
echo 'float kc_delta_change(float x) { return x * 3.0; }' >>proj/shaders/saxpy.comp
expect_exit 0 "$KCACHE" build proj/kcache.toml --store built -j2
expect_exit 0 "$KCACHE" export --store built --namespace spirv/vulkan1.2 -o full.kcb
expect_exit 0 "$KCACHE" export --store built --namespace spirv/vulkan1.2 --since base.kcb -o delta.kcb --json
[[ $(json_get out 'j["entries"], j["delta"]["kept"], j["delta"]["removed"]') == "6 58 0" ]] \
  || fail "delta: $(cat out)"
base_bytes=$(stat -c %s base.kcb)
delta_bytes=$(stat -c %s delta.kcb)
note "delta $delta_bytes bytes, base $base_bytes bytes"
((delta_bytes * 10 < base_bytes)) || fail "the delta ($delta_bytes B) is not under a tenth of the base ($base_bytes B)"
expect_exit 0 "$KCACHE" inspect delta.kcb --json
[[ $(json_get out 'j["format_version"], j["delta"]["kept"], len(j["delta"]["removed"]), j["ok"]') == "6 58 0 True" ]] || fail "inspect: $(head -c 300 out)"

note "a store without BASE: refused, naming what is missing; no store left"
expect_exit 3 "$KCACHE" import delta.kcb --store empty
expect_in err "delta on 'base.kcb' (BLAKE2b "
expect_in err "the store lacks 58 of the 58 entries of it the delta keeps: 'conv2d["
[[ ! -e empty ]] || fail "a refused delta left a store"

note "BASE, then the delta: the same entries as the full export"
expect_exit 0 "$KCACHE" import base.kcb --store fleet
expect_exit 0 "$KCACHE" import delta.kcb --store fleet
expect_in out "imported 0, already present 0, replaced (stale) 6, refused 0"
expect_exit 0 "$KCACHE" import full.kcb --store whole
keys() { "$KCACHE" inspect --store "$1" --json | json_get /dev/stdin 'sorted((e["kernel"], e["id"]) for e in j["entries"])'; }
[[ "$(keys fleet)" == "$(keys whole)" ]] || fail "BASE + delta differs from the full export"
expect_exit 0 "$KCACHE" verify --store fleet
expect_in out "no problems"

note "removed kernels go in the same transaction, with --replace or a trusted signature; merge refuses a delta"
expect_exit 0 "$KCACHE" export --store built --namespace spirv/vulkan1.2 --kernel 'saxpy*' --since base.kcb -o only.kcb --json
[[ $(json_get out 'j["entries"], j["delta"]["kept"], j["delta"]["removed"]') == "6 0 58" ]] || fail "only: $(cat out)"
expect_exit 0 "$KCACHE" import base.kcb --store shrink
expect_exit 1 "$KCACHE" import only.kcb --store shrink
expect_in err "it would remove 58 entries of the store"
expect_exit 0 "$KCACHE" import only.kcb --store shrink --replace
expect_in out "removed (delta) 58"
expect_exit 0 "$KCACHE" inspect --store shrink --json
[[ $(json_get out 'len([e for e in j["entries"] if e["namespace"] == "spirv/vulkan1.2"])') == 6 ]] || fail "shrink: $(head -c 300 out)"
expect_exit 2 "$KCACHE" merge delta.kcb base.kcb -o m.kcb
expect_in err "is a delta bundle"
expect_exit 2 "$KCACHE" push delta.kcb oci://127.0.0.1:9/kcache/delta:x
expect_in err "is a delta bundle"
