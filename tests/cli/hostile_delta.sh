#!/usr/bin/env bash
# Issue 40: what crosses an import unsigned may not remove, downgrade or
# outrank. A delta written by anyone (tests/cli/hostile_delta.py, from the
# public names and keys of a namespace) removes nothing without --replace or
# a trusted signature: the hostile delta of the issue (no entries, nothing
# kept, every kernel of spirv/vulkan1.2 removed) and 50 random ones leave the
# store as it was; an honest delta over newer local builds removes none of
# them. A record that lowers its own validation, is dated in the future or is
# filed under another variant is refused; an entry a remote filled is not
# signed as a build of this machine unless asked.
source "$(dirname "$0")/lib.bash"
TOOL="$KCACHE_SOURCE_DIR/tests/cli/bundle_tool.py"
GEN="$KCACHE_SOURCE_DIR/tests/cli/hostile_delta.py"
NS=spirv/vulkan1.2
example_store S proj
expect_exit 0 "$KCACHE" export --store S --namespace $NS --format-version 1 -o src1.kcb
# entries STORE: its entries of $NS as "kernel id ir" lines.
entries() {
  "$KCACHE" inspect --store "$1" --json |
    json_get /dev/stdin '"\n".join(sorted(" ".join((e["kernel"], e["id"], e["ir"])) for e in j["entries"] if e["namespace"] == "'$NS'"))'
}
entries S >before
N=$(wc -l <before)
((N == 64)) || fail "the example store holds $N entries of $NS, not 64"

note "the hostile delta (no entries, nothing kept, all $N kernels removed): refused, the namespace intact"
for v in 5 6; do
  python3 "$GEN" hostile src1.kcb hostile$v.kcb $v
  for dry in "" --dry-run; do
    expect_exit 1 "$KCACHE" import hostile$v.kcb --store S $dry
    expect_in err "it would remove $N entries of the store"
  done
  entries S >now
  diff -q before now >/dev/null || fail "hostile$v.kcb changed the store"
done
expect_in err "removing needs a delta signed by a key you --trust, or --replace: nothing was written"
note "hostile5.kcb: $(stat -c %s hostile5.kcb) bytes"
note "--replace is the user's word: then a format-5 delta's removals are taken"
mkdir R && cp S/data.mdb R/
expect_exit 0 "$KCACHE" import hostile5.kcb --store R --replace
expect_in out "removed (delta) $N"

note "50 random unsigned deltas remove nothing"
mkdir rnd
python3 "$GEN" random src1.kcb rnd 50 40
refused=0
SUM=$(sha256sum <S/data.mdb)
for i in $(seq 0 49); do
  "$KCACHE" import rnd/r$i.kcb --store S >rnd/r$i.out 2>&1 || refused=$((refused + 1))
  # An unchanged file is an unchanged store; else the entries must be.
  [[ $(sha256sum <S/data.mdb) == "$SUM" ]] && continue
  entries S >now
  diff -q before now >/dev/null || { cat rnd/r$i.out; fail "random delta r$i.kcb changed the store"; }
  SUM=$(sha256sum <S/data.mdb)
done
note "$refused of 50 refused, none removed anything"

note "an honest delta over newer local builds of the kernels it removes removes none of them"
expect_exit 0 "$KCACHE" export --store S --namespace $NS -o base.kcb
expect_exit 0 "$KCACHE" export --store S --namespace $NS --kernel 'saxpy*' --since base.kcb -o only.kcb --json
[[ $(json_get out 'j["entries"], j["delta"]["kept"], j["delta"]["removed"]') == "0 6 58" ]] || fail "only: $(cat out)"
mkdir B && cp S/data.mdb B/
echo 'float kc_hostile_delta_local(float x) { return x + 1.0; }' >>proj/shaders/reduce.comp
expect_exit 0 "$KCACHE" build proj/kcache.toml --store B -j2 --json
rebuilt=$(json_get out 'j["counts"]["stale_replaced"]')
((rebuilt > 0)) || fail "no reduce kernel was rebuilt: $(head -c 300 out)"
entries B >b_before
expect_exit 1 "$KCACHE" import only.kcb --store B
expect_in err "'base.kcb'"
entries B >now
diff -q b_before now >/dev/null || fail "a refused delta changed the store"
expect_exit 0 "$KCACHE" import only.kcb --store B --replace
expect_in out "removed (delta) $((58 - rebuilt))"
expect_in out "kept $rebuilt kernels the delta removes"
entries B >after
[[ $(grep -c '^reduce\[' after) == "$rebuilt" ]] || fail "the newer reduce builds were removed: $(cat after)"
[[ $(grep -c '^saxpy\[' after) == 6 && $(wc -l <after) == $((6 + rebuilt)) ]] || fail "after: $(cat after)"
grep -F -f <(grep '^reduce\[' b_before) after >/dev/null || fail "the local builds' keys changed"

note "a record asking for validate = \"off\", its key recomputed: refused by default, taken with --allow-validate off"
python3 "$TOOL" src1.kcb off.kcb set-id-field 0 validate off
expect_exit 6 "$KCACHE" import off.kcb --store V
expect_in err "asks for validate = \"off\""
expect_in err "--allow-validate off"
[[ ! -e V ]] || fail "a refused import left a store"
expect_exit 0 "$KCACHE" import off.kcb --store V --allow-validate off
expect_exit 0 "$KCACHE" verify --store V
expect_in out "WEAK"
expect_in out "stored under validate = \"off\""

note "an entry dated in 2100 is refused, so it cannot block later honest bundles as a rollback"
python3 "$TOOL" src1.kcb future.kcb set-created 3 4102444800
expect_exit 6 "$KCACHE" import future.kcb --store F
expect_in err "the entry was built 2100-01-01T00:00:00Z, in the future"
KCACHE_TEST_NOW=4102444800 "$KCACHE_TESTING" export --store S --namespace $NS -o future-head.kcb >/dev/null
expect_exit 6 "$KCACHE" import future-head.kcb --store F
expect_in err "was written 2100-01-01T00:00:00Z, in the future"
[[ ! -e F ]] || fail "a refused import left a store"

note "a record filed under another variant's name is refused"
python3 "$TOOL" src1.kcb - info >names
first=$(head -1 names | cut -d' ' -f2-)
key=${first#*[}
key=${key%%=*}
python3 "$TOOL" src1.kcb label.kcb set-id-field 0 "variant:$key" mislabelled
expect_exit 6 "$KCACHE" import label.kcb --store L
expect_in err "is filed under another variant"

note "export --sign of entries a remote filled: refused unless --sign-remote-entries"
mkdir -p small/shaders
cp proj/shaders/saxpy.comp small/shaders/
cp -r proj/include small/
cat >small/kcache.toml <<'EOF'
[defaults]
target = "vulkan1.2"
include_dirs = ["include"]
defines = { KC_EXAMPLE = 1 }

[[kernel]]
name = "saxpy"
source = "shaders/saxpy.comp"
spec_constants = { "0" = 256 }
EOF
"$KCACHE" keygen -o ci >/dev/null
mkdir shared
expect_exit 0 "$KCACHE" build small/kcache.toml --store A --remote "file://$WORK/shared"
expect_exit 0 "$KCACHE" build small/kcache.toml --store C --remote "file://$WORK/shared" --json
[[ $(json_get out 'j["counts"]["remote_hit"]') == 1 ]] || fail "no remote hit: $(head -c 400 out)"
expect_exit 2 "$KCACHE" export --store C --sign ci.key -o c.kcb
expect_in err "came from a remote cache"
expect_in err "--sign-remote-entries"
[[ ! -e c.kcb ]] || fail "a refused export left a bundle"
expect_exit 0 "$KCACHE" export --store C --sign ci.key --sign-remote-entries -o c.kcb
expect_exit 0 "$KCACHE" export --store A --sign ci.key -o a.kcb
