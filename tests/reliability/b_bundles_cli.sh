#!/usr/bin/env bash
# B1-B4 (docs/reliability.md) through `kcache import`, as a user meets them: a
# real exported and signed bundle, damaged (cut short, bits flipped, version,
# signature, fingerprint, trailing bytes) or replaced by a bomb or a 10^6-entry
# head (hostile.py), imported with trust configured into a store that holds
# other entries. Every import must exit 5 or 6 with one clear message, leave
# the store unchanged (last transaction id and canonical dump digest), and
# stay under fixed time and memory caps; the figures give the maxima.
# rel_bundles.cpp does the exhaustive counts at library level.
# Sizes: 50 truncations, 50 flips (x KCACHE_SOAK: the gate runs 1, a deep
# run 2), 9 named cases, 2 bombs.
source "$(dirname "$0")/lib.bash"
HOSTILE="$(dirname "$0")/hostile.py"
RANDOM=4242
RSS_CAP_KIB=$((512 * 1024)) TIME_CAP_S=30
mkdir -p proj/shaders
printf '#version 450\nlayout(local_size_x = 64) in;\nlayout(std430, binding = 0) buffer D { float v[]; };\nvoid main() { v[gl_GlobalInvocationID.x] *= float(N); }\n' > proj/shaders/k.comp
printf '[[kernel]]\nname = "ship"\nsource = "shaders/k.comp"\n[kernel.variants]\nN = [%s]\n' "$(seq -s, 0 59)" > proj/ship.toml
printf '[[kernel]]\nname = "resident"\nsource = "shaders/k.comp"\n[kernel.variants]\nN = [1, 2, 3]\n' > proj/resident.toml
expect_exit 0 "$KCACHE" build proj/ship.toml --store src
expect_exit 0 "$KCACHE" keygen -o ci
expect_exit 0 "$KCACHE" keygen -o stranger
expect_exit 0 "$KCACHE" export --store src --sign ci.key -o good.kcb
# Format 1: hostile.py's bomb rewrites a format-1 head (format 2's frames are
# checked by the same code; its hostile bytes: unit_bundle and the fuzz target).
expect_exit 0 "$KCACHE" export --store src --format-version 1 -o unsigned.kcb
expect_exit 0 "$KCACHE" export --store src --sign stranger.key -o stranger.kcb
expect_exit 0 "$KCACHE" build proj/resident.toml --store target
before=$(state target)
# Positive control: the good bundle imports (into a copy).
cp -a target control
expect_exit 0 "$KCACHE" import good.kcb --trust ci.pub --store control
size=$(stat -c %s good.kcb)
head=$(python3 -c "import sys; sys.path.insert(0, '$(dirname "$HOSTILE")'); import hostile; print(hostile.head_size(open('good.kcb','rb').read()))")

cases=0 refused=0
TRUST=(--trust ci.pub)
declare -A codes
# try WHAT FILE [EXTRA ARGS]: one import (with "${TRUST[@]}") that must be refused.
try() {
  local what=$1 file=$2; shift 2
  local rc=0
  timed times "$KCACHE" import "$file" "${TRUST[@]}" --store target "$@" >out 2>err || rc=$?
  cases=$((cases + 1))
  if [[ $rc -eq 5 || $rc -eq 6 ]]; then refused=$((refused + 1)); codes[$rc]=$((${codes[$rc]:-0} + 1))
  else cat err; fail "$what: exit $rc, want 5 or 6"; fi
  [[ $(wc -l < err) -ge 1 ]] && grep -q '^kcache: error: ' err || { cat err; fail "$what: no error message"; }
  [[ $(state target) == "$before" ]] || fail "$what: the store changed"
  LAST_ERR=$(head -1 err)
}
cut_at() { head -c "$1" good.kcb > cut.kcb; }
flip() { python3 -c "
import sys; b = bytearray(open('good.kcb','rb').read())
for bit in map(int, sys.argv[1:]): b[bit // 8] ^= 1 << (bit % 8)
open('flip.kcb','wb').write(b)" "$@"; }

# B1: cut short: 40 offsets in the first and last 4 KiB each, 20 anywhere, and empty.
: > empty.kcb
try "empty file" empty.kcb
for k in $(seq 1 $((20 * SOAK))); do cut_at $((RANDOM % 4096)); try "cut in the first 4 KiB" cut.kcb; done
for k in $(seq 1 $((20 * SOAK))); do cut_at $((size - 1 - RANDOM % 4096)); try "cut in the last 4 KiB" cut.kcb; done
for k in $(seq 1 $((10 * SOAK))); do cut_at $(( (RANDOM * 32768 + RANDOM) % size )); try "cut anywhere" cut.kcb; done
b1="$cases cut-short imports refused"

# B2: 60 single bits in the head, 40 anywhere (1-4 bits).
n0=$cases
for k in $(seq 1 $((30 * SOAK))); do flip $(( (RANDOM * 32768 + RANDOM) % (head * 8) )); try "head bit" flip.kcb; done
for k in $(seq 1 $((20 * SOAK))); do
  bits=(); for _ in $(seq 1 $((1 + RANDOM % 4))); do bits+=($(( (RANDOM * 32768 + RANDOM) % (size * 8) ))); done
  flip "${bits[@]}"; try "random bits" flip.kcb
done
b2="$((cases - n0)) bit-flipped imports refused"

# B3: named cases; each message must name what is wrong.
n0=$cases
python3 -c "
b = bytearray(open('good.kcb','rb').read()); b[4] = 9; open('v9.kcb','wb').write(b)"
try "format version 9" v9.kcb; grep -q 'version 9' err || fail "version: $LAST_ERR"
try "unsigned with trust" unsigned.kcb; grep -qi 'unsigned' err || fail "unsigned: $LAST_ERR"
try "untrusted signer" stranger.kcb; grep -qi 'not trusted' err || fail "untrusted: $LAST_ERR"
cp good.kcb trailing.kcb && printf 'x' >> trailing.kcb
try "trailing byte" trailing.kcb; grep -qi 'trailing' err || fail "trailing: $LAST_ERR"
try "other target" good.kcb --fingerprint vulkan1.3; grep -q 'vulkan1.3' err || fail "fingerprint: $LAST_ERR"
[[ $(tail -1 times | awk '{print $3}') == 5 ]] || fail "a fingerprint mismatch must exit 5"
cp good.kcb resealed.kcb
python3 -c "
b = bytearray(open('resealed.kcb','rb').read()); b[100] ^= 1; open('resealed.kcb','wb').write(b)"
python3 "$HOSTILE" reseal resealed.kcb
try "header changed after signing (digests recomputed)" resealed.kcb
b3="$((cases - n0)) named cases refused with messages naming the problem"

# B4: a decompression bomb and a 10^6-entry head, under the caps.
n0=$cases
# Unsigned and without trust, so they reach the payload and the index parser.
TRUST=()
python3 "$HOSTILE" bomb unsigned.kcb bomb.kcb
try "4 GiB bomb" bomb.kcb; grep -q 'decompress' err || fail "bomb: $LAST_ERR"
python3 "$HOSTILE" million million.kcb
try "10^6 tiny entries" million.kcb
b4="$((cases - n0)) bombs refused"

max_s=$(max_col times 1) max_kib=$(max_col times 2)
figure B "kcache import with --trust into a store of $(sed 's/.* entries=\([0-9]*\) .*/\1/' <<<"$before") entries, $size-byte signed bundle: $cases cases, $refused refused (exit 6: ${codes[6]:-0}, exit 5: ${codes[5]:-0}), store unchanged every time; B1 $b1; B2 $b2; B3 $b3; B4 $b4 (4 GiB bomb, $(($(stat -c %s million.kcb) >> 20)) MiB 10^6-entry head); max ${max_s}s and max peak RSS $((max_kib / 1024)) MiB per import (caps ${TIME_CAP_S}s, $((RSS_CAP_KIB / 1024)) MiB)"
((refused == cases)) || fail "$((cases - refused)) hostile bundles accepted"
python3 -c "import sys; sys.exit(0 if float('$max_s') <= $TIME_CAP_S else 1)" || fail "an import took ${max_s}s"
((max_kib <= RSS_CAP_KIB)) || fail "an import peaked at $((max_kib / 1024)) MiB"
