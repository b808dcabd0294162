#!/usr/bin/env bash
# Hostile links and modes (issue 27, items 9 and 10): a symlink inside the
# project that leads outside it (a source, an include, a linked folder) fails
# its kernel without its target's text reaching the output, --json or the
# failure record, while links that stay inside keep working; a symlinked
# store `remotes` file is refused unread; and every output kcache writes
# honours the umask (0644 under umask 077 would show it to everyone), while
# a secret key stays 0600 under any umask.
source "$(dirname "$0")/lib.bash"

SECRET="TOP_SECRET_$$_do_not_print"
mkdir -p outside
# An #error line: compiling it (what happened before the fix) quotes it.
printf '#error %s\nvoid main() {}\n' "$SECRET" > outside/secret.glsl
printf '%s\n' "$SECRET" > outside/remotes

mkdir -p p/inc
printf '#version 450\nlayout(local_size_x=1) in;\nlayout(std430, binding=0) buffer B { uint d[]; };\nvoid main() { d[0] = 1u; }\n' > p/k.comp
printf '[[kernel]]\nname = "k"\nsource = "k.comp"\n' > p/kcache.toml

# --- umask ----------------------------------------------------------------------
# mode_is WANT FILE...: each FILE has octal mode WANT.
mode_is() {
  local want=$1; shift
  for f in "$@"; do
    [[ $(stat -c %a "$f") == "$want" ]] || fail "$f has mode $(stat -c %a "$f"), expected $want (umask $(umask))"
  done
}

note "under umask 077 every output is 0600: get -o, export, emit, --report, --depfile, keygen"
(
  umask 077
  expect_exit 0 "$KCACHE" build p/kcache.toml --report report.json --depfile deps.d
  expect_exit 0 "$KCACHE" get k -o k.spv
  expect_exit 0 "$KCACHE" export -o k.kcb
  expect_exit 0 "$KCACHE" emit --lang c --name kernels -o emitted
  expect_exit 0 "$KCACHE" keygen -o ci
  mode_is 600 report.json deps.d k.spv k.kcb emitted/kernels.h emitted/kernels.c ci.key ci.pub
) || exit 1

note "under umask 022 outputs are 0644 and the secret key still 0600"
rm -rf report.json deps.d k.spv k.kcb emitted ci.key ci.pub
(
  umask 022
  expect_exit 0 "$KCACHE" build p/kcache.toml --report report.json --depfile deps.d
  expect_exit 0 "$KCACHE" get k -o k.spv
  expect_exit 0 "$KCACHE" export -o k.kcb
  expect_exit 0 "$KCACHE" keygen -o ci
  mode_is 644 report.json deps.d k.spv k.kcb ci.pub
  mode_is 600 ci.key
) || exit 1

# --- symlinks out of the project ------------------------------------------------
# no_secret: the secret's text is in none of the outputs so far.
no_secret() {
  ! grep -qF -- "$SECRET" "$WORK/out" "$WORK/err" || { cat "$WORK/out" "$WORK/err"; fail "the outside file's text was printed"; }
}
# link_case NAME INCLUDE-LINE: a project whose one kernel includes INCLUDE-LINE.
link_case() {
  mkdir -p "l-$1/s"
  printf '#version 450\n#extension GL_GOOGLE_include_directive : require\n%s\nlayout(local_size_x=1) in;\nvoid main() {}\n' \
    "$2" > "l-$1/s/main.comp"
  printf '[[kernel]]\nname = "%s"\nsource = "s/main.comp"\n' "$1" > "l-$1/kcache.toml"
}
# expect_refused NAME: building project NAME fails its kernel (exit 1) naming
# the refusal, in text, in --json and when the failure is remembered, and
# never shows the outside file's text.
expect_refused() {
  expect_exit 1 "$KCACHE" build "l-$1/kcache.toml"
  no_secret
  expect_in out "FAILED $1"
  expect_in out "outside the project"
  expect_in out "copy the file into the project or move the manifest up"
  expect_exit 1 "$KCACHE" build "l-$1/kcache.toml" --json
  no_secret
  expect_exit 1 "$KCACHE" build "l-$1/kcache.toml" --report "report-$1.json"
  no_secret
  ! grep -qF -- "$SECRET" "report-$1.json" || fail "the outside file's text is in the report"
}

note "an include that is a symlink to a file outside the project"
link_case file '#include "leak.glsl"'
ln -s "$WORK/outside/secret.glsl" l-file/s/leak.glsl
expect_refused file

note "a relative symlink that climbs out"
link_case rel '#include "leak.glsl"'
ln -s ../../outside/secret.glsl l-rel/s/leak.glsl
expect_refused rel

note "an include under a symlinked folder that is outside"
link_case dir '#include "ext/secret.glsl"'
ln -s "$WORK/outside" l-dir/s/ext
expect_refused dir

note "a kernel source that is a symlink to a file outside the project"
mkdir -p l-src
ln -s "$WORK/outside/secret.glsl" l-src/main.comp
printf '[[kernel]]\nname = "src"\nsource = "main.comp"\n' > l-src/kcache.toml
expect_refused src

note "symlinks that stay inside the project keep working"
link_case inside '#include "alias.glsl"
#include "lib/real.glsl"'
mkdir -p l-inside/s/lib
printf '#ifndef R\n#define R\nconst uint B = 2u;\n#endif\n' > l-inside/s/lib/real.glsl
ln -s lib/real.glsl l-inside/s/alias.glsl
ln -s "$WORK/l-inside" inside-link
expect_exit 0 "$KCACHE" build l-inside/kcache.toml
expect_exit 0 "$KCACHE" build inside-link/kcache.toml  # the project reached through a link

# --- the store's remote setting --------------------------------------------------
note "a symlinked store remotes file is refused, unread"
mkdir -p S
ln -s "$WORK/outside/remotes" S/remotes
for cmd in "remote list" "remote add redis://127.0.0.1:1"; do
  got=0
  "$KCACHE" $cmd --store S >"$WORK/out" 2>"$WORK/err" || got=$?
  [[ $got -ne 0 ]] || fail "$cmd followed the symlinked remotes file"
  no_secret
  expect_in err "symbolic link"
done
[[ -L S/remotes && $(cat outside/remotes) == "$SECRET" ]] || fail "the link or its target was changed"

# --- outputs through a dangling symlink (issue 40 item 9) ---------------------
note "an output path that is a dangling symlink is written through, as cc -o and glslc do"
expect_exit 0 "$KCACHE" build p/kcache.toml
mkdir -p artifacts
ln -s artifacts/k.spv k-link.spv
ln -s "$WORK/artifacts/k.kcb" k-link.kcb
expect_exit 0 "$KCACHE" get k -o k-link.spv
expect_exit 0 "$KCACHE" export --namespace spirv/vulkan1.2 -o k-link.kcb
[[ -L k-link.spv && -L k-link.kcb ]] || fail "a dangling output link was replaced by a file"
[[ -s artifacts/k.spv && -s artifacts/k.kcb ]] || fail "the files the links name were not written"
mkdir -p lp/.git bin && ln -sf "$KCACHE" bin/glslc
cp p/k.comp lp/k.comp
ln -s ../artifacts/launched.spv lp/out.spv
(cd lp && PATH="$WORK/bin:$PATH" glslc -c k.comp -o out.spv) || fail "the launcher failed"
[[ -L lp/out.spv && -s artifacts/launched.spv ]] || fail "the launcher replaced the dangling link"

echo "ok"
