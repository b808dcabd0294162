# The golden bundle of format version 1 (bundles/golden/README.md) still
# imports, signature trusted, and every entry equals what was recorded when
# it was made: kernel, key, created time and module bytes.
source "$(dirname "$0")/lib.bash"
GOLDEN="$KCACHE_SOURCE_DIR/bundles/golden"
expect_exit 0 "$KCACHE" inspect "$GOLDEN/example-v1.kcb" --json
[[ $(json_get out 'j["format_version"]') == 1 && $(json_get out 'j["signer"]') == 4c757516a4a88ee5 ]] || fail "golden header"
expect_exit 0 "$KCACHE" import "$GOLDEN/example-v1.kcb" --store G --trust "$GOLDEN/example-v1.pub" --fingerprint vulkan1.2 --json
[[ $(json_get out 'j["counts"]["imported"]') == 14 && $(json_get out 'j["counts"]["refused"]') == 0 ]] || fail "golden import: $(cat out)"
python3 "$KCACHE_SOURCE_DIR/tests/cli/bundle_golden_list.py" "$KCACHE" G spirv/vulkan1.2 >got
diff -u "$GOLDEN/example-v1.expected" got || fail "golden entries differ from example-v1.expected"
echo "ok: $(wc -l <got) entries as recorded"
