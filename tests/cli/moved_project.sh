#!/usr/bin/env bash
# No absolute path enters a key: the project copied elsewhere (the store with
# it) gets only hits.
source "$(dirname "$0")/lib.bash"
copy_example first/proj
expect_exit 0 "$KCACHE" build first/proj/kcache.toml --store first/store
mkdir -p elsewhere/deeper
cp -r first/proj elsewhere/deeper/proj
cp -r first/store elsewhere/store
expect_exit 0 "$KCACHE" build elsewhere/deeper/proj/kcache.toml --store elsewhere/store --json
read -r hit compiled stale failed < <(counts out)
[[ $compiled -eq 0 && $stale -eq 0 && $hit -gt 0 ]] || fail "moved project: $hit hit, $compiled compiled, $stale stale"
(cd elsewhere/deeper/proj && expect_exit 0 "$KCACHE" build --store ../../store --json)
