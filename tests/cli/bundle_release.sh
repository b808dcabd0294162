#!/usr/bin/env bash
# Release bundles (format version 4): the example built for the lavapipe
# device ships to an empty store as one file (`export --for-device`): its
# pipelines with every SPIR-V module they were built from, checked whole and
# written in one transaction; verify finds every entry good. A release that
# fails anywhere (another device class, a damaged section, trailing bytes)
# writes nothing and leaves no store. Repeated --namespace makes a release
# too; commands that read one namespace say what a release is.
source "$(dirname "$0")/lib.bash"
copy_example proj
expect_exit 0 "$KCACHE" devices --json
fp=$(json_get out '[d["fingerprint"] for d in j["devices"] if "llvmpipe" in d["name"]][0]')
expect_exit 0 "$KCACHE" build proj/kcache.toml --backend vulkan --device llvmpipe --json -j 2 --store built
modules=$(json_get out 'len([k for k in j["kernels"] if k["namespace"].startswith("spirv/")])')
pipelines=$(json_get out "len([k for k in j['kernels'] if k['namespace'] == 'vulkan/$fp'])")
[[ $modules -ge 60 && $pipelines -ge 60 ]] || fail "built $modules modules, $pipelines pipelines"

note "export --for-device: one file, SPIR-V sections first, then the class's pipelines"
expect_exit 0 "$KCACHE" export --store built --for-device "$fp" -o release.kcb --json
cp out export.json
[[ $(json_get export.json '[s["namespace"] for s in j["sections"]]') == \
   "['spirv/vulkan1.1', 'spirv/vulkan1.2', 'spirv/vulkan1.3', 'vulkan/$fp']" ]] \
  || fail "sections: $(json_get export.json '[s["namespace"] for s in j["sections"]]')"
expect_exit 0 "$KCACHE" inspect release.kcb --json
[[ $(json_get out 'j["format_version"], j["ok"], sum(len(s["entries"]) for s in j["sections"])') == \
   "4 True $((modules + pipelines))" ]] || fail "inspect: $(head -c 300 out)"

note "one file into an empty store: all of it, then verify finds every entry good"
export KCACHE_STORE="$WORK/fleet"
expect_exit 0 "$KCACHE" import release.kcb --device llvmpipe --json
cp out import.json
[[ $(json_get import.json 'j["counts"]["imported"], j["counts"]["refused"], len(j["sections"])') == \
   "$((modules + pipelines)) 0 4" ]] || fail "import: $(json_get import.json 'j["counts"]')"
expect_exit 0 "$KCACHE" verify --json
[[ $(json_get out 'j["entries"], len(j["problems"])') == "$((modules + pipelines)) 0" ]] \
  || fail "verify: $(head -c 400 out)"
expect_exit 0 "$KCACHE" import release.kcb --device llvmpipe
expect_in out "imported 0, already present $((modules + pipelines)), replaced (stale) 0, refused 0"

note "another device class: refused from the release head, before any payload; no store left"
export KCACHE_STORE="$WORK/other"
expect_exit 5 "$KCACHE" import release.kcb --fingerprint 0123456789abcdef
expect_in err "vulkan/$fp"
[[ ! -e $KCACHE_STORE ]] || fail "a refused release left a store"

note "a byte flipped in the last section: refused, nothing written (its SPIR-V sections came first)"
size=$(stat -c %s release.kcb)
python3 - release.kcb damaged.kcb "$((size - 60))" <<'EOF'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[int(sys.argv[3])] ^= 0x40
open(sys.argv[2], "wb").write(data)
EOF
expect_exit 6 "$KCACHE" import damaged.kcb --device llvmpipe
[[ ! -e $KCACHE_STORE ]] || fail "a damaged release left a store"
cat release.kcb <(printf x) >trailing.kcb
expect_exit 6 "$KCACHE" import - --device llvmpipe <trailing.kcb
expect_in err "trailing bytes after its last section"
[[ ! -e $KCACHE_STORE ]] || fail "a release with trailing bytes left a store"
head -c $((size - 100)) release.kcb >short.kcb
expect_exit 6 "$KCACHE" import short.kcb --device llvmpipe
[[ ! -e $KCACHE_STORE ]] || fail "a truncated release left a store"

note "repeated --namespace makes a release; a pipe reads it; merge says what it is"
expect_exit 0 "$KCACHE" export --store built --namespace spirv/vulkan1.2 --namespace spirv/vulkan1.3 -o two.kcb
expect_in out "release of 2 namespaces"
expect_exit 0 "$KCACHE" import - <two.kcb
expect_in out "entries of spirv/vulkan1.3"
expect_exit 6 "$KCACHE" merge two.kcb two.kcb -o merged.kcb
expect_in err "release of several namespaces"
