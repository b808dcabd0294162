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
interrupt() { # SIGNAL WANT_EXIT: builds, sends SIGNAL once entries are stored (a few dozen: so that
  # on a loaded machine the build is still far from done when the signal comes, the second time too)
  local sig=$1 want=$2 rc=0 size=0
  [[ ! -f $KCACHE_STORE/data.mdb ]] || size=$(stat -c %s "$KCACHE_STORE/data.mdb")
  "$KCACHE" build p/kcache.toml -j1 >out 2>err &
  local pid=$! i
  for ((i = 0; i < 200; i++)); do
    [[ -f $KCACHE_STORE/data.mdb ]] && (($(stat -c %s "$KCACHE_STORE/data.mdb") > size + 40000)) && break
    sleep 0.05
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
