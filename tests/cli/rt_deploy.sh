#!/usr/bin/env bash
# The deployment file end to end on lavapipe: `kcache deploy` of the example
# built for the device, signed; the example application opens it (by
# default), checked once against the key it names; a file signed by another
# key, an unsigned one, a damaged one and a truncated one are refused at open
# (exit 3, the reason named) and never served; a file without the class's
# blobs still serves SPIR-V; --kernel and --target select; --json; the
# errors of a class the store lacks and of an empty selection.
source "$(dirname "$0")/lib.bash"
: "${KCACHE_BUILD_DIR:?set by ctest}"
EXAMPLE=$KCACHE_BUILD_DIR/tools/kcache-example/kcache-example
BENCH=$KCACHE_BUILD_DIR/tools/kcache-bench-start/kcache-bench-start
example_store "$KCACHE_STORE" "$WORK/project"
expect_exit 0 "$KCACHE" build "$WORK/project/kcache.toml" -j2 --backend vulkan --device llvmpipe
fp=$("$KCACHE" devices --json | python3 -c 'import json,sys; print([d["fingerprint"] for d in json.load(sys.stdin)["devices"] if "llvmpipe" in d["name"]][0])')

expect_exit 0 "$KCACHE" keygen -o ci
expect_exit 0 "$KCACHE" keygen -o other
expect_exit 0 "$KCACHE" deploy --for-device "$fp" --sign ci.key -o kernels.kcdeploy
expect_in "$WORK/out" "wrote kernels.kcdeploy: 76 kernels (76 with a pipeline-cache blob, 0 CUDA)"
expect_in "$WORK/out" "signed by key $(sed -n 's/^key-id //p' ci.pub)"
cat "$WORK/out"

# The application, safe by default: the digest always, the signature when it names a key.
expect_exit 0 "$EXAMPLE" --device llvmpipe --key ci.pub
expect_in "$WORK/out" "76 pipelines created, 76 blobs served"
expect_exit 3 "$EXAMPLE" --device llvmpipe --key other.pub
expect_in "$WORK/err" "must be signed by the public key"
expect_exit 0 "$KCACHE" deploy --for-device "$fp" -o unsigned.kcdeploy
expect_exit 3 "$EXAMPLE" --device llvmpipe --key ci.pub --file unsigned.kcdeploy
expect_in "$WORK/err" "and is unsigned"
expect_exit 0 "$EXAMPLE" --device llvmpipe --file unsigned.kcdeploy  # no key asked: its digest alone
expect_in "$WORK/out" "76 pipelines created, 76 blobs served"

# One byte damaged in the head, a module, a blob; the file cut short: refused, never served.
size=$(stat -c %s kernels.kcdeploy)
for offset in 20 $((size / 3)) $((size / 2)) $((size - 5)); do
  cp kernels.kcdeploy damaged.kcdeploy
  printf '\xa5' | dd of=damaged.kcdeploy bs=1 seek="$offset" conv=notrunc status=none
  cmp -s kernels.kcdeploy damaged.kcdeploy && fail "offset $offset: the byte was already 0xa5"
  expect_exit 3 "$EXAMPLE" --device llvmpipe --file damaged.kcdeploy
  expect_in "$WORK/err" "deployment file damaged.kcdeploy"
  [[ ! -s $WORK/out ]] || fail "offset $offset: something was served: $(cat "$WORK/out")"
done
expect_in "$WORK/err" "digest does not match its bytes"
head -c $((size - 100)) kernels.kcdeploy >truncated.kcdeploy
expect_exit 3 "$EXAMPLE" --device llvmpipe --file truncated.kcdeploy
expect_in "$WORK/err" "truncated or damaged"

# Lookups from the file cost what an index probe costs; every blob served.
expect_exit 0 "$BENCH" --device llvmpipe --file kernels.kcdeploy --lookups 50
expect_in "$WORK/out" "blobs_served=76 failed=0"
cat "$WORK/out"

# Without the class: SPIR-V only, each kernel's reason says so.
expect_exit 0 "$KCACHE" deploy --target vulkan1.2 --kernel 'saxpy*' --json -o portable.kcdeploy
[[ $(json_get out 'j["schema"]') == kcache.deploy/1 && $(json_get out 'j["blobs"]') -eq 0 &&
  $(json_get out 'j["kernels"]') -ge 2 && $(json_get out 'j["signed"]') == False ]] \
  || fail "portable file: $(cat "$WORK/out")"
n=$(json_get out 'j["kernels"]')
expect_exit 0 "$EXAMPLE" --device llvmpipe --file portable.kcdeploy
expect_in "$WORK/out" "$n pipelines created, 0 blobs served"
expect_in "$WORK/out" "carries no pipeline-cache blobs"

# Errors: a class the store lacks, nothing selected, no output named.
expect_exit 3 "$KCACHE" deploy --for-device 0123456789abcdef -o x.kcdeploy
expect_in "$WORK/err" "the store holds no pipelines of vulkan/0123456789abcdef (it holds: $fp)"
expect_exit 3 "$KCACHE" deploy --kernel 'no-such-*' -o x.kcdeploy
expect_in "$WORK/err" "nothing to deploy"
[[ ! -e x.kcdeploy ]] || fail "a failed deploy left a file"
expect_exit 2 "$KCACHE" deploy --for-device "$fp"
