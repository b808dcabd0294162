#!/usr/bin/env bash
# A store whose kernel names, fingerprint fields, origins and run log hold
# terminal escapes, CR, NUL and invalid UTF-8 (as a hostile bundle or a
# damaged disk could leave them): every --json output is valid JSON with exit
# 0 (gc --json reports what it removed), and no text output or error message
# carries a raw control byte or invalid UTF-8 to the terminal.
source "$(dirname "$0")/lib.bash"
# KCACHE_TEST_* seams: only the test build obeys them, so this runs $KCACHE_TESTING.
UNIT="$KCACHE_BUILD_DIR/tests/unit_report"
[[ -x $UNIT ]] || fail "$UNIT is not built (ninja unit_report): it writes the hostile store"
KCACHE_HOSTILE_STORE="$KCACHE_STORE" "$UNIT" -tc='hostile store: write one*' >/dev/null || fail "writing the store"

# clean FILE...: printable UTF-8 and newlines only.
clean() {
  python3 - "$@" <<'PY' || fail "raw control bytes or invalid UTF-8 in $*"
import sys, unicodedata
for name in sys.argv[1:]:
    text = open(name, "rb").read().decode("utf-8")  # strict: invalid UTF-8 raises
    bad = [c for c in text if c != "\n" and unicodedata.category(c) == "Cc"]
    if bad:
        sys.exit(f"{name}: {[hex(ord(c)) for c in bad][:8]}")
PY
}
# valid_json: out is one JSON document.
valid_json() { python3 -m json.tool "$WORK/out" >/dev/null || { cat -A "$WORK/out" | head; fail "$* printed invalid JSON"; }; }

evil=$'evil\e[2J\e]0;pwned\a\r'   # the start of the kernel's name, as far as a shell argument can hold it

expect_exit 0 "$KCACHE_TESTING" inspect --json; valid_json inspect --json; clean out err
[[ $(json_get out 'len(j["entries"])') == 3 ]] || fail "inspect --json lists 3 entries"
expect_exit 0 "$KCACHE_TESTING" inspect; clean out err
expect_in out 'evil\x1b[2J'
expect_exit 0 "$KCACHE_TESTING" stats --json; valid_json stats --json; clean out err
expect_exit 0 "$KCACHE_TESTING" stats; clean out err
expect_exit 1 "$KCACHE_TESTING" verify; clean out err   # the payloads are not SPIR-V: problems, named escaped
expect_exit 1 "$KCACHE_TESTING" verify --json; valid_json verify --json; clean out err
expect_exit 3 "$KCACHE_TESTING" inspect "$evil"; clean out err   # the refusal names the kernel, escaped
expect_in err 'evil\x1b[2J'
export KCACHE_TEST_NOW=4000000000   # every entry old
expect_exit 0 "$KCACHE_TESTING" gc --older-than 1s --dry-run; clean out err
expect_in out "would remove 3 of 3 entries"
expect_exit 0 "$KCACHE_TESTING" gc --older-than 1s --json; valid_json gc --json; clean out err
[[ $(json_get out 'j["removed_entries"]') == 3 ]] || fail "gc --json reports the 3 entries it removed"
expect_exit 0 "$KCACHE_TESTING" inspect --json; valid_json inspect --json after gc
[[ $(json_get out 'len(j["entries"])') == 0 ]] || fail "gc removed every entry"
