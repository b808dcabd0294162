#!/usr/bin/env bash
# The example project (bundles/example) built cold into a store of its own:
# every kernel compiled, none failed. This store is the ctest fixture
# example_store: tests that need the example built but do not test that
# build copy it (lib.bash: example_store) instead of compiling the same
# kernels again.
source "$(dirname "$0")/lib.bash"
copy_example proj
expect_exit 0 "$KCACHE" build proj/kcache.toml --store store -j2 --json
read -r hit n stale failed < <(counts out)
[[ $hit -eq 0 && $n -gt 0 && $stale -eq 0 && $failed -eq 0 ]] \
  || fail "cold build: $hit hit, $n compiled, $stale stale, $failed failed"
# A second build is all hits: what the users of the fixture start from.
expect_exit 0 "$KCACHE" build proj/kcache.toml --store store --json --no-record-usage
read -r hit compiled stale failed < <(counts out)
[[ $hit -eq $n && $compiled -eq 0 ]] || fail "warm build: $hit hit, $compiled compiled (cold: $n)"
touch built
