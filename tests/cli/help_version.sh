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

# Command-line mistakes read like every other error, with a way out.
expect_exit 2 "$KCACHE" biuld
expect_in err "kcache: error: 'biuld' is not a kcache command — did you mean 'build'? (\`kcache --help\` shows what it takes)"
expect_exit 2 "$KCACHE" remote ad redis://h
expect_in err "kcache: error: 'ad' is not a \`kcache remote\` command — did you mean 'add'?"
expect_exit 2 "$KCACHE" zzzzzz
expect_in err "'zzzzzz' is not a kcache command (\`kcache --help\`"
grep -q "did you mean" err && fail "a far word got a suggestion"
expect_exit 2 "$KCACHE" build --frobnicate
expect_in err "kcache: error: The following argument was not expected: --frobnicate (\`kcache build --help\` shows what it takes)"
expect_exit 2 "$KCACHE"
expect_in err "kcache: error: A subcommand is required"
