#!/usr/bin/env bash
# No absolute path enters a key: the project copied elsewhere (the store with
# it) gets only hits: every kernel hits, none is compiled, replaced, failed
# or refused, and no entry is rewritten.
source "$(dirname "$0")/lib.bash"
# KCACHE_TEST_* seams: only the test build obeys them, so this runs $KCACHE_TESTING.
copy_example first/proj
# Entries are stamped with a time in the past, so a rewrite would show.
expect_exit 0 env KCACHE_TEST_NOW=1700000000 "$KCACHE_TESTING" build first/proj/kcache.toml --store first/store --json
n=$(json_get out 'len(j["kernels"])')
[[ $(json_get out 'j["counts"]["compiled"]') -eq $n && $n -gt 0 ]] || fail "first build: not every one of $n kernels compiled"
mkdir -p elsewhere/deeper
cp -r first/proj elsewhere/deeper/proj
cp -r first/store elsewhere/store

# all_hits WHAT: the build --json output in $WORK/out has exactly $n kernels,
# every one a hit, and no other outcome counted.
all_hits() {
  local got hits others
  got=$(json_get out 'len(j["kernels"])')
  hits=$(json_get out 'sum(1 for k in j["kernels"] if k["outcome"] == "hit")')
  others=$(json_get out '" ".join(f"{k}={v}" for k, v in sorted(j["counts"].items()) if k != "hit" and v)')
  [[ $got -eq $n && $hits -eq $n && $(json_get out 'j["counts"]["hit"]') -eq $n && -z $others ]] \
    || fail "$1: $hits hits of $got kernels (want all $n); other outcomes: ${others:-none}; $(json_get out '[(k["kernel"], k["outcome"], k.get("reason", "")) for k in j["kernels"] if k["outcome"] != "hit"][:5]')"
}
# Every entry's key, created and written time: hits must not rewrite any.
digest() { "$KCACHE_TESTING" inspect --store "$1" --read-only --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
print(len(j["entries"]), sorted((e["namespace"], e["kernel"], e["id"], e["ir"], e["created"], e["written"]) for e in j["entries"]))'; }
before=$(digest elsewhere/store)

expect_exit 0 "$KCACHE_TESTING" build elsewhere/deeper/proj/kcache.toml --store elsewhere/store --json
all_hits "moved project"
(cd elsewhere/deeper/proj && expect_exit 0 "$KCACHE_TESTING" build --store ../../store --json)
all_hits "moved project, built from its own folder"
[[ $(digest elsewhere/store) == "$before" ]] || fail "the moved builds rewrote entries"
