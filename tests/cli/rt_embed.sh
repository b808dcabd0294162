#!/usr/bin/env bash
# Embedding kernels end to end (issue 18): install kcache into a fresh
# prefix, build tests/consumer_embed — kcache_add_kernels(... EMIT cpp) puts
# tests/consumer's kernels into the program — delete the build's store, and
# run the program: it looks every kernel up through
# kcache_store_open_embedded() and creates its compute pipeline on the Vulkan
# device (lavapipe). Also: `kcache emit` is deterministic, its C flavour
# compiles with cc -std=c99 -Wall -Werror and finds kernels by name, and
# vulkan namespaces are refused.
source "$(dirname "$0")/lib.bash"
: "${KCACHE_BUILD_DIR:?set by ctest}"
PREFIX=$WORK/prefix
cmake --install "$KCACHE_BUILD_DIR" --prefix "$PREFIX" >"$WORK/install.log"
[[ -e $PREFIX/include/kcache/runtime/kcache_embedded.h ]] || fail "kcache_embedded.h not installed"

export KCACHE_STORE=$WORK/users-store
cp -r "$KCACHE_SOURCE_DIR/tests/consumer_embed" "$WORK/src"
cp -r "$KCACHE_SOURCE_DIR/tests/consumer/kernels" "$WORK/src/kernels"
note "configure and build the embedding consumer"
cmake -S "$WORK/src" -B "$WORK/build" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" >"$WORK/configure.log" 2>&1 ||
  { cat "$WORK/configure.log"; fail "configure failed"; }
ninja -C "$WORK/build" >"$WORK/build1.log" 2>&1 || { cat "$WORK/build1.log"; fail "build failed"; }
expect_in "$WORK/build1.log" "kcache: emitting embedded_kernels's kernels as cpp sources"
emitted=$WORK/build/embedded_kernels.kcache-emit
[[ -s $emitted/app_kernels.hpp && -s $emitted/app_kernels.cpp ]] || fail "no emitted sources"

note "no store at run time"
rm -rf "$WORK/build/embedded_kernels.kcache"
expect_exit 0 "$WORK/build/embedded"
expect_in "$WORK/out" "embedded: 3 pipelines created, 0 bad"
expect_in "$WORK/out" "ok scale[T=int]: key "
[[ ! -e $KCACHE_STORE ]] || fail "the build or the program touched \$KCACHE_STORE"

note "nothing changed: nothing rebuilds"
ninja -C "$WORK/build" >"$WORK/build2.log" 2>&1 || true
# The store was deleted above, so the kernels rebuild once; then nothing.
ninja -C "$WORK/build" >"$WORK/build3.log"
expect_in "$WORK/build3.log" "ninja: no work to do."

note "kcache emit: deterministic, C flavour, refusals"
"$PREFIX/bin/kcache" build "$WORK/src/kernels/kcache.toml" --store "$WORK/st" >/dev/null
expect_exit 0 "$PREFIX/bin/kcache" emit --store "$WORK/st" --lang c --name k -o "$WORK/c1"
expect_in "$WORK/out" "emitted 3 kernels of spirv/vulkan1.2"
expect_exit 0 "$PREFIX/bin/kcache" emit --store "$WORK/st" --lang c --name k -o "$WORK/c2"
cmp "$WORK/c1/k.c" "$WORK/c2/k.c" && cmp "$WORK/c1/k.h" "$WORK/c2/k.h" || fail "emit is not deterministic"
cat >"$WORK/c1/use.c" <<'C'
#include "k.h"
#include <kcache/runtime/kcache.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  const kcache_embedded_kernel* f = k_find("fill");
  kcache_store* s = NULL;
  kcache_kernel* kk = NULL;
  if (!f || k_find("nope") || f->spirv[0] != 0x07230203u || strlen(f->key_id) != 32) return 2;
  if (kcache_store_open_embedded(&k_table, &s) != KCACHE_OK) return 3;
  if (kcache_lookup_key(s, f->key_id, NULL, NULL, &kk) != KCACHE_OK) return 4;
  printf("%s %s %u\n", kcache_kernel_name(kk), kcache_kernel_key_id(kk), (unsigned)k_table.count);
  kcache_kernel_free(kk);
  kcache_store_close(s);
  return 0;
}
C
cc -std=c99 -Wall -Wextra -Werror -I"$PREFIX/include" "$WORK/c1/use.c" "$WORK/c1/k.c" -L"$PREFIX/lib/$(gcc -print-multiarch)" -lkcache \
  -o "$WORK/use" || fail "the C sources do not compile"
LD_LIBRARY_PATH=$PREFIX/lib/$(gcc -print-multiarch) expect_exit 0 "$WORK/use"
expect_in "$WORK/out" "fill "
expect_exit 2 "$PREFIX/bin/kcache" emit --store "$WORK/st" --namespace vulkan/abc -o "$WORK/c3"
expect_in "$WORK/err" "only SPIR-V namespaces"
expect_exit 2 "$PREFIX/bin/kcache" emit --store "$WORK/st" --name 'not-an-id' -o "$WORK/c3"
expect_in "$WORK/err" "is not a C identifier"
for name in class std __k _K; do
  expect_exit 2 "$PREFIX/bin/kcache" emit --store "$WORK/st" --name "$name" -o "$WORK/c3"
  expect_in "$WORK/err" "not a C or C++ keyword"
done

note "kernel names holding comment delimiters still compile with -Wall -Werror (C and C++)"
mkdir -p "$WORK/cm"
printf '#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n' >"$WORK/cm/c.comp"
cat >"$WORK/cm/kcache.toml" <<'TOML'
[[kernel]]
name = "c"
source = "c.comp"
[kernel.variants]
NOTE = ["/* a */", "x*/y", "/*/ */"]
TOML
expect_exit 0 "$PREFIX/bin/kcache" build "$WORK/cm/kcache.toml" --store "$WORK/cst"
for lang in c cpp; do
  expect_exit 0 "$PREFIX/bin/kcache" emit --store "$WORK/cst" --lang $lang --name cm -o "$WORK/cm-$lang"
done
cc -std=c99 -Wall -Wextra -Werror -I"$PREFIX/include" -c "$WORK/cm-c/cm.c" -o "$WORK/cm.o" ||
  fail "a kernel name with /* or */ breaks the C sources"
c++ -std=c++17 -Wall -Wextra -Werror -I"$PREFIX/include" -c "$WORK/cm-cpp/cm.cpp" -o "$WORK/cm2.o" ||
  fail "a kernel name with /* or */ breaks the C++ sources"
note "ok"
