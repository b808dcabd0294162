# Shared helpers for the reliability tier (tests/reliability/*.sh): the
# end-to-end helpers of tests/cli/lib.bash, plus figures, store state and a
# private mount namespace for the tests that need a small or read-only file
# system. Each test runs in its own folder under $KCACHE_TEST_TMP.
source "$(dirname "${BASH_SOURCE[0]}")/../cli/lib.bash"
: "${KCACHE_RELTOOL:?set by ctest}"
SOAK=${KCACHE_SOAK:-1}
[[ $SOAK =~ ^[1-9][0-9]*$ ]] || fail "KCACHE_SOAK must be a positive integer, not '$SOAK'"
if [[ -n ${KCACHE_FIGURES:-} ]]; then mkdir -p "$(dirname "$KCACHE_FIGURES")"; : > "$KCACHE_FIGURES"; fi

# figure ID TEXT: prints "FIGURES ID: TEXT" and records it for scripts/test.
figure() {
  local line="FIGURES $1: $2"
  echo "$line"
  [[ -z ${KCACHE_FIGURES:-} ]] || echo "$line" >> "$KCACHE_FIGURES"
}

# state DIR: "txn=.. namespaces=.. entries=.. digest=.." of the store in DIR
# (reliability_support.hpp); fails the test when any record is corrupt.
state() { "$KCACHE_RELTOOL" state "$1" || fail "store $1 does not read back cleanly (exit $?)"; }

# has_verb VERB: whether this kcache has the subcommand (some land later).
has_verb() { "$KCACHE" "$1" --help >/dev/null 2>&1; }

# check_store DIR: the store opens, every record decodes with good digests,
# and `kcache verify` passes when this kcache has it. Prints the state.
check_store() {
  local st
  st=$(state "$1")
  if has_verb verify; then
    "$KCACHE" verify --store "$1" >"$WORK/verify.out" 2>&1 || { cat "$WORK/verify.out"; fail "kcache verify failed on $1"; }
  fi
  "$KCACHE" inspect --store "$1" --read-only >/dev/null 2>"$WORK/inspect.err" || { cat "$WORK/inspect.err"; fail "kcache inspect failed on $1"; }
  echo "$st"
}

# private_mounts: re-runs this script in its own mount namespace (root: plain
# unshare; otherwise a user namespace), so its tmpfs mounts vanish with it.
# Returns 1 when no namespace can be made; the caller then skips the part
# that needs one and says so.
private_mounts() {
  [[ -n ${KCACHE_REL_IN_NS:-} ]] && return 0
  local flags=(-m --propagation private)
  [[ $(id -u) -eq 0 ]] || flags=(-r "${flags[@]}")
  unshare "${flags[@]}" true 2>/dev/null || return 1
  KCACHE_REL_IN_NS=1 exec unshare "${flags[@]}" bash "$0" "$@"
}

# timed OUTFILE CMD...: runs CMD; appends "seconds peak_kib exit" to OUTFILE.
timed() {
  local out=$1; shift
  local rc=0
  /usr/bin/time -f '%e %M' -o "$WORK/.time" "$@" || rc=$?
  echo "$(tail -1 "$WORK/.time") $rc" >> "$out"
  return $rc
}

# max_col FILE N: the largest value of column N (1-based) in FILE.
max_col() { awk -v n="$2" 'BEGIN{m=0} $n+0>m{m=$n+0} END{print m}' "$1"; }
