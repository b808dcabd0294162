#!/usr/bin/env bash
# Damaged pages inside data.mdb (issue 27 item 3). LMDB keeps no page
# checksums, so a damaged page can make a read crash. `kcache verify` and
# `kcache inspect` walk the store in a child process: a crash there is a
# "store damaged" error (exit 6) naming what to do, never a signal of the
# command (docs/reliability.md "A damaged store").
#  1. One entry's value size made 2 GiB (what a flipped high byte does):
#     reading that entry crashes.
#  2. Random single-byte flips: every run exits with a documented code.
source "$(dirname "$0")/lib.bash"

no_signal() {
  local got=0
  "$@" >"$WORK/out" 2>"$WORK/err" || got=$?
  ((got < 128)) || { cat "$WORK/err"; fail "killed by signal $((got - 128)): $*"; }
  echo "$got"
}

example_store good
[[ $("$KCACHE" verify --store good >/dev/null 2>&1; echo $?) == 0 ]] || fail "the example store does not verify"

# 1. The first node of the live 'entries' tree that holds its value in
# overflow pages (F_BIGDATA) says its value is 2 GiB (a flipped high byte of
# its size): LMDB hands out a value running far past the end of the file,
# and reading it is SIGBUS. Found from the newest meta page down, so the
# page is live.
cp -r good bad
python3 - bad/data.mdb <<'PY' || fail "no overflow node to damage"
import struct, sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
psize = 4096
page = lambda n: data[n * psize:(n + 1) * psize]
metas = [page(n) for n in (0, 1)]
meta = max(metas, key=lambda m: struct.unpack_from("<Q", m, 16 + 24 + 96 + 8)[0])  # newest txnid
main_root = struct.unpack_from("<Q", meta, 16 + 24 + 48 + 40)[0]

def nodes(p):
    lower = struct.unpack_from("<H", p, 12)[0]
    for i in range((lower - 16) // 2):
        node = struct.unpack_from("<H", p, 16 + 2 * i)[0]
        lo, hi, flags, ksize = struct.unpack_from("<HHHH", p, node)
        yield node, lo | hi << 16, flags, ksize

def first_leaf(root):
    p = page(root)
    while struct.unpack_from("<H", p, 10)[0] & 0x01:  # a branch page: its first child
        node = next(nodes(p))
        p = page(node[1] | node[2] << 32)
    return p

entries_root = None
for node, size, flags, ksize in nodes(first_leaf(main_root)):
    if bytes(page(main_root)[node + 8:node + 8 + ksize]) == b"entries":
        entries_root = struct.unpack_from("<Q", page(main_root), node + 8 + ksize + 40)[0]
leaf = first_leaf(entries_root)
pgno = struct.unpack_from("<Q", leaf, 0)[0]
for node, size, flags, ksize in nodes(leaf):
    if flags & 0x01:  # F_BIGDATA: its size's high half is mn_hi
        struct.pack_into("<H", data, pgno * psize + node + 2, 0x7fff)
        open(path, "wb").write(data)
        sys.exit(0)
sys.exit(1)
PY
for cmd in verify "verify --json" inspect "inspect --json"; do
  # shellcheck disable=SC2086
  code=$(no_signal "$KCACHE" $cmd --store bad)
  [[ $code == 6 ]] || { cat "$WORK/out" "$WORK/err"; fail "$cmd: exit $code, expected 6 (store damaged)"; }
  expect_in "$WORK/err" "is damaged: reading it crashed"
  expect_in "$WORK/err" "rebuild"
done

# 2. Random single-byte flips (seeded: the same flips every run).
flips=${KCACHE_FLIPS:-8}
size=$(stat -c %s good/data.mdb)
declare -A seen
for ((i = 0; i < flips; i++)); do
  rm -rf flip && cp -r good flip
  read -r offset mask < <(python3 -c "import random; r = random.Random($i); print(r.randrange($size), 1 << r.randrange(8))")
  python3 -c "
import sys
f = open('flip/data.mdb', 'r+b'); f.seek($offset); b = f.read(1)[0]; f.seek($offset); f.write(bytes([b ^ $mask]))"
  code=$(no_signal "$KCACHE" verify --store flip)
  case $code in
    0 | 1 | 4 | 6) seen[$code]=$((${seen[$code]:-0} + 1)) ;;
    *) cat "$WORK/err"; fail "flip $i (byte $offset ^ $mask): verify exit $code" ;;
  esac
done
note "verify after $flips random flips: exit codes $(for c in "${!seen[@]}"; do printf '%s×%s ' "$c" "${seen[$c]}"; done)"
