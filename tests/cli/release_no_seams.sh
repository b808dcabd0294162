#!/usr/bin/env bash
# The kcache that ships has no test seams (tools/kcache/seams.hpp): neither it
# nor libkcache holds the text KCACHE_TEST_ (no variable of that name is read,
# no fault-injection switch is compiled in), and a seam variable left set
# changes nothing: KCACHE_TEST_NOW does not pin its clock, while the test
# build (kcache-testing) obeys it, so the check is not one that cannot fail.
source "$(dirname "$0")/lib.bash"
: "${KCACHE_TESTING:?set by ctest}" "${KCACHE_BUILD_DIR:?set by ctest}"

shopt -s nullglob
libs=("$KCACHE_BUILD_DIR"/lib/kcache/runtime/libkcache.so*)
[[ ${#libs[@]} -gt 0 ]] || fail "no libkcache.so under $KCACHE_BUILD_DIR/lib/kcache/runtime (build kcache_runtime_shared)"
for bin in "$KCACHE" "${libs[@]}"; do
  strings -a "$bin" >strings.txt
  if grep -n 'KCACHE_TEST_' strings.txt; then fail "$bin holds test seams (above)"; fi
done
# The check itself: the test build does hold them.
strings -a "$KCACHE_TESTING" >strings.txt
grep -q 'KCACHE_TEST_NOW' strings.txt || fail "kcache-testing holds no KCACHE_TEST_NOW: the check is blind"

# A seam variable set for the release binary: ignored. A build stamps its
# entries with the clock; 1000000000 (2001-09-09) is never today's date.
mkdir -p p
printf '#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n' >p/k.comp
printf '[[kernel]]\nname = "k"\nsource = "k.comp"\n' >p/kcache.toml
stamped_2001() { json_get out '{0: "none", len(j["entries"]): "all"}.get(sum(e["created"].startswith("2001-09-09") for e in j["entries"]), "some") if j["entries"] else "no entries"'; }
expect_exit 0 env KCACHE_TEST_NOW=1000000000 "$KCACHE" build p/kcache.toml --store release
expect_exit 0 "$KCACHE" inspect --store release --json
[[ $(stamped_2001) == none ]] || fail "the release kcache obeyed KCACHE_TEST_NOW: $(stamped_2001)"
expect_exit 0 env KCACHE_TEST_NOW=1000000000 "$KCACHE_TESTING" build p/kcache.toml --store testing
expect_exit 0 "$KCACHE" inspect --store testing --json
[[ $(stamped_2001) == all ]] || fail "kcache-testing ignored KCACHE_TEST_NOW: $(stamped_2001)"
