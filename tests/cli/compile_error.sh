#!/usr/bin/env bash
# A kernel with a compile error among good ones: the others are built and
# stored, the error names the user's file and line in the form editors read
# (FILE:LINE: error: TEXT, as glslc and GCC write it), once for every variant
# it breaks; a missing include names every folder searched; the exit code is
# 1. A kernel that later fails to recompile keeps its previous entry (staged
# refresh).
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
# The path as seen from the folder kcache ran in (issue 41): p/bad.comp.
grep -qx "p/bad.comp:5: error: 'undefined_call' : no matching overloaded function found" out ||
  { cat out; fail "the error is not one FILE:LINE: error: line with the path from the working folder"; }
! grep -q "ERROR:\|compilation terminated" out || { cat out; fail "glslang's own form is left"; }
expect_in out "4 kernels: 0 hit, 3 compiled, 1 failed"
(cd p && "$KCACHE" build >../out 2>&1) && fail "a failed build exited 0"
grep -qx "bad.comp:5: error: 'undefined_call' : no matching overloaded function found" out ||
  { cat out; fail "run in p/, the error does not name bad.comp"; }
mkdir -p elsewhere && (cd elsewhere && "$KCACHE" build ../p/kcache.toml >../out 2>&1) && fail "a failed build exited 0"
grep -qx "$WORK/p/bad.comp:5: error: 'undefined_call' : no matching overloaded function found" out ||
  { cat out; fail "run outside the project, the error does not name the file by its absolute path"; }

note "one error in six variants is printed once, naming them"
cat > p/variants.toml <<'T'
[[kernel]]
name = "bad"
source = "bad.comp"
[kernel.variants]
N = [1, 2, 3]
M = [1, 2]
[[kernel]]
name = "inc"
source = "inc.comp"
include_dirs = ["include", "more"]
T
printf '#version 450\n#include "missing.h"\nlayout(local_size_x=1) in;\nvoid main() {}\n' > p/inc.comp
expect_exit 1 "$KCACHE" build p/variants.toml --store V
[[ $(grep -c "undefined_call" out) == 1 ]] || { cat out; fail "one error printed more than once"; }
expect_in out "FAILED bad[M=1,N=1] (compile_failed in glslang); the same error in 5 more: bad[M=1,N=2], bad[M=1,N=3], bad[M=2,N=1], bad[M=2,N=2], bad[M=2,N=3]"
expect_in out "inc.comp:2: error: '#include' : not found; searched '.' (the including file's folder), then include_dirs 'include', 'more'"
expect_in out "7 kernels: 0 hit, 0 compiled, 7 failed"
expect_exit 0 "$KCACHE" get 'good[N=2]' -o g.spv
spirv-val g.spv || fail "stored module invalid"

# Staged refresh: break a good kernel; its old entry stays and is reported stale.
printf '#version 450\nlayout(local_size_x=1) in;\nvoid main() { nope(); }\n' > p/good.comp
expect_exit 1 "$KCACHE" build p/kcache.toml --json
[[ $(json_get out '[k.get("kept_stale") for k in j["kernels"] if k["kernel"]=="good[N=1]"][0]') == True ]] || fail "not kept"
expect_exit 0 "$KCACHE" get 'good[N=1]' -o g1.spv
expect_exit 0 "$KCACHE" inspect --manifest p/kcache.toml --json
[[ $(json_get out '[e["state"] for e in j["entries"] if e["kernel"]=="good[N=1]"][0]') == stale ]] || fail "not stale"
