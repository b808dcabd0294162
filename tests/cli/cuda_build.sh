#!/usr/bin/env bash
# CUDA kernels through NVRTC (registered only where CMake found NVRTC):
# cold build of examples/cuda (cubin for sm_80 and sm_90, PTX for
# compute_90), a warm build that never loads NVRTC (its path does not exist),
# inspect --manifest classifies cuda entries by the same rule, editing the
# shared header rebuilds only its users, a compile error exits 1
# with file:line and is remembered, and GLSL kernels build beside CUDA ones
# when NVRTC cannot be loaded.
source "$(dirname "$0")/lib.bash"
: "${KCACHE_TEST_NVRTC:?set by ctest}"
cp -r "$KCACHE_SOURCE_DIR/examples/cuda" p

note "cold: 5 kernels × their arches"
expect_exit 0 "$KCACHE" build p/kcache.toml --nvrtc "$KCACHE_TEST_NVRTC" --json
[[ $(counts out) == "0 11 0 0" ]] || fail "cold counts $(counts out)"
[[ $(json_get out '[k["namespace"] for k in j["kernels"] if k["kernel"]=="reduce_sum"]') == "['cuda/sm_80', 'cuda/sm_90', 'cuda/compute_90']" ]] ||
  fail "reduce_sum namespaces"
[[ $(json_get out 'j["phases"]["nvrtc"]["wall_ms"] > 0') == True ]] || fail "no nvrtc time on a cold build"

note "the cubins are ELF for EM_CUDA of their arch; PTX for compute_90"
for arch in sm_80 sm_90; do
  expect_exit 0 "$KCACHE" get saxpy --namespace cuda/$arch -o saxpy_$arch.cubin
  [[ $(head -c 4 saxpy_$arch.cubin | od -An -c | tr -d ' ') == '177ELF' ]] || fail "$arch: not an ELF"
  machine=$(od -An -t u2 -j 18 -N 2 saxpy_$arch.cubin | tr -d ' ')
  [[ $machine == 190 ]] || fail "$arch: e_machine $machine, not EM_CUDA"
  if [[ -x /usr/local/cuda/bin/cuobjdump ]]; then
    /usr/local/cuda/bin/cuobjdump -elf saxpy_$arch.cubin > elf_$arch.txt
    expect_in elf_$arch.txt "arch = $arch"
  fi
done
expect_exit 0 "$KCACHE" get reduce_sum --namespace cuda/compute_90 -o reduce.ptx
expect_in reduce.ptx ".target sm_90"
expect_in reduce.ptx "shfl.sync.down"
expect_exit 0 "$KCACHE" get 'matmul[TILE=16]' --namespace cuda/sm_90 -o mm16.cubin
if [[ -x /usr/local/cuda/bin/cuobjdump ]]; then
  /usr/local/cuda/bin/cuobjdump -elf mm16.cubin > mm16.txt
  expect_in mm16.txt "_Z6matmulIfLi16EEvPKT_S2_PS0_i"
fi

note "warm: every kernel a hit, and NVRTC is not even loaded"
expect_exit 0 "$KCACHE" build p/kcache.toml --nvrtc /nonexistent/libnvrtc.so --json
[[ $(counts out) == "11 0 0 0" ]] || fail "warm counts $(counts out)"
[[ $(json_get out 'j["phases"]["nvrtc"]["wall_ms"]') == 0.0 ]] || fail "warm build spent time in nvrtc"

expect_exit 0 "$KCACHE" inspect --manifest p/kcache.toml
expect_in out "11 fresh, 0 stale, 0 orphan, 0 missing"

note "edit the shared header: saxpy and reduce_sum rebuild, matmul does not"
echo '// an edit' >> p/common.cuh
expect_exit 0 "$KCACHE" inspect --manifest p/kcache.toml
expect_in out "6 fresh, 5 stale, 0 orphan, 0 missing"
expect_exit 0 "$KCACHE" build p/kcache.toml --nvrtc "$KCACHE_TEST_NVRTC" --json
[[ $(counts out) == "6 0 5 0" ]] || fail "after header edit $(counts out)"
[[ $(json_get out 'sorted({k["kernel"] for k in j["kernels"] if k["outcome"]=="stale_replaced"})') == "['reduce_sum', 'saxpy']" ]] ||
  fail "wrong kernels rebuilt"

note "a key includes every option: a changed nvrtc option rebuilds that kernel"
sed -i 's/"-use_fast_math"/"-use_fast_math", "-lineinfo"/' p/kcache.toml
expect_exit 0 "$KCACHE" build p/kcache.toml --nvrtc "$KCACHE_TEST_NVRTC" --json
[[ $(counts out) == "9 0 2 0" ]] || fail "after option change $(counts out)"

note "compile error: exit 1, file:line, remembered"
cp -r "$KCACHE_SOURCE_DIR/tests/data/cuda_error" e
expect_exit 1 "$KCACHE" build e/kcache.toml --nvrtc "$KCACHE_TEST_NVRTC"
expect_in out "FAILED broken"
expect_in out "broken.cu:2: error"
expect_exit 1 "$KCACHE" build e/kcache.toml --nvrtc /nonexistent/libnvrtc.so --json
[[ $(json_get out '[k.get("remembered") for k in j["kernels"]][0]') == True ]] || fail "failure not remembered"
[[ $(json_get out '[k.get("failed_phase") for k in j["kernels"]][0]') == nvrtc ]] || fail "phase not nvrtc"

note "no NVRTC: cuda kernels fail with what to do, a GLSL kernel still builds"
mkdir -p m
cp p/saxpy.cu p/common.cuh m/
printf '#version 450\nlayout(local_size_x=1) in;\nlayout(std430, binding=0) buffer B { uint d[]; };\nvoid main() { d[0] = 1u; }\n' > m/g.comp
cat > m/kcache.toml <<'T'
[[kernel]]
name = "g"
source = "g.comp"
[[kernel]]
name = "saxpy"
source = "saxpy.cu"
language = "cuda"
arch = ["sm_90"]
T
expect_exit 1 "$KCACHE" build m/kcache.toml --store "$WORK/store2" --nvrtc /nonexistent/libnvrtc.so
expect_in out "install the CUDA toolkit"
expect_in out "1 compiled"
