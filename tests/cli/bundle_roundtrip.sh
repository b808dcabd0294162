# Export / import round trip: store A → bundles → fresh store B gives B the
# same entries (keys, bytes, metadata; origin records the bundle); stdout →
# stdin streaming gives the same; --dry-run writes nothing; a second import
# finds everything already present; inspect FILE.kcb shows the bundle.
source "$(dirname "$0")/lib.bash"
HERE="$KCACHE_SOURCE_DIR/tests/cli"
example_store A proj  # the example built into A (the fixture cli.example_store)

note "no selector on a store of three namespaces: say which exist"
expect_exit 2 "$KCACHE" export --store A -o all.kcb
expect_in err "spirv/vulkan1.1 (6 entries), spirv/vulkan1.2 (64 entries), spirv/vulkan1.3 (6 entries)"

for ns in vulkan1.1 vulkan1.2 vulkan1.3; do
  expect_exit 0 "$KCACHE" export --store A --namespace spirv/$ns -o $ns.kcb --json
  [[ $(json_get out 'j["namespace"]') == spirv/$ns ]] || fail "export json namespace"
done
[[ $(json_get out 'j["entries"]') == 6 ]] || fail "vulkan1.3 should have 6 entries"

note "inspect FILE.kcb shows header, fingerprint and entries without a store"
expect_exit 0 "$KCACHE" inspect vulkan1.2.kcb --store /nonexistent
expect_in out "namespace spirv/vulkan1.2"
expect_in out "target = vulkan1.2"
expect_in out "64 entries"
expect_in out "saxpy[T=int,WIDTH=4]"
expect_in out "integrity: ok"
# Its creation time in ISO 8601, as every other time kcache shows.
grep -qE "kcache bundle, format version [0-9]+, created [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$" out ||
  fail "the bundle's created time is not ISO 8601: $(head -1 out)"
expect_exit 0 "$KCACHE" inspect vulkan1.2.kcb --json
[[ $(json_get out 'len(j["entries"])') == 64 && $(json_get out 'j["ok"]') == True && $(json_get out 'j["signed"]') == False ]] ||
  fail "inspect --json of the bundle"

note "dry run into a fresh store: counts, nothing written (the store is not even created)"
expect_exit 0 "$KCACHE" import vulkan1.2.kcb --store B --dry-run --json
[[ $(json_get out 'j["counts"]["imported"]') == 64 && $(json_get out 'j["written"]') == False ]] || fail "dry-run counts"
[[ ! -e B/data.mdb ]] || fail "dry run created the store"

for ns in vulkan1.1 vulkan1.2 vulkan1.3; do
  expect_exit 0 "$KCACHE" import $ns.kcb --store B
  expect_in out "refused 0"
done
python3 "$HERE/bundle_compare.py" "$KCACHE" A B --origin-b imported

note "import again: everything already present, nothing written"
sum=$(sha256sum B/data.mdb)
expect_exit 0 "$KCACHE" import vulkan1.2.kcb --store B --json
[[ $(json_get out 'j["counts"]["already_present"]') == 64 && $(json_get out 'j["written"]') == False ]] || fail "re-import"
[[ $(sha256sum B/data.mdb) == "$sum" ]] || fail "re-import changed the store"

note "dry run on a populated store writes nothing"
expect_exit 0 "$KCACHE" import vulkan1.2.kcb --store B --dry-run
expect_in out "already present 64"
[[ $(sha256sum B/data.mdb) == "$sum" ]] || fail "dry run changed the store"

note "stdout → stdin streaming"
for ns in vulkan1.1 vulkan1.2 vulkan1.3; do
  "$KCACHE" export --store A --namespace spirv/$ns -o - 2>export.err | "$KCACHE" import - --store C >import.out ||
    fail "streaming $ns: $(cat export.err import.out)"
  grep -qF "exported" export.err || fail "export report should go to stderr when the bundle goes to stdout"
done
python3 "$HERE/bundle_compare.py" "$KCACHE" A C --origin-b imported --every 10
"$KCACHE" export --store A --namespace spirv/vulkan1.2 -o - | cmp - <("$KCACHE" export --store A --namespace spirv/vulkan1.2 -o - 2>/dev/null) 2>/dev/null ||
  note "(bundles carry their creation time, so two exports may differ in the header)"

note "--kernel globs select a subset; a glob that matches nothing is an error"
expect_exit 0 "$KCACHE" export --store A --namespace spirv/vulkan1.2 --kernel 'saxpy[*' --kernel 'matmul[T=float,*' -o sub.kcb --json
[[ $(json_get out 'j["entries"]') == 12 ]] || fail "glob subset: $(json_get out 'j["entries"]')"
expect_exit 3 "$KCACHE" export --store A --namespace spirv/vulkan1.2 --kernel 'nope*' -o none.kcb
expect_in err "no entry of spirv/vulkan1.2 matches --kernel nope*"
[[ ! -e none.kcb ]] || fail "a failed export left a file"

note "a newer build replaces what an import brought (stale), and import counts it"
expect_exit 0 "$KCACHE" export --store A --namespace spirv/vulkan1.2 --kernel 'saxpy[T=int,WIDTH=4]' -o one.kcb
echo "// changed" >>proj/shaders/saxpy.comp
"$KCACHE" build proj/kcache.toml --store A -j2 >/dev/null
expect_exit 0 "$KCACHE" export --store A --namespace spirv/vulkan1.2 --kernel 'saxpy[T=int,WIDTH=4]' -o one-new.kcb
expect_exit 0 "$KCACHE" import one-new.kcb --store B --json
[[ $(json_get out 'j["counts"]["replaced"]') == 1 ]] || fail "stale entry should be replaced"
echo "ok"
