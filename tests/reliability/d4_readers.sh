#!/usr/bin/env bash
# D4 (docs/reliability.md): more killed readers than the store has reader slots.
# LMDB keeps a killed reader's slot for as long as any process holds the store
# open, so a live holder stays up throughout. Each round fills every free slot
# with snapshots held by processes that are then SIGKILLed; kcache must clear
# the dead slots itself (on open, and again when the table is full): builds,
# inspects and full reads all succeed, and no "reader slot"/READERS_FULL
# message reaches the user. Sizes: 1024 slots (OpenOptions::max_readers),
# 2 rounds (x KCACHE_SOAK) = 2046+ killed readers.
source "$(dirname "$0")/lib.bash"
SLOTS=1024
ROUNDS=$((2 * SOAK))
PER_PROC=256
mkdir -p p && printf '#version 450\nlayout(local_size_x=1) in;\nvoid main() {}\n' > p/k.comp
printf '[[kernel]]\nname = "k"\nsource = "k.comp"\n[kernel.variants]\nN = [1, 2, 3]\n' > p/kcache.toml
expect_exit 0 "$KCACHE" build p/kcache.toml

# hold N: starts a process holding N snapshots; waits until it holds them.
hold() {
  local n=$1 log="hold.$RANDOM.log"
  "$KCACHE_RELTOOL" hold-readers "$KCACHE_STORE" "$n" >"$log" 2>&1 & local pid=$!
  for _ in $(seq 600); do
    grep -q '^holding' "$log" 2>/dev/null && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
  done
  HOLD_PID=$pid HOLD_LOG=$log
}

hold 1; holder=$HOLD_PID
grep -q '^holding 1$' "$HOLD_LOG" || fail "the live holder could not take a reader slot: $(cat "$HOLD_LOG")"
killed=0 full_checks=0 problems=0
for round in $(seq "$ROUNDS"); do
  free=$((SLOTS - 1))
  pids=()
  while ((free > 0)); do
    n=$((free < PER_PROC ? free : PER_PROC))
    hold "$n"
    grep -q "^holding $n\$" "$HOLD_LOG" || fail "round $round: could not hold $n readers: $(cat "$HOLD_LOG")"
    pids+=("$HOLD_PID")
    free=$((free - n))
  done
  # The table is full now: one more live reader is refused (proves the fill).
  hold 1
  if grep -q '^holding 1$' "$HOLD_LOG"; then fail "round $round: the reader table was not full"; fi
  full_checks=$((full_checks + 1))
  wait "$HOLD_PID" 2>/dev/null || true
  kill -9 "${pids[@]}"
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  killed=$((killed + SLOTS - 1))
  # Every dead slot is still taken; kcache must cope by itself.
  for cmd in "build p/kcache.toml" "inspect" "get k[N=2] -o k.spv"; do
    # shellcheck disable=SC2086
    "$KCACHE" $cmd >out 2>err || { cat err; fail "round $round: kcache $cmd failed with $(wc -l <err) lines"; }
    if grep -qiE 'reader slot|READERS_FULL|readers full' err; then cat err; problems=$((problems + 1)); fi
  done
  "$KCACHE_RELTOOL" state "$KCACHE_STORE" >/dev/null || problems=$((problems + 1))
done
kill -9 "$holder"; wait "$holder" 2>/dev/null || true
check_store "$KCACHE_STORE" >/dev/null
figure D4 "$ROUNDS rounds, $killed readers SIGKILLed holding slots ($SLOTS slots, a live holder kept them pinned); table verified full $full_checks times; kcache build/inspect/get after each round: all succeeded, $problems reader-slot errors shown"
((problems == 0)) || fail "$problems reader-slot problems reached the user"
