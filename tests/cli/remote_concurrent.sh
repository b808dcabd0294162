#!/usr/bin/env bash
# 8 builds at once against one real redis-server, each with its own fresh
# store: every one succeeds with every kernel built or fetched (none failed,
# none refused), the remote ends with exactly one value per kernel, and a
# build afterwards takes every kernel from it.
source "$(dirname "$0")/lib.bash"
source "$KCACHE_SOURCE_DIR/tests/cli/servers.bash"
copy_example proj
start_redis R
N=76
pids=()
for i in 1 2 3 4 5 6 7 8; do
  ( until [[ -e go ]]; do sleep 0.005; done
    "$KCACHE" build proj/kcache.toml --store "S$i" -j1 --remote "$R_URL" --json >"b$i.json" 2>"b$i.err" ) &
  pids+=($!)
done
touch go
for i in 1 2 3 4 5 6 7 8; do
  wait "${pids[$((i - 1))]}" || fail "build $i failed: $(cat "b$i.err")"
  got=$(json_get "b$i.json" "j['counts']['compiled'] + j['counts']['remote_hit']")
  [[ $got == "$N" ]] || fail "build $i: $(counts "b$i.json")"
  [[ $(remote_stat "b$i.json" refused) == 0 && $(remote_stat "b$i.json" errors) == 0 ]] ||
    fail "build $i: refused $(remote_stat "b$i.json" refused), errors $(remote_stat "b$i.json" errors)"
done
[[ $(redis R DBSIZE) == "$N" ]] || fail "redis holds $(redis R DBSIZE) values"
expect_exit 0 "$KCACHE" build proj/kcache.toml --store after -j2 --remote "$R_URL" --json
[[ $(outcome out remote_hit) == "$N" ]] || fail "after: $(outcome out remote_hit) remote hits"
hits=0
for i in 1 2 3 4 5 6 7 8; do hits=$((hits + $(outcome "b$i.json" remote_hit))); done
note "remote hits across the 8 concurrent builds: $hits of $((8 * N))"
echo "ok"
