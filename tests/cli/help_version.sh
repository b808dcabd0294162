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

# Numbers and folders the options cannot mean are refused before anything runs.
expect_exit 2 "$KCACHE" stats --last -1
expect_in err "--last"
expect_exit 2 "$KCACHE" stats --last 0
for sub in inspect stats gc compact; do
  expect_exit 2 "$KCACHE" $sub --store ''
  expect_in err "--store: needs a folder"
done
# One bound for every thread count: -j of build, verify and import and $KCACHE_JOBS.
for sub in build verify "import x.kcb"; do
  for j in 0 99999 -1 0x10; do
    expect_exit 2 "$KCACHE" $sub -j $j
    expect_in err "from 1 to 4096"
  done
done
KCACHE_JOBS=99999 expect_exit 2 "$KCACHE" import x.kcb
expect_in err "from 1 to 4096"
