#!/usr/bin/env bash
# What real shader libraries need (issue 15, items 1-4), end to end on
# tests/data/shader_libs: #include without the #extension line, a preamble
# (extensions, text, file, function-like macros) that is part of the key,
# a module spirv-val does not know stored under validate = "known" (flagged,
# shown, verified and imported under that policy when the importer allows it
# with --allow-validate known, refused under strict),
# and debug names stripped by default.
source "$(dirname "$0")/lib.bash"
cp -r "$KCACHE_SOURCE_DIR/tests/data/shader_libs" libs

expect_exit 0 "$KCACHE" build libs/kcache.toml --json
[[ $(counts out) == "0 4 0 0" ]] || fail "first build: $(cat out)"

note "validate = known: stored, flagged, shown by inspect"
expect_exit 0 "$KCACHE" inspect unknown_capability --json
[[ $(json_get out 'j["entries"][0]["validation"]') == validator_unsupported ]] || fail "flag: $(cat out)"
json_get out 'j["entries"][0]["validation_note"]' | grep -q 'Invalid capability operand: 6912' || fail "note: $(cat out)"
expect_exit 0 "$KCACHE" inspect unknown_capability
expect_in out 'validation: spirv-val did not know something it uses (stored under validate = "known")'
expect_exit 0 "$KCACHE" inspect include_noext --json
[[ $(json_get out 'j["entries"][0]["validation"]') == validated ]] || fail "validated flag: $(cat out)"

note "strip: no debug names by default when optimising; strip = false keeps them"
"$KCACHE" get include_noext -o stripped.spv
"$KCACHE" get include_noext_debug -o debug.spv
[[ $(spirv-dis stripped.spv | grep -c 'OpName' || true) == 0 ]] || fail "include_noext keeps OpName"
[[ $(spirv-dis debug.spv | grep -c 'OpName') -gt 0 ]] || fail "strip = false lost OpName"
spirv-dis debug.spv | grep -q 'OpSourceExtension "GL_GOOGLE_include_directive"' || fail "no implicit include extension"

note "verify re-validates under each entry's policy"
expect_exit 0 "$KCACHE" verify

note "the preamble is part of the key and shown by inspect --why"
sed -i 's/^#define OFFSET 3$/#define OFFSET 4/' libs/kcache.toml
expect_exit 0 "$KCACHE" inspect preamble --why --manifest libs/kcache.toml
expect_in out 'preamble'
expect_exit 0 "$KCACHE" build libs/kcache.toml --json
[[ $(counts out) == "3 0 1 0" ]] || fail "after a preamble edit: $(cat out)"
echo '#define UNUSED_HERE 1' >>libs/include/preamble.glsl  # erased by the preprocessor: still a hit
expect_exit 0 "$KCACHE" build libs/kcache.toml --json
[[ $(counts out) == "4 0 0 0" ]] || fail "after a no-op preamble_file edit: $(cat out)"
sed -i 's/^#define WIDTH 64$/#define WIDTH 32/' libs/include/preamble.glsl
expect_exit 0 "$KCACHE" build libs/kcache.toml --json
[[ $(counts out) == "3 0 1 0" ]] || fail "after a preamble_file edit: $(cat out)"

note "export and import keep the module and its flag (policy known), which the importer must allow"
expect_exit 0 "$KCACHE" export -o libs.kcb
expect_exit 6 "$KCACHE" import libs.kcb --store other
expect_in err "asks for validate = \"known\""
expect_in err "--allow-validate known"
expect_exit 0 "$KCACHE" import libs.kcb --store other --json --allow-validate known
[[ $(json_get out 'j["counts"]["imported"]') == 4 && $(json_get out 'j["counts"]["refused"]') == 0 ]] ||
  fail "import: $(cat out)"
expect_exit 0 "$KCACHE" inspect unknown_capability --store other --json
[[ $(json_get out 'j["entries"][0]["validation"]') == validator_unsupported ]] || fail "imported flag: $(cat out)"

note "validate = off: not validated, said so"
sed -i 's/^validate = "known"$/validate = "off"/' libs/kcache.toml
expect_exit 0 "$KCACHE" build libs/kcache.toml --json
expect_exit 0 "$KCACHE" inspect unknown_capability
expect_in out 'validation: not validated'

note "validate = strict (the default) refuses it, saying what to do"
sed -i '/^validate = "off"$/d' libs/kcache.toml
expect_exit 1 "$KCACHE" build libs/kcache.toml
expect_in out 'does not know something the module uses'
expect_in out 'validate = "known"'

note "manifest errors name file:line and key"
printf '[[kernel]]\nname = "k"\nsource = "shaders/preamble.comp"\ndefines = { A = "1\\n#error injected" }\n' >libs/bad.toml
expect_exit 2 "$KCACHE" build libs/bad.toml
expect_in err "bad.toml:4: define 'A' holds a newline or control character"
echo "ok"
