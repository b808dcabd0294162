#!/usr/bin/env bash
# The runtime API's example program on lavapipe: the example kernels' compute
# pipelines created through libkcache, first from a SPIR-V-only store (no
# blob, the reason given, every pipeline still created), then after
# `kcache build --backend vulkan` (every blob served: the runtime's
# kcache_device_from_vulkan fingerprint equals kcache's own), from the store
# and from the deployment file the example opens by default. Then the
# benchmark tool's modes (kcache-bench-start, what scripts/bench_gpu runs).
# Lavapipe keeps no compiled code in its caches, so only correctness is
# checked, not speed.
source "$(dirname "$0")/lib.bash"
: "${KCACHE_BUILD_DIR:?set by ctest}"
EXAMPLE=$KCACHE_BUILD_DIR/tools/kcache-example/kcache-example
BENCH=$KCACHE_BUILD_DIR/tools/kcache-bench-start/kcache-bench-start
example_store "$KCACHE_STORE" "$WORK/project"  # the example built (the fixture cli.example_store)

expect_exit 0 "$EXAMPLE" --device llvmpipe --store "$KCACHE_STORE"
expect_in "$WORK/out" "76 pipelines created, 0 blobs served"
expect_in "$WORK/out" "kernels without a blob: e.g. the store has no pipeline-cache blob"
cat "$WORK/out" | tail -1

expect_exit 0 "$KCACHE" build "$WORK/project/kcache.toml" -j2 --backend vulkan --device llvmpipe
expect_exit 0 "$EXAMPLE" --device llvmpipe --store "$KCACHE_STORE"
expect_in "$WORK/out" "76 pipelines created, 76 blobs served"
tail -1 "$WORK/out"
# By default the example opens kernels.kcdeploy: none here yet, then the
# class's file written by `kcache deploy`.
expect_exit 3 "$EXAMPLE" --device llvmpipe
expect_in "$WORK/err" "kernels.kcdeploy"
fp=$("$KCACHE" devices --json | python3 -c 'import json,sys; print([d["fingerprint"] for d in json.load(sys.stdin)["devices"] if "llvmpipe" in d["name"]][0])')
expect_exit 0 "$KCACHE" deploy --for-device "$fp" -o kernels.kcdeploy
expect_exit 0 "$EXAMPLE" --device llvmpipe
expect_in "$WORK/out" "76 pipelines created, 76 blobs served"

# One kernel by name and target; an unknown one is an error with exit 1.
expect_exit 0 "$EXAMPLE" --device llvmpipe --target vulkan1.2 'saxpy[T=float,WIDTH=4]'
expect_in "$WORK/out" "1 pipelines created, 1 blobs served"
expect_exit 1 "$EXAMPLE" --device llvmpipe nope
expect_in "$WORK/err" "no kernel 'nope'"
expect_exit 3 "$EXAMPLE" --store "$WORK/absent"
expect_exit 3 "$EXAMPLE" --file "$WORK/absent.kcdeploy"
# --device as kcache's: a number is an index, never part of a name ("5" is
# in "LLVM 15.0.6"); a name that matches nothing lists the devices.
expect_exit 3 "$EXAMPLE" --device 5
expect_in "$WORK/err" "no Vulkan device 5"
expect_in "$WORK/err" "llvmpipe"
expect_exit 3 "$BENCH" --device no-such-gpu --startup warm
expect_in "$WORK/err" "no Vulkan device's name or fingerprint id matches 'no-such-gpu'"
expect_exit 2 "$EXAMPLE" --bogus

# The benchmark tool: cold against warm per kernel; an application's start
# on 4 threads (scripts/bench_gpu times it on a GPU), every kernel looked up
# and its pipeline created, warm from the blobs and cold without them;
# lookups alone. Bad counts are usage errors.
expect_exit 0 "$BENCH" --device llvmpipe
expect_in "$WORK/out" "total: 76 kernels, 76 blobs served"
expect_exit 0 "$BENCH" --device llvmpipe --startup warm --threads 4
expect_in "$WORK/out" "startup mode=warm threads=4 pipelines=76 failed=0 blobs_served=76 "
expect_exit 0 "$BENCH" --device llvmpipe --startup cold --threads 4
expect_in "$WORK/out" "startup mode=cold threads=4 pipelines=76 failed=0 blobs_served=0 hits=-1 misses=-1 "
# Warm starts probe each blob (lavapipe compiles again: every one a miss);
# with --modules inline no shader module is made. Lavapipe has no shader
# module identifiers: that mode says what it needs.
expect_exit 0 "$BENCH" --device llvmpipe --startup warm --trusted --modules inline --threads 2
expect_in "$WORK/out" "pipelines=76 failed=0 blobs_served=76 hits=0 misses=76 modules=inline "
expect_in "$WORK/out" " module_sum_ms=0.000 "
cat "$WORK/out"
# One pipeline cache per thread, from every blob merged beforehand; every
# kernel looked up before the first pipeline.
expect_exit 0 "$BENCH" --device llvmpipe --startup warm --caches thread --lookups-first --threads 2
expect_in "$WORK/out" "pipelines=76 failed=0 blobs_served=76 hits=0 misses=76 modules=objects caches=thread lookups_first=1 "
expect_exit 3 "$BENCH" --device llvmpipe --startup warm --modules identifier
expect_in "$WORK/err" "needs VK_EXT_shader_module_identifier"
expect_exit 2 "$BENCH" --modules sideways
expect_exit 0 "$BENCH" --device llvmpipe --lookups 2
expect_in "$WORK/out" "lookups source=store trusted=0 kernels=76 rounds=2 blobs_served=76 failed=0 open_ms="
cat "$WORK/out"
expect_exit 0 "$BENCH" --device llvmpipe --lookups 2 --trusted
expect_in "$WORK/out" "lookups source=store trusted=1 kernels=76 rounds=2 blobs_served=76 failed=0 open_ms="
cat "$WORK/out"
# From the deployment file: lookups, and a start with one cache per thread
# from the file's merged cache (written with --merge-caches).
expect_exit 0 "$BENCH" --device llvmpipe --file kernels.kcdeploy --lookups 20
expect_in "$WORK/out" "lookups source=file trusted=0 kernels=76 rounds=20 blobs_served=76 failed=0 open_ms="
cat "$WORK/out"
expect_exit 3 "$BENCH" --device llvmpipe --file kernels.kcdeploy --startup warm --caches thread
expect_in "$WORK/err" "carries no merged pipeline cache"
expect_exit 0 "$KCACHE" deploy --for-device "$fp" --merge-caches -o kernels.kcdeploy
expect_in "$WORK/out" "(a merged class cache of 32 B)"
expect_exit 0 "$BENCH" --device llvmpipe --file kernels.kcdeploy --startup warm --caches thread --threads 2
expect_in "$WORK/out" "pipelines=76 failed=0 blobs_served=76 hits=0 misses=76 modules=objects caches=thread "
expect_in "$WORK/out" " source=file"
cat "$WORK/out"
expect_exit 3 "$BENCH" --store "$WORK/absent" --device llvmpipe --startup warm
expect_exit 2 "$BENCH" --startup warm --threads 0
expect_exit 2 "$BENCH" --lookups 0
