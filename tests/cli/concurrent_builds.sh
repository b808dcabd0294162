#!/usr/bin/env bash
# Two kcache builds writing one store at once both succeed; the store holds
# every kernel once.
source "$(dirname "$0")/lib.bash"
copy_example proj
"$KCACHE" build proj/kcache.toml -j 1 --json > a.json 2>a.err & pa=$!
"$KCACHE" build proj/kcache.toml -j 1 --json > b.json 2>b.err & pb=$!
wait $pa || fail "first build failed: $(cat a.err)"
wait $pb || fail "second build failed: $(cat b.err)"
n=$(json_get a.json 'len(j["kernels"])')
expect_exit 0 "$KCACHE" inspect --json
[[ $(json_get out 'len(j["entries"])') == "$n" ]] || fail "store has $(json_get out 'len(j["entries"])') entries, want $n"
[[ $(json_get out 'len(set((e["namespace"], e["kernel"]) for e in j["entries"]))') == "$n" ]] || fail "duplicates"
expect_exit 0 "$KCACHE" build proj/kcache.toml --json
read -r hit compiled stale failed < <(counts out)
[[ $hit -eq $n ]] || fail "after concurrent builds: $hit hits of $n"
