# Issue 14 "Hostile bundles": what a bundle says about its entries is checked
# when it is read, before import sees it. Each bundle here is well-formed with
# correct digests (tests/cli/bundle_tool.py re-encodes records and head) and
# carries one lie: a recorded input path outside the project, a kernel name
# that is over-long or would drive the terminal, a spirv target that does not
# exist. Each is refused as corruption (exit 6) naming the bundle, the entry
# and what is wrong; the store is unchanged. A trusted-keys file that is a
# device is refused instead of read for ever.
source "$(dirname "$0")/lib.bash"
TOOL="$KCACHE_SOURCE_DIR/tests/cli/bundle_tool.py"
example_store A proj  # the example built into A (the fixture cli.example_store)
"$KCACHE" export --store A --namespace spirv/vulkan1.2 --format-version 1 -o good.kcb >/dev/null  # bundle_tool.py edits format 1
"$KCACHE" export --store A --namespace spirv/vulkan1.1 -o v11.kcb >/dev/null
"$KCACHE" import v11.kcb --store S >/dev/null
SUM=$(sha256sum S/data.mdb)
python3 "$TOOL" good.kcb - info >names.txt
FIRST=$(sed -n '1s/^0 //p' names.txt)

# refused TEXT FILE [import options]: import FILE into S exits 6 naming FILE
# and TEXT, prints no raw control character, and S is unchanged.
refused() {
  local text=$1 file=$2; shift 2
  expect_exit 6 "$KCACHE" import "$file" --store S "$@"
  expect_in err "$text"
  expect_in err "$file"
  if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' err; then fail "raw control character in: $(cat -v err)"; fi
  [[ $(sha256sum S/data.mdb) == "$SUM" ]] || fail "$file changed the store"
  note "refused $file: $(head -c 300 err)"
}

note "the tool's re-encoding alone is accepted (so each refusal below is about its lie)"
python3 "$TOOL" good.kcb same.kcb set-fingerprint vulkan1.2
expect_exit 0 "$KCACHE" import same.kcb --store S --dry-run

note "item 2: recorded input paths must stay inside the project"
python3 "$TOOL" good.kcb abs.kcb set-input 0 0 /dev/zero
refused "entry 1 of " abs.kcb
expect_in err "kernel '$FIRST'"
expect_in err "input 1 of "
expect_in err "'/dev/zero'"
python3 "$TOOL" good.kcb up.kcb set-input 3 0 ../../etc/shadow
refused "'../../etc/shadow'" up.kcb
expect_in err "entry 4 of "
python3 "$TOOL" good.kcb esc.kcb set-input 0 0 'shaders/\x1b[2Jx.comp'
# Shown escaped once: "\x1b" (the CLI's terminal pass leaves escaped text alone).
refused 'shaders/\x1b[2Jx.comp' esc.kcb

note "item 4 and the exit code: kernel names, 1000 bytes long or with escapes"
python3 "$TOOL" good.kcb long.kcb set-kernel 0 "$(printf 'k%.0s' {1..1000})"
refused "1000 bytes" long.kcb
expect_in err "entry 1 of "
python3 "$TOOL" good.kcb red.kcb set-kernel 2 'red\x1b[31m'
refused 'red\x1b[31m' red.kcb
expect_in err "kernel name 'red\\"
expect_in err "entry 3 of "

note "item 5 and the exit code: unknown and empty spirv targets"
python3 "$TOOL" good.kcb v99.kcb set-fingerprint vulkan9.9
refused "unknown SPIR-V target 'vulkan9.9'" v99.kcb
python3 "$TOOL" good.kcb empty-fp.kcb set-fingerprint ''
refused "unknown SPIR-V target ''" empty-fp.kcb

note "import --trust FIFO and --trust /dev/zero are refused at once, not read for ever"
# The FIFO first: before the fix it blocked (harmless under timeout), while
# /dev/zero was read into memory until the process died.
mkfifo keys.fifo
expect_exit 2 timeout 20 "$KCACHE" import good.kcb --store S --trust keys.fifo
expect_in err "keys.fifo"
expect_in err "not a regular file"
expect_exit 2 timeout 20 "$KCACHE" import good.kcb --store S --trust /dev/zero
expect_in err "/dev/zero"
expect_in err "not a regular file"
[[ $(sha256sum S/data.mdb) == "$SUM" ]] || fail "--trust /dev/zero changed the store"

note "the intact bundle imports"
expect_exit 0 "$KCACHE" import good.kcb --store S
echo ok
