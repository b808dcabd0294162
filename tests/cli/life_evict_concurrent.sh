#!/usr/bin/env bash
# Size-limit eviction beside a running build (issue 39 item 3). Build A is
# held open deterministically after everything it does but its last check
# (KCACHE_TEST_PAUSE_BEFORE_RECHECK: it creates go-X.paused, then waits for
# go-X) while build B, over the store's max_size, evicts:
#  1. what A compiled is kept (A's lease: STORE/leases/), B says so, `gc`
#     keeps it too, and A exits 0;
#  2. what A found fresh and recorded as used is kept as well;
#  3. what A found but did not record (--no-record-usage: its last use is
#     older than A's lease) B evicts, and A's re-check makes it exit 4
#     naming the count, instead of reporting a store it no longer has;
#  4. a build killed while it holds its lease blocks nothing: its lease file
#     is unlocked, and the next eviction removes it and evicts as usual.
# KCACHE_TEST_* seams: only the test build obeys them, so this runs $KCACHE_TESTING.
source "$(dirname "$0")/lib.bash"
K=$KCACHE_TESTING
T0=1700000000
mkdir -p p
printf '#version 450\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer B { uint d[]; };\nvoid main() { d[0] = VALUE; }\n' > p/k.comp
# manifest FILE KERNEL...: one kernel per name, VALUE = its position.
manifest() {
  local file=$1 i=1 k
  shift
  : > "$file"
  for k in "$@"; do
    printf '[[kernel]]\nname = "%s"\nsource = "k.comp"\ntarget = "vulkan1.2"\ndefines = { VALUE = %d }\n' "$k" "$i" >> "$file"
    i=$((i + 1))
  done
}
manifest p/old.toml o1 o2 o3 o4
manifest p/a.toml a1 a2 a3 a4 a5 a6
manifest p/b.toml b1 b2
kernels() {
  expect_exit 0 "$K" inspect --json
  json_get "$WORK/out" '" ".join(sorted(e["kernel"] for e in j["entries"]))'
}
# A paused build left behind by a failing step must not wait out its 120 s.
trap 'touch "$WORK"/go-1 "$WORK"/go-2 "$WORK"/go-3 "$WORK"/go-4' EXIT
wait_for() {
  local i
  for ((i = 0; i < 6000; i++)); do [[ -e $1 ]] && return 0; sleep 0.01; done
  fail "timed out waiting for $1"
}
live_leases() { find "$KCACHE_STORE/leases" -maxdepth 1 -type f ! -name '.*' 2>/dev/null | wc -l; }
# start_a CASE NOW ARGS...: build A in the background at NOW, paused before
# its re-check; sets $pa.
start_a() {
  local n=$1 now=$2
  shift 2
  KCACHE_TEST_NOW=$now KCACHE_TEST_PAUSE_BEFORE_RECHECK="$WORK/go-$n" \
    "$K" build p/a.toml --no-evict --json "$@" >"a$n.json" 2>"a$n.err" &
  pa=$!
  wait_for "$WORK/go-$n.paused"
  kill -0 $pa 2>/dev/null || fail "build A ($n) is not running: $(cat "a$n.err")"
}
# finish_a CASE: lets build A go on; its exit code in $rc.
finish_a() {
  touch "$WORK/go-$1"
  rc=0
  wait $pa || rc=$?
}

KCACHE_TEST_NOW=$T0 expect_exit 0 "$K" build p/old.toml
expect_exit 0 "$K" config set max_size 1K

note "1: A's new entries survive B's eviction and a gc; A exits 0"
start_a 1 $((T0 + 100))
[[ $(live_leases) -eq 1 ]] || fail "A holds no lease file: $(ls -a "$KCACHE_STORE/leases")"
KCACHE_TEST_NOW=$((T0 + 200)) expect_exit 0 "$K" build p/b.toml
expect_in err "kcache: kept 6 entries in use by a running build"
expect_in err "kcache: store over its max_size 1 KiB (store setting): evicted 4"
[[ $(kernels) == "a1 a2 a3 a4 a5 a6 b1 b2" ]] || fail "B's eviction took A's entries: $(kernels)"
KCACHE_TEST_NOW=$((T0 + 300)) expect_exit 0 "$K" gc --unused-for 0s --json
[[ $(json_get out 'len(j["planned"]), j["kept_leased"]') == "0 8" ]] || { cat out; fail "gc removed what A's lease covers"; }
finish_a 1
[[ $rc -eq 0 ]] || fail "A exited $rc: $(cat a1.err)"
[[ $(counts a1.json) == "0 6 0 0" ]] || fail "A: $(counts a1.json)"
[[ $(kernels) == "a1 a2 a3 a4 a5 a6 b1 b2" ]] || fail "after A: $(kernels)"
[[ $(live_leases) -eq 0 ]] || fail "A left its lease behind"

note "2: A's hits, recorded as used, survive too"
start_a 2 $((T0 + 1000))
KCACHE_TEST_NOW=$((T0 + 1100)) expect_exit 0 "$K" build p/b.toml
expect_in err "kcache: kept 6 entries in use by a running build"
finish_a 2
[[ $rc -eq 0 ]] || fail "A exited $rc: $(cat a2.err)"
[[ $(counts a2.json) == "6 0 0 0" ]] || fail "A: $(counts a2.json)"
[[ $(kernels) == "a1 a2 a3 a4 a5 a6 b1 b2" ]] || fail "after A: $(kernels)"

note "3: hits A did not record are evicted; A's re-check fails it (exit 4)"
start_a 3 $((T0 + 2000)) --no-record-usage
KCACHE_TEST_NOW=$((T0 + 2100)) expect_exit 0 "$K" build p/b.toml
expect_in err "evicted 6"
finish_a 3
[[ $rc -eq 4 ]] || fail "A exited $rc, not 4 (store), with its entries gone: $(cat a3.err)"
expect_in a3.err "6 of the 6 kernels this build reported as stored are no longer in the store"
expect_in a3.err "a1 (spirv/vulkan1.2), a2 (spirv/vulkan1.2)"
expect_in a3.err "and 1 more; evicted by a concurrent gc/eviction while this build ran; run the build again"
KCACHE_TEST_NOW=$((T0 + 2200)) expect_exit 0 "$K" build p/a.toml --json --no-evict
[[ $(counts out) == "0 6 0 0" ]] || fail "the build again: $(counts out)"

note "4: a killed build's lease blocks nothing and is removed"
start_a 4 $((T0 + 3000)) --no-record-usage
kill -9 $pa
wait $pa || true
[[ $(live_leases) -eq 1 ]] || fail "the killed build's lease file is gone already"
KCACHE_TEST_NOW=$((T0 + 3100)) expect_exit 0 "$K" build p/b.toml
expect_in err "evicted 6"
[[ $(kernels) == "b1 b2" ]] || fail "after the killed build: $(kernels)"
[[ $(live_leases) -eq 0 ]] || fail "the dead lease file was not removed"
