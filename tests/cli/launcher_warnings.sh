#!/usr/bin/env bash
# The compiler's warnings through the glslc launcher, as the real tools show
# them, on a miss and on a hit (the entry keeps them, record version 3):
#   - glslc: stderr identical to the real glslc's ("FILE:LINE: warning: ...",
#     an included file named as glslc names it, "N warnings generated."),
#     nothing under -w;
#   - glslangValidator: stdout identical (the source, "WARNING: ..." lines),
#     and "-o -" writes a file named "-" as it does, not standard output;
#   - glslc -Werror: a module with warnings fails as glslc fails it (exit 1,
#     its error text, no output file written), on a hit too; -w wins;
#   - `kcache build` names the kernels whose compile warned, and `kcache
#     inspect` shows a stored entry's warnings.
source "$(dirname "$0")/lib.bash"
command -v glslc >/dev/null || fail "glslc is needed (scripts/setup installs it)"
command -v glslangValidator >/dev/null || fail "glslangValidator is needed (scripts/setup installs it)"

mkdir -p proj/.git proj/sub proj/out bin
cat >proj/warn.comp <<'EOF'
#version 450
#extension GL_FOO_bar : warn
layout(local_size_x = 1) in;
void main() {}
EOF
cat >proj/sub/incl.comp <<'EOF'
#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_FOO_first : warn
#include "inc.h"
layout(local_size_x = 1) in;
void main() {}
EOF
printf '#extension GL_BAR_second : warn\n' >proj/sub/inc.h
cat >proj/clean.comp <<'EOF'
#version 450
layout(local_size_x = 1) in;
void main() {}
EOF
ln -s "$KCACHE" bin/glslc
ln -s "$KCACHE" bin/glslangValidator
cd proj

# same TOOL ARGS...: the launcher prints what the real tool prints (both
# streams) and exits as it does, on a miss and then on a hit.
same() {
  local tool=$1; shift
  local want=0 got
  "$tool" "$@" >"$WORK/real.out" 2>"$WORK/real.err" || want=$?
  for pass in miss hit; do
    got=0
    PATH="$WORK/bin:$PATH" "$tool" "$@" >"$WORK/kc.out" 2>"$WORK/kc.err" || got=$?
    [[ $got -eq $want ]] || fail "$tool $* ($pass): exit $got, the real $tool's $want"
    cmp -s "$WORK/real.out" "$WORK/kc.out" || { diff "$WORK/real.out" "$WORK/kc.out"; fail "$tool $* ($pass): stdout differs"; }
    cmp -s "$WORK/real.err" "$WORK/kc.err" || { diff "$WORK/real.err" "$WORK/kc.err"; fail "$tool $* ($pass): stderr differs"; }
  done
}

note "glslc: warnings on stderr, on a miss and on a hit"
same glslc -c warn.comp -o out/warn.spv
grep -q "warn.comp:2: warning: '#extension' : extension not supported: GL_FOO_bar" "$WORK/kc.err" || fail "no warning shown"
expect_in "$WORK/kc.err" "1 warning generated."
same glslc -c sub/incl.comp -o out/incl.spv
expect_in "$WORK/kc.err" "sub/inc.h:1: warning:"
expect_in "$WORK/kc.err" "2 warnings generated."
same glslc -c "$WORK/proj/sub/incl.comp" -o out/incl-abs.spv
expect_in "$WORK/kc.err" "$WORK/proj/sub/inc.h:1: warning:"
same glslc -c warn.comp -o out/quiet.spv -w
[[ ! -s $WORK/kc.err ]] || fail "-w printed warnings"
same glslc -c clean.comp -o out/clean.spv
# Each command's second run was a hit: its warnings came from the store.
# Entries are named after what is compiled, not the output: incl.comp by
# an absolute path and warn.comp under -w (which changes no module) are
# hits on their first run too, so 3 compiles serve all 10 runs.
expect_exit 0 "$KCACHE" stats --json
[[ $(json_get "$WORK/out" '(j["totals"]["compiled"], j["totals"]["hit"])') == "(3, 7)" ]] \
  || fail "expected 3 compiled and 7 hits: $(cat "$WORK/out")"

note "glslangValidator: the source and its warnings on stdout"
same glslangValidator -V warn.comp -o out/warn-v.spv
expect_in "$WORK/kc.out" "WARNING: warn.comp:2: '#extension' : extension not supported: GL_FOO_bar"
same glslangValidator -V sub/incl.comp -o out/incl-v.spv
same glslangValidator -V -w warn.comp -o out/quiet-v.spv
same glslangValidator -V clean.comp -o out/clean-v.spv
# "-o -" is a file named "-" to glslangValidator (standard output to glslc).
rm -f ./-
same glslangValidator -V clean.comp -o -
[[ -s ./- ]] || fail "glslangValidator -o - wrote no file named -"

note "glslc -Werror: a module with warnings fails as glslc fails it, hit or miss, and writes nothing"
same glslc -c warn.comp -o out/strict.spv -Werror
expect_in "$WORK/kc.err" "warn.comp:2: error: '#extension' : extension not supported: GL_FOO_bar"
[[ ! -e out/strict.spv ]] || fail "-Werror left an output behind"
same glslc -c sub/incl.comp -o out/strict2.spv -Werror
same glslc -c warn.comp -o out/strict-quiet.spv -Werror -w
[[ -s out/strict-quiet.spv ]] || fail "-Werror -w wrote no module"
same glslc -c clean.comp -o out/strict-clean.spv -Werror

note "kcache build names the kernels that warned; inspect shows the warnings kept"
cat >kcache.toml <<'EOF'
[[kernel]]
name = "warn"
source = "warn.comp"

[[kernel]]
name = "clean"
source = "clean.comp"
EOF
expect_exit 0 "$KCACHE" build kcache.toml --store "$WORK/built"
expect_in "$WORK/out" "WARNED warn"
expect_in "$WORK/out" "warn.comp:2: warning: '#extension' : extension not supported: GL_FOO_bar"
grep -q "WARNED clean" "$WORK/out" && fail "a clean kernel was named"
expect_exit 0 "$KCACHE" inspect warn --store "$WORK/built"
expect_in "$WORK/out" "compiler warnings:"
expect_in "$WORK/out" "    warn.comp:2: warning: '#extension' : extension not supported: GL_FOO_bar"
echo "ok"
