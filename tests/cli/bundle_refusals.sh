# Every bad bundle of issue 3 "Bad input" is refused with a message naming
# what is wrong and its exit code, and the target store is unchanged (same
# data.mdb bytes, so the same last transaction and contents).
source "$(dirname "$0")/lib.bash"
TOOL="$KCACHE_SOURCE_DIR/tests/cli/bundle_tool.py"
example_store A proj  # the example built into A (the fixture cli.example_store)
# Format 1: bundle_tool.py rewrites format-1 bundles (format 2's refusals of
# hostile bytes are tests/unit/test_bundle_transform.cpp and the fuzz target).
"$KCACHE" export --store A --namespace spirv/vulkan1.2 --format-version 1 -o good.kcb >/dev/null
"$KCACHE" export --store A --namespace spirv/vulkan1.1 -o v11.kcb >/dev/null
"$KCACHE" import v11.kcb --store S >/dev/null  # the target store holds something
SUM=$(sha256sum S/data.mdb)
SIZE=$(stat -c %s good.kcb)

# refused CODE TEXT FILE [import options]: import FILE into S fails with CODE,
# stderr contains TEXT, and S is unchanged.
refused() {
  local code=$1 text=$2 file=$3; shift 3
  expect_exit "$code" "$KCACHE" import "$file" --store S "$@"
  expect_in err "$text"
  [[ $(sha256sum S/data.mdb) == "$SUM" ]] || fail "$file changed the store"
  note "refused $file (exit $code): $(head -c 200 err)"
}
# flip FILE OFFSET BIT OUT
flip() { python3 -c "import sys; b=bytearray(open(sys.argv[1],'rb').read()); b[int(sys.argv[2])]^=1<<int(sys.argv[3]); open(sys.argv[4],'wb').write(b)" "$@"; }
cut_at() { head -c "$2" "$1" >"$3"; }

: >empty.kcb
refused 6 "is empty" empty.kcb
echo "this is not a bundle, just text long enough to have a header" >text.kcb
refused 6 "not a kcache bundle" text.kcb
cut_at good.kcb 40 trunc-head.kcb
refused 6 "truncated" trunc-head.kcb
cut_at good.kcb $((SIZE / 2)) trunc-mid.kcb
refused 6 "truncated" trunc-mid.kcb
cut_at good.kcb $((SIZE - 10)) trunc-end.kcb
refused 6 "truncated" trunc-end.kcb
flip good.kcb 30 2 flip-header.kcb
refused 6 "header digest mismatch" flip-header.kcb
flip good.kcb $((SIZE / 2)) 4 flip-entry.kcb
refused 6 "bundle" flip-entry.kcb
flip good.kcb $((SIZE - 5)) 0 flip-digest.kcb
refused 6 "digest" flip-digest.kcb
python3 "$TOOL" good.kcb future.kcb version 7
refused 6 "format version 7 is not supported: this kcache reads versions 1..6 (1..3 one namespace, 4 a release, 5..6 a delta)" future.kcb
python3 "$TOOL" good.kcb bomb.kcb record-size 3 8589934592
refused 6 "declares size 8 GiB; limit 257 MiB" bomb.kcb
python3 "$TOOL" good.kcb lie.kcb record-size 3 9000
refused 6 "declares" lie.kcb
# Two kernels with names of one length: the second gets the first's name.
python3 "$TOOL" good.kcb dup.kcb rename 9 10
refused 6 "duplicate key: kernel" dup.kcb
{ cat good.kcb; printf 'garbage'; } >trailing.kcb
refused 6 "trailing bytes" trailing.kcb
# Three entries whose payloads carry a SPIR-V header over random words
# (tests/data/bundles/README.md): each is named, nothing is imported.
refused 6 "3 of 3 entries" "$KCACHE_SOURCE_DIR/tests/data/bundles/invalid-spirv.kcb"
expect_in err "refused entry 'matmul_0[T=f16,BM=32]'"

note "fingerprint mismatch: exit 5, the field and both values named"
refused 5 "target: bundle vulkan1.2 ≠ target vulkan1.3" good.kcb --fingerprint vulkan1.3
refused 2 "--device applies to vulkan bundles" good.kcb --device 0
note "the same refusals with --dry-run, and from stdin"
refused 5 "target: bundle vulkan1.2 ≠ target vulkan1.3" good.kcb --fingerprint vulkan1.3 --dry-run
expect_exit 6 bash -c "\"$KCACHE\" import - --store S <trunc-mid.kcb"
expect_in err "bundle <stdin>"
[[ $(sha256sum S/data.mdb) == "$SUM" ]] || fail "stdin import changed the store"
note "a missing file is not found (3); a read-only store refuses to be written (4)"
refused 3 "nope.kcb" nope.kcb
refused 4 "read-only" good.kcb --read-only

note "the intact bundle imports, so the refusals above were about the damage"
expect_exit 0 "$KCACHE" import good.kcb --store S --fingerprint vulkan1.2
expect_in out "imported 64"
echo ok
