#!/usr/bin/env bash
# `kcache build --check-reproducible`: every kernel compiled twice under two
# heap states; the float16 constant-folding reproducer (issue 15 item 6) is
# reproducible, and the check does see a difference when one is injected
# (KCACHE_TEST_TAMPER_SECOND, a seam the CLI passes to the library) — so a
# clean verdict is not a check that cannot fail. No store is touched.
source "$(dirname "$0")/lib.bash"
# KCACHE_TEST_* seams: only the test build obeys them, so this runs $KCACHE_TESTING.
cp -r "$KCACHE_SOURCE_DIR/tests/data/reproducible" p

expect_exit 0 "$KCACHE_TESTING" build --check-reproducible -j2 p/kcache.toml
expect_in out "2 kernels compiled twice: 2 reproducible, 0 differ, 0 failed"
[[ ! -e "$KCACHE_STORE" ]] || fail "the check created a store"

expect_exit 0 "$KCACHE_TESTING" build --check-reproducible -j2 p/kcache.toml --json
[[ $(json_get out 'j["schema"]') == kcache.reproducible/1 ]] || fail "schema"
[[ $(json_get out 'j["differs"]') == "[]" ]] || fail "differs not empty"
[[ $(json_get out '[k["digests"][0] == k["digests"][1] for k in j["kernels"]]') == "[True, True]" ]] || fail "digests"

# A difference in one kernel's second compile: named, exit 1, the other kept.
KCACHE_TEST_TAMPER_SECOND='f16_const_opt' expect_exit 1 "$KCACHE_TESTING" build --check-reproducible -j2 p/kcache.toml
expect_in out "differs  f16_const_opt:"
expect_in out "2 kernels compiled twice: 1 reproducible, 1 differ, 0 failed"
KCACHE_TEST_TAMPER_SECOND='f16_*' expect_exit 1 "$KCACHE_TESTING" build --check-reproducible -j2 p/kcache.toml --json
[[ $(json_get out 'j["differs"]') == "['f16_const', 'f16_const_opt']" ]] || fail "not every differing kernel named"
[[ $(json_get out 'j["kernels"][0]["first_difference"]') -gt 0 ]] || fail "first difference"

# A kernel that fails both compiles the same way is failed, not "differs".
printf '#version 450\nlayout(local_size_x=1) in;\nvoid main() { nope(); }\n' > p/bad.comp
printf '[[kernel]]\nname = "bad"\nsource = "bad.comp"\n' >> p/kcache.toml
expect_exit 1 "$KCACHE_TESTING" build --check-reproducible -j2 p/kcache.toml
expect_in out "failed   bad: "
expect_in out "bad.comp:3"
expect_in out "3 kernels compiled twice: 2 reproducible, 0 differ, 1 failed"

expect_exit 0 "$KCACHE_TESTING" build --help
expect_in out "--check-reproducible"
