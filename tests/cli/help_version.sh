#!/usr/bin/env bash
# --help teaches, --version names every library version.
source "$(dirname "$0")/lib.bash"
expect_exit 0 "$KCACHE" --help
for sub in build inspect get; do expect_in out "$sub"; done
expect_exit 0 "$KCACHE" build --help
expect_in out "--jobs"
expect_in out "--store"
expect_exit 0 "$KCACHE" --version
for lib in kcache glslang SPIRV-Tools LMDB zstd; do expect_in out "$lib"; done
expect_exit 2 "$KCACHE" no-such-command
expect_exit 2 "$KCACHE"
