#!/usr/bin/env bash
# CUDA namespaces as bundles (registered only where CMake found NVRTC):
# export cuda/sm_90 → import into a fresh store (same bytes back); a bundle
# is refused for another --fingerprint, naming the field; a tampered cubin
# (wrong ELF machine, another arch's cubin, with correct digests) is refused.
source "$(dirname "$0")/lib.bash"
: "${KCACHE_TEST_NVRTC:?set by ctest}"
TOOL="$KCACHE_SOURCE_DIR/tests/cli/bundle_tool.py"
cp -r "$KCACHE_SOURCE_DIR/examples/cuda" p
expect_exit 0 "$KCACHE" build p/kcache.toml --nvrtc "$KCACHE_TEST_NVRTC"

note "export cuda/sm_90 and cuda/compute_90, import into a fresh store"
expect_exit 0 "$KCACHE" export --namespace cuda/sm_90 --format-version 1 -o sm90.kcb
expect_exit 0 "$KCACHE" export --namespace cuda/sm_80 --format-version 1 -o sm80.kcb
expect_exit 0 "$KCACHE" export --namespace cuda/compute_90 -o ptx.kcb
expect_exit 0 "$KCACHE" import sm90.kcb --store fresh --fingerprint sm_90
expect_exit 0 "$KCACHE" import ptx.kcb --store fresh --fingerprint compute_90
expect_exit 0 "$KCACHE" get 'matmul[TILE=32]' --namespace cuda/sm_90 -o a.cubin
expect_exit 0 "$KCACHE" get 'matmul[TILE=32]' --store fresh --namespace cuda/sm_90 -o b.cubin
cmp a.cubin b.cubin || fail "imported cubin differs"
expect_exit 0 "$KCACHE" inspect --store fresh
expect_in out "namespace cuda/sm_90  (5 entries"
expect_in out "nvrtc_version:"

note "a foreign --fingerprint is refused, naming the field"
expect_exit 5 "$KCACHE" import sm90.kcb --store other --fingerprint sm_80
expect_in err "cuda/sm_90"
expect_in err "arch: bundle sm_90"

note "tampered payloads (digests correct) are refused"
python3 "$TOOL" sm90.kcb machine.kcb set-payload-byte 0 18 62
expect_exit 6 "$KCACHE" import machine.kcb --store t1 --fingerprint sm_90
expect_in err "not EM_CUDA"
expect_in err "nothing was imported"
"$KCACHE" get saxpy --namespace cuda/sm_80 -o saxpy80.cubin
idx=$(python3 "$TOOL" sm90.kcb - info | awk '$2=="saxpy"{print $1}')
python3 "$TOOL" sm90.kcb swapped.kcb set-payload "$idx" saxpy80.cubin
expect_exit 6 "$KCACHE" import swapped.kcb --store t2 --fingerprint sm_90
expect_in err "cubin is for sm_80 but is stored in cuda/sm_90"
