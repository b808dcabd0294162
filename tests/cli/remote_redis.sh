#!/usr/bin/env bash
# A shared remote cache on a real redis-server (docs/design.md "Remote
# caches"): runner A builds cold and fills it; runner B, with a fresh store,
# builds with every kernel from the remote and compiles nothing; a value
# damaged inside Redis or moved under another namespace's key is refused,
# recompiled and never stored (and the recompiled value repairs the remote);
# a read-only remote is never written; a rebuild is all local hits.
source "$(dirname "$0")/lib.bash"
source "$KCACHE_SOURCE_DIR/tests/cli/servers.bash"
copy_example proj
start_redis R
N=76  # the example's kernels

note "runner A: cold, fills the remote"
expect_exit 0 "$KCACHE" build proj/kcache.toml --store A -j2 --remote "$R_URL" --json
cp out a.json
[[ $(outcome a.json compiled) == "$N" ]] || fail "A compiled $(outcome a.json compiled)"
[[ $(remote_stat a.json misses) == "$N" && $(remote_stat a.json writes) == "$N" ]] ||
  fail "A: misses/writes $(remote_stat a.json misses)/$(remote_stat a.json writes)"
[[ $(redis R DBSIZE) == "$N" ]] || fail "redis holds $(redis R DBSIZE) keys"
[[ $(remote_stat a.json bytes_written) -gt 100000 ]] || fail "A wrote $(remote_stat a.json bytes_written) bytes"

note "runner B: fresh store, every kernel from the remote, no compile"
expect_exit 0 "$KCACHE" build proj/kcache.toml --store B -j2 --remote "$R_URL" --json
cp out b.json
[[ $(outcome b.json remote_hit) == "$N" && $(outcome b.json compiled) == 0 ]] ||
  fail "B: remote_hit $(outcome b.json remote_hit), compiled $(outcome b.json compiled)"
[[ $(remote_stat b.json hits) == "$N" && $(remote_stat b.json refused) == 0 && $(remote_stat b.json writes) == 0 ]] ||
  fail "B remote counts"
# No compiler ran at all: glslang and spirv-opt took no time.
[[ $(json_get b.json "j['phases']['glslang']['wall_ms'] + j['phases']['spirv-opt']['wall_ms']") == 0.0 ]] ||
  fail "B compiled: $(json_get b.json "j['phases']")"
# B's store holds the same modules as A's, marked as from the remote, and verifies.
expect_exit 0 "$KCACHE" verify --store B
expect_exit 0 "$KCACHE" inspect --store B
expect_in out "imported from remote redis://127.0.0.1:$R_PORT/0"
for k in "saxpy[T=float,WIDTH=4]" "reduce[OP=KC_OP_MAX,T=int]"; do
  "$KCACHE" get --store A "$k" -o a.spv >/dev/null
  "$KCACHE" get --store B "$k" -o b.spv >/dev/null
  cmp -s a.spv b.spv || fail "$k differs between A and B"
done
note "without --trust the summary says the values were not authenticated"
expect_exit 0 "$KCACHE" build proj/kcache.toml --store B2 -j2 --remote "$R_URL"
expect_in out "were not authenticated"
expect_in out "from remotes: $N kernels"

note "B again: local hits, the remote is not asked"
expect_exit 0 "$KCACHE" build proj/kcache.toml --store B -j2 --remote "$R_URL" --json
[[ $(outcome out hit) == "$N" && $(remote_stat out hits) == 0 && $(remote_stat out misses) == 0 ]] ||
  fail "B again: $(counts out)"

note "kcache stats keeps the remote counts of B's two runs"
expect_exit 0 "$KCACHE" stats --store B --json
[[ $(json_get out "j['totals']['remote']['remote_hit']") == "$N" ]] || fail "stats: $(json_get out "j['totals']")"
[[ $(json_get out "j['totals']['remote']['bytes_read']") == $(remote_stat b.json bytes_read) ]] || fail "stats bytes"
expect_exit 0 "$KCACHE" stats --store B
expect_in out "remote caches: $N kernels from remotes"

note "a value damaged inside Redis is refused, recompiled, not stored, and repaired"
KEY=$(redis R --scan --pattern '*spirv/vulkan1.2/*' | sed -n 1p)
[[ -n $KEY ]] || fail "no vulkan1.2 key"
redis R SETRANGE "$KEY" 200 'XXXX' >/dev/null
expect_exit 0 "$KCACHE" build proj/kcache.toml --store C -j2 --remote "$R_URL" --json
cp out c.json
[[ $(remote_stat c.json refused) == 1 && $(outcome c.json remote_hit) == $((N - 1)) && $(outcome c.json compiled) == 1 ]] ||
  fail "C: refused $(remote_stat c.json refused), remote_hit $(outcome c.json remote_hit), compiled $(outcome c.json compiled)"
json_get c.json "j['remotes'][0]['refusals'][0]" | grep -q "digest mismatch" || fail "refusal reason: $(json_get c.json "j['remotes'][0]['refusals']")"
[[ $(remote_stat c.json writes) == 1 ]] || fail "the recompiled kernel was not written back"
expect_exit 0 "$KCACHE" verify --store C
expect_exit 0 "$KCACHE" build proj/kcache.toml --store D -j2 --remote "$R_URL" --json
[[ $(outcome out remote_hit) == "$N" ]] || fail "the remote was not repaired: $(outcome out remote_hit)"

note "a value of another namespace under this key is foreign: refused"
K11=$(redis R --scan --pattern '*spirv/vulkan1.1/*' | sed -n 1p)
K12=$(redis R --scan --pattern '*spirv/vulkan1.2/*' | sed -n 1p)
redis R COPY "$K11" "$K12" REPLACE >/dev/null
expect_exit 0 "$KCACHE" build proj/kcache.toml --store E -j2 --remote "$R_URL" --json
[[ $(remote_stat out refused) == 1 && $(outcome out compiled) == 1 ]] || fail "foreign value: $(remote_stat out refused) refused"
json_get out "j['remotes'][0]['refusals'][0]" | grep -q "holds namespace spirv/vulkan1.1, not spirv/vulkan1.2" ||
  fail "foreign reason: $(json_get out "j['remotes'][0]['refusals']")"

note "a read-only remote is read, never written"
printf '\n[[kernel]]\nname = "extra"\nsource = "shaders/saxpy.comp"\ndefines = { T = "float", WIDTH = 2 }\n' >> proj/kcache.toml
BEFORE=$(redis R DBSIZE)
expect_exit 0 "$KCACHE" build proj/kcache.toml --store F -j2 --remote "$R_URL?read-only" --json
[[ $(outcome out compiled) == 1 && $(outcome out remote_hit) == "$N" && $(remote_stat out writes) == 0 ]] ||
  fail "read-only URL: $(outcome out compiled) compiled, $(remote_stat out writes) writes"
[[ $(remote_stat out writable) == False ]] || fail "read-only remote reported writable"
expect_exit 0 "$KCACHE" build proj/kcache.toml --store G -j2 --remote "$R_URL" --remote-read-only --json
[[ $(remote_stat out writes) == 0 && $(redis R DBSIZE) == "$BEFORE" ]] || fail "--remote-read-only wrote"

note "KCACHE_REMOTE is read when no --remote is given"
KCACHE_REMOTE="$R_URL" expect_exit 0 "$KCACHE" build proj/kcache.toml --store H -j2 --json
[[ $(outcome out remote_hit) == "$N" ]] || fail "KCACHE_REMOTE: $(outcome out remote_hit) remote hits"
echo "ok"
