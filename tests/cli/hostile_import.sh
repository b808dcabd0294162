# Import policy against hostile or surprising bundles (issue 14): a signed but
# older bundle must not roll newer entries back without --replace (exit 1,
# each kernel named, store unchanged); a bundle with no entries changes
# nothing (no store, no namespace); the largest -j under a process limit
# runs on the threads that start, within seconds, never a hang. The
# same-key swap (same key, other module bytes) needs a forged record:
# tests/unit/test_transfer_hostile.cpp.
source "$(dirname "$0")/lib.bash"
# KCACHE_TEST_* seams: only the test build obeys them, so this runs $KCACHE_TESTING.

# A small project: two saxpy variants of the example library.
mkdir -p proj
cp -r "$KCACHE_SOURCE_DIR/bundles/example/shaders" "$KCACHE_SOURCE_DIR/bundles/example/include" proj/
cat >proj/kcache.toml <<'EOF'
[defaults]
target = "vulkan1.2"
include_dirs = ["include"]
defines = { KC_EXAMPLE = 1 }

[[kernel]]
name = "saxpy"
source = "shaders/saxpy.comp"
spec_constants = { "0" = 256 }
[kernel.variants]
T = ["float"]
WIDTH = [1, 4]
EOF
"$KCACHE_TESTING" keygen -o ci >/dev/null

note "two signed bundles of one project, built and exported at different times"
KCACHE_TEST_NOW=1750000000 "$KCACHE_TESTING" build proj/kcache.toml --store A -j2 >/dev/null
KCACHE_TEST_NOW=1750000000 "$KCACHE_TESTING" export --store A --sign ci.key -o old.kcb >/dev/null
# A real change (the preprocessor keeps it), so both kernels get a new key.
echo 'void kc_hostile_import_v2() {}' >>proj/shaders/saxpy.comp
KCACHE_TEST_NOW=1750001000 "$KCACHE_TESTING" build proj/kcache.toml --store A -j2 >/dev/null
KCACHE_TEST_NOW=1750001000 "$KCACHE_TESTING" export --store A --sign ci.key -o new.kcb >/dev/null

expect_exit 0 "$KCACHE_TESTING" import new.kcb --store S --trust ci.pub
expect_in out "imported 2"
SUM=$(sha256sum S/data.mdb)

note "rollback: the older bundle is refused, naming each kernel; the store is unchanged"
for dry in "" --dry-run; do
  expect_exit 1 "$KCACHE_TESTING" import old.kcb --store S --trust ci.pub $dry
  expect_in err "'saxpy[T=float,WIDTH=1]'"
  expect_in err "'saxpy[T=float,WIDTH=4]'"
  expect_in err "older"
  expect_in err "--replace"
  [[ $(sha256sum S/data.mdb) == "$SUM" ]] || fail "the rollback changed the store"
done
expect_exit 1 "$KCACHE_TESTING" import old.kcb --store S --trust ci.pub --json
[[ $(json_get out 'j["written"]') == False ]] || fail "--json says written"
[[ $(json_get out 'len(j["refused"])') == 2 ]] || fail "--json does not list both kernels"
note "$(head -c 300 err)"

note "--replace: the user asks for the older entries, and is told which were replaced"
expect_exit 0 "$KCACHE_TESTING" import old.kcb --store S --trust ci.pub --replace
expect_in out "replaced (stale) 2"
expect_in err "replaced on request"
expect_exit 0 "$KCACHE_TESTING" get 'saxpy[T=float,WIDTH=1]' --store S -o got.spv
note "a newer bundle then replaces them as an ordinary update"
expect_exit 0 "$KCACHE_TESTING" import new.kcb --store S --trust ci.pub
expect_in out "replaced (stale) 2"

note "a bundle with no entries: nothing to import, no store and no namespace created"
KCACHE_TEST_NOW=1900000000 "$KCACHE_TESTING" gc --store A --older-than 1d >/dev/null
expect_exit 0 "$KCACHE_TESTING" export --store A --namespace spirv/vulkan1.2 -o empty.kcb
expect_exit 0 "$KCACHE_TESTING" import empty.kcb --store E
expect_in out "nothing to import"
[[ ! -e E ]] || fail "an empty bundle created a store"
"$KCACHE_TESTING" import "$KCACHE_SOURCE_DIR/bundles/golden/example-v1.kcb" --store F >/dev/null
SUMF=$(sha256sum F/data.mdb)
expect_exit 0 "$KCACHE_TESTING" import empty.kcb --store F --fingerprint vulkan1.2
expect_in out "nothing to import"
[[ $(sha256sum F/data.mdb) == "$SUMF" ]] || fail "an empty bundle changed the store"

# The command line takes -j up to its bound (tools/kcache/cli.hpp k_max_jobs);
# the library caps validator threads lower and must survive any value.
JMAX=4096
note "-j $JMAX under a process limit: done on the threads that start, within seconds, not a hang"
# RLIMIT_NPROC does not bind root, so root runs the import as nobody.
mkdir -p J && cp new.kcb J/ && chmod -R a+rwX J
as_limited=(prlimit --nproc=8:8)
if [[ $(id -u) == 0 ]]; then
  command -v setpriv >/dev/null || fail "setpriv is needed to drop root for the process limit"
  as_limited=(setpriv --reuid=65534 --regid=65534 --clear-groups "${as_limited[@]}")
else
  as_limited=(prlimit --nproc=$(($(ps -L -u "$(id -u)" --no-headers | wc -l) + 8)))
fi
got=0
timeout 60 "${as_limited[@]}" "$KCACHE_TESTING" import J/new.kcb --store J/S -j $JMAX >out 2>err || got=$?
[[ $got -ne 124 ]] || fail "import -j $JMAX hung (killed by timeout)"
# The one -j rule (docs/architecture.md): the threads the OS refuses are
# done without; the import runs on those that started.
[[ $got -eq 0 ]] || { cat out err; fail "import -j $JMAX under a process limit failed (exit $got)"; }
expect_in out "imported 2"
note "and without the limit, -j $JMAX is capped and imports"
expect_exit 0 "$KCACHE_TESTING" import new.kcb --store K -j $JMAX
expect_in out "imported 2"
echo ok
