#!/usr/bin/env bash
# A driver crash while creating one pipeline fails that kernel only: the
# worker process that crashed is replaced, the kernels in flight beside it
# are retried one at a time, and every other kernel is built and stored.
# KCACHE_TEST_CRASH_KERNEL makes the worker abort when that kernel reaches it.
source "$(dirname "$0")/lib.bash"
# KCACHE_TEST_* seams: only the test build obeys them, so this runs $KCACHE_TESTING.
copy_example proj
victim='saxpy[T=float,WIDTH=4]'

expect_exit 1 env KCACHE_TEST_CRASH_KERNEL="$victim" "$KCACHE_TESTING" build proj/kcache.toml --backend vulkan \
  --device llvmpipe --json -j 2
cp out crash.json
failed=$(json_get crash.json "[k['kernel'] for k in j['kernels'] if k['outcome'] == 'failed']")
[[ $failed == "['$victim']" ]] || fail "failed kernels: $failed"
msg=$(json_get crash.json "[k['error']['message'] for k in j['kernels'] if k['outcome'] == 'failed'][0]")
[[ $msg == *"killed by signal 6"* ]] || fail "crash message: $msg"
m=$(json_get crash.json "len([k for k in j['kernels'] if k['namespace'].startswith('vulkan/')])")
ok=$(json_get crash.json "len([k for k in j['kernels'] if k['namespace'].startswith('vulkan/') and k['outcome'] == 'compiled'])")
[[ $ok -eq $((m - 1)) ]] || fail "only $ok of $((m - 1)) other pipelines were built"
note "crash in $victim: $ok other pipelines built; reported: $msg"

# The text summary names it too.
expect_exit 1 env KCACHE_TEST_CRASH_KERNEL="$victim" "$KCACHE_TESTING" build proj/kcache.toml --backend vulkan --device llvmpipe
expect_in out "FAILED $victim"

# Without the crash, only the victim is left to build.
expect_exit 0 "$KCACHE_TESTING" build proj/kcache.toml --backend vulkan --device llvmpipe --json
[[ $(json_get out "len([k for k in j['kernels'] if k['outcome'] == 'compiled'])") -eq 1 ]] || fail "rebuild after crash"

# verify --device goes on past a crash in the same way.
expect_exit 1 env KCACHE_TEST_CRASH_KERNEL="$victim" "$KCACHE_TESTING" verify --device llvmpipe --json -j 2
[[ $(json_get out 'j["counts"]["failure"]') -eq 1 ]] || fail "verify: not exactly one failure"
# Every other pipeline is what lavapipe always gives for a good blob: a miss
# (tests/cli/dev_vulkan_build.sh).
[[ $(json_get out 'j["counts"]["miss"]') -eq $(($(json_get out 'len(j["pipelines"])') - 1)) && \
   $(json_get out 'j["counts"]["hit"]') -eq 0 ]] || fail "verify: the other pipelines are not all misses: $(json_get out 'j["counts"]')"
[[ $(json_get out "[p['status'] for p in j['pipelines'] if p['kernel'] == '$victim'][0]") == failure ]] \
  || fail "verify: the victim is not the failure"
