# The golden bundle of format version 3 (bundles/golden/README.md: records
# with delta-coded SPIR-V operands) imports, signature trusted, and every
# entry equals what was recorded when it was made: kernel, key, created time
# and module bytes (so the delta form was lossless). Re-exported as format 2
# and as format 3 it reads back to the same entries, and the format-3 bundle
# is the smaller.
source "$(dirname "$0")/lib.bash"
GOLDEN="$KCACHE_SOURCE_DIR/bundles/golden"
expect_exit 0 "$KCACHE" inspect "$GOLDEN/example-v3.kcb" --json
[[ $(json_get out 'j["format_version"]') == 3 && $(json_get out 'j["signer"]') == "$(awk '/^key-id/ {print $2}' "$GOLDEN/example-v3.pub")" ]] ||
  fail "golden header: $(head -c 300 out)"
expect_exit 0 "$KCACHE" import "$GOLDEN/example-v3.kcb" --store G --trust "$GOLDEN/example-v3.pub" --fingerprint vulkan1.2 --json
[[ $(json_get out 'j["counts"]["imported"]') == 14 && $(json_get out 'j["counts"]["refused"]') == 0 ]] || fail "golden import: $(cat out)"
python3 "$KCACHE_SOURCE_DIR/tests/cli/bundle_golden_list.py" "$KCACHE" G spirv/vulkan1.2 >got
diff -u "$GOLDEN/example-v3.expected" got || fail "golden entries differ from example-v3.expected"
for v in 2 3; do
  expect_exit 0 "$KCACHE" export --store G --namespace spirv/vulkan1.2 --format-version $v -o again-v$v.kcb
  expect_exit 0 "$KCACHE" inspect again-v$v.kcb --json
  [[ $(json_get out 'j["format_version"]') == $v ]] || fail "--format-version $v wrote $(json_get out 'j["format_version"]')"
  expect_exit 0 "$KCACHE" import again-v$v.kcb --store H$v --fingerprint vulkan1.2
  python3 "$KCACHE_SOURCE_DIR/tests/cli/bundle_golden_list.py" "$KCACHE" H$v spirv/vulkan1.2 >got$v
  diff -u "$GOLDEN/example-v3.expected" got$v || fail "format-$v re-export differs"
done
(( $(stat -c %s again-v3.kcb) < $(stat -c %s again-v2.kcb) )) ||
  fail "format 3 ($(stat -c %s again-v3.kcb) bytes) is not smaller than format 2 ($(stat -c %s again-v2.kcb))"
echo "ok: $(wc -l <got) entries as recorded; format 2 and 3 re-exports identical; v3 $(stat -c %s again-v3.kcb) B < v2 $(stat -c %s again-v2.kcb) B"
