#!/usr/bin/env bash
# gc by each rule, with before/after listings: --older-than, --unused-for,
# --stale (manifest and toolchain), --orphans, --namespace, --max-size (LRU,
# bound respected, fresh entries protected), --dry-run (store unchanged).
# KCACHE_TEST_NOW pins kcache's clock (test-only hook, core/file.hpp).
source "$(dirname "$0")/lib.bash"
# KCACHE_TEST_* seams: only the test build obeys them, so this runs $KCACHE_TESTING.
T0=1700000000
DAY=86400
mkdir -p p
printf '#version 450\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer B { uint d[]; };\nvoid main() { d[0] = VALUE; }\n' > p/k.comp
# manifest FILE TARGET KERNEL...: one kernel per name, VALUE = its position.
manifest() {
  local file=$1 target=$2; shift 2
  : > "$file"
  local i=1
  for k in "$@"; do
    printf '[[kernel]]\nname = "%s"\nsource = "k.comp"\ntarget = "%s"\ndefines = { VALUE = %d }\n' "$k" "$target" "$i" >> "$file"
    i=$((i + 1))
  done
}
manifest p/all.toml vulkan1.2 a b c d e f
manifest p/abc.toml vulkan1.2 a b c
build_at() { KCACHE_TEST_NOW=$1 expect_exit 0 "$KCACHE_TESTING" build "$2"; }
# listing: "ns:kernel" of every entry, sorted, comma-separated.
listing() {
  expect_exit 0 "$KCACHE_TESTING" inspect --json
  json_get "$WORK/out" '",".join(sorted(e["kernel"] for e in j["entries"]))'
}
fresh_store() { export KCACHE_STORE="$WORK/store-$1"; }
gc_at() {  # gc_at NOW ARGS...: runs gc --json, prints the removed kernels
  local now=$1; shift
  KCACHE_TEST_NOW=$now expect_exit 0 "$KCACHE_TESTING" gc --json "$@"
  json_get "$WORK/out" '",".join(sorted(e["kernel"] for e in j["planned"]))'
}
expect_list() { local got; got=$(listing); [[ $got == "$1" ]] || fail "after: expected '$1', got '$got'"; echo "   after: $got"; }

note "--older-than"
fresh_store older
build_at $T0 p/abc.toml
build_at $((T0 + 10 * DAY)) p/all.toml
echo "   before: $(listing)"
[[ $(gc_at $((T0 + 10 * DAY)) --older-than 5d) == "a,b,c" ]] || { cat out; fail "--older-than removed the wrong entries"; }
expect_list "d,e,f"

note "--unused-for (hits update last-used)"
fresh_store unused
build_at $T0 p/all.toml
build_at $((T0 + 2 * DAY)) p/abc.toml   # a, b, c hit: last used T0+2d
echo "   before: $(listing)"
[[ $(gc_at $((T0 + 4 * DAY)) --unused-for 3d) == "d,e,f" ]] || { cat out; fail "--unused-for removed the wrong entries"; }
expect_list "a,b,c"

note "--orphans --manifest"
fresh_store orphans
build_at $T0 p/all.toml
expect_exit 2 "$KCACHE_TESTING" gc --orphans
expect_in err "--manifest"
[[ $(gc_at $T0 --orphans --manifest p/abc.toml) == "d,e,f" ]] || { cat out; fail "--orphans"; }
expect_list "a,b,c"

note "--stale --manifest (an option changed) and --stale alone (another toolchain)"
fresh_store stale
build_at $T0 p/all.toml
sed 's/VALUE = 2 /VALUE = 22 /' p/all.toml > p/all2.toml
[[ $(gc_at $T0 --stale --manifest p/all2.toml) == "b" ]] || { cat out; fail "--stale --manifest"; }
expect_list "a,c,d,e,f"
fresh_store toolchain
KCACHE_TEST_TOOLCHAIN_SUFFIX=glslang:-old build_at $T0 p/abc.toml
manifest p/def.toml vulkan1.2 d e f
build_at $T0 p/def.toml
[[ $(gc_at $T0 --stale) == "a,b,c" ]] || { cat out; fail "--stale without a manifest"; }
expect_list "d,e,f"

note "--namespace"
fresh_store ns
build_at $T0 p/abc.toml
manifest p/def13.toml vulkan1.3 d e f
build_at $T0 p/def13.toml
[[ $(gc_at $T0 --older-than 0s --namespace spirv/vulkan1.3) == "d,e,f" ]] || { cat out; fail "--namespace"; }
expect_list "a,b,c"
expect_exit 3 "$KCACHE_TESTING" gc --older-than 0s --namespace spirv/vulkan9.9

note "--max-size evicts least recently used first, and respects the bound"
fresh_store lru
build_at $T0 p/all.toml
i=1
for k in c a e; do  # c, a, e used later, in that order; b, d, f only at T0
  # A one-kernel manifest with all.toml's block for $k, so that it hits.
  python3 - "$k" > p/one.toml <<'PY'
import re, sys
text = open("p/all.toml").read()
blocks = ["[[kernel]]" + b for b in text.split("[[kernel]]")[1:]]
print("".join(b for b in blocks if f'name = "{sys.argv[1]}"' in b))
PY
  build_at $((T0 + i * 100)) p/one.toml
  i=$((i + 1))
done
expect_exit 0 "$KCACHE_TESTING" inspect --json
total=$(json_get out 'sum(e["record_bytes"] for e in j["entries"])')
bdf=$(json_get out 'sum(e["record_bytes"] for e in j["entries"] if e["kernel"] in "bdf")')
limit=$((total - bdf))
echo "   before: $(listing) ($total bytes; limit $limit)"
# With the manifest every entry is fresh: nothing goes, and gc says so.
[[ $(gc_at $((T0 + 1000)) --max-size $limit --manifest p/all.toml) == "" ]] || fail "--max-size removed fresh entries"
expect_in out '"kept_fresh": 6'
[[ $(json_get out 'j["max_size_reached"]') == False ]] || fail "max_size_reached"
[[ $(gc_at $((T0 + 1000)) --max-size $limit) == "b,d,f" ]] || { cat out; fail "--max-size LRU order"; }
after=$(json_get out 'j["scope_bytes_after"]')
(( after <= limit )) || fail "--max-size bound: $after > $limit"
expect_list "a,c,e"
expect_exit 0 "$KCACHE_TESTING" inspect --json
(( $(json_get out 'sum(e["record_bytes"] for e in j["entries"])') <= limit )) || fail "store over the bound"
# Space: removing entries frees pages for reuse; compact gives them back.
expect_exit 0 "$KCACHE_TESTING" gc --max-size 1 --json
[[ $(json_get out 'j["compact_suggested"] or j["file_shrank"]') == True ]] || { cat out; fail "space verdict"; }
expect_exit 0 "$KCACHE_TESTING" gc --max-size 0
expect_exit 0 "$KCACHE_TESTING" compact --json
[[ $(json_get out "j[\"bytes_after\"] < j[\"bytes_before\"]") == True ]] || fail "compact did not shrink"

note "--dry-run changes nothing"
fresh_store dry
build_at $T0 p/all.toml
sum_before=$(sha256sum "$KCACHE_STORE/data.mdb")
KCACHE_TEST_NOW=$((T0 + DAY)) expect_exit 0 "$KCACHE_TESTING" gc --older-than 1h --dry-run
expect_in out "would remove spirv/vulkan1.2 a"
expect_in out "would remove 6 of 6 entries"
[[ $(sha256sum "$KCACHE_STORE/data.mdb") == "$sum_before" ]] || fail "--dry-run changed data.mdb"
expect_list "a,b,c,d,e,f"

note "no rule is a usage error"
expect_exit 2 "$KCACHE_TESTING" gc
expect_in err "say what to remove"
expect_exit 2 "$KCACHE_TESTING" gc --older-than 3 parsecs
