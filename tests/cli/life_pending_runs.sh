#!/usr/bin/env bash
# The pending run log (lib/kcache/store/pending_runs_internal.hpp): a warm
# no-op build writes no LMDB transaction (the store's last transaction id
# stays) and leaves its run record in runs.pending, which `kcache stats`
# shows at once; builds killed with SIGKILL at random points while appending
# leave a store that verifies and a log that stats reads; a torn or garbage
# file is read safely and restarted; the next build that writes folds the
# pending runs into the store, each once.
source "$(dirname "$0")/lib.bash"
# KCACHE_TEST_* seams: only the test build obeys them, so this runs $KCACHE_TESTING.
mkdir -p p
printf '#version 450\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer B { uint d[]; };\nvoid main() { d[0] = VALUE; }\n' > p/k.comp
for i in 1 2 3; do printf '[[kernel]]\nname = "k%d"\nsource = "k.comp"\ndefines = { VALUE = %d }\n' $i $i >> p/kcache.toml; done
T0=1700000000
export KCACHE_TEST_NOW=$T0   # every build within k_last_used_resolution: no usage writes
runs() { expect_exit 0 "$KCACHE_TESTING" stats --json; json_get out 'j["logged"]'; }
txn() { mdb_stat -e "$KCACHE_STORE" | awk '/Last transaction ID/ {print $4}'; }
command -v mdb_stat >/dev/null || fail "mdb_stat (lmdb-utils) not found: scripts/setup installs it"

expect_exit 0 "$KCACHE_TESTING" build p/kcache.toml
before=$(txn)
[[ $(runs) == 1 ]] || fail "one run after the cold build"
note "warm builds: no transaction, runs shown at once"
for _ in 1 2 3; do expect_exit 0 "$KCACHE_TESTING" build p/kcache.toml; done
[[ $(txn) == "$before" ]] || fail "a warm no-op build committed an LMDB transaction ($before -> $(txn))"
[[ -s $KCACHE_STORE/runs.pending ]] || fail "no runs.pending after warm builds"
[[ $(runs) == 4 ]] || fail "stats shows $(runs) runs, expected 4"

note "SIGKILL at random points of warm builds"
for i in $(seq 1 30); do
  "$KCACHE_TESTING" build p/kcache.toml > /dev/null 2>&1 &
  pid=$!
  sleep "0.0$((RANDOM % 10))"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
done
expect_exit 0 "$KCACHE_TESTING" verify
n=$(runs)
(( n >= 4 && n <= 34 )) || fail "stats after kills shows $n runs"

note "a torn tail, then garbage"
size=$(stat -c %s "$KCACHE_STORE/runs.pending")
truncate -s $((size - 3)) "$KCACHE_STORE/runs.pending"
[[ $(runs) == $((n - 1)) ]] || fail "a torn last record is not ignored alone"
head -c 3000 /dev/urandom > "$KCACHE_STORE/runs.pending"
[[ $(runs) == 0 ]] || fail "a garbage file shows runs"
expect_exit 0 "$KCACHE_TESTING" build p/kcache.toml   # restarts the file
[[ $(runs) == 1 ]] || fail "the build after garbage did not record its run"
expect_exit 0 "$KCACHE_TESTING" verify

note "the next write folds the pending runs, each once"
expect_exit 0 "$KCACHE_TESTING" build p/kcache.toml
[[ $(runs) == 2 ]] || fail "expected 2 pending runs"
# An hour later the hits' last-used times are due: that write folds them.
KCACHE_TEST_NOW=$((T0 + 3600)) expect_exit 0 "$KCACHE_TESTING" build p/kcache.toml
(( $(txn) > before )) || fail "no transaction when usage records were due"
[[ $(runs) == 3 ]] || fail "after the fold stats shows $(runs) runs, expected 3"
KCACHE_TEST_NOW=$((T0 + 3601)) expect_exit 0 "$KCACHE_TESTING" build p/kcache.toml
[[ $(runs) == 4 ]] || fail "a warm run after the fold is not shown"
python3 - "$KCACHE_STORE/runs.pending" <<'PY' || fail "runs.pending not restarted after the fold"
import sys
data = open(sys.argv[1], "rb").read()
sys.exit(0 if data[:4] == b"KCP\x01" and 16 < len(data) <= 16 + 400 else 1)
PY
