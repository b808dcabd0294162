#!/usr/bin/env bash
# Adoption end to end (issue 8): install kcache into a fresh prefix with
# `cmake --install`, then build tests/consumer against it with
# find_package(kcache) + kcache_add_kernels + the runtime API, and check:
# the installed layout, that the consumer runs (C++ and C), that editing an
# include rebuilds the kernels and nothing changed rebuilds nothing, the
# bundle, pkg-config, `man kcache` and bash completion from the prefix.
source "$(dirname "$0")/lib.bash"
: "${KCACHE_BUILD_DIR:?set by ctest}"
PREFIX=$WORK/prefix

note "cmake --install into $PREFIX"
cmake --install "$KCACHE_BUILD_DIR" --prefix "$PREFIX" >"$WORK/install.log"
# The multiarch library folder, as Debian's (lib/x86_64-linux-gnu).
LIB=lib/$(gcc -print-multiarch)
for f in bin/kcache $LIB/libkcache.so $LIB/libkcache.so.0 include/kcache/runtime/kcache.h \
         include/kcache/runtime/kcache_vulkan.h include/kcache/runtime/runtime.hpp \
         $LIB/cmake/kcache/kcacheConfig.cmake $LIB/cmake/kcache/kcacheConfigVersion.cmake \
         $LIB/cmake/kcache/kcacheKernels.cmake $LIB/cmake/kcache/kcacheTargets.cmake $LIB/pkgconfig/kcache.pc \
         share/man/man1/kcache.1.gz share/bash-completion/completions/kcache share/zsh/vendor-completions/_kcache \
         share/doc/kcache/copyright; do
  [[ -e $PREFIX/$f ]] || fail "not installed: $f"
done
# The library exports the C API and nothing else (no fmt, no volk vk* pointers).
# (Global and weak symbols only: a lowercase type is local, bound inside; the
# absolute symbols KCACHE_N are its version nodes, kcache.h "Stability".)
others=$(nm -D --defined-only "$PREFIX/$LIB/libkcache.so" | awk '$2 ~ /^[A-Z]$/ {print $3}' |
  grep -v -e '^kcache_' -e '^KCACHE_[0-9]*$' || true)
[[ -z $others ]] || fail "libkcache.so exports more than kcache_*: $others"
# It validates and reflects modules but compiles none: no glslang in it, nor
# the compile module's zero-filling operator new (an application keeps its
# own allocator; a stray weak libstdc++ copy once pulled both in).
built=$KCACHE_BUILD_DIR/lib/kcache/runtime/libkcache.so
nm -C "$built" >"$WORK/lib.syms"
[[ -s $WORK/lib.syms ]] || fail "nm listed nothing in $built"
grep -q 'kcache::compile::validate' "$WORK/lib.syms" || fail "nm shows no kcache symbol: the check below would prove nothing"
if grep -E 'glslang::|k_defined_heap' "$WORK/lib.syms" >"$WORK/lib.bad"; then
  fail "libkcache.so holds glslang or the compile heap: $(head -3 "$WORK/lib.bad")"
fi

# The consumer's build must use its own store, never the user's.
export KCACHE_STORE=$WORK/users-store
cp -r "$KCACHE_SOURCE_DIR/tests/consumer" "$WORK/src"
bundle=OFF
"$PREFIX/bin/kcache" export --help >/dev/null 2>&1 && bundle=ON
note "configure and build the consumer (bundle: $bundle)"
cmake -S "$WORK/src" -B "$WORK/build" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" -DCONSUMER_BUNDLE=$bundle \
  >"$WORK/configure.log" 2>&1 || { cat "$WORK/configure.log"; fail "consumer configure failed"; }
ninja -C "$WORK/build" >"$WORK/build1.log" 2>&1 || { cat "$WORK/build1.log"; fail "consumer build failed"; }
expect_in "$WORK/build1.log" "kcache: building the kernels of kernels/kcache.toml"
report=$WORK/build/consumer_kernels.kcache-build.json
[[ $(counts "$report") == "0 3 0 0" ]] || fail "first build: expected 3 compiled, got $(counts "$report")"

expect_exit 0 "$WORK/build/consumer"
expect_in "$WORK/out" "consumer: 3 kernels, 0 bad"
expect_exit 0 "$WORK/build/consumer_c" "$WORK/build/consumer_kernels.kcache" 'scale[T=int]'
expect_in "$WORK/out" "scale[T=int]: target vulkan1.2, entry main"
expect_exit 1 "$WORK/build/consumer_c" "$WORK/build/consumer_kernels.kcache" 'nope'
expect_in "$WORK/err" "not_found"

note "the README's CMake snippet, as printed, over the example (three namespaces)"
mkdir -p "$WORK/snippet/shaders"
cp -r "$KCACHE_SOURCE_DIR/bundles/example/." "$WORK/snippet/shaders/"
{
  printf 'cmake_minimum_required(VERSION 3.20)\nproject(my_app CXX)\nset(CMAKE_CXX_STANDARD 20)\n'
  python3 "$KCACHE_SOURCE_DIR/tests/tools/readme_block.py" "$KCACHE_SOURCE_DIR/README.md" \
    "### Build kernels in your CMake project" cmake || fail "no CMake snippet in the README"
} >"$WORK/snippet/CMakeLists.txt"
printf '#include <kcache/runtime/runtime.hpp>\nint main() { return kcache::runtime::Store::open(KERNEL_STORE) ? 0 : 1; }\n' \
  >"$WORK/snippet/main.cpp"
cmake -S "$WORK/snippet" -B "$WORK/snippet-build" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" >"$WORK/snippet.log" 2>&1 &&
  ninja -C "$WORK/snippet-build" >>"$WORK/snippet.log" 2>&1 || { tail -30 "$WORK/snippet.log"; fail "the README's CMake snippet failed"; }
[[ -s $WORK/snippet-build/my_kernels.kcb ]] || fail "the snippet made no bundle"
"$PREFIX/bin/kcache" inspect "$WORK/snippet-build/my_kernels.kcb" >"$WORK/snippet-bundle.txt"
expect_in "$WORK/snippet-bundle.txt" "spirv/vulkan1.2"
expect_exit 0 "$WORK/snippet-build/app"

note "nothing changed: nothing rebuilds"
ninja -C "$WORK/build" >"$WORK/build2.log"
expect_in "$WORK/build2.log" "ninja: no work to do."

note "an include changes: the kernels rebuild, then nothing again"
sed -i 's/#define CONSUMER_GROUP 64/#define CONSUMER_GROUP 32/' "$WORK/src/kernels/include/common.glsl"
ninja -C "$WORK/build" >"$WORK/build3.log"
expect_in "$WORK/build3.log" "kcache: building the kernels"
[[ $(counts "$report") == "2 0 1 0" ]] || fail "after the include edit: expected fill restaled, got $(counts "$report")"
ninja -C "$WORK/build" >"$WORK/build4.log"
expect_in "$WORK/build4.log" "ninja: no work to do."

note "a kernel's source changes"
sed -i 's/data.values\[i\] = i;/data.values[i] = i + 1u;/' "$WORK/src/kernels/shaders/fill.comp"
ninja -C "$WORK/build" >"$WORK/build5.log"
[[ $(counts "$report") == "2 0 1 0" ]] || fail "after the source edit: got $(counts "$report")"
expect_exit 0 "$WORK/build/consumer"

if [[ $bundle == ON ]]; then
  note "the bundle imports into a fresh store"
  [[ -s $WORK/build/kernels.kcb ]] || fail "no bundle written"
  expect_exit 0 "$PREFIX/bin/kcache" import --store "$WORK/imported" "$WORK/build/kernels.kcb"
  expect_exit 0 "$WORK/build/consumer_c" "$WORK/imported" fill
fi

note "pkg-config builds the C consumer too"
flags=$(PKG_CONFIG_PATH=$PREFIX/$LIB/pkgconfig pkg-config --cflags --libs kcache)
cc "$WORK/src/lookup.c" $flags -o "$WORK/lookup_pc"
LD_LIBRARY_PATH=$PREFIX/$LIB expect_exit 0 "$WORK/lookup_pc" "$WORK/build/consumer_kernels.kcache" fill
expect_in "$WORK/out" "fill: target vulkan1.2"

note "man kcache and bash completion from the prefix"
MANPATH=$PREFIX/share/man man -P cat kcache >"$WORK/man.txt" 2>/dev/null || fail "man kcache failed"
for sub in $("$PREFIX/bin/kcache" --help | sed -n '/^Subcommands:/,/^$/p' | awk '/^  [a-z]/{print $1}'); do
  grep -q "kcache $sub" "$WORK/man.txt" || fail "man page lacks subcommand $sub"
done
expect_in "$WORK/man.txt" "KCACHE_STORE"
expect_in "$WORK/man.txt" "--depfile"
for section in MANIFEST FILES ENVIRONMENT EXAMPLES "SEE ALSO"; do
  grep -q "^$section\$" "$WORK/man.txt" || fail "man page lacks the section $section"
done
expect_in "$WORK/man.txt" "include_dirs"
[[ $(gzip -dc "$PREFIX/share/man/man1/kcache.1.gz" | head -c 4) == ".TH " ]] || fail "kcache.1.gz is no gzipped man page"
got=$(bash -c 'source "$1"; COMP_WORDS=(kcache bu); COMP_CWORD=1; _kcache; echo "${COMPREPLY[*]}"' _ \
  "$PREFIX/share/bash-completion/completions/kcache")
[[ $got == build ]] || fail "completion of 'kcache bu': '$got'"
got=$(bash -c 'source "$1"; COMP_WORDS=(kcache build --dep); COMP_CWORD=2; _kcache; echo "${COMPREPLY[*]}"' _ \
  "$PREFIX/share/bash-completion/completions/kcache")
[[ $got == "--depfile --depfile-target" ]] || fail "completion of 'kcache build --dep': '$got'"

[[ ! -e $KCACHE_STORE ]] || fail "the consumer's build touched \$KCACHE_STORE"
note "ok"
