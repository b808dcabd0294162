#!/usr/bin/env bash
# Two kcache builds writing one store at once both succeed, and the store
# holds the union of their kernels, each once, and verifies.
#
# The test proves that the builds did run at the same time rather than one
# after the other (which would pass every store check trivially):
#  - both are released together (each waits for a "go" file), and each
#    records when it started and ended; the two intervals must overlap;
#  - and each build compiled kernels the other also builds. A build reads the
#    store once, when it starts, and compiles only what is not there; had one
#    build ended before the other started, the later one would have found
#    every common kernel stored and compiled none of them.
# Each build is one thread (-j 1) over the example's 76 kernels (seconds of
# work), so the two overlap even on a loaded machine.
source "$(dirname "$0")/lib.bash"
copy_example projA
copy_example projB
# Each project has one kernel of its own besides the example's.
printf '\n[[kernel]]\nname = "only_%s"\nsource = "shaders/saxpy.comp"\ndefines = { T = "float", WIDTH = %s }\n' \
  a 1 >> projA/kcache.toml
printf '\n[[kernel]]\nname = "only_%s"\nsource = "shaders/saxpy.comp"\ndefines = { T = "float", WIDTH = %s }\n' \
  b 4 >> projB/kcache.toml

# run_build NAME PROJECT: waits for ./go, then builds; NAME.start/.end hold
# the times (ns) just before and after, NAME.json/.err the output.
run_build() {
  until [[ -e go ]]; do sleep 0.005; done
  date +%s%N > "$1.start"
  local rc=0
  "$KCACHE" build "$2/kcache.toml" -j 1 --json >"$1.json" 2>"$1.err" || rc=$?
  date +%s%N > "$1.end"
  return $rc
}
run_build a projA & pa=$!
run_build b projB & pb=$!
touch go
wait $pa || fail "build A failed: $(cat a.err)"
wait $pb || fail "build B failed: $(cat b.err)"

# Each build's own result: every kernel built or found, none failed or refused.
for x in a b; do
  read -r hit compiled stale failed < <(counts $x.json)
  refused=$(json_get $x.json 'j["counts"]["refused_write"]')
  total=$(json_get $x.json 'len(j["kernels"])')
  [[ $failed -eq 0 && $refused -eq 0 && $stale -eq 0 && $((hit + compiled)) -eq $total ]] \
    || fail "build $x: $hit hit, $compiled compiled, $stale stale, $failed failed, $refused refused of $total"
done

# They overlapped in time.
sa=$(cat a.start) ea=$(cat a.end) sb=$(cat b.start) eb=$(cat b.end)
((sa < eb && sb < ea)) || fail "the builds ran one after the other: A $sa..$ea, B $sb..$eb"
overlap_ms=$((((ea < eb ? ea : eb) - (sa > sb ? sa : sb)) / 1000000))
# And each compiled some of the kernels both build (so neither found the other's work done).
common=$(python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
names = lambda j: {(k["namespace"], k["kernel"]) for k in j["kernels"]}
both = names(a) & names(b)
compiled = lambda j: sum(1 for k in j["kernels"] if (k["namespace"], k["kernel"]) in both and k["outcome"] == "compiled")
print(len(both), compiled(a), compiled(b))' a.json b.json)
read -r n_common ca cb <<<"$common"
((n_common >= 70)) || fail "only $n_common kernels in common"
((ca > 0 && cb > 0)) || fail "not concurrent: of $n_common common kernels A compiled $ca, B compiled $cb"
note "overlap ${overlap_ms} ms; of $n_common common kernels A compiled $ca, B compiled $cb"

# The store holds the union, each kernel once, and verifies.
union=$(python3 -c '
import json, sys
print(len(set().union(*({(k["namespace"], k["kernel"]) for k in json.load(open(f))["kernels"]} for f in sys.argv[1:]))))' a.json b.json)
expect_exit 0 "$KCACHE" inspect --json
cp out inspect.json
got=$(json_get inspect.json 'len(j["entries"])')
[[ $got -eq $union ]] || fail "store has $got entries, want the union: $union"
[[ $(json_get inspect.json 'len(set((e["namespace"], e["kernel"]) for e in j["entries"]))') -eq $union ]] || fail "duplicates"
[[ $(json_get inspect.json 'sorted(e["kernel"] for e in j["entries"] if e["kernel"].startswith("only_"))') == "['only_a', 'only_b']" ]] \
  || fail "each project's own kernel is not stored"
expect_exit 0 "$KCACHE" verify
expect_in out "no problems"

# Both projects rebuild from the store alone.
for proj in projA projB; do
  expect_exit 0 "$KCACHE" build $proj/kcache.toml --json
  read -r hit compiled stale failed < <(counts out)
  n=$(json_get out 'len(j["kernels"])')
  [[ $hit -eq $n ]] || fail "$proj after concurrent builds: $hit hits of $n"
done
