#!/usr/bin/env bash
# Every module kcache stores with optimize = none passes Debian's spirv-val and
# is byte-identical to glslangValidator -V for the same inputs.
source "$(dirname "$0")/lib.bash"
copy_example proj
sed -i 's/^optimize = .*/optimize = "none"/' proj/kcache.toml
grep -q '^optimize = "none"' proj/kcache.toml || fail "could not set optimize = none"
expect_exit 0 "$KCACHE" build proj/kcache.toml
python3 "$KCACHE_SOURCE_DIR/tests/cli/crosscheck.py" "$KCACHE" "$KCACHE_STORE" proj
