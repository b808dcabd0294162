#!/usr/bin/env bash
# A fresh CI runner with a warm remote, through the glslc launcher (README
# "Drop-in glslc", docs/design.md "Remote caches", direct mode): runner A
# builds a CMake project whose glslc calls go through kcache and fills a real
# redis-server with signed values; runner B — another checkout in another
# folder, another build folder, an empty store — builds the same project
# with every command a remote hit and runs no preprocessor and no compiler
# (its phases say so), and its modules are A's. A runner that does not trust
# the signer is served by key only, after expanding each source itself.
source "$(dirname "$0")/lib.bash"
source "$KCACHE_SOURCE_DIR/tests/cli/servers.bash"
: "${KCACHE_BUILD_DIR:?set by ctest}"
PREFIX=$WORK/prefix
cmake --install "$KCACHE_BUILD_DIR" --prefix "$PREFIX" >"$WORK/install.log"
start_redis R
expect_exit 0 "$KCACHE" keygen -o ci
trusted="$R_URL?trust=$(awk '/^public-key/ { print $2 }' ci.pub)"
N=4  # the project's glslc commands

# runner NAME SOURCE_COPY: a checkout of the project at $WORK/NAME/src with
# .git (the keys' root), configured in $WORK/NAME/out, its store $WORK/NAME/store.
runner() {
  local name=$1
  mkdir -p "$name/src/.git"
  cp -r "$KCACHE_SOURCE_DIR/tests/data/launcher_project/." "$name/src"
  cmake -S "$name/src" -B "$name/out" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" >"$WORK/configure.log" 2>&1 \
    || { cat "$WORK/configure.log"; fail "configure of $name failed"; }
  KCACHE_STORE=$WORK/$name/store ninja -C "$name/out" >"$WORK/$name.log" 2>&1 \
    || { cat "$WORK/$name.log"; fail "the build of $name failed"; }
  expect_exit 0 "$KCACHE" stats --store "$name/store" --json
  cp out "$name.json"
}
# A phase's summed wall ms: 0.0 when no run timed it (kcache-launcher's
# hits record no phases).
phase_ms() { json_get "$1" "float(j['phases'].get('$2', {}).get('wall_ms', 0.0))"; }

note "runner A: compiles, writes each value signed, by key and by recorded inputs"
KCACHE_REMOTE=$trusted KCACHE_SIGN=$WORK/ci.key runner A
[[ $(json_get A.json 'j["totals"]["compiled"]') == "$N" ]] || fail "A: $(json_get A.json 'j["totals"]')"
[[ $(redis R DBSIZE) == $((2 * N)) ]] || fail "redis holds $(redis R DBSIZE) keys, not $((2 * N))"
[[ $(redis R KEYS 'kcache1-direct/*' | wc -l) == "$N" ]] || fail "no direct values: $(redis R KEYS '*')"

note "runner B: empty store, elsewhere: every command a remote hit, no preprocessor, no compiler"
KCACHE_REMOTE=$trusted runner B
[[ $(json_get B.json '(j["totals"]["hit"], j["totals"]["remote"]["remote_hit"], j["totals"]["compiled"])') \
  == "($N, $N, 0)" ]] || fail "B: $(json_get B.json 'j["totals"]')"
for phase in expand glslang spirv-opt spirv-val; do
  [[ $(phase_ms B.json $phase) == 0.0 ]] || fail "B ran $phase: $(json_get B.json 'j["phases"]')"
done
for spv in A/out/*.spv; do
  cmp -s "$spv" "B/out/${spv##*/}" || fail "${spv##*/} differs between A and B"
done
expect_exit 0 "$KCACHE" verify --store B/store
note "B's next clean rebuild: local hits"
ninja -C B/out -t clean >/dev/null
KCACHE_STORE=$WORK/B/store KCACHE_REMOTE=$trusted ninja -C B/out >"$WORK/B2.log" 2>&1
expect_exit 0 "$KCACHE" stats --store B/store --json --last "$N"
[[ $(json_get out '(j["totals"]["hit"], j["totals"]["remote"]["remote_hit"])') == "($N, 0)" ]] \
  || fail "B's rebuild: $(json_get out 'j["totals"]')"

note "runner C trusts no key: served by key, after expanding each source"
KCACHE_REMOTE=$R_URL runner C
[[ $(json_get C.json '(j["totals"]["remote"]["remote_hit"], j["totals"]["compiled"])') == "($N, 0)" ]] \
  || fail "C: $(json_get C.json 'j["totals"]')"
python3 -c "import sys; sys.exit(not float(sys.argv[1]) > 0)" "$(phase_ms C.json expand)" \
  || fail "C believed recorded inputs no trusted key signed: $(json_get C.json 'j["phases"]')"
note "what import brings: a bundle signed by a trusted key is served by its recorded inputs too"
expect_exit 0 "$KCACHE" export --store A/store --namespace spirv/vulkan1.2 --sign ci.key -o a.kcb
for name in D E; do mkdir -p "$name"; done
expect_exit 0 "$KCACHE" import a.kcb --store D/store --trust ci.pub
expect_exit 0 "$KCACHE" import a.kcb --store E/store  # no key trusted: its inputs are its own claim
KCACHE_REMOTE= runner D
[[ $(json_get D.json '(j["totals"]["hit"], j["totals"]["compiled"])') == "($N, 0)" ]] || fail "D: $(json_get D.json 'j["totals"]')"
[[ $(phase_ms D.json expand) == 0.0 ]] || fail "D expanded a trusted import: $(json_get D.json 'j["phases"]')"
KCACHE_REMOTE= runner E
[[ $(json_get E.json '(j["totals"]["hit"], j["totals"]["compiled"])') == "($N, 0)" ]] || fail "E: $(json_get E.json 'j["totals"]')"
python3 -c "import sys; sys.exit(not float(sys.argv[1]) > 0)" "$(phase_ms E.json expand)" \
  || fail "E believed an unsigned import's recorded inputs: $(json_get E.json 'j["phases"]')"
echo "PASS"
