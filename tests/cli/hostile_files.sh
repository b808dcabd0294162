#!/usr/bin/env bash
# Hostile files around a build (issue 14): output paths that are FIFOs,
# devices or symlinks keep what they are (written in place or through the
# link, never renamed over), a planted symlink at a temporary's name is not
# followed, and #include lines that would read outside the project, a device,
# a FIFO or loop for ever fail the one kernel with a message instead of
# hanging or aborting. Every command that could hang runs under `timeout`.
source "$(dirname "$0")/lib.bash"
T="timeout ${KCACHE_TEST_TIMEOUT:-60}"

# expect_no_hang WANT CMD...: as expect_exit, but a hang (124) or a crash
# (signal) is named as such.
expect_no_hang() {
  local want=$1; shift
  local got=0
  $T "$@" >"$WORK/out" 2>"$WORK/err" || got=$?
  [[ $got -ne 124 ]] || fail "hung: $*"
  [[ $got -lt 128 ]] || { cat "$WORK/err"; fail "killed by signal $((got - 128)): $*"; }
  [[ $got -eq $want ]] || { cat "$WORK/out" "$WORK/err"; fail "expected exit $want, got $got from: $*"; }
}

mkdir -p p
printf '#version 450\nlayout(local_size_x=1) in;\nlayout(std430, binding=0) buffer B { uint d[]; };\nvoid main() { d[0] = 1u; }\n' > p/k.comp
printf '[[kernel]]\nname = "k"\nsource = "k.comp"\n' > p/kcache.toml
expect_exit 0 "$KCACHE" build p/kcache.toml
expect_exit 0 "$KCACHE" get k -o want.spv

# --- output paths -----------------------------------------------------------
note "get -o FIFO: the reader gets the module, the FIFO stays a FIFO"
mkfifo fifo
$T cat fifo > got.spv & reader=$!
expect_exit 0 $T "$KCACHE" get k -o fifo
wait $reader || fail "FIFO reader failed (it got no writer)"
[[ -p fifo ]] || fail "fifo was replaced by a $(stat -c %F fifo)"
cmp -s got.spv want.spv || fail "the FIFO's reader did not get the module"

note "get -o LINK-TO-FIFO: the link stays, the FIFO gets the bytes"
ln -s fifo fifo-link
$T cat fifo > got2.spv & reader=$!
expect_exit 0 $T "$KCACHE" get k -o fifo-link
wait $reader || fail "FIFO reader (through the link) failed"
[[ -L fifo-link && -p fifo ]] || fail "fifo-link is now a $(stat -c %F fifo-link)"
cmp -s got2.spv want.spv || fail "the FIFO's reader did not get the module through the link"

note "get/build outputs to a link to /dev/null: written through, /dev/null stays a device"
ln -s /dev/null null-link
expect_exit 0 $T "$KCACHE" get k -o null-link
expect_exit 0 $T "$KCACHE" build p/kcache.toml --depfile null-link --report null-link
[[ -L null-link ]] || fail "null-link is now a $(stat -c %F null-link)"
[[ -c /dev/null ]] || fail "/dev/null is no longer a character device"

note "get -o LINK-TO-STDOUT: stdout gets the module, the link stays (as /dev/stdout must)"
ln -s /proc/self/fd/1 stdout-link
$T "$KCACHE" get k -o stdout-link > redirected.spv || fail "get -o stdout-link > file failed"
[[ -L stdout-link ]] || fail "stdout-link is now a $(stat -c %F stdout-link)"
cmp -s redirected.spv want.spv || fail "the redirected file did not get the module"
$T "$KCACHE" get k -o stdout-link | cat > piped.spv || fail "get -o stdout-link | cat failed"
cmp -s piped.spv want.spv || fail "the pipe did not get the module"

note "planted symlinks at temporary names are not followed"
echo keep > victim
for s in .tmp .tmp-0 .tmp-XXXXXX .tmp.$$ .tmp.1; do ln -s "$WORK/victim" "out.spv$s"; done
expect_exit 0 "$KCACHE" get k -o out.spv
[[ $(cat victim) == keep ]] || fail "a planted link was followed: victim overwritten"
[[ -f out.spv && ! -L out.spv ]] && cmp -s out.spv want.spv || fail "out.spv not written"
[[ $(ls out.spv* | wc -l) -eq 6 ]] || fail "a temporary was left behind: $(ls out.spv*)"

# --- includes -----------------------------------------------------------------
# One project per case, one kernel each: the kernel fails (exit 1) with a
# message naming the include; nothing hangs, nothing aborts.
include_case() {  # NAME INCLUDE-LINE
  mkdir -p "i-$1/s"
  printf '#version 450\n#extension GL_GOOGLE_include_directive : require\n%s\nlayout(local_size_x=1) in;\nvoid main() {}\n' \
    "$2" > "i-$1/s/main.comp"
  printf '[[kernel]]\nname = "%s"\nsource = "s/main.comp"\n' "$1" > "i-$1/kcache.toml"
}

note "include cycle without guards"
include_case cycle '#include "a.glsl"'
echo '#include "b.glsl"' > i-cycle/s/a.glsl
echo '#include "a.glsl"' > i-cycle/s/b.glsl
expect_no_hang 1 "$KCACHE" build i-cycle/kcache.toml
expect_in out "FAILED cycle"
expect_in out "nested deeper than 64"
expect_in out "s/b.glsl:1"  # the including file and line (depth 65 is b.glsl including a.glsl)

note "#include \"/dev/zero\""
include_case zero '#include "/dev/zero"'
expect_no_hang 1 "$KCACHE" build i-zero/kcache.toml
expect_in out "FAILED zero"
expect_in out "s/main.comp:3"
expect_in out '#include "/dev/zero" is an absolute path'

note "#include of a FIFO inside the project"
include_case fifo '#include "pipe.glsl"'
mkfifo i-fifo/s/pipe.glsl
expect_no_hang 1 "$KCACHE" build i-fifo/kcache.toml
expect_in out "FAILED fifo"
expect_in out "s/main.comp:3"
expect_in out "s/pipe.glsl"
expect_in out "regular file"

note "#include of a symlink to /dev/zero inside the project"
include_case zlink '#include "z.glsl"'
ln -s /dev/zero i-zlink/s/z.glsl
expect_no_hang 1 "$KCACHE" build i-zlink/kcache.toml
expect_in out "FAILED zlink"
expect_in out "s/main.comp:3"
expect_in out "regular file"

note "absolute #include of a real file"
mkdir -p elsewhere && echo 'float f;' > elsewhere/x.glsl
include_case absolute "#include \"$WORK/elsewhere/x.glsl\""
expect_no_hang 1 "$KCACHE" build i-absolute/kcache.toml
expect_in out "FAILED absolute"
expect_in out "s/main.comp:3"
expect_in out "absolute path"

note "#include escaping the project with .."
include_case escape '#include "../../elsewhere/x.glsl"'
expect_no_hang 1 "$KCACHE" build i-escape/kcache.toml
expect_in out "FAILED escape"
expect_in out "s/main.comp:3"
expect_in out "outside the manifest's folder"

echo "ok"
