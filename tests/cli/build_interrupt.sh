#!/usr/bin/env bash
# Ctrl-C (SIGINT) or SIGTERM during a build: one line says how far it got
# and that the store keeps what was written, the exit code is 128 + the
# signal (130 for Ctrl-C), and nothing written before is lost: the store
# verifies and the next build hits every entry it holds.
source "$(dirname "$0")/lib.bash"
copy_example p
# Four copies of the example under other names, each compiled apart (its
# own preamble): long enough to interrupt.
for i in 2 3 4; do
  sed -n '/^\[\[kernel\]\]/,$p' p/kcache.toml | sed "s/^name = \"\\([^\"]*\\)\"/name = \"\\1_$i\"\npreamble = \"#define KCACHE_COPY $i\"/"
done > p/more.toml
cat p/more.toml >> p/kcache.toml
# entries: how many entries the store holds now (0 before it exists); a
# reader beside the build, as LMDB allows.
entries() {
  [[ -f $KCACHE_STORE/data.mdb ]] || { echo 0; return; }
  "$KCACHE" inspect --json >inspect.json 2>/dev/null && json_get inspect.json 'len(j["entries"])' || echo 0
}
interrupt() { # SIGNAL WANT_EXIT: builds, sends SIGNAL once new entries are stored (a few: so that
  # on a loaded machine the build is still far from done when the signal comes, the second time too)
  local sig=$1 want=$2 rc=0 before
  before=$(entries)
  "$KCACHE" build p/kcache.toml -j1 >out 2>err &
  local pid=$! start=$SECONDS
  # Counted, not guessed from the file's size: under ASan on a loaded
  # machine the first entries can take seconds to come.
  until (($(entries) >= before + 8)); do
    ((SECONDS - start < 120)) || { kill $pid; fail "SIG$sig: the build stored no 8 new entries in 120 s"; }
    sleep 0.1
  done
  kill -s "$sig" $pid
  wait $pid || rc=$?
  [[ $rc == "$want" ]] || { cat err; fail "SIG$sig: exit $rc, want $want"; }
  expect_in err "kcache: interrupted: "
  expect_in err "kernels were done; every entry written to the store so far is kept"
}
interrupt INT 130
grep -q "^kcache: interrupted: [0-9]* of 304 kernels" err || { cat err; fail "no count of the kernels done"; }
expect_exit 0 "$KCACHE" inspect --json
stored=$(json_get out 'len(j["entries"])')
((stored > 0 && stored < 304)) || fail "expected some entries stored before the interrupt, got $stored"
expect_exit 0 "$KCACHE" verify
interrupt TERM 143
expect_exit 0 "$KCACHE" inspect --json
((${stored} <= $(json_get out 'len(j["entries"])'))) || fail "entries lost by the second interrupt"
note "$stored entries kept after SIGINT"
