#!/usr/bin/env bash
# A kernel with a compile error among good ones: the others are built and
# stored, the error names the user's file and line, the exit code is 1. A
# kernel that later fails to recompile keeps its previous entry (staged refresh).
source "$(dirname "$0")/lib.bash"
mkdir -p p
printf '#version 450\nlayout(local_size_x=1) in;\nlayout(std430, binding=0) buffer B { uint d[]; };\nvoid main() { d[0] = 1u; }\n' > p/good.comp
printf '#version 450\nlayout(local_size_x=1) in;\n\nvoid main() {\n  undefined_call();\n}\n' > p/bad.comp
cat > p/kcache.toml <<'T'
[[kernel]]
name = "good"
source = "good.comp"
[kernel.variants]
N = [1, 2, 3]
[[kernel]]
name = "bad"
source = "bad.comp"
T
expect_exit 1 "$KCACHE" build p/kcache.toml
expect_in out "FAILED bad"
expect_in out "bad.comp:5"
expect_in out "4 kernels: 0 hit, 3 compiled, 0 stale replaced, 1 failed"
expect_exit 0 "$KCACHE" get 'good[N=2]' -o g.spv
spirv-val g.spv || fail "stored module invalid"

# Staged refresh: break a good kernel; its old entry stays and is reported stale.
printf '#version 450\nlayout(local_size_x=1) in;\nvoid main() { nope(); }\n' > p/good.comp
expect_exit 1 "$KCACHE" build p/kcache.toml --json
[[ $(json_get out '[k.get("kept_stale") for k in j["kernels"] if k["kernel"]=="good[N=1]"][0]') == True ]] || fail "not kept"
expect_exit 0 "$KCACHE" get 'good[N=1]' -o g1.spv
expect_exit 0 "$KCACHE" inspect --manifest p/kcache.toml --json
[[ $(json_get out '[e["state"] for e in j["entries"] if e["kernel"]=="good[N=1]"][0]') == stale ]] || fail "not stale"
