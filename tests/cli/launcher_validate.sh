#!/usr/bin/env bash
# The launcher's validation policy (issue 41), on a generated stand-in for a
# library's own shader generator: plain kernels and kernels whose modules
# use a capability SPIRV-Tools 2023.1 does not know (as an ML library's
# cooperative-matrix kernels do), compiled without -O as that generator does.
#   - without a policy, every run hands the unknown ones to the real glslc
#     (counted by reason in `kcache stats`, listed as left out by
#     `manifest from-commands --from-store`);
#   - with launcher_validate (`PATTERN=known`), they are compiled and stored
#     once, flagged, and a warm run runs the real glslc for none of them;
#   - the policy is part of the key (strict never gets a `known` entry), and
#     a store may not set it.
source "$(dirname "$0")/lib.bash"
command -v glslc >/dev/null || fail "glslc is needed (scripts/setup installs it)"
REAL_GLSLC=$(command -v glslc)

mkdir -p proj/.git proj/shaders proj/out bin
for i in 1 2 3 4 5 6; do
  cat >"proj/shaders/plain_$i.comp" <<EOF
#version 450
layout(local_size_x = $((i * 16))) in;
layout(std430, binding = 0) buffer Data { float values[]; } data;
void main() { data.values[gl_GlobalInvocationID.x] *= $i.0; }
EOF
done
for i in 1 2 3; do
  cat >"proj/shaders/coopmat_$i.comp" <<EOF
#version 450
#extension GL_EXT_spirv_intrinsics : require
// OpFAdd declared as needing a capability and extension SPIRV-Tools 2023.1
// does not know: valid SPIR-V that spirv-val cannot check.
layout(local_size_x = $((i * 32))) in;
layout(std430, binding = 0) buffer Data { float values[]; } data;
spirv_instruction(extensions = ["SPV_VALVE_mixed_float_dot_product"], capabilities = [6912], id = 129)
float add(float a, float b);
void main() { data.values[$i] = add(data.values[1], data.values[2]); }
EOF
done
# The real glslc, logging each command it is given.
cat >bin/real-glslc <<EOF
#!/bin/sh
echo "\$*" >>"$WORK/real.log"
exec "$REAL_GLSLC" "\$@"
EOF
chmod +x bin/real-glslc
ln -s "$KCACHE" bin/glslc
export KCACHE_GLSLC="$WORK/bin/real-glslc"
: >real.log

# generate: the stand-in generator, every kernel through `glslc` on PATH.
generate() {
  local src
  for src in proj/shaders/*.comp; do
    (cd proj && PATH="$WORK/bin:$PATH" glslc -c "shaders/${src##*/}" -o "out/$(basename "$src" .comp).spv") \
      || fail "glslc $src failed"
  done
}
real_runs() { wc -l <"$WORK/real.log"; }

note "glslc's own modules, for comparison"
for src in proj/shaders/*.comp; do
  (cd proj && "$REAL_GLSLC" -c "shaders/${src##*/}" -o "$WORK/glslc-$(basename "$src" .comp).spv")
done

note "no policy: the 3 unknown modules go to the real glslc on every run"
generate
[[ $(real_runs) -eq 3 ]] || fail "cold run: $(real_runs) real glslc runs, expected 3: $(cat real.log)"
generate
[[ $(real_runs) -eq 6 ]] || fail "warm run: $(real_runs) real glslc runs, expected 6"
grep -q coopmat real.log && ! grep -q plain real.log || fail "the real glslc ran other commands: $(cat real.log)"
expect_exit 0 "$KCACHE" stats
expect_in out "launcher: 18 compile commands, 12 served by kcache, 6 run by the real program"
expect_in out "spirv-val does not know what the module uses"
expect_exit 0 "$KCACHE" manifest from-commands --from-store -o proj/kcache.toml
expect_in out "3 outputs left out, the real program built them (spirv-val does not know what the module uses"

note "launcher_validate = known for them: stored once, then no real glslc at all"
expect_exit 0 "$KCACHE" config set --user launcher_validate 'strict out/coopmat_*.spv=known'
generate
[[ $(real_runs) -eq 6 ]] || fail "with the policy: the real glslc ran again: $(tail -n +7 real.log)"
expect_exit 0 "$KCACHE" stats --zero
sleep 1.1  # --zero counts from the next second on
generate
[[ $(real_runs) -eq 6 ]] || fail "warm with the policy: the real glslc ran again"
expect_exit 0 "$KCACHE" stats --json
[[ $(json_get out '(j["totals"]["hit"], j["totals"]["launcher"]["commands"], sum(j["totals"]["launcher"]["not_cacheable"].values()))') \
  == "(9, 9, 0)" ]] || fail "warm run with the policy: $(cat out)"
# glslc's bytes but for the generator word (kcache is not shaderc).
same_module() { python3 -c 'import sys; a, b = (open(f, "rb").read() for f in sys.argv[1:]); sys.exit(not (len(a) == len(b) > 12 and a[:8] == b[:8] and a[12:] == b[12:]))' "$1" "$2"; }
for src in proj/shaders/*.comp; do
  name=$(basename "$src" .comp)
  same_module "proj/out/$name.spv" "glslc-$name.spv" || fail "$name.spv differs from glslc's"
done
expect_exit 0 "$KCACHE" inspect --json
json_get out '"\n".join(e["kernel"] for e in j["entries"] if e["kernel"].startswith("shaders.coopmat_"))' >coopmat.names
flagged=0
while read -r kernel; do
  expect_exit 0 "$KCACHE" inspect "$kernel" --json
  [[ $(json_get out 'j["entries"][0]["validation"]') == validator_unsupported ]] && flagged=$((flagged + 1))
done <coopmat.names
[[ $flagged -eq 3 ]] || fail "expected the 3 coopmat entries flagged, got $flagged of $(wc -l <coopmat.names)"

note "the policy is part of the key: under strict again, the known entries serve nothing"
expect_exit 0 "$KCACHE" config unset --user launcher_validate
generate
[[ $(real_runs) -eq 9 ]] || fail "strict again: $(real_runs) real glslc runs, expected 9"

note "a store may not weaken validation"
expect_exit 2 "$KCACHE" config set launcher_validate known
expect_in err "launcher_validate"
echo "ok"
