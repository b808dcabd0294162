#!/usr/bin/env bash
# `kcache build --backend vulkan` with a remote cache on a real redis-server
# and lavapipe (docs/design.md "Remote caches"): runner A creates every
# pipeline and fills the remote with modules and blobs; runner B, with a
# fresh store, gets every module and every blob from the remote and starts
# no pipeline worker (no pipeline time, nothing created); a blob stored under
# another device namespace is never asked for, a value of another namespace
# under this device's key is refused as foreign, and a blob damaged inside
# Redis is refused, created again and written back. Labels: device, servers.
source "$(dirname "$0")/lib.bash"
source "$KCACHE_SOURCE_DIR/tests/cli/servers.bash"
copy_example proj
start_redis R

expect_exit 0 "$KCACHE" devices --json
fp=$(json_get out '[d["fingerprint"] for d in j["devices"] if "llvmpipe" in d["name"]][0]')
ns="vulkan/$fp"
build() { expect_exit 0 "$KCACHE" build proj/kcache.toml --backend vulkan --device llvmpipe -j 2 --json "$@"; }
# in_ns FILE OUTCOME: kernels of the device namespace with that outcome.
in_ns() { json_get "$1" "len([k for k in j['kernels'] if k['namespace'] == '$ns' and k['outcome'] == '$2'])"; }
# pipeline_ms FILE: pipeline-creation time over every kernel, in ms.
pipeline_ms() { json_get "$1" "sum(k['phases']['pipeline']['wall_ms'] + k['phases']['pipeline']['cpu_ms'] for k in j['kernels'])"; }

note "runner A: creates every pipeline, fills the remote with modules and blobs"
build --store A --remote "$R_URL"
cp out a.json
n=$(json_get a.json "len([k for k in j['kernels'] if k['namespace'].startswith('spirv/')])")
m=$(json_get a.json "len([k for k in j['kernels'] if k['namespace'] == '$ns'])")
[[ $n -ge 60 && $m -eq $n && $(in_ns a.json compiled) -eq $m ]] || fail "A: $n modules, $m pipelines, $(in_ns a.json compiled) created"
[[ $(remote_stat a.json writes) -eq $((n + m)) && $(remote_stat a.json misses) -eq $((n + m)) ]] ||
  fail "A: $(remote_stat a.json writes) writes, $(remote_stat a.json misses) misses for $((n + m)) entries"
[[ $(redis R --scan --pattern "kcache1/$ns/*" | wc -l) -eq $m ]] || fail "redis holds $(redis R --scan --pattern "kcache1/$ns/*" | wc -l) blobs of $ns"
[[ $(pipeline_ms a.json) != 0.0 ]] || fail "A took no pipeline time"

note "runner B: fresh store, every module and blob from the remote, no pipeline created"
build --store B --remote "$R_URL"
cp out b.json
[[ $(outcome b.json remote_hit) -eq $((n + m)) && $(outcome b.json compiled) -eq 0 && $(outcome b.json failed) -eq 0 ]] ||
  fail "B: $(outcome b.json remote_hit) remote hits, $(outcome b.json compiled) compiled, $(outcome b.json failed) failed"
[[ $(in_ns b.json remote_hit) -eq $m ]] || fail "B: $(in_ns b.json remote_hit) of $m pipelines from the remote"
[[ $(remote_stat b.json hits) -eq $((n + m)) && $(remote_stat b.json refused) -eq 0 && $(remote_stat b.json writes) -eq 0 ]] ||
  fail "B remote counts: $(json_get b.json "j['remotes']")"
# No worker ran: not a millisecond of pipeline creation, and no compiler.
[[ $(pipeline_ms b.json) == 0.0 && $(json_get b.json "j['phases']['pipeline']['wall_ms']") == 0.0 ]] ||
  fail "B spent $(pipeline_ms b.json) ms creating pipelines"
[[ $(json_get b.json "j['phases']['glslang']['wall_ms']") == 0.0 ]] || fail "B compiled"
expect_exit 0 "$KCACHE" build proj/kcache.toml --backend vulkan --device llvmpipe -j 2 --store B2 --remote "$R_URL"
expect_in out "$m pipelines: 0 hit, $m from remotes, 0 created, 0 failed"
# B's store is whole: it verifies, and a rebuild is all local hits.
expect_exit 0 "$KCACHE" verify --store B
expect_in out "no problems"
build --store B --remote "$R_URL"
read -r hit compiled stale failed < <(counts out)
[[ $hit -eq $((n + m)) && $(remote_stat out hits) -eq 0 && $(remote_stat out misses) -eq 0 ]] || fail "B again: $hit hits"
expect_exit 0 "$KCACHE" inspect --store B
expect_in out "imported from remote redis://127.0.0.1:$R_PORT/0"

note "a blob stored under another device namespace is never served"
K=$(redis R --scan --pattern "kcache1/$ns/*" | sort | sed -n 1p)
OTHER="kcache1/vulkan/0123456789abcdef/${K##*/}"
redis R RENAME "$K" "$OTHER" >/dev/null
build --store C --remote "$R_URL"
cp out c.json
[[ $(in_ns c.json compiled) -eq 1 && $(in_ns c.json remote_hit) -eq $((m - 1)) && $(remote_stat c.json refused) -eq 0 ]] ||
  fail "C: $(in_ns c.json compiled) created, $(in_ns c.json remote_hit) from the remote, $(remote_stat c.json refused) refused"
[[ $(remote_stat c.json misses) -eq 1 && $(remote_stat c.json writes) -eq 1 ]] || fail "C: the missing blob was not written back"
[[ $(redis R EXISTS "$K") -eq 1 ]] || fail "the created blob is not under $K"

note "a value of another namespace under this device's key is foreign: refused"
S=$(redis R --scan --pattern 'kcache1/spirv/*' | sed -n 1p)
redis R COPY "$S" "$K" REPLACE >/dev/null
build --store D --remote "$R_URL"
cp out d.json
[[ $(remote_stat d.json refused) -eq 1 && $(in_ns d.json compiled) -eq 1 ]] ||
  fail "D: $(remote_stat d.json refused) refused, $(in_ns d.json compiled) created"
json_get d.json "j['remotes'][0]['refusals'][0]" | grep -q "holds namespace spirv/.*, not $ns" ||
  fail "foreign reason: $(json_get d.json "j['remotes'][0]['refusals']")"

note "a blob damaged inside Redis is refused, created again, counted and repaired"
K2=$(redis R --scan --pattern "kcache1/$ns/*" | sort | sed -n 2p)
redis R SETRANGE "$K2" 100 'XXXXXXXX' >/dev/null
build --store E --remote "$R_URL"
cp out e.json
[[ $(remote_stat e.json refused) -eq 1 && $(in_ns e.json compiled) -eq 1 && $(in_ns e.json remote_hit) -eq $((m - 1)) ]] ||
  fail "E: $(remote_stat e.json refused) refused, $(in_ns e.json compiled) created"
json_get e.json "j['remotes'][0]['refusals'][0]" | grep -q "digest mismatch" || fail "E reason: $(json_get e.json "j['remotes'][0]['refusals']")"
[[ $(pipeline_ms e.json) != 0.0 ]] || fail "E created its pipeline in no time"
expect_exit 0 "$KCACHE" verify --store E
expect_in out "no problems"
build --store F --remote "$R_URL"
[[ $(in_ns out remote_hit) -eq $m && $(remote_stat out refused) -eq 0 ]] || fail "the remote was not repaired"

note "kcache stats counts both stages' remote hits"
expect_exit 0 "$KCACHE" stats --store B --json
[[ $(json_get out "j['totals']['remote']['remote_hit']") -eq $((n + m)) ]] || fail "stats: $(json_get out "j['totals']['remote']")"
echo "ok"
