#!/usr/bin/env bash
# kcache config: settings per store and per user with the precedence
# flag > environment > store > user > default; the store's remotes are its
# remote setting; the max_size setting evicts least recently used entries
# after a build that crosses it, never one the build used; stats shows the
# size against the limit and --zero resets the counters; a damaged settings
# file is refused naming file and line.
# KCACHE_TEST_NOW pins the clock (a test seam), so this runs $KCACHE_TESTING.
source "$(dirname "$0")/lib.bash"
K=$KCACHE_TESTING
T0=1700000000
mkdir -p p
printf '#version 450\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer B { uint d[]; };\nvoid main() { d[0] = VALUE; }\n' > p/k.comp
# manifest FILE FIRST_VALUE KERNEL...: one kernel per name, VALUE counting up.
manifest() {
  local file=$1 i=$2; shift 2
  : > "$file"
  for k in "$@"; do
    printf '[[kernel]]\nname = "%s"\nsource = "k.comp"\ndefines = { VALUE = %d }\n' "$k" "$i" >> "$file"
    i=$((i + 1))
  done
}
manifest p/old1.toml 1 o1 o2 o3
manifest p/old2.toml 4 o4 o5 o6
manifest p/new.toml 7 n1 n2
# kernels: the kernel names in the store, sorted, space-separated.
kernels() {
  expect_exit 0 "$K" inspect --json
  json_get "$WORK/out" '" ".join(sorted(e["kernel"] for e in j["entries"]))'
}

note "set, get, list, unset; the store's setting over the user's, the environment over both"
expect_exit 0 "$K" config list
expect_in out "(default) max_size = # no limit"
expect_exit 0 "$K" config set --user jobs 3
expect_in out "set jobs = 3 in the user's settings ($WORK/config/kcache/config)"
expect_exit 0 "$K" config set jobs 2
expect_in out "set jobs = 2 in store $KCACHE_STORE ($KCACHE_STORE/config)"
[[ $(head -1 "$KCACHE_STORE/config") == "kcache-config 1" ]] || fail "no settings header"
[[ $(stat -c %a "$KCACHE_STORE/config") == 600 ]] || fail "settings file not mode 0600"
expect_exit 0 "$K" config get jobs
[[ $(cat out) == 2 ]] || fail "the store's jobs did not win over the user's: $(cat out)"
KCACHE_JOBS=5 expect_exit 0 "$K" config get jobs
[[ $(cat out) == 5 ]] || fail "KCACHE_JOBS did not win over the store's: $(cat out)"
KCACHE_JOBS=5 expect_exit 0 "$K" config list
expect_in out "(environment KCACHE_JOBS) jobs = 5"
expect_exit 0 "$K" config unset jobs
expect_exit 0 "$K" config get jobs
[[ $(cat out) == 3 ]] || fail "the user's jobs did not apply once the store's was unset: $(cat out)"
expect_exit 0 "$K" config list
expect_in out "(user) jobs = 3"
KCACHE_JOBS=abc expect_exit 2 "$K" config get jobs
expect_in err "KCACHE_JOBS='abc' is not valid"
expect_exit 3 "$K" config unset jobs
expect_exit 0 "$K" config get namespace
expect_in err "namespace is not set: the default applies (none)"
expect_exit 3 "$K" config set jobz 4
expect_in err "kcache: error: 'jobz' is not a kcache setting — did you mean 'jobs'?"
expect_exit 2 "$K" config set jobs 0
expect_exit 2 "$K" config set max_size 5X
expect_in err "is not a size"
expect_exit 2 "$K" config set store /elsewhere
expect_in err "'store' is a user setting: add --user"
expect_exit 2 "$K" config set stats_zeroed 1

note "the user's store setting names the default store, under KCACHE_STORE"
expect_exit 0 "$K" config set --user store "$WORK/ustore"
env -u KCACHE_STORE "$K" config list > out
expect_in out "# store $WORK/ustore: $WORK/ustore/config"
expect_exit 0 "$K" config list
expect_in out "# store $KCACHE_STORE:"
expect_exit 0 "$K" config unset --user store

note "the store's remote setting is the one remote add keeps; passwords hidden"
expect_exit 0 "$K" config set remote "redis://ci:hunter2@127.0.0.1:1/0 file://$WORK/shared"
expect_exit 0 "$K" remote list
expect_in out "redis://ci:***@127.0.0.1:1/0"
expect_in out "file://$WORK/shared"
expect_exit 0 "$K" config list
expect_in out "(store) remote = redis://ci:***@127.0.0.1:1/0 file://$WORK/shared"
! grep -q hunter2 out || fail "config list showed a password"
expect_exit 0 "$K" config unset remote
[[ ! -e $KCACHE_STORE/remotes ]] || fail "unset remote left STORE/remotes"

note "max_size: a build that crosses it evicts the least recently used, never what it used"
KCACHE_TEST_NOW=$T0 expect_exit 0 "$K" build p/old1.toml
KCACHE_TEST_NOW=$((T0 + 50)) expect_exit 0 "$K" build p/old2.toml
expect_exit 0 "$K" stats --json
six=$(json_get out 'j["stored_bytes"]')
expect_exit 0 "$K" config set max_size "${six}B"
expect_exit 0 "$K" stats
expect_in out "size: "
expect_in out "limit (100%, max_size from store)"
KCACHE_TEST_NOW=$((T0 + 100)) expect_exit 0 "$K" build p/new.toml
expect_in err "kcache: store over its max_size"
expect_in err "(store setting): evicted"
left=$(kernels)
for k in o4 o5 o6 n1 n2; do [[ " $left " == *" $k "* ]] || fail "evicted $k, not one of the least recently used: $left"; done
[[ $left != "n1 n2 o1 o2 o3 o4 o5 o6" ]] || fail "nothing was evicted"
expect_exit 0 "$K" stats --json
(($(json_get out 'j["stored_bytes"]') <= six)) || fail "the store is still over its limit: $(cat out)"
# A limit below what the build itself uses: everything else goes, the
# build's own entries stay (a warning says so), and the next build hits.
expect_exit 0 "$K" config set max_size 1K
KCACHE_TEST_NOW=$((T0 + 200)) expect_exit 0 "$K" build p/new.toml
expect_in err "kcache: warning: store still over its max_size 1 KiB (store setting)"
[[ $(kernels) == "n1 n2" ]] || fail "expected only the build's own entries left: $(kernels)"
KCACHE_TEST_NOW=$((T0 + 210)) expect_exit 0 "$K" build p/new.toml --json
[[ $(counts out) == "2 0 0 0" ]] || fail "the build's entries were evicted: $(counts out)"
# The environment over the store's setting; --no-evict leaves the store as is.
KCACHE_MAX_SIZE=1G expect_exit 0 "$K" config get max_size
[[ $(cat out) == 1G ]] || fail "KCACHE_MAX_SIZE did not win: $(cat out)"
KCACHE_TEST_NOW=$((T0 + 220)) expect_exit 0 "$K" build p/old1.toml --no-evict
[[ $(kernels) == "n1 n2 o1 o2 o3" ]] || fail "--no-evict evicted: $(kernels)"

note "stats --zero resets the counters, the run log stays"
expect_exit 0 "$K" stats --json
(($(json_get out 'j["runs"]') == 6)) || fail "expected 6 runs before --zero: $(json_get out 'j["runs"]')"
KCACHE_TEST_NOW=$((T0 + 300)) expect_exit 0 "$K" stats --zero
expect_in out "statistics zeroed at 2023-11-14T22:18:20Z (6 runs stay in the log)"
expect_exit 0 "$K" stats --json
[[ $(json_get out 'j["runs"], j["logged"]') == "0 6" ]] || fail "--zero: $(json_get out 'j["runs"], j["logged"]')"
KCACHE_TEST_NOW=$((T0 + 400)) expect_exit 0 "$K" build p/new.toml
expect_exit 0 "$K" stats
expect_in out "1 runs (7 in the log) since the counters were zeroed (2023-11-14T22:18:20Z)"
expect_exit 4 "$K" stats --zero --read-only

note "a damaged settings file is refused, naming file and line"
printf 'kcache-config 1\njobs = lots\n' > "$KCACHE_STORE/config"
expect_exit 6 "$K" build p/new.toml
expect_in err "settings $KCACHE_STORE/config:2: jobs: 'lots' is not a number of threads"
printf 'kcache-config 1\nmax_size = 1G\n' > "$KCACHE_STORE/config"
printf 'kcache-config 9\n' > "$WORK/config/kcache/config"
expect_exit 6 "$K" stats
expect_in err "settings $WORK/config/kcache/config:1: version 9 is newer"
echo "config_settings: ok"
