#!/usr/bin/env bash
# Environment variables the CLI documents (`kcache --help`, man kcache):
# KCACHE_STORE picks the store, KCACHE_JOBS the default -j (a bad value is a
# usage error naming it), NO_COLOR turns off colour, which is only ever used
# on a terminal (here a pseudo-terminal made by script(1)).
source "$(dirname "$0")/lib.bash"
copy_example "$WORK/project"

export KCACHE_STORE=$WORK/env-store
expect_exit 0 "$KCACHE" build "$WORK/project/kcache.toml" -j2
[[ -f $WORK/env-store/data.mdb ]] || fail "KCACHE_STORE not used"

KCACHE_JOBS=abc expect_exit 2 "$KCACHE" build "$WORK/project/kcache.toml"
expect_in "$WORK/err" "KCACHE_JOBS='abc'"
KCACHE_JOBS=0 expect_exit 2 "$KCACHE" build "$WORK/project/kcache.toml"
KCACHE_JOBS=1 expect_exit 0 "$KCACHE" build "$WORK/project/kcache.toml"
KCACHE_JOBS= expect_exit 0 "$KCACHE" build "$WORK/project/kcache.toml"

# Colour: not on a pipe; on a terminal unless NO_COLOR is set and not empty.
expect_exit 3 "$KCACHE" get nope
grep -q $'\033' "$WORK/err" && fail "colour on a pipe"
TERM=xterm script -qec "'$KCACHE' get nope -o /dev/null" /dev/null >"$WORK/tty" || true
grep -q $'\033\\[1;31merror:' "$WORK/tty" || { cat -A "$WORK/tty"; fail "no colour on a terminal"; }
TERM=xterm NO_COLOR=1 script -qec "'$KCACHE' get nope -o /dev/null" /dev/null >"$WORK/tty" || true
expect_in "$WORK/tty" "kcache: error:"
grep -q $'\033\\[1;31m' "$WORK/tty" && fail "colour despite NO_COLOR"
TERM=xterm NO_COLOR= script -qec "'$KCACHE' get nope -o /dev/null" /dev/null >"$WORK/tty" || true
grep -q $'\033\\[1;31merror:' "$WORK/tty" || fail "an empty NO_COLOR must not turn colour off"

# Every variable the CLI reads is documented in its help (hence the man page).
"$KCACHE" --help >"$WORK/help"
for v in KCACHE_STORE KCACHE_JOBS NO_COLOR KCACHE_VULKAN_LOADER; do expect_in "$WORK/help" "$v"; done
note ok
