# Signed bundles: keygen writes a private NAME.key (0600) and NAME.pub;
# export --sign; import --trust accepts the signer's bundles and refuses
# unsigned ones, other keys and tampered ones (exit 6, store unchanged).
source "$(dirname "$0")/lib.bash"
TOOL="$KCACHE_SOURCE_DIR/tests/cli/bundle_tool.py"
example_store A proj  # the example built into A (the fixture cli.example_store)

expect_exit 0 "$KCACHE" keygen -o ci
expect_in out "key id "
[[ $(stat -c %a ci.key) == 600 ]] || fail "secret key mode $(stat -c %a ci.key)"
grep -q '^kcache-ed25519-public-key 1$' ci.pub || fail "public key file"
ID=$(awk '$1=="key-id"{print $2}' ci.pub)
expect_exit 2 "$KCACHE" keygen -o ci
expect_in err "ci.key exists"
"$KCACHE" keygen -o other >/dev/null

# Format 1 so that bundle_tool.py can tamper with it below; the format-2
# signing path is the piped export further down.
expect_exit 0 "$KCACHE" export --store A --namespace spirv/vulkan1.2 --format-version 1 --sign ci.key -o signed.kcb --json
[[ $(json_get out 'j["signer"]') == "$ID" ]] || fail "export signer"
"$KCACHE" export --store A --namespace spirv/vulkan1.2 -o unsigned.kcb >/dev/null
expect_exit 0 "$KCACHE" inspect signed.kcb
expect_in out "signed by key $ID"
expect_exit 0 "$KCACHE" inspect unsigned.kcb
expect_in out "unsigned"

"$KCACHE" import unsigned.kcb --store S --fingerprint vulkan1.3 >/dev/null 2>&1 || true  # creates S, writes nothing
"$KCACHE" export --store A --namespace spirv/vulkan1.1 -o v11.kcb >/dev/null
"$KCACHE" import v11.kcb --store S >/dev/null
SUM=$(sha256sum S/data.mdb)
refused() {
  expect_exit 6 "$KCACHE" import "$1" --store S --trust "${@:3}"
  expect_in err "$2"
  [[ $(sha256sum S/data.mdb) == "$SUM" ]] || fail "$1 changed the store"
  note "refused $1: $(head -c 200 err)"
}
refused unsigned.kcb "unsigned bundles are refused when trusted keys are configured" ci.pub
refused signed.kcb "signed by key $ID, which is not trusted" other.pub
# Tampered: a kernel renamed and every digest recomputed, as an attacker
# without the key would: the signature no longer covers the content.
python3 "$TOOL" signed.kcb - info | grep -xF '9 matmul[T=float,TILE=16,WPT=1]' >/dev/null || fail "unexpected entry order"
python3 "$TOOL" signed.kcb tampered.kcb set-name 9 'matmul[T=float,TILE=16,WPT=9]'
refused tampered.kcb "signature" ci.pub other.pub
# The signature block itself damaged: the head digest catches it.
python3 -c "import struct; b=bytearray(open('signed.kcb','rb').read()); b[12+struct.unpack_from('<I',b,8)[0]+50]^=1; open('sigflip.kcb','wb').write(b)"
refused sigflip.kcb "digest" ci.pub

note "a trusted signer imports, from a file and from stdin; several keys may be trusted"
expect_exit 0 "$KCACHE" import signed.kcb --store S --trust other.pub ci.pub --json
[[ $(json_get out 'j["signer"]') == "$ID" && $(json_get out 'j["counts"]["imported"]') == 64 ]] || fail "trusted import"
"$KCACHE" export --store A --namespace spirv/vulkan1.3 --sign ci.key -o - 2>/dev/null | "$KCACHE" import - --store S --trust ci.pub >out
expect_in out "signed by trusted key $ID"
note "without --trust a signed bundle imports and says it was not checked"
expect_exit 0 "$KCACHE" import signed.kcb --store T
expect_in out "no --trust given"

note "a secret key others can read is refused"
chmod 644 ci.key
expect_exit 2 "$KCACHE" export --store A --namespace spirv/vulkan1.2 --sign ci.key -o x.kcb
expect_in err "readable by others"
echo ok
