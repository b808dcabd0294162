#!/usr/bin/env bash
# Every file NVRTC reads is an input of the CUDA entry, or the kernel fails
# saying what cannot be tracked (lib/kcache/nvrtc/nvrtc.hpp): headers named
# by %:include, a comment between # and include, a spliced directive, a
# trigraph and __has_include are inputs, so editing one recompiles; a
# computed #include, #include_next, an absolute path and a path leaving the
# project fail with file:line and the directive; an #include of a FIFO fails
# at once instead of blocking NVRTC for ever. (Registered only where CMake
# found NVRTC.)
source "$(dirname "$0")/lib.bash"
: "${KCACHE_TEST_NVRTC:?set by ctest}"
mkdir -p p/src p/inc
cat > p/kcache.toml <<'T'
[defaults]
language = "cuda"
arch = ["compute_90"]
include_dirs = ["inc"]
nvrtc_options = ["-std=c++14"]   # NVRTC honours trigraphs only before C++17

[[kernel]]
name = "k"
source = "src/k.cu"
T
cat > p/src/k.cu <<'C'
%:include "a.cuh"
#/**/include <b.cuh>
#inc\
lude "c.cuh"
??=include <d.cuh>
#if __has_include(<e.cuh>)
#  include <e.cuh>
#endif
extern "C" __global__ void k(int* x) { x[0] = A + B + C + D + E; }
C
echo '#define A 1' > p/src/a.cuh
echo '#define B 2' > p/inc/b.cuh
echo '#define C 3' > p/src/c.cuh
echo '#define D 4' > p/inc/d.cuh
echo '#define E 5' > p/inc/e.cuh
nv=(--nvrtc "$KCACHE_TEST_NVRTC")

note "cold: compiled; every header is a recorded input"
expect_exit 0 "$KCACHE" build p/kcache.toml "${nv[@]}" --json
[[ $(counts out) == "0 1 0 0" ]] || fail "cold counts $(counts out)"
expect_exit 0 "$KCACHE" inspect k --manifest p/kcache.toml
for f in src/k.cu src/a.cuh inc/b.cuh src/c.cuh inc/d.cuh inc/e.cuh; do expect_in out "$f"; done

note "editing each header the old scan missed recompiles the kernel"
for f in src/a.cuh inc/b.cuh src/c.cuh inc/d.cuh inc/e.cuh; do
  echo "// edited" >> "p/$f"
  expect_exit 0 "$KCACHE" build p/kcache.toml "${nv[@]}" --json
  [[ $(counts out) == "0 0 1 0" ]] || fail "after editing $f: $(counts out), expected a rebuild"
done
expect_exit 0 "$KCACHE" build p/kcache.toml "${nv[@]}" --json
[[ $(counts out) == "1 0 0 0" ]] || fail "unchanged: $(counts out)"

note "the bytes compiled are the project's: the PTX has the header's value"
echo '#define A 1000000' > p/src/a.cuh
expect_exit 0 "$KCACHE" build p/kcache.toml "${nv[@]}"
expect_exit 0 "$KCACHE" get k --namespace cuda/compute_90 -o k.ptx
expect_in k.ptx "1000014"

note "a header that appears where a search looked in vain is a changed input (issue 39)"
# "d.cuh" is looked for beside the source (nothing there) before inc/, and
# __has_include(<opt.cuh>) finds nothing: both are recorded as absent
# candidates, and a file created at either recompiles the kernel.
cat > p/src/k.cu <<'C'
#include "d.cuh"
#if __has_include(<opt.cuh>)
#  include <opt.cuh>
#else
#  define OPT 0
#endif
extern "C" __global__ void k(int* x) { x[0] = D + OPT; }
C
expect_exit 0 "$KCACHE" build p/kcache.toml "${nv[@]}" --json
[[ $(counts out) == "0 0 1 0" ]] || fail "new source: $(counts out)"
expect_exit 0 "$KCACHE" build p/kcache.toml "${nv[@]}" --json
[[ $(counts out) == "1 0 0 0" ]] || fail "unchanged: $(counts out)"
echo '#define OPT 7000' > p/inc/opt.cuh
expect_exit 0 "$KCACHE" inspect k --why --manifest p/kcache.toml
expect_in out "include candidate inc/opt.cuh now exists"
expect_exit 0 "$KCACHE" build p/kcache.toml "${nv[@]}" --json
[[ $(counts out) == "0 0 1 0" ]] || fail "__has_include's file appeared: $(counts out), expected a rebuild"
expect_exit 0 "$KCACHE" get k --namespace cuda/compute_90 -o k.ptx
expect_in k.ptx "7004"
echo '#define D 40000' > p/src/d.cuh  # beside the source: found before inc/d.cuh
expect_exit 0 "$KCACHE" build p/kcache.toml "${nv[@]}" --json
[[ $(counts out) == "0 0 1 0" ]] || fail "a header beside the source appeared: $(counts out), expected a rebuild"
expect_exit 0 "$KCACHE" get k --namespace cuda/compute_90 -o k.ptx
expect_in k.ptx "47000"

# fails_with TEXT...: the kernel source becomes TEXT (lines); the build
# fails within seconds (never hangs) with the message in $WORK/out.
fails_with() {
  printf '%s\n' "$@" 'extern "C" __global__ void k(int* x) { x[0] = 1; }' > p/src/k.cu
  local got=0
  timeout 60 "$KCACHE" build p/kcache.toml "${nv[@]}" >out 2>err || got=$?
  [[ $got -eq 1 ]] || { cat out err; fail "expected exit 1, got $got (124: it hung) for: $*"; }
}

note "an #include of a FIFO fails at once, naming it"
mkfifo p/src/pipe.cuh
start=$SECONDS
fails_with '// line 1' '#include "pipe.cuh"'
(( SECONDS - start < 30 )) || fail "the FIFO took $((SECONDS - start)) s to refuse"
expect_in out 'src/k.cu:2: `#include "pipe.cuh"`'
expect_in out "not a regular file"
rm p/src/pipe.cuh

note "what cannot be tracked fails with file:line, the directive and what to do"
fails_with '#define H "a.cuh"' '#include H'
expect_in out 'src/k.cu:2: `#include H`: a computed #include cannot be tracked'
expect_in out "write the header name literally"
fails_with '#include_next <b.cuh>'
expect_in out "#include_next cannot be tracked"
fails_with "#include \"$WORK/p/src/a.cuh\""
expect_in out "an absolute path"
fails_with '%:include "../../outside.cuh"'
expect_in out 'src/k.cu:1: `%:include "../../outside.cuh"`'
expect_in out "outside the manifest's folder"
fails_with '#if __has_include("/dev/zero")' '#endif'
expect_in out "an absolute path"

