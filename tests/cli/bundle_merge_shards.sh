# Shards and merge: N=3 shard builds, each exported per namespace, merged per
# namespace and imported, equal one full build entry for entry; shards are
# disjoint, cover everything and do not depend on manifest order; merge
# dedupes identical entries and reports conflicting ones; merged shards are
# at most 2% larger than one export of the same entries.
source "$(dirname "$0")/lib.bash"
# KCACHE_TEST_* seams: only the test build obeys them, so this runs $KCACHE_TESTING.
HERE="$KCACHE_SOURCE_DIR/tests/cli"
export KCACHE_TEST_NOW=1700000000  # same `created` in every build, so entries compare whole
copy_example proj
"$KCACHE_TESTING" build proj/kcache.toml --store full -j2 >/dev/null

total=0
for k in 1 2 3; do
  expect_exit 0 "$KCACHE_TESTING" build proj/kcache.toml --store shard$k --shard $k/3 -j2 --json
  n=$(json_get out 'len(j["receipts"]) if "receipts" in j else sum(j["counts"].values())')
  note "shard $k/3: $n kernels"
  total=$((total + n))
  for ns in $("$KCACHE_TESTING" inspect --store shard$k --json | python3 -c 'import json,sys; print(" ".join(sorted({e["namespace"] for e in json.load(sys.stdin)["entries"]})))'); do
    "$KCACHE_TESTING" export --store shard$k --namespace $ns -o "s$k-${ns#spirv/}.kcb" >/dev/null
  done
done
[[ $total == 76 ]] || fail "shards cover $total kernels, expected 76"

note "the split does not depend on manifest order"
python3 - proj/kcache.toml >proj/reversed.toml <<'PY'
import re, sys
text = open(sys.argv[1]).read()
head, *kernels = re.split(r"(?m)^(?=\[\[kernel\]\])", text)
print(head + "".join(reversed(kernels)))
PY
"$KCACHE_TESTING" build proj/reversed.toml --store rev2 --shard 2/3 -j2 >/dev/null
kernels() { "$KCACHE_TESTING" inspect --store "$1" --json | json_get /dev/stdin 'sorted(e["kernel"] for e in j["entries"])'; }
[[ "$(kernels rev2)" == "$(kernels shard2)" ]] || fail "shard 2/3 changed when the manifest was reordered"

for t in vulkan1.1 vulkan1.2 vulkan1.3; do
  expect_exit 0 "$KCACHE_TESTING" merge s*-$t.kcb -o merged-$t.kcb --json
  [[ $(json_get out 'j["duplicates"]') == 0 ]] || fail "shards should not overlap"
  expect_exit 0 "$KCACHE_TESTING" import merged-$t.kcb --store merged
done
python3 "$HERE/bundle_compare.py" "$KCACHE_TESTING" full merged --origin-b imported --every 4

note "merge dedupes the same entry from two bundles (other origin, same key and module)"
"$KCACHE_TESTING" export --store full --namespace spirv/vulkan1.2 -o full-12.kcb >/dev/null
"$KCACHE_TESTING" export --store merged --namespace spirv/vulkan1.2 -o merged-12.kcb >/dev/null
# Merge keeps the size: merged shards (written in kernel order, as export
# writes) are at most 2% larger than one export of the same entries.
full_bytes=$(stat -c %s full-12.kcb)
merged_bytes=$(stat -c %s merged-vulkan1.2.kcb)
note "merged shards $merged_bytes bytes, one export $full_bytes bytes"
((merged_bytes * 100 <= full_bytes * 102)) || fail "merged $merged_bytes bytes > 1.02 x export $full_bytes"
expect_exit 0 "$KCACHE_TESTING" merge full-12.kcb merged-12.kcb -o twice.kcb --json
[[ $(json_get out 'j["entries"]') == 64 && $(json_get out 'j["duplicates"]') == 64 ]] || fail "dedupe: $(cat out)"

note "mixed namespaces are refused, naming the field"
expect_exit 5 "$KCACHE_TESTING" merge full-12.kcb merged-vulkan1.3.kcb -o mixed.kcb
expect_in err "target: vulkan1.2 ≠ vulkan1.3"
[[ ! -e mixed.kcb ]] || fail "refused merge wrote output"

note "the same kernel built from another source is a conflict: reported, nothing written"
echo "float kc_another_revision(float x) { return x * 2.0; }" >>proj/shaders/saxpy.comp
"$KCACHE_TESTING" build proj/kcache.toml --store changed -j2 >/dev/null
"$KCACHE_TESTING" export --store changed --namespace spirv/vulkan1.2 --kernel 'saxpy*' -o changed-12.kcb >/dev/null
expect_exit 1 "$KCACHE_TESTING" merge full-12.kcb changed-12.kcb -o conflict.kcb
expect_in err "conflict: kernel 'saxpy[T=float,WIDTH=1]'"
expect_in err "6 conflicting kernels; nothing written"
[[ ! -e conflict.kcb ]] || fail "conflicting merge wrote output"
expect_exit 1 "$KCACHE_TESTING" merge full-12.kcb changed-12.kcb -o conflict.kcb --json
[[ $(json_get out 'len(j["conflicts"])') == 6 ]] || fail "json conflicts"
echo ok
