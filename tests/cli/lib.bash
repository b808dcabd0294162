# Shared helpers for end-to-end tests: sourced by every tests/cli/*.sh.
# Each test runs the real kcache binary ($KCACHE) in its own folder under
# $KCACHE_TEST_TMP (kept after the run for inspection).
set -euo pipefail
: "${KCACHE:?set by ctest}" "${KCACHE_SOURCE_DIR:?}" "${KCACHE_TEST_TMP:?}"
TEST_NAME=$(basename "$0" .sh)
WORK="$KCACHE_TEST_TMP/cli/$TEST_NAME"
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"
# Debian's python3 (scripts/setup installs it with python3-yaml) ahead of a
# version manager's shim on PATH: a pyenv shim costs 0.1 to 0.7 s a call,
# Debian's 0.1 s, and these tests call python3 hundreds of times.
if [[ -x /usr/bin/python3 ]]; then
  mkdir -p "$KCACHE_TEST_TMP/python/$TEST_NAME"
  ln -sfn /usr/bin/python3 "$KCACHE_TEST_TMP/python/$TEST_NAME/python3"
  PATH="$KCACHE_TEST_TMP/python/$TEST_NAME:$PATH"
fi
export KCACHE_STORE="$WORK/store"
# The user's settings (kcache config --user) of this test alone.
export XDG_CONFIG_HOME="$WORK/config"
unset KCACHE_JOBS KCACHE_MAX_SIZE KCACHE_MAP_SIZE KCACHE_REMOTE

fail() { echo "FAIL ($TEST_NAME): $*" >&2; exit 1; }
note() { echo "-- $*"; }

# expect_exit CODE CMD...: runs CMD, captures stdout/stderr in $WORK/out, err.
expect_exit() {
  local want=$1; shift
  local got=0
  "$@" >"$WORK/out" 2>"$WORK/err" || got=$?
  if [[ $got -ne $want ]]; then
    echo "stdout:"; cat "$WORK/out"; echo "stderr:"; cat "$WORK/err"
    fail "expected exit $want, got $got from: $*"
  fi
}

# expect_in FILE TEXT: FILE contains TEXT literally.
expect_in() { grep -qF -- "$2" "$1" || { cat "$1"; fail "expected '$2' in $1"; }; }

# json_get FILE PYEXPR: evaluates PYEXPR with j = parsed JSON of FILE.
json_get() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }

# counts FILE: "hit compiled stale_replaced failed" from a build --json output.
counts() { json_get "$1" '" ".join(str(j["counts"][k]) for k in ["hit","compiled","stale_replaced","failed"])'; }

# copy_example DIR: the example project copied to DIR.
copy_example() { mkdir -p "$1"; cp -r "$KCACHE_SOURCE_DIR/bundles/example/." "$1/"; }

# example_store STORE [PROJECT]: STORE (a new folder) becomes a copy of the
# store into which cli.example_store built the example project, and PROJECT,
# when given, the example project as copy_example copies it: a build of
# PROJECT into STORE is all hits. For tests that need the example built but
# do not test that build, so that it is compiled once per ctest run instead
# of once per test. A test that calls this requires the ctest fixture
# example_store (tests/CMakeLists.txt adds it), so `ctest -R` runs
# cli.example_store first.
example_store() {
  local from="$KCACHE_TEST_TMP/cli/example_store"
  [[ -f $from/store/data.mdb && -f $from/built ]] \
    || fail "no example store in $from (the ctest fixture cli.example_store builds it)"
  mkdir -p "$1"
  # Not lock.mdb: LMDB makes a fresh one; the copy would hold the builder's reader slots.
  find "$from/store" -mindepth 1 -maxdepth 1 ! -name lock.mdb -exec cp -r {} "$1/" \;
  [[ -z ${2:-} ]] || copy_example "$2"
}
