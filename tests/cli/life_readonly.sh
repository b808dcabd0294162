#!/usr/bin/env bash
# A read-only store: inspect, get, export, verify, stats and gc --dry-run
# work and leave the store's files byte-identical (sha256 of data.mdb and
# lock.mdb); build, import, gc and compact refuse with exit 4.
#
# "No write permission" is tested by running kcache as another user (nobody,
# via setpriv) when the test runs as root — root ignores permission bits —
# and by removing write permission otherwise. --read-only on a writable store
# keeps data.mdb byte-identical and the store's last transaction unchanged;
# it still takes a reader slot in lock.mdb (so that a concurrent writer
# cannot reuse the pages it reads), which changes that file's bytes.
source "$(dirname "$0")/lib.bash"
mkdir -p p
printf '#version 450\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer B { uint d[]; };\nvoid main() { d[0] = VALUE; }\n' > p/k.comp
i=0
for k in a b c; do i=$((i + 1)); printf '[[kernel]]\nname = "%s"\nsource = "k.comp"\ndefines = { VALUE = %d }\n' $k $i >> p/kcache.toml; done
expect_exit 0 "$KCACHE" build p/kcache.toml
expect_exit 0 "$KCACHE" build p/kcache.toml   # a run log and usage records to read
mkdir -p "$WORK/outdir"; chmod 777 "$WORK/outdir"
expect_exit 0 "$KCACHE" export --namespace spirv/vulkan1.2 -o "$WORK/b.kcb"

sums() { sha256sum "$KCACHE_STORE/data.mdb" "$KCACHE_STORE/lock.mdb"; }
read_commands=(
  "inspect"
  "inspect --json"
  "inspect --manifest $WORK/p/kcache.toml"
  "inspect a --why --manifest $WORK/p/kcache.toml"
  "inspect --stale --json"
  "inspect --foreign"
  "get a -o $WORK/outdir/a.spv"
  "export --namespace spirv/vulkan1.2 -o $WORK/outdir/x.kcb"
  "verify"
  "stats"
  "stats --json --last 1"
  "gc --older-than 0s --dry-run"
)
write_commands=(
  "build $WORK/p/kcache.toml"
  "import $WORK/b.kcb"
  "gc --older-than 0s"
  "compact"
)

if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null; then
  as_reader() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
  note "no write permission: kcache runs as nobody"
else
  chmod -R a-w "$KCACHE_STORE"
  trap 'chmod -R u+w "$KCACHE_STORE"' EXIT
  as_reader() { "$@"; }
  note "no write permission: chmod a-w"
fi
before=$(sums)
for cmd in "${read_commands[@]}"; do
  # shellcheck disable=SC2086
  expect_exit 0 as_reader "$KCACHE" $cmd
  [[ $(sums) == "$before" ]] || fail "'$cmd' changed the store's files"
done
note "   ${#read_commands[@]} read commands, files byte-identical"
[[ -s "$WORK/outdir/a.spv" ]] || fail "get wrote nothing"
for cmd in "${write_commands[@]}"; do
  # shellcheck disable=SC2086
  expect_exit 4 as_reader "$KCACHE" $cmd
  expect_in err "not writable"
  [[ $(sums) == "$before" ]] || fail "refused '$cmd' changed the store's files"
done

note "--read-only on a writable store"
chmod -R u+w "$KCACHE_STORE" 2>/dev/null || true
data_before=$(sha256sum "$KCACHE_STORE/data.mdb")
runs_before=$("$KCACHE" stats --json --read-only | python3 -c 'import json,sys; print(json.load(sys.stdin)["logged"])')
for cmd in "${read_commands[@]}"; do
  # shellcheck disable=SC2086
  expect_exit 0 "$KCACHE" $cmd --read-only
  [[ $(sha256sum "$KCACHE_STORE/data.mdb") == "$data_before" ]] || fail "'$cmd --read-only' changed data.mdb"
done
for cmd in "${write_commands[@]}"; do
  # shellcheck disable=SC2086
  expect_exit 4 "$KCACHE" $cmd --read-only
  expect_in err "read-only"
  [[ $(sha256sum "$KCACHE_STORE/data.mdb") == "$data_before" ]] || fail "refused '$cmd --read-only' changed data.mdb"
done
[[ $("$KCACHE" stats --json --read-only | python3 -c 'import json,sys; print(json.load(sys.stdin)["logged"])') == "$runs_before" ]] \
  || fail "a read-only command recorded a run"
# build --no-record-usage on a writable store: a hit writes nothing at all.
expect_exit 0 "$KCACHE" build p/kcache.toml --no-record-usage
[[ $(sha256sum "$KCACHE_STORE/data.mdb") == "$data_before" ]] || fail "build --no-record-usage wrote"
