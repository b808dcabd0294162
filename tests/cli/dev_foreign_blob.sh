#!/usr/bin/env bash
# A stored blob that belongs to another device (each Vulkan header field and
# kcache's wrapper driverVersion changed in turn, every digest made
# consistent again) is refused before any driver sees it: verify names the
# field, verify --device sends it nowhere, and a rebuild replaces it.
# A blob with a garbled header version is refused the same way.
source "$(dirname "$0")/lib.bash"
: "${KCACHE_BUILD_DIR:?}"
TAMPER="$KCACHE_BUILD_DIR/tests/kcache_test_tamper"
[[ -x $TAMPER ]] || fail "$TAMPER is not built (ninja kcache_test_tamper)"
example_store "$KCACHE_STORE" proj  # the example's SPIR-V built (the fixture cli.example_store)
victim='reduce[OP=KC_OP_SUM,T=float]'

expect_exit 0 "$KCACHE" devices --json
fp=$(json_get out '[d["fingerprint"] for d in j["devices"] if "llvmpipe" in d["name"]][0]')
ns="vulkan/$fp"
expect_exit 0 "$KCACHE" build proj/kcache.toml --backend vulkan --device llvmpipe -j 2
expect_exit 0 "$KCACHE" verify --device llvmpipe --json -j 2
m=$(json_get out 'len(j["pipelines"])')

for field in vendorID deviceID pipelineCacheUUID driverVersion headerVersion; do
  "$TAMPER" "$KCACHE_STORE" "$ns" "$victim" "$field" || fail "tamper $field"
  expect_exit 1 "$KCACHE" verify
  expect_in out "PROBLEM $victim (in $ns)"
  expect_in out "$field"
  expect_exit 1 "$KCACHE" verify --device llvmpipe --json -j 2
  cp out "verify-$field.json"
  status=$(json_get out "[p['status'] for p in j['pipelines'] if p['kernel'] == '$victim'][0]")
  message=$(json_get out "[p['message'] for p in j['pipelines'] if p['kernel'] == '$victim'][0]")
  sent=$(json_get out 'j["sent_to_driver"]')
  [[ $status == refused && $message == *"$field"* ]] || fail "$field: $status: $message"
  [[ $sent -eq $((m - 1)) ]] || fail "$field: $sent blobs sent to the driver, want $((m - 1))"
  note "$field: refused before the driver: $message"
  # A vulkan build does not take the foreign blob for a hit: it rebuilds it.
  expect_exit 0 "$KCACHE" build proj/kcache.toml --backend vulkan --device llvmpipe --json --explain
  reason=$(json_get out "[k.get('reason', '') for k in j['kernels'] if k['kernel'] == '$victim' and k['namespace'] == '$ns'][0]")
  [[ $reason == "stored entry refused: "*"$field"* ]] || fail "$field: rebuild reason: $reason"
  expect_exit 0 "$KCACHE" verify
done
