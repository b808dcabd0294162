#!/usr/bin/env bash
# Every module kcache stores passes Debian's spirv-val and is byte-identical
# to glslc's for the same inputs apart from the generator word: the example
# at its own optimize = "performance" (glslc -O; kcache strips debug info by
# default, as glslc -O does) and at optimize = "none" (glslc -O0), and the
# shader_libs project (includes without the #extension line).
source "$(dirname "$0")/lib.bash"
copy_example proj
expect_exit 0 "$KCACHE" build proj/kcache.toml --store O
python3 "$KCACHE_SOURCE_DIR/tests/cli/crosscheck.py" "$KCACHE" O proj | tee out
grep -q 'compared with glslc: 76 identical' out || fail "optimised example: $(cat out)"

sed -i 's/^optimize = .*/optimize = "none"/' proj/kcache.toml
grep -q '^optimize = "none"' proj/kcache.toml || fail "could not set optimize = none"
expect_exit 0 "$KCACHE" build proj/kcache.toml --store N
python3 "$KCACHE_SOURCE_DIR/tests/cli/crosscheck.py" "$KCACHE" N proj | tee out
grep -q 'compared with glslc: 76 identical' out || fail "unoptimised example: $(cat out)"

cp -r "$KCACHE_SOURCE_DIR/tests/data/shader_libs" libs
expect_exit 0 "$KCACHE" build libs/kcache.toml --store L
python3 "$KCACHE_SOURCE_DIR/tests/cli/crosscheck.py" "$KCACHE" L libs | tee out
# include_noext compares; include_noext_debug (strip = false at -O), preamble
# (extensions, preamble) and unknown_capability (not validated) cannot.
grep -q 'compared with glslc: 1 identical.* 3 not comparable' out || fail "shader_libs: $(cat out)"
