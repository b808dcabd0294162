#!/usr/bin/env bash
# B4 at the documented memory bounds (lib/kcache/bundle/FORMAT.md "Memory",
# README "Guarantees"), for formats 1 and 3 (every version when soaking,
# KCACHE_SOAK > 1: format 2 differs from 3 only in how SPIR-V operands are
# coded, which unit.bundle covers): bundles of a few KiB that
# declare the most the reader's limits allow (zstd shrinks repeated bytes
# enormously, so the file's size says nothing), run through `kcache inspect`
# and `kcache import --dry-run -j 4` as a user would. Each run must stay
# within the bound FORMAT.md states for what the bundle declares:
#   64 MiB + 3 x its header body + 2 x its largest record (3 x in formats
#   2 and 3), + 224 MiB for import while a module is validated
# and within TIME_CAP_S. The bundles (kcache_reltool, with every digest
# right, so each reaches the code it measures):
#   head   a header body at the 32 MiB limit (360,799 index entries), then
#          no frames: the whole index is parsed, the read then fails
#   old    a header body of 88 MiB (under the old 128 MiB limit): refused at once
#   rec    2 records of 128 MiB (zero modules, refused before spirv-val):
#          -j 4 must not hold them at once, nor the reader keep their buffers
#   big    a valid module 4 bytes over the 16 MiB spirv-val may check:
#          refused before spirv-val (import; inspect reads it)
#   cap    a valid module of just under 2^20 one-word instructions (4 MiB),
#          the most spirv-val is given: imported (dry run) within the bound
#   many   a valid module of just over 2^20 instructions (4.06 MiB):
#          refused before spirv-val (import)
source "$(dirname "$0")/lib.bash"
GOLDEN=$KCACHE_SOURCE_DIR/bundles/golden/example-v1.kcb
MIB=$((1 << 20)) TIME_CAP_S=${KCACHE_B4_TIME_CAP_S:-20}
BASE_KIB=$((64 * 1024))
failures=0 runs=0 worst=""
# run WHAT CAP_KIB WANT_EXIT CMD...: one kcache run, its peak RSS against CAP_KIB.
run() {
  local what=$1 cap=$2 want=$3; shift 3
  local rc=0
  /usr/bin/time -f '%e %M' -o "$WORK/.time" "$@" >/dev/null 2>"$WORK/err" || rc=$?
  read -r secs kib < <(tail -1 "$WORK/.time")
  runs=$((runs + 1))
  local line="$what: exit $rc, ${secs}s, $((kib / 1024)) MiB (bound $((cap / 1024)) MiB)"
  echo "$line"
  if ((rc != want)) || ((kib > cap)) || ! python3 -c "import sys; sys.exit(0 if $secs <= $TIME_CAP_S else 1)"; then
    echo "  FAILED (want exit $want, <= ${TIME_CAP_S}s): $(head -c 300 "$WORK/err")"
    failures=$((failures + 1))
  fi
  worst+="$what $((kib / 1024)) MiB ${secs}s; "
}
versions=(1 3)
((SOAK == 1)) || versions=(1 2 3)
for v in "${versions[@]}"; do
  "$KCACHE_RELTOOL" bundle-head $v head$v.kcb $((32 * MIB)) >/dev/null || fail "bundle-head $v"
  "$KCACHE_RELTOOL" bundle-head $v old$v.kcb $((88 * MIB)) >/dev/null || fail "bundle-head $v (88 MiB)"
  "$KCACHE_RELTOOL" bundle-records $v rec$v.kcb "$GOLDEN" 2 $((128 * MIB)) >/dev/null || fail "bundle-records $v"
  "$KCACHE_RELTOOL" bundle-module $v big$v.kcb "$GOLDEN" $((16 * MIB + 4)) >/dev/null || fail "bundle-module $v"
  "$KCACHE_RELTOOL" bundle-module $v cap$v.kcb "$GOLDEN" $((4 * MIB - 64 * 1024)) >/dev/null || fail "bundle-module $v"
  "$KCACHE_RELTOOL" bundle-module $v many$v.kcb "$GOLDEN" $((4 * MIB + 64 * 1024)) >/dev/null || fail "bundle-module $v"
  times=$((v == 1 ? 2 : 3)) validate_kib=$((224 * 1024))
  head_cap=$((BASE_KIB + 3 * 32 * 1024)) rec_cap=$((BASE_KIB + times * (128 + 1) * 1024))
  big_cap=$((BASE_KIB + times * 17 * 1024)) cap_cap=$((BASE_KIB + times * 5 * 1024))
  for cmd in inspect "import --dry-run -j 4 --store store"; do
    name=${cmd%% *}
    # shellcheck disable=SC2086
    {
      run "v$v $name head (32 MiB)" $head_cap 6 "$KCACHE" $cmd head$v.kcb
      run "v$v $name head (88 MiB)" $BASE_KIB 6 "$KCACHE" $cmd old$v.kcb
      run "v$v $name 2 x 128 MiB records" $rec_cap $([[ $name == inspect ]] && echo 0 || echo 6) "$KCACHE" $cmd rec$v.kcb
      run "v$v $name module over 16 MiB" $big_cap $([[ $name == inspect ]] && echo 0 || echo 6) "$KCACHE" $cmd big$v.kcb
      [[ $name == inspect ]] || grep -q "spirv-val may check" "$WORK/err" ||
        fail "the module's refusal does not name the limit: $(cat "$WORK/err")"
      [[ $name == inspect ]] && cap=$cap_cap || cap=$((cap_cap + validate_kib))
      run "v$v $name module of 2^20 instructions" $cap 0 "$KCACHE" $cmd cap$v.kcb
      if [[ $name == import ]]; then
        run "v$v $name module over 2^20 instructions" $cap_cap 6 "$KCACHE" $cmd many$v.kcb
        grep -q "instructions, more than spirv-val may check" "$WORK/err" ||
          fail "the module's refusal does not name the instruction limit: $(cat "$WORK/err")"
      fi
    }
  done
  rm -f head$v.kcb old$v.kcb rec$v.kcb big$v.kcb cap$v.kcb many$v.kcb
done
figure B4-bounds "$runs runs (formats ${versions[*]}; inspect and import --dry-run -j 4; headers at 32 and 88 MiB, 2 records of 128 MiB, modules over 16 MiB, of 2^20 instructions and over), $failures over their bound: $worst"
((failures == 0)) || fail "$failures runs over their memory or time bound"
