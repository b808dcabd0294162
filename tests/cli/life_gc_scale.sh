#!/usr/bin/env bash
# gc on a store of 1,000 entries: --max-size LRU eviction to half the size
# keeps the bound, then --stale/--orphans against a manifest that dropped a
# tenth of the kernels, then compact. Prints the figures (entries, bytes,
# seconds, file sizes) for the record.
source "$(dirname "$0")/lib.bash"
# KCACHE_TEST_* seams: only the test build obeys them, so this runs $KCACHE_TESTING.
T0=1700000000
mkdir -p p
cat > p/k.comp <<'G'
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Buf { float d[]; };
void main() { uint i = gl_GlobalInvocationID.x; d[i] = d[i] * float(A) + float(B) * float(C); }
G
values='[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]'
printf '[[kernel]]\nname = "k"\nsource = "k.comp"\noptimize = "none"\n[kernel.variants]\nA = %s\nB = %s\nC = %s\n' \
  "$values" "$values" "$values" > p/kcache.toml
KCACHE_TEST_NOW=$T0 expect_exit 0 "$KCACHE_TESTING" build p/kcache.toml --json
[[ $(json_get out 'j["counts"]["compiled"]') == 1000 ]] || fail "expected 1000 compiled"
note "built 1000 kernels in $(json_get out 'round(j["wall_ms"]/1000, 2)') s"
# Touch the A<5 half later, so LRU eviction must take the A>=5 half.
printf '[[kernel]]\nname = "k"\nsource = "k.comp"\noptimize = "none"\n[kernel.variants]\nA = [0, 1, 2, 3, 4]\nB = %s\nC = %s\n' \
  "$values" "$values" > p/half.toml
KCACHE_TEST_NOW=$((T0 + 3600)) expect_exit 0 "$KCACHE_TESTING" build p/half.toml
expect_exit 0 "$KCACHE_TESTING" inspect --json
total=$(json_get out 'sum(e["record_bytes"] for e in j["entries"])')
limit=$((total / 2))
file_before=$(stat -c %s "$KCACHE_STORE/data.mdb")
start=$(date +%s.%N)
KCACHE_TEST_NOW=$((T0 + 7200)) expect_exit 0 "$KCACHE_TESTING" gc --max-size $limit --json
secs=$(python3 -c "import sys; print(round($(date +%s.%N) - $start, 2))")
cp out gc.json
removed=$(json_get gc.json 'j["removed_entries"]')
[[ $removed == 500 ]] || fail "expected 500 evicted, got $removed"
[[ $(json_get gc.json 'all(int(e["kernel"].split("A=")[1][0]) >= 5 for e in j["planned"])') == True ]] \
  || fail "LRU evicted a recently used entry"
after=$(json_get gc.json 'j["scope_bytes_after"]')
(( after <= limit )) || fail "bound: $after > $limit"
note "gc --max-size: 1000 entries, $total B → removed $removed entries, $(json_get gc.json 'j["removed_bytes"]') B, $after B left (limit $limit), $secs s"
note "space: data.mdb $(json_get gc.json 'j["space_after"]["file_bytes"]') B, $(json_get gc.json 'j["space_after"]["free_bytes"]') B in free pages for reuse; compact suggested: $(json_get gc.json 'j["compact_suggested"]')"
# A manifest without the C=9 variants: their entries are orphans.
sed 's/^C = .*/C = [0, 1, 2, 3, 4, 5, 6, 7, 8]/' p/half.toml > p/less.toml
KCACHE_TEST_NOW=$((T0 + 7200)) expect_exit 0 "$KCACHE_TESTING" gc --stale --orphans --manifest p/less.toml --json
[[ $(json_get out 'j["removed_entries"]') == 50 ]] || fail "orphans: expected 50, got $(json_get out 'j["removed_entries"]')"
note "gc --orphans --manifest: removed 50 of 500 entries"
expect_exit 0 "$KCACHE_TESTING" compact
note "$(cat out | tr -d '\n') (before gc: $file_before B)"
expect_exit 0 "$KCACHE_TESTING" verify
