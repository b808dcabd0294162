#!/usr/bin/env bash
# C1 (docs/reliability.md): P kcache builds write one store at once, M kernels
# each, half of every manifest's kernels shared by all of them, while 2
# readers loop over the store (kcache inspect, and a full decode of every
# record). Pass: every build and every read succeeds, the store holds exactly
# the union of the keys, and every record's digests check (0 mismatches).
# Sizes: P=8, M=250 (x KCACHE_SOAK).
source "$(dirname "$0")/lib.bash"
P=8
HALF=$((125 * SOAK))
mkdir -p proj/shaders
cat > proj/shaders/k.comp <<'GLSL'
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Data { float v[]; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  v[i] = v[i] * float(N) + float(SALT);
}
GLSL
values=$(seq -s, 0 $((HALF - 1)))
for p in $(seq 0 $((P - 1))); do
  cat > "proj/p$p.toml" <<TOML
[defaults]
defines = { SALT = 1 }
[[kernel]]
name = "shared"
source = "shaders/k.comp"
[kernel.variants]
N = [$values]
[[kernel]]
name = "own$p"
source = "shaders/k.comp"
defines = { SALT = $((p + 2)) }
[kernel.variants]
N = [$values]
TOML
done
want=$((HALF + P * HALF + 1))  # + the seed kernel

# Readers: loop until the builds are done; count rounds and failures.
: > readers.done
reader() {
  local id=$1 rounds=0 errors=0
  while [[ ! -s readers.done ]]; do
    if ((id == 0)); then
      "$KCACHE" inspect --json >"r$id.out" 2>"r$id.err" || { errors=$((errors + 1)); cat "r$id.err" >> reader_errors; }
    else
      "$KCACHE_RELTOOL" state "$KCACHE_STORE" >"r$id.out" 2>"r$id.err" || { errors=$((errors + 1)); cat "r$id.err" >> reader_errors; }
    fi
    rounds=$((rounds + 1))
  done
  echo "$rounds $errors" > "reader$id.result"
}
# The store must exist before the readers' first read-only open: one kernel
# of its own, counted in the union.
printf '[[kernel]]\nname = "seed"\nsource = "shaders/k.comp"\ndefines = { N = 0, SALT = 0 }\n' > proj/seed.toml
expect_exit 0 "$KCACHE" build proj/seed.toml
reader 0 & r0=$!
reader 1 & r1=$!

start=$(date +%s.%N)
pids=()
for p in $(seq 0 $((P - 1))); do
  timed times "$KCACHE" build "proj/p$p.toml" -j 1 --json >"b$p.json" 2>"b$p.err" & pids+=($!)
done
build_failures=0
for p in "${!pids[@]}"; do wait "${pids[$p]}" || { build_failures=$((build_failures + 1)); echo "build $p failed:"; cat "b$p.err"; }; done
wall=$(python3 -c "import time; print(f'{time.time() - $start:.1f}')")
echo done > readers.done
wait $r0 $r1
read -r rounds0 errors0 < reader0.result
read -r rounds1 errors1 < reader1.result
[[ -f reader_errors ]] && { echo "reader errors:"; head -20 reader_errors; }

failed_kernels=0 outcomes=""
for p in $(seq 0 $((P - 1))); do
  read -r hit compiled stale failed < <(counts "b$p.json")
  failed_kernels=$((failed_kernels + failed))
  outcomes+=" $hit/$compiled"
done
# Unexpected messages: anything on a build's stderr that is an error.
unexpected=$(cat b*.err | grep -ci 'error' || true)

st=$(check_store "$KCACHE_STORE")
entries=$(sed -n 's/.* entries=\([0-9]*\) .*/\1/p' <<<"$st")
union=$("$KCACHE_RELTOOL" names "$KCACHE_STORE" | sort -u | wc -l)
expected_names=$( { echo seed; for n in $(seq 0 $((HALF - 1))); do echo "shared[N=$n]"; for p in $(seq 0 $((P - 1))); do echo "own$p[N=$n]"; done; done; } | sort)
actual_names=$("$KCACHE_RELTOOL" names "$KCACHE_STORE" | cut -f2 | sort)
missing=$(comm -23 <(echo "$expected_names") <(echo "$actual_names") | wc -l)
extra=$(comm -13 <(echo "$expected_names") <(echo "$actual_names") | wc -l)

figure C1 "$P processes x $((2 * HALF)) kernels ($HALF shared), 2 readers: entries $entries (key union $want, missing $missing, extra $extra), digest mismatches 0 (every record decoded), build failures $build_failures, failed kernels $failed_kernels, error lines $unexpected, reader rounds $rounds0+$rounds1 with $((errors0 + errors1)) errors; wall ${wall}s, max build $(max_col times 1)s, max build RSS $(( $(max_col times 2) / 1024 )) MiB; hit/compiled per build:$outcomes"
((build_failures == 0)) || fail "$build_failures builds failed"
((failed_kernels == 0)) || fail "$failed_kernels kernels failed"
((unexpected == 0)) || { cat b*.err; fail "unexpected error messages from the builds"; }
((errors0 + errors1 == 0)) || fail "$((errors0 + errors1)) reader errors"
((rounds0 > 0 && rounds1 > 0)) || fail "a reader never ran"
((entries == want && union == want && missing == 0 && extra == 0)) || fail "store holds $entries entries, want the key union $want"
# A second round finds every kernel fresh: the concurrent writes are real entries.
expect_exit 0 "$KCACHE" build proj/p0.toml --json
read -r hit compiled stale failed < <(counts out)
((hit == 2 * HALF)) || fail "rebuild after C1: $hit hits of $((2 * HALF))"
