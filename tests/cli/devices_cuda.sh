#!/usr/bin/env bash
# `kcache devices` and CUDA: without libcuda nothing is said about CUDA (exit
# 0, Vulkan devices as before) except one line with --verbose and the "cuda"
# object of --json; a described CUDA device (the CLI's test seam
# KCACHE_TEST_CUDA_DEVICE) is listed with its compute capability and CUDA
# version, in text and JSON, and is listed even where Vulkan is absent.
source "$(dirname "$0")/lib.bash"
# KCACHE_TEST_* seams: only the test build obeys them, so this runs $KCACHE_TESTING.
nocuda=(env KCACHE_CUDA_DRIVER=/nonexistent/libcuda.so.1)

note "no libcuda: Vulkan devices as before, nothing about CUDA"
expect_exit 0 "${nocuda[@]}" "$KCACHE_TESTING" devices
expect_in out "llvmpipe"
if grep -qi cuda out err; then fail "devices mentions CUDA without --verbose"; fi
expect_exit 0 "${nocuda[@]}" "$KCACHE_TESTING" devices --verbose
expect_in out "cuda: not available: no CUDA driver"
expect_in out "/nonexistent/libcuda.so.1"
expect_exit 0 "${nocuda[@]}" "$KCACHE_TESTING" devices --json
cp out nocuda.json
[[ $(json_get nocuda.json 'j["cuda"]["available"]') == False ]] || fail "cuda.available is not false"
[[ $(json_get nocuda.json '"no CUDA driver" in j["cuda"]["reason"]') == True ]] || fail "no reason in --json"
[[ $(json_get nocuda.json 'len(j["cuda"]["devices"])') == 0 ]] || fail "cuda devices without a driver"
[[ $(json_get nocuda.json 'j["schema"]') == kcache.devices/1 ]] || fail "schema changed"

note "a described device: text and JSON"
export KCACHE_TEST_CUDA_DEVICE="NVIDIA A100;8.0;12040"
expect_exit 0 "$KCACHE_TESTING" devices
expect_in out "cuda:0: NVIDIA A100"
expect_in out "compute capability 8.0"
expect_in out "CUDA 12.4 driver API"
expect_exit 0 "$KCACHE_TESTING" devices --json
cp out a100.json
[[ $(json_get a100.json 'j["cuda"]["devices"][0]["compute_capability"]') == 8.0 ]] || fail "compute capability"
[[ $(json_get a100.json 'j["cuda"]["devices"][0]["arch"]') == sm_80 ]] || fail "arch"
[[ $(json_get a100.json 'j["cuda"]["devices"][0]["cuda_version"]') == 12.4 ]] || fail "cuda_version"
[[ $(json_get a100.json 'j["cuda"]["devices"][0]["selector"]') == cuda:0 ]] || fail "selector"

note "no Vulkan but a CUDA device: listed, exit 0, the missing Vulkan noted on stderr"
expect_exit 0 env KCACHE_VULKAN_LOADER=/nonexistent/libvulkan.so.1 "$KCACHE_TESTING" devices
expect_in out "cuda:0: NVIDIA A100"
expect_in err "no Vulkan device"
unset KCACHE_TEST_CUDA_DEVICE
note "no Vulkan and no CUDA: exit 7 as before"
expect_exit 7 env KCACHE_VULKAN_LOADER=/nonexistent/libvulkan.so.1 "${nocuda[@]}" "$KCACHE_TESTING" devices
