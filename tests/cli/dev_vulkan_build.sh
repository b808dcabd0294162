#!/usr/bin/env bash
# `kcache build --backend vulkan` of the example on lavapipe: every compute
# kernel gets a pipeline blob in the device's namespace; a warm rebuild
# creates nothing; verify finds no problem; verify --device re-creates every
# pipeline from its blob. (Lavapipe, Mesa 22.3 on Debian 12, keeps only a
# header in compute pipeline caches: verify --device sends every blob to the
# driver and every pipeline is a miss, exactly, every time; a hit would mean
# the driver or kcache's creation flags changed. Speed is measured on a GPU
# by scripts/bench_gpu.)
source "$(dirname "$0")/lib.bash"
copy_example proj

expect_exit 0 "$KCACHE" devices --json
fp=$(json_get out '[d["fingerprint"] for d in j["devices"] if "llvmpipe" in d["name"]][0]')
ns="vulkan/$fp"

expect_exit 0 "$KCACHE" build proj/kcache.toml --backend vulkan --device llvmpipe --json -j 2
cp out cold.json
n=$(json_get cold.json 'len([k for k in j["kernels"] if k["namespace"].startswith("spirv/")])')
m=$(json_get cold.json "len([k for k in j['kernels'] if k['namespace'] == '$ns'])")
created=$(json_get cold.json "len([k for k in j['kernels'] if k['namespace'] == '$ns' and k['outcome'] == 'compiled'])")
[[ $n -ge 60 && $m -eq $n && $created -eq $m ]] || fail "cold: $n modules, $m pipelines, $created created"
[[ $(json_get cold.json 'j["counts"]["failed"]') -eq 0 ]] || fail "cold build failed kernels"
ms=$(json_get cold.json "round(sum(k['phases']['pipeline']['wall_ms'] for k in j['kernels'] if k['namespace'] == '$ns'))")
note "cold: $n modules, $m pipelines created ($ms ms of pipeline creation) in $(json_get cold.json 'round(j["wall_ms"])') ms"

# Warm: every module and every pipeline is a hit; no driver is asked.
expect_exit 0 "$KCACHE" build proj/kcache.toml --backend vulkan --device llvmpipe --json
read -r hit compiled stale failed < <(counts out)
[[ $hit -eq $((n + m)) && $compiled -eq 0 && $stale -eq 0 && $failed -eq 0 ]] \
  || fail "warm: $hit hit, $compiled compiled, $stale stale, $failed failed"
note "warm: all $((n + m)) hits in $(json_get out 'round(j["wall_ms"])') ms"
expect_exit 0 "$KCACHE" build proj/kcache.toml --backend vulkan --device "$fp"
expect_in out "device llvmpipe"
expect_in out "$m pipelines: $m hit, 0 created, 0 failed"
# The summary names kernels and pipelines apart, not "$((n + m)) kernels".
expect_in out "$n kernels and $m pipelines: $((n + m)) hit, 0 compiled"

# The store checks out without a device, and each blob serves the device.
expect_exit 0 "$KCACHE" verify
expect_in out "no problems"
expect_exit 0 "$KCACHE" verify --json
[[ $(json_get out 'j["entries"]') -eq $((n + m)) ]] || fail "verify did not check every entry"
expect_exit 0 "$KCACHE" verify --device llvmpipe --json -j 2
cp out verify.json
read -r vhit vmiss vref vfail sent < <(json_get verify.json \
  '" ".join(str(x) for x in [j["counts"]["hit"], j["counts"]["miss"], j["counts"]["refused"], j["counts"]["failure"], j["sent_to_driver"]])')
[[ $vhit -eq 0 && $vmiss -eq $m && $vref -eq 0 && $vfail -eq 0 && $sent -eq $m ]] \
  || fail "verify --device on lavapipe: $vhit hit, $vmiss miss, $vref refused, $vfail failed, $sent sent; want all $m miss, all sent"
[[ $(json_get verify.json 'sorted({p["status"] for p in j["pipelines"]})') == "['miss']" && \
   $(json_get verify.json 'len(j["pipelines"])') -eq $m ]] || fail "verify --device: pipeline statuses are not all miss"
note "verify --device: $vmiss miss of $m, as lavapipe always gives (it keeps no compute code in its caches)"
expect_exit 0 "$KCACHE" verify --device llvmpipe --timed --json -j 1
[[ $(json_get out 'j["counts"]["timed"]') -eq $m ]] || fail "verify --timed did not time every pipeline"
[[ $(json_get out '"create_ms_empty_cache" in j') == True ]] || fail "verify --timed gave no empty-cache times"
note "verify --timed: $(json_get out 'round(j["create_ms_with_blob"])') ms with blobs, $(json_get out 'round(j["create_ms_empty_cache"])') ms without"

# The device namespace is a store namespace like any other.
expect_exit 0 "$KCACHE" inspect
expect_in out "namespace $ns"
expect_in out "pipelineCacheUUID"

# A changed spec constant makes the affected pipelines stale.
sed -i 's/spec_constants = { "0" = 128 }/spec_constants = { "0" = 64 }/' proj/kcache.toml
expect_exit 0 "$KCACHE" build proj/kcache.toml --backend vulkan --device llvmpipe --json -j 2
stale=$(json_get out "len([k for k in j['kernels'] if k['namespace'] == '$ns' and k['outcome'] != 'hit'])")
[[ $stale -ge 1 && $stale -lt $m ]] || fail "spec constant edit rebuilt $stale pipelines"
note "spec constant edit: $stale pipelines rebuilt"
