#!/usr/bin/env bash
# inspect --manifest marks entries fresh, stale and orphan, and lists missing kernels.
source "$(dirname "$0")/lib.bash"
mkdir -p p
for k in one two three; do
  printf '#version 450\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer B { uint d[]; };\nvoid main() { d[0] = VALUE; }\n' > p/$k.comp
done
cat > p/kcache.toml <<'T'
[[kernel]]
name = "one"
source = "one.comp"
defines = { VALUE = 1 }
[[kernel]]
name = "two"
source = "two.comp"
defines = { VALUE = 2 }
[[kernel]]
name = "three"
source = "three.comp"
defines = { VALUE = 3 }
T
expect_exit 0 "$KCACHE" build p/kcache.toml
# two: define changed (stale); three: removed (orphan); four: new (missing).
cat > p/kcache.toml <<'T'
[[kernel]]
name = "one"
source = "one.comp"
defines = { VALUE = 1 }
[[kernel]]
name = "two"
source = "two.comp"
defines = { VALUE = 22 }
[[kernel]]
name = "four"
source = "one.comp"
defines = { VALUE = 4 }
T
expect_exit 0 "$KCACHE" inspect --manifest p/kcache.toml --json
[[ $(json_get out '",".join(e["kernel"]+"="+e["state"] for e in j["entries"])') == "one=fresh,three=orphan,two=stale" ]] \
  || fail "states: $(json_get out 'j["entries"]')"
[[ $(json_get out 'j["missing"][0]["kernel"]') == four ]] || fail "missing not listed"
[[ $(json_get out '[c for e in j["entries"] if e["kernel"]=="two" for c in e["changes"]][0]["field"]') == define:VALUE ]] \
  || fail "stale reason"
expect_exit 0 "$KCACHE" inspect --manifest p/kcache.toml
expect_in out "1 fresh, 1 stale, 1 orphan, 1 missing"
expect_exit 0 "$KCACHE" inspect two --why --manifest p/kcache.toml
expect_in out "define:VALUE: stored 2 → current 22"
expect_exit 0 "$KCACHE" inspect --stale --manifest p/kcache.toml --json
[[ $(json_get out 'len(j["entries"])') == 1 ]] || fail "--stale filter"
# A filter shows fewer rows, but the counts are the whole store's (they said
# "0 fresh" while entries were fresh).
expect_exit 0 "$KCACHE" inspect --stale --orphans --manifest p/kcache.toml
expect_in out "in the store: 1 fresh, 1 stale, 1 orphan, 1 missing; 2 entries shown"
expect_exit 0 "$KCACHE" inspect
expect_in out "namespace spirv/vulkan1.2"
