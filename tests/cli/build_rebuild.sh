#!/usr/bin/env bash
# Build the example cold, then again: the second run compiles nothing.
source "$(dirname "$0")/lib.bash"
copy_example proj
expect_exit 0 "$KCACHE" build proj/kcache.toml --json -j 2
cp out cold.json
n=$(json_get cold.json 'len(j["kernels"])')
[[ $n -ge 60 ]] || fail "example has only $n kernels"
read -r hit compiled stale failed < <(counts cold.json)
[[ $compiled -eq $n && $failed -eq 0 && $hit -eq 0 ]] || fail "cold: $hit hit, $compiled compiled, $failed failed"
note "cold: $n kernels compiled in $(json_get cold.json 'round(j["wall_ms"])') ms"

expect_exit 0 "$KCACHE" build proj/kcache.toml --json
read -r hit compiled stale failed < <(counts out)
[[ $hit -eq $n && $compiled -eq 0 && $stale -eq 0 ]] || fail "warm: $hit hit, $compiled compiled"
# The warm path must not preprocess: no time in expand or glslang.
[[ $(json_get out 'j["phases"]["expand"]["wall_ms"] == 0 and j["phases"]["glslang"]["wall_ms"] == 0') == True ]] \
  || fail "warm build preprocessed or compiled"
note "warm: all $n hits in $(json_get out 'round(j["wall_ms"])') ms"

# The text summary and --report.
expect_exit 0 "$KCACHE" build proj/kcache.toml --report report.json
expect_in out "$n kernels: $n hit, 0 compiled"
[[ $(json_get report.json 'j["schema"]') == kcache.build/1 ]] || fail "bad --report"
