#!/usr/bin/env bash
# C2 (docs/reliability.md): SIGKILL at random moments during build, import,
# export and raw store writes. After every kill: the store opens, every
# record decodes with good digests, `kcache verify` passes, nothing committed
# before is lost, and an import is all or nothing (0 half-visible imports).
# Runs: 40 builds, 50 store write loops, 30 imports, 30 exports (x
# KCACHE_SOAK: the gate runs 1, a deep run 2); kill times uniform over each
# command's normal duration; seed $KCACHE_SEED (printed), so a failure can
# be replayed.
source "$(dirname "$0")/lib.bash"
SEED=${KCACHE_SEED:-20240607}
RANDOM=$SEED
N_BUILD=$((40 * SOAK)) N_LIB=$((50 * SOAK)) N_IMPORT=$((30 * SOAK)) N_EXPORT=$((30 * SOAK))
mkdir -p proj/shaders
cat > proj/shaders/k.comp <<'GLSL'
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Data { float v[]; };
void main() { uint i = gl_GlobalInvocationID.x; v[i] = v[i] * float(N) + float(RUN); }
GLSL
# manifest RUN COUNT NAME: COUNT kernels NAME[N=..] whose RUN define changes
# every key, so each build recompiles and replaces every entry.
manifest() {
  printf '[defaults]\ndefines = { RUN = %d }\n[[kernel]]\nname = "%s"\nsource = "shaders/k.comp"\n[kernel.variants]\nN = [%s]\n' \
    "$1" "$3" "$(seq -s, 0 $(($2 - 1)))" > proj/kcache.toml
}
# window SETUP CMD...: the kill window in ms: the shortest of 3 runs of CMD
# (each after running the shell code SETUP), so that most kills land while
# the command runs even when the machine is busy.
window() {
  local setup=$1 best=1000000 t0 t1 ms; shift
  for _ in 1 2 3; do
    eval "$setup"
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1 || fail "probe run failed: $*"
    t1=$(date +%s%N)
    ms=$(( (t1 - t0) / 1000000 ))
    ((ms < best)) && best=$ms
  done
  echo $((best > 20 ? best : 20))
}
# kill_after MS PID: SIGKILL PID after a uniform random 0..MS milliseconds,
# then waits until it is gone (its descriptors, locks and mappings with it),
# so that the checks that follow see the store as a dead process left it.
# Sets OUTCOME to "killed" when it was still running, "finished" otherwise.
# Runs in this shell, not in $(...): only the parent can reap the process.
kill_after() {
  local ms=$(( (RANDOM * 32768 + RANDOM) % $1 )) rc=0
  sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
  kill -9 "$2" 2>/dev/null || true
  wait "$2" 2>/dev/null || rc=$?
  if ((rc == 137)); then OUTCOME=killed; else OUTCOME=finished; fi
}
# names DIR: sorted "namespace<TAB>kernel" lines of the store in DIR.
names() { "$KCACHE_RELTOOL" names "$1" | sort; }
# lost BEFORE AFTER: names in file BEFORE missing from file AFTER.
lost() { comm -23 "$1" "$2" | wc -l; }
echo "seed $SEED"

# 1. Builds. Each build replaces every entry (new RUN), so kills land in
# compiles and in write transactions alike.
run=0
window=$(window 'run=$((run + 1)); manifest $run 40 k' "$KCACHE" build proj/kcache.toml -j 2 --store build-store)
names build-store > before
killed=0 lost_total=0
for i in $(seq 1 "$N_BUILD"); do
  manifest $((i + 3)) 40 k
  "$KCACHE" build proj/kcache.toml -j 2 --store build-store >/dev/null 2>build.err & pid=$!
  kill_after "$window" $pid; [[ $OUTCOME == killed ]] && killed=$((killed + 1))
  check_store build-store >/dev/null
  names build-store > after
  n=$(lost before after); lost_total=$((lost_total + n))
  ((n == 0)) || fail "build run $i: $n committed entries lost"
  mv after before
done
# After the last kill, a build completes and finds nothing wrong.
expect_exit 0 "$KCACHE" build proj/kcache.toml -j 2 --store build-store
build_fig="builds: $N_BUILD runs ($killed killed mid-run, window ${window} ms), $lost_total entries lost"

# 2. Raw store writes: batches of 4 entries committed back to back; every
# batch logged as committed must be there whole, and no batch half there.
lib_killed=0
for i in $(seq 1 "$N_LIB"); do
  "$KCACHE_RELTOOL" write-loop lib-store batches.log "w$i" 4 2>/dev/null & pid=$!
  kill_after 150 $pid; [[ $OUTCOME == killed ]] && lib_killed=$((lib_killed + 1))
  "$KCACHE_RELTOOL" check-batches lib-store batches.log 4 > check.out || { cat check.out; fail "write run $i: batches lost or half-visible"; }
done
check_store lib-store >/dev/null
lib_fig="store writes: $N_LIB runs ($lib_killed killed), $(cat check.out)"

# 3. Imports: a 400-entry bundle into a store that already holds other
# entries. After a kill the store holds all 400 or none of them, and its
# other entries unchanged.
manifest 0 400 imp
expect_exit 0 "$KCACHE" build proj/kcache.toml -j 2 --store src-store
expect_exit 0 "$KCACHE" export --store src-store -o imp.kcb
names src-store | cut -f2 > bundle.names
manifest 0 40 base
expect_exit 0 "$KCACHE" build proj/kcache.toml -j 2 --store base-store
names base-store > base.names
window=$(window 'rm -rf probe && cp -a base-store probe' "$KCACHE" import imp.kcb --store probe)
imp_killed=0 whole=0 none=0 half=0
for i in $(seq 1 "$N_IMPORT"); do
  rm -rf t && cp -a base-store t
  "$KCACHE" import imp.kcb --store t >/dev/null 2>&1 & pid=$!
  kill_after "$window" $pid; [[ $OUTCOME == killed ]] && imp_killed=$((imp_killed + 1))
  check_store t >/dev/null
  names t > after
  n=$(lost base.names after)
  ((n == 0)) || fail "import run $i: $n entries of the store lost"
  present=$(cut -f2 after | grep -cxFf bundle.names || true)
  if ((present == 0)); then none=$((none + 1)); elif ((present == $(wc -l < bundle.names))); then whole=$((whole + 1)); else half=$((half + 1)); fi
  ((half == 0)) || fail "import run $i: $present of $(wc -l < bundle.names) bundle entries visible"
done
imp_fig="imports: $N_IMPORT runs ($imp_killed killed, window ${window} ms): $whole whole, $none none, $half half-visible"

# 4. Exports: the bundle file is absent or complete (written to a temporary
# file and renamed), and the store does not change.
st=$(state src-store)
window=$(window 'rm -f probe.kcb' "$KCACHE" export --store src-store -o probe.kcb)
exp_killed=0 complete=0 absent=0 temps=0
for i in $(seq 1 "$N_EXPORT"); do
  rm -rf exp && mkdir exp
  "$KCACHE" export --store src-store -o exp/out.kcb >/dev/null 2>&1 & pid=$!
  kill_after "$window" $pid; [[ $OUTCOME == killed ]] && exp_killed=$((exp_killed + 1))
  if [[ -e exp/out.kcb ]]; then
    rm -rf dry && cp -a base-store dry
    "$KCACHE" import exp/out.kcb --dry-run --store dry >dry.out 2>&1 || { cat dry.out; fail "export run $i: a partial bundle is visible at the output path"; }
    complete=$((complete + 1))
  else
    absent=$((absent + 1))
  fi
  temps=$((temps + $(find exp -type f ! -name out.kcb | wc -l)))
  [[ $(state src-store) == "$st" ]] || fail "export run $i changed the store"
done
exp_fig="exports: $N_EXPORT runs ($exp_killed killed, window ${window} ms): $complete complete bundles, $absent absent, 0 partial; $temps temporary files left by killed exports"

total=$((N_BUILD + N_LIB + N_IMPORT + N_EXPORT))
figure C2 "$total SIGKILL runs (seed $SEED), store opened and verified after every one: $build_fig; $lib_fig; $imp_fig; $exp_fig"
