#!/usr/bin/env bash
# A damaged store costs what is damaged, never more, and never a signal:
#  - a truncated data.mdb (an interrupted copy) is refused at open as
#    corruption (exit 6) by every command, instead of SIGBUS;
#  - entries whose record bytes were changed are each reported (get of one
#    exits 6, verify lists every one, in the same order on -j 1 and -j 4, and
#    exits 1; inspect and export name
#    every one they skip), while every healthy entry is still served: get,
#    inspect and export keep working (exit 0).
source "$(dirname "$0")/lib.bash"
command -v mdb_dump >/dev/null && command -v mdb_load >/dev/null \
  || fail "mdb_dump and mdb_load (lmdb-utils, scripts/setup) are needed to damage a store's records"

# run_ok_or CODE WHAT CMD...: as expect_exit, and a signal is named as one.
no_signal() {
  local want=$1; shift
  local got=0
  "$@" >"$WORK/out" 2>"$WORK/err" || got=$?
  ((got < 128)) || { cat "$WORK/err"; fail "killed by signal $((got - 128)): $*"; }
  [[ $got -eq $want ]] || { cat "$WORK/out" "$WORK/err"; fail "expected exit $want, got $got from: $*"; }
}

example_store good proj  # the example built into good (the fixture cli.example_store)
"$KCACHE" inspect --store good --json > inspect.json
# The example's main namespace (it has other targets too): every kernel named here is in it.
ns=spirv/vulkan1.2
mapfile -t kernels < <(json_get inspect.json '"\n".join(sorted(e["kernel"] for e in j["entries"] if e["namespace"] == "spirv/vulkan1.2"))')
n_entries=$(json_get inspect.json 'len(j["entries"])')
((${#kernels[@]} > 10)) || fail "the example stored only ${#kernels[@]} kernels"

# 1. Truncated: an interrupted copy that kept only LMDB's two meta pages, so
# every tree root lies past the end. (A cut that keeps every root but loses
# a page in use is refused too: unit.store "cut last page".) Every command
# refuses it; none is killed.
cp -r good cut
size=$((2 * 4096))
truncate -s $size cut/data.mdb
for cmd in "get ${kernels[0]} --namespace $ns -o x.spv" "inspect" "inspect --read-only" "verify" "export --namespace $ns -o x.kcb" "compact"; do
  # shellcheck disable=SC2086
  no_signal 6 "$KCACHE" $cmd --store cut
  expect_in err "truncated"
done
no_signal 6 "$KCACHE" build proj/kcache.toml --store cut
expect_in err "truncated"
[[ $(stat -c %s cut/data.mdb) -eq $size ]] || fail "a refused command changed the truncated data.mdb"

# 2. Two damaged entries: one byte of each record flipped in place (raw LMDB,
# so only kcache's own digests can tell).
cp -r good bad
damaged=("${kernels[3]}" "${kernels[7]}")
healthy=${kernels[5]}
mdb_dump -s entries bad > entries.dump
cat > damage.py <<'PY'
import sys
ns, names = sys.argv[1], sys.argv[2:]
lines = sys.stdin.read().split("\n")
end = lines.index("HEADER=END")
out, hit = lines[: end + 1], 0
body = lines[end + 1 :]
for i in range(0, len(body) - 1, 2):
    if not body[i].startswith(" "):
        break
    key = bytes.fromhex(body[i].strip())
    if key in {(ns + "\x1f" + n).encode() for n in names}:
        value = bytearray(bytes.fromhex(body[i + 1].strip()))
        value[len(value) // 2] ^= 0x01
        out += [body[i], " " + value.hex()]
        hit += 1
if hit != len(names):
    sys.exit(f"found {hit} of {len(names)} keys")
print("\n".join(out + ["DATA=END"]))
PY
python3 damage.py "$ns" "${damaged[@]}" < entries.dump > damage.dump || fail "cannot damage the records"
mdb_load -s entries bad < damage.dump || fail "mdb_load could not write the damaged records"

# The healthy kernels are served as before.
expect_exit 0 "$KCACHE" get "$healthy" --namespace $ns -o healthy.spv --store bad
"$KCACHE" get "$healthy" --namespace $ns -o healthy-good.spv --store good
cmp -s healthy.spv healthy-good.spv || fail "get of a healthy kernel returned other bytes"
# A damaged one is corruption, by name.
no_signal 6 "$KCACHE" get "${damaged[0]}" --namespace $ns -o x.spv --store bad
expect_in err "${damaged[0]}"
# inspect and export skip the damaged entries, report each by name and keep working.
no_signal 0 "$KCACHE" inspect --store bad --json
n_listed=$(json_get out 'len(j["entries"])')
((n_listed == n_entries - 2)) || fail "inspect listed $n_listed entries, want $((n_entries - 2))"
[[ $(json_get out 'len(j.get("damaged", []))') -eq 2 ]] || { cat out; fail "inspect --json does not list 2 damaged entries"; }
[[ $(json_get out '" ".join(sorted(d["kernel"] for d in j["damaged"]))') == "$(printf '%s\n' "${damaged[@]}" | sort | paste -sd' ')" ]] \
  || { cat out; fail "inspect --json names other damaged kernels than ${damaged[*]}"; }
[[ $(json_get out '" ".join(sorted({d["namespace"] + "," + d["category"] for d in j["damaged"]}))') == "$ns,corruption" ]] \
  || { cat out; fail "inspect --json damaged entries lack namespace $ns and category corruption"; }
no_signal 0 "$KCACHE" inspect --store bad
for k in "${damaged[@]}"; do
  grep -qF -- "DAMAGED $ns $k:" out || { cat out; fail "inspect text does not report the damaged $k"; }
done
no_signal 0 "$KCACHE" export --store bad --namespace $ns -o bad.kcb --json
[[ $(json_get out 'j["entries"]') -eq $((${#kernels[@]} - 2)) ]] || { cat out; fail "export did not write the healthy entries of $ns"; }
[[ $(json_get out 'len(j.get("damaged", []))') -eq 2 ]] || { cat out; fail "export --json does not list 2 damaged entries"; }
expect_in err "warning: 2 damaged entries not exported"
for k in "${damaged[@]}"; do expect_in err "$k"; done
no_signal 0 "$KCACHE" export --store bad --namespace $ns -o -
expect_in err "warning: 2 damaged entries not exported"
# verify lists every damaged entry (one line each) and exits 1.
no_signal 1 "$KCACHE" verify --store bad
cat out err > verify.txt
for k in "${damaged[@]}"; do
  [[ $(grep -cF -- "$k" verify.txt) -ge 1 ]] || { cat verify.txt; fail "verify does not name the damaged $k"; }
done
n_lines=$(grep -ciE 'corrupt|digest' verify.txt || true)
[[ $n_lines -eq 2 ]] || { cat verify.txt; fail "verify reported $n_lines problem lines, want 2 (one per damaged entry)"; }
# On 4 threads (spirv-val in parallel) the same problems, in the same order.
for j in 1 4; do
  no_signal 1 "$KCACHE" verify --store bad -j $j --json
  json_get out 'json.dumps([j["entries"], j["problems"]])' > verify_j$j.json
done
cmp -s verify_j1.json verify_j4.json || { cat verify_j1.json verify_j4.json; fail "verify -j 4 listed other problems than -j 1"; }
[[ $(json_get out '[p["kernel"] for p in j["problems"]] == sorted(p["kernel"] for p in j["problems"])') == True ]] ||
  { cat out; fail "verify -j 4 did not list the damaged entries in store order"; }
echo "ok: truncated store refused (exit 6) by 7 commands; 2 damaged of $n_entries entries: get/inspect/export work and name both, verify lists both"
