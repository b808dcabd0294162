# The golden bundle of format version 2 (bundles/golden/README.md: compressed
# head, transformed records) imports, signature trusted, and every entry
# equals what was recorded when it was made: kernel, key, created time and
# module bytes (so the record transform was lossless).
source "$(dirname "$0")/lib.bash"
GOLDEN="$KCACHE_SOURCE_DIR/bundles/golden"
expect_exit 0 "$KCACHE" inspect "$GOLDEN/example-v2.kcb" --json
[[ $(json_get out 'j["format_version"]') == 2 && $(json_get out 'j["signer"]') == 37f04238aff19844 ]] || fail "golden header"
expect_exit 0 "$KCACHE" import "$GOLDEN/example-v2.kcb" --store G --trust "$GOLDEN/example-v2.pub" --fingerprint vulkan1.2 --json
[[ $(json_get out 'j["counts"]["imported"]') == 14 && $(json_get out 'j["counts"]["refused"]') == 0 ]] || fail "golden import: $(cat out)"
python3 "$KCACHE_SOURCE_DIR/tests/cli/bundle_golden_list.py" "$KCACHE" G spirv/vulkan1.2 >got
diff -u "$GOLDEN/example-v2.expected" got || fail "golden entries differ from example-v2.expected"
# Written again as format 1 and read back: the same entries.
expect_exit 0 "$KCACHE" export --store G --namespace spirv/vulkan1.2 --format-version 1 -o again-v1.kcb
expect_exit 0 "$KCACHE" inspect again-v1.kcb --json
[[ $(json_get out 'j["format_version"]') == 1 ]] || fail "--format-version 1 wrote $(json_get out 'j["format_version"]')"
expect_exit 0 "$KCACHE" import again-v1.kcb --store H --fingerprint vulkan1.2
python3 "$KCACHE_SOURCE_DIR/tests/cli/bundle_golden_list.py" "$KCACHE" H spirv/vulkan1.2 >got1
diff -u "$GOLDEN/example-v2.expected" got1 || fail "format-1 re-export differs"
expect_exit 2 "$KCACHE" export --store G --format-version 4 -o x.kcb
grep -q 'format-version 4 is out of range' err || fail "format 4: $(cat err)"
echo "ok: $(wc -l <got) entries as recorded, format 1 re-export identical"
