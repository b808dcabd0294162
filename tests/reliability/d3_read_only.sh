#!/usr/bin/env bash
# D3 (docs/reliability.md): a read-only store. Three ways a store is read-only:
# --read-only on a writable store, a read-only mount, and a store owned by
# another user. Each time: inspect, get (and export, when this kcache has it)
# work; build (and import) are refused with exit 4 and a message that says
# why; the store's files are byte-for-byte unchanged.
source "$(dirname "$0")/lib.bash"
private_mounts "$@" || NO_NS=1
mkdir -p p && printf '#version 450\nlayout(local_size_x=1) in;\nvoid main() {}\n' > p/k.comp
printf '[[kernel]]\nname = "k"\nsource = "k.comp"\n[kernel.variants]\nN = [1, 2]\n' > p/kcache.toml
printf '[[kernel]]\nname = "other"\nsource = "k.comp"\n' > p/other.toml

ways=0 refusals=0 reads=0
# check_read_only DIR WAY [RUN-PREFIX...]: the three promises on store DIR.
check_read_only() {
  local dir=$1 way=$2; shift 2
  local run=("$@") before after st_before st_after
  before=$(cd "$dir" && sha256sum data.mdb)
  st_before=$(state "$dir")
  "${run[@]}" "$KCACHE" inspect --store "$dir" --read-only >out 2>err || { cat err; fail "$way: inspect failed"; }
  expect_in out "k[N=2]"
  "${run[@]}" "$KCACHE" get 'k[N=1]' --store "$dir" --read-only -o - >k.spv 2>err || { cat err; fail "$way: get failed"; }
  [[ $(head -c 4 k.spv | od -An -tx1 | tr -d ' ') == 03022307 ]] || fail "$way: get did not write SPIR-V"
  reads=$((reads + 2))
  if has_verb export; then
    "${run[@]}" "$KCACHE" export --store "$dir" --read-only -o "$EXPORT_DIR/ro.kcb" >out 2>err || { cat err; fail "$way: export failed"; }
    reads=$((reads + 1))
  fi
  # Writers are refused, clearly. (No --read-only here: the store itself is read-only.)
  local write_flag=()
  [[ $way == flag ]] && write_flag=(--read-only)
  local rc=0
  "${run[@]}" "$KCACHE" build p/other.toml --store "$dir" "${write_flag[@]}" >out 2>err || rc=$?
  [[ $rc -eq 4 ]] || { cat err; fail "$way: build exited $rc, want 4"; }
  grep -qiE 'read-only|not writable|permission' err || { cat err; fail "$way: build refusal does not say the store is read-only"; }
  refusals=$((refusals + 1))
  if has_verb import && [[ -f $EXPORT_DIR/ro.kcb ]]; then
    rc=0
    "${run[@]}" "$KCACHE" import "$EXPORT_DIR/ro.kcb" --store "$dir" "${write_flag[@]}" >out 2>err || rc=$?
    [[ $rc -eq 4 ]] || { cat err; fail "$way: import exited $rc, want 4"; }
    refusals=$((refusals + 1))
  fi
  after=$(cd "$dir" && sha256sum data.mdb)
  st_after=$(state "$dir")
  [[ $before == "$after" && $st_before == "$st_after" ]] || fail "$way: the store changed: $st_before -> $st_after"
  ways=$((ways + 1))
  echo "$way: read-only checks passed"
}
EXPORT_DIR=$WORK/exports
mkdir -p "$EXPORT_DIR"

# 1. --read-only on a writable store.
expect_exit 0 "$KCACHE" build p/kcache.toml --store s1
check_read_only s1 flag

# 2. A read-only mount (needs a private mount namespace).
skipped=""
if [[ -z ${NO_NS:-} ]] && mkdir -p mnt && mount -t tmpfs -o size=16m tmpfs mnt 2>/dev/null; then
  expect_exit 0 "$KCACHE" build p/kcache.toml --store mnt/s
  mount -o remount,ro mnt || fail "cannot remount read-only"
  check_read_only mnt/s mount
  # The same without --read-only: kcache finds out by itself.
  expect_exit 0 "$KCACHE" inspect --store mnt/s
else
  skipped+=" read-only-mount(no mount namespace)"
fi

# 3. A store owned by another user (root would ignore file modes).
if [[ $(id -u) -eq 0 ]] && command -v setpriv >/dev/null; then
  mkdir -p shared && chmod 755 shared "$WORK"
  expect_exit 0 "$KCACHE" build p/kcache.toml --store shared/s
  chmod -R go-w shared/s
  as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent)
  if "${as_nobody[@]}" test -r shared/s/data.mdb -a -r p/other.toml; then
    chmod 777 "$EXPORT_DIR"
    check_read_only shared/s other-user "${as_nobody[@]}"
  else
    skipped+=" other-user(the test folder is not readable by nobody)"
  fi
else
  skipped+=" other-user(not root)"
fi
figure D3 "$ways ways of read-only (flag, mount, other user${skipped:+; skipped:$skipped}): $reads reads succeeded, $refusals writes refused with exit 4 and a clear message, data.mdb and the canonical dump unchanged every time"
((ways >= 2)) || fail "only $ways ways could be tested"
