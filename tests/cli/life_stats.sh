#!/usr/bin/env bash
# stats after a sequence of builds: the run log holds one record per build
# (not per --no-record-usage build), and the totals, hit rate and phases add
# up to what the builds themselves reported; --last N narrows the window.
source "$(dirname "$0")/lib.bash"
mkdir -p p
printf '#version 450\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer B { uint d[]; };\nvoid main() { d[0] = VALUE; }\n' > p/k.comp
i=0
for k in a b c d; do i=$((i + 1)); printf '[[kernel]]\nname = "%s"\nsource = "k.comp"\ndefines = { VALUE = %d }\n' $k $i >> p/kcache.toml; done
printf '[[kernel]]\nname = "bad"\nsource = "bad.comp"\n' > p/bad.toml
printf '#version 450\nvoid main() { this is not glsl }\n' > p/bad.comp

expect_exit 3 "$KCACHE" stats
expect_in err "no store at"
expect_exit 0 "$KCACHE" build p/kcache.toml --no-record-usage --store "$WORK/other"
expect_exit 0 "$KCACHE" stats --store "$WORK/other"
expect_in out "no builds recorded"
expect_exit 0 "$KCACHE" build p/kcache.toml --json; cp out b1.json   # 4 compiled
expect_exit 0 "$KCACHE" build p/kcache.toml --json; cp out b2.json   # 4 hits
sed -i 's/VALUE = 1 /VALUE = 9 /' p/kcache.toml
expect_exit 0 "$KCACHE" build p/kcache.toml --json; cp out b3.json   # 1 stale replaced, 3 hits
expect_exit 1 "$KCACHE" build p/bad.toml --json; cp out b4.json      # 1 failed
expect_exit 0 "$KCACHE" build p/kcache.toml --no-record-usage         # not logged

expect_exit 0 "$KCACHE" stats --json
cp out stats.json
python3 - <<'PY' || fail "stats totals do not match the builds"
import json
builds = [json.load(open(f"b{i}.json")) for i in range(1, 5)]
s = json.load(open("stats.json"))
assert s["runs"] == 4 and s["logged"] == 4, s["runs"]
t = s["totals"]
for k in ["hit", "compiled", "stale_replaced", "failed"]:
    want = sum(b["counts"][k] for b in builds)
    assert t[k] == want, (k, t[k], want)
assert t["kernels"] == sum(len(b["kernels"]) for b in builds)
assert t["miss"] == t["kernels"] - t["hit"]
assert (t["hit"], t["compiled"], t["stale_replaced"], t["failed"]) == (7, 4, 1, 1), t
assert abs(s["hit_rate"] - 7 / 13) < 1e-9, s["hit_rate"]
assert t["bytes_written"] == sum(b["bytes_written"] for b in builds)
for phase in ["glslang", "spirv-opt", "spirv-val"]:
    want = sum(b["phases"][phase]["cpu_ms"] for b in builds)
    assert abs(s["phases"][phase]["cpu_ms"] - want) < 0.01 * 4 + 1e-6, (phase, s["phases"][phase], want)
assert [r["failed"] for r in s["recent"]] == [0, 0, 0, 1]
print("stats:", t, "hit rate", round(s["hit_rate"], 3))
PY
expect_exit 0 "$KCACHE" stats --last 2 --json
[[ $(json_get out 'j["runs"]') == 2 && $(json_get out 'j["totals"]["hit"]') == 3 ]] || { cat out; fail "--last 2"; }
expect_exit 0 "$KCACHE" stats
expect_in out "4 runs (4 in the log)"
expect_in out "hits: 7 (53.8%)"
cat out
