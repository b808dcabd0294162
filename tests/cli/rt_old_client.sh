#!/usr/bin/env bash
# The C ABI as an older client sees it (kcache.h "Stability"): a program
# compiled against the API-5 headers (tests/old_client/api5, frozen) runs
# with this tree's libkcache.so and every call it makes still behaves; its
# references bind to the version nodes of the levels that added them, never
# a later one; and every symbol the library exports carries the node of the
# API level kcache.h gives it ("(API version N.)", else 1), KCACHE_N.
source "$(dirname "$0")/lib.bash"
: "${KCACHE_BUILD_DIR:?set by ctest}"
LIBDIR=$KCACHE_BUILD_DIR/lib/kcache/runtime
example_store "$KCACHE_STORE"

cc -std=c99 -Wall -Werror -I"$KCACHE_SOURCE_DIR/tests/old_client/api5" \
  "$KCACHE_SOURCE_DIR/tests/old_client/old_client.c" -L"$LIBDIR" -lkcache -Wl,-rpath,"$LIBDIR" -o old_client
expect_exit 0 ./old_client "$KCACHE_STORE" 'saxpy[T=float,WIDTH=4]'
expect_in "$WORK/out" "old client (API 5 header) ran with kcache"
expect_in "$WORK/out" "every check held"

# Its references: versioned, at most KCACHE_5.
readelf --dyn-syms -W old_client | awk '$7 == "UND" && $8 ~ /^kcache_/ {print $8}' >refs
[[ -s refs ]] || fail "readelf shows no kcache reference in old_client"
while read -r ref; do
  [[ $ref =~ ^kcache_[a-z_0-9]+@KCACHE_([0-9]+) ]] || fail "unversioned reference $ref"
  (( BASH_REMATCH[1] <= 5 )) || fail "an API-5 client references $ref"
done <refs
note "$(wc -l <refs) references, each of a node at most KCACHE_5"

# The library: each exported function in the node of its API level.
readelf --dyn-syms -W "$LIBDIR/libkcache.so" | awk '$7 != "UND" && $8 ~ /^kcache_/ {print $8}' | sort >exported
python3 - "$KCACHE_SOURCE_DIR/lib/kcache/runtime/kcache.h" exported <<'PY'
import re, sys
header = open(sys.argv[1]).read()
want = {}
for comment, name in re.findall(r'(/\*\*(?:(?!\*/).)*?\*/\s*)?KCACHE_API [^;]*?\b(kcache_\w+)\(', header, re.S):
    m = re.search(r"\(API version (\d+)\.\)", comment or "")
    want[name] = int(m.group(1)) if m else 1
got = {}
for line in open(sys.argv[2]):
    name, _, node = line.strip().partition("@@")
    got[name] = node
bad = [f"{n}: header says level {lvl}, library exports it as {got.get(n, 'nothing')}"
       for n, lvl in want.items() if got.get(n) != f"KCACHE_{lvl}"]
bad += [f"{n}: exported but not declared in kcache.h" for n in got if n not in want]
if bad:
    sys.exit("\n".join(bad))
print(f"{len(want)} functions, each in its level's node")
PY
