#!/usr/bin/env bash
# The Debian package (issue 8): `cpack -G DEB` from the build, then checks
# that do not need a second machine:
#   - its Depends name the package of every shared library that the packaged
#     kcache and libkcache.so need (checked with dpkg -S on this system);
#   - unpacked into a fresh prefix (dpkg-deb -x), kcache runs, `man` finds its
#     page, and tests/consumer builds against it with find_package(kcache).
# A real `apt install ./kcache_*.deb` on a fresh Debian 12 is
# scripts/deb-chroot-test (debootstrap; needs a Debian mirror): when
# KCACHE_TEST_CHROOT names a chroot it made, it runs here too.
source "$(dirname "$0")/lib.bash"
: "${KCACHE_BUILD_DIR:?set by ctest}"

cpack -G DEB -B "$WORK/pkg" --config "$KCACHE_BUILD_DIR/CPackConfig.cmake" >"$WORK/cpack.log" 2>&1 ||
  { cat "$WORK/cpack.log"; fail "cpack failed"; }
deb=$(ls "$WORK"/pkg/kcache_*.deb)
note "package: $(basename "$deb")"
dpkg-deb -f "$deb" Depends >"$WORK/depends"
note "Depends: $(cat "$WORK/depends")"
[[ $(dpkg-deb -f "$deb" Package) == kcache ]] || fail "package name"

ROOT=$WORK/root
dpkg-deb -x "$deb" "$ROOT"
LIB=usr/lib/$(gcc -print-multiarch)  # the multiarch folder, as Debian's libraries
for f in usr/bin/kcache $LIB/libkcache.so.0 usr/include/kcache/runtime/kcache.h \
         $LIB/cmake/kcache/kcacheConfig.cmake $LIB/pkgconfig/kcache.pc usr/share/man/man1/kcache.1.gz \
         usr/share/bash-completion/completions/kcache usr/share/zsh/vendor-completions/_kcache \
         usr/share/doc/kcache/copyright; do
  [[ -e $ROOT/$f ]] || fail "not in the package: $f"
done
dpkg-deb -f "$deb" Recommends | grep -q "bash-completion" || fail "Recommends lacks bash-completion"

note "lintian reports no error"
command -v lintian >/dev/null || fail "lintian is not installed (scripts/setup installs it)"
lintian --tag-display-limit 0 "$deb" >"$WORK/lintian.txt" 2>&1 || true
grep -q "^E: " "$WORK/lintian.txt" && { grep "^E: " "$WORK/lintian.txt"; fail "lintian reports errors"; }
note "lintian: $(grep -c '^W: ' "$WORK/lintian.txt" || true) warnings, no error"

note "every needed shared library comes from a declared dependency"
for f in "$ROOT/usr/bin/kcache" "$ROOT/$LIB/libkcache.so.0"; do
  for lib in $(objdump -p "$f" | awk '/NEEDED/ {print $2}'); do
    # awk reads all of ldconfig's output: an early exit would SIGPIPE it (pipefail).
    path=$(ldconfig -p | awk -v l="$lib" '$1 == l && !found {print $NF; found = 1}')
    [[ -n $path ]] || fail "$lib (needed by $(basename "$f")) is not installed here"
    owner=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(realpath "$path")" 2>/dev/null || dpkg -S "/usr$path" 2>/dev/null) ||
      fail "no package owns $path"
    pkg=${owner%%:*}
    tr ',' '\n' <"$WORK/depends" | awk '{print $1}' | grep -qxF "$pkg" ||
      fail "$lib comes from $pkg, which Depends does not name"
  done
done

note "the unpacked package works"
expect_exit 0 "$ROOT/usr/bin/kcache" --version
copy_example "$WORK/project"
expect_exit 0 "$ROOT/usr/bin/kcache" build "$WORK/project/kcache.toml" -j2 --store "$WORK/store"
MANPATH=$ROOT/usr/share/man man -P cat kcache >"$WORK/man.txt" 2>/dev/null || fail "man kcache failed"
expect_in "$WORK/man.txt" "kcache build"
cp -r "$KCACHE_SOURCE_DIR/tests/consumer" "$WORK/src"
cmake -S "$WORK/src" -B "$WORK/build" -G Ninja -DCMAKE_PREFIX_PATH="$ROOT/usr" >"$WORK/configure.log" 2>&1 ||
  { cat "$WORK/configure.log"; fail "consumer configure against the package failed"; }
ninja -C "$WORK/build" >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; fail "consumer build failed"; }
expect_exit 0 "$WORK/build/consumer"
expect_in "$WORK/out" "consumer: 3 kernels, 0 bad"

if [[ -n ${KCACHE_TEST_CHROOT:-} ]]; then
  note "apt install into the fresh chroot $KCACHE_TEST_CHROOT"
  expect_exit 0 "$KCACHE_SOURCE_DIR/scripts/deb-chroot-test" --chroot "$KCACHE_TEST_CHROOT" "$deb"
  tail -3 "$WORK/out"
fi
note ok
