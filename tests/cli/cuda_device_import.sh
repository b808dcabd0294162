#!/usr/bin/env bash
# The CUDA device side of import and verify, on a machine without a GPU
# (registered only where CMake found NVRTC, which builds the bundles): a
# cuda/sm_90 bundle imported with --device is refused for a CUDA device that
# cannot run it (exit 5, naming arch against compute capability and the CUDA
# version against the driver's), taken for one that can, and checked against
# nothing without --device; a device comes from the CLI's test seam
# KCACHE_TEST_CUDA_DEVICE. inspect marks cuda namespaces foreign by the same
# rule. Without libcuda, `--device cuda:0` says so (exit 7). Loading on a real device is scripts/bench_cuda_gpu's job (H200).
source "$(dirname "$0")/lib.bash"
# KCACHE_TEST_* seams: only the test build obeys them, so this runs $KCACHE_TESTING.
: "${KCACHE_TEST_NVRTC:?set by ctest}"
cp -r "$KCACHE_SOURCE_DIR/examples/cuda" p
expect_exit 0 "$KCACHE_TESTING" build p/kcache.toml --store built --nvrtc "$KCACHE_TEST_NVRTC"
expect_exit 0 "$KCACHE_TESTING" export --store built --namespace cuda/sm_90 -o sm90.kcb
expect_exit 0 "$KCACHE_TESTING" export --store built --namespace cuda/compute_90 -o ptx90.kcb

note "an A100 (8.0) on a CUDA 12.4 driver cannot run sm_90 code built with CUDA 13.0"
expect_exit 5 env KCACHE_TEST_CUDA_DEVICE="A100;8.0;12040" "$KCACHE_TESTING" import sm90.kcb --store a100 --device cuda:0
expect_in err "arch sm_90 vs device compute capability 8.0"
expect_in err "needs CUDA 13.0, the driver offers 12.4"
expect_in err "build for sm_80"
[[ ! -e a100 ]] || fail "a refused import left a store behind"

note "an H100 (9.0) on a 12.4 driver: only the CUDA version is wrong, and only it is named"
expect_exit 5 env KCACHE_TEST_CUDA_DEVICE="H100;9.0;12.4" "$KCACHE_TESTING" import sm90.kcb --store h100 --device 0
expect_in err "needs CUDA 13.0, the driver offers 12.4"
if grep -qF "arch sm_90 vs" err; then fail "the arch was named though 9.0 runs sm_90"; fi

note "compute_90 PTX does not run on 8.0 either; an H200 on CUDA 13.0 takes both"
expect_exit 5 env KCACHE_TEST_CUDA_DEVICE="A100;8.0;13000" "$KCACHE_TESTING" import ptx90.kcb --store a100 --device 0
expect_in err "PTX for compute_90 needs compute capability 9.0 or newer"
expect_exit 0 env KCACHE_TEST_CUDA_DEVICE="NVIDIA H200;9.0;13000" "$KCACHE_TESTING" import sm90.kcb --store h200 --device cuda:0
expect_in out "CUDA device 0 'NVIDIA H200' (compute capability 9.0, CUDA 13.0)"
expect_in out "imported 5"
expect_exit 0 env KCACHE_TEST_CUDA_DEVICE="NVIDIA H200;9.0;13000" "$KCACHE_TESTING" import ptx90.kcb --store h200 --device H200
expect_in out "imported 1"

note "a malformed description is a usage error naming the expected form"
expect_exit 2 env KCACHE_TEST_CUDA_DEVICE="A100;eight;12040" "$KCACHE_TESTING" import sm90.kcb --store x --device 0
expect_in err "NAME;MAJOR.MINOR;CUDA_VERSION"

note "inspect: a cuda namespace is foreign only when no CUDA device runs it (the rule of import --device)"
foreign() { json_get out "{n['name']: n.get('foreign_reason', '') for n in j['namespaces']}['$1']"; }
expect_exit 0 env KCACHE_TEST_CUDA_DEVICE="NVIDIA H200;9.0;13000" "$KCACHE_TESTING" inspect --store built --json
[[ -z $(foreign cuda/sm_90) && -z $(foreign cuda/compute_90) ]] || { cat out; fail "an H200 runs sm_90 and compute_90"; }
[[ $(foreign cuda/sm_80) == *"arch sm_80 vs device compute capability 9.0"* ]] || { cat out; fail "sm_80 is foreign on 9.0"; }
expect_exit 0 env KCACHE_TEST_CUDA_DEVICE="A100;8.0;13000" "$KCACHE_TESTING" inspect --store built --json
[[ -z $(foreign cuda/sm_80) ]] || { cat out; fail "an A100 runs sm_80"; }
[[ $(foreign cuda/sm_90) == "runs on none of this machine's CUDA devices: "* ]] || { cat out; fail "sm_90 on 8.0"; }
expect_exit 0 env KCACHE_CUDA_DRIVER=/nonexistent/libcuda.so.1 "$KCACHE_TESTING" inspect --store built --json
for ns in cuda/sm_80 cuda/sm_90 cuda/compute_90; do
  [[ $(foreign $ns) == "no local CUDA device to match: no CUDA driver"* ]] || { cat out; fail "$ns without libcuda"; }
done
expect_exit 2 env KCACHE_TEST_CUDA_DEVICE="A100;eight;12040" "$KCACHE_TESTING" inspect --store built
expect_in err "NAME;MAJOR.MINOR;CUDA_VERSION"

note "without --device a cuda bundle is taken as built; without libcuda, --device says why"
expect_exit 0 "$KCACHE_TESTING" import sm90.kcb --store plain
expect_in out "its own arch sm_90"
expect_exit 7 env KCACHE_CUDA_DRIVER=/nonexistent/libcuda.so.1 "$KCACHE_TESTING" import sm90.kcb --store nodrv --device cuda:0
expect_in err "no CUDA driver"
expect_exit 7 env KCACHE_CUDA_DRIVER=/nonexistent/libcuda.so.1 "$KCACHE_TESTING" verify --store built --device cuda:0
expect_in err "no CUDA driver"
expect_in err "/nonexistent/libcuda.so.1"
