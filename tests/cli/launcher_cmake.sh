#!/usr/bin/env bash
# The CMake helper for the launcher: a project whose add_custom_command
# calls Vulkan::glslc (tests/data/launcher_project/CMakeLists.txt) calls
# kcache_glslc_launcher() from the installed package, and its glslc calls go
# through kcache: the first build compiles, a clean rebuild is served from
# the store, the modules are glslc's (generator word aside), and an edited
# include (tracked through glslc's -MD depfile) rebuilds.
source "$(dirname "$0")/lib.bash"
: "${KCACHE_BUILD_DIR:?set by ctest}"
PREFIX=$WORK/prefix
cmake --install "$KCACHE_BUILD_DIR" --prefix "$PREFIX" >"$WORK/install.log"
[[ -L $PREFIX/libexec/kcache/glslc && $(readlink "$PREFIX/libexec/kcache/glslc") == kcache-launcher &&
  -x $PREFIX/libexec/kcache/kcache-launcher ]] \
  || fail "the launcher's link glslc is not installed as a link to kcache-launcher beside it"
cp -r "$KCACHE_SOURCE_DIR/tests/data/launcher_project" src
mkdir src/.git  # a checkout: the keys' root is src/
cmake -S src -B build -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" >"$WORK/configure.log" 2>&1 \
  || { cat "$WORK/configure.log"; fail "configure failed"; }
grep -q "Vulkan_GLSLC_EXECUTABLE:FILEPATH=$PREFIX/libexec/kcache/glslc" build/CMakeCache.txt \
  || fail "Vulkan_GLSLC_EXECUTABLE is not the launcher's link"

note "first build: compiled by kcache"
ninja -C build >"$WORK/build1.log" || { cat "$WORK/build1.log"; fail "build failed"; }
expect_exit 0 "$KCACHE" stats --json
[[ $(json_get "$WORK/out" '(j["totals"]["compiled"], j["totals"]["launcher"]["commands"])') == "(4, 4)" ]] \
  || fail "expected 4 compiled: $(cat "$WORK/out")"
glslc -O --target-env=vulkan1.2 -DTYPE=int -DBLOCK=256 -Isrc/include -c src/shaders/scale.comp -o ref.spv
python3 -c "import sys; a,b=(open(f,'rb').read() for f in sys.argv[1:]); sys.exit(not(len(a)==len(b) and a[:8]==b[:8] and a[12:]==b[12:]))" \
  ref.spv build/scale_int_256.spv || fail "the module differs from glslc's beyond the generator word"

note "a clean rebuild: served from the store"
ninja -C build -t clean >/dev/null
ninja -C build >"$WORK/build2.log"
expect_exit 0 "$KCACHE" stats --json --last 4
[[ $(json_get "$WORK/out" '(j["totals"]["hit"], j["totals"]["compiled"])') == "(4, 0)" ]] \
  || fail "the rebuild was not all hits: $(cat "$WORK/out")"

note "an include edited: ninja reruns glslc (the depfile), kcache recompiles"
ninja -C build >"$WORK/build3.log"
expect_in "$WORK/build3.log" "no work to do"
sed -i 's/1048576u/524288u/' src/include/limits.h
ninja -C build >"$WORK/build4.log"
expect_exit 0 "$KCACHE" stats --json --last 4
[[ $(json_get "$WORK/out" 'j["totals"]["stale_replaced"]') == 4 ]] || fail "the edit did not recompile: $(cat "$WORK/out")"
note "another build folder, an out-of-tree folder, a copy without .git: all hits, no new entries (issue 41)"
expect_exit 0 "$KCACHE" inspect --json
entries=$(json_get "$WORK/out" 'len(j["entries"])')
# A source tarball: no .git, and outside this test's own checkout (whose
# .git, above $WORK, would otherwise be the root).
copy=$(mktemp -d "${TMPDIR:-/tmp}/kcache-tarball.XXXXXX")
trap 'rm -rf "$copy"' EXIT
cp -r src/. "$copy" && rm -rf "$copy/.git"
for tree in "src build2" "src $WORK/elsewhere/cmake-build-debug" "$copy $copy/build"; do
  read -r source folder <<<"$tree"
  cmake -S "$source" -B "$folder" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" >"$WORK/configure.log" 2>&1 \
    || { cat "$WORK/configure.log"; fail "configure of $folder failed"; }
  ninja -C "$folder" >"$WORK/build5.log" || { cat "$WORK/build5.log"; fail "build in $folder failed"; }
  expect_exit 0 "$KCACHE" stats --json --last 4
  [[ $(json_get "$WORK/out" '(j["totals"]["hit"], j["totals"]["compiled"])') == "(4, 0)" ]] \
    || fail "$folder was not all hits: $(cat "$WORK/out")"
  cmp -s "$folder/scale_int_256.spv" build/scale_int_256.spv || fail "$folder got another module"
done
expect_exit 0 "$KCACHE" inspect --json
[[ $(json_get "$WORK/out" 'len(j["entries"])') == "$entries" ]] || fail "other build folders added entries"

note "from-commands reads what ninja writes for CMake; the manifest builds the launcher's modules"
for tool in compdb commands; do
  ninja -C build -t "$tool" >"$WORK/ninja.$tool"
  expect_exit 0 "$KCACHE" manifest from-commands "$WORK/ninja.$tool" -o "src/$tool.toml"
  expect_in "$WORK/out" "4 commands"
  rm -rf "$WORK/m.$tool"
  expect_exit 0 "$KCACHE" build --store "$WORK/m.$tool" --json "src/$tool.toml"
  [[ $(counts "$WORK/out") == "0 4 0 0" ]] || fail "the $tool manifest did not build 4 kernels: $(cat "$WORK/out")"
  python3 - "$WORK/out" "src/$tool.toml" <<'PY' >"$WORK/kernels"
import json, sys
print("\n".join(r["kernel"] for r in json.load(open(sys.argv[1]))["kernels"]))
PY
  while read -r kernel; do
    expect_exit 0 "$KCACHE" get --store "$WORK/m.$tool" "$kernel" -o "$WORK/got.spv"
    found=0
    for f in build/*.spv; do cmp -s "$WORK/got.spv" "$f" && found=1; done
    ((found)) || fail "the $tool manifest's $kernel is none of the launcher's modules"
  done <"$WORK/kernels"
done
echo "PASS"
