#!/usr/bin/env bash
# Store problems are clear messages with documented exit codes, and nothing
# is half-written: no temporary file is left behind (*.tmp-*), a path that
# is not a store is left byte-for-byte as it was, and a refused or read-only
# command leaves the store's data file unchanged.
source "$(dirname "$0")/lib.bash"

# snapshot DIR: every file under DIR with its SHA-256, except the two lock
# files (LMDB's lock.mdb, a reader table that any reader may claim a slot in,
# and kcache.lock, which is empty), which are listed by name only.
snapshot() {
  (cd "$1" && find . -type f ! -name lock.mdb ! -name kcache.lock -print0 | sort -z | xargs -0r sha256sum
   find . \( -name lock.mdb -o -name kcache.lock \) | sort)
}
# data_files DIR: as snapshot, without the lock files at all.
data_files() { snapshot "$1" | grep -vE '^\./(lock\.mdb|kcache\.lock)$' || true; }
# no_temps: no temporary file from an atomic write is left anywhere here.
no_temps() {
  local left
  left=$(find "$WORK" -name '*.tmp-*' -o -name '*.tmp' | head -5)
  [[ -z $left ]] || fail "$1: temporary files left behind: $left"
}
# top_level: the names in $WORK (out and err are expect_exit's).
top_level() { ls -A "$WORK" | grep -vxE 'out|err' | sort; }

mkdir -p p && printf '#version 450\nlayout(local_size_x=1) in;\nvoid main() {}\n' > p/k.comp
printf '[[kernel]]\nname = "k"\nsource = "k.comp"\n' > p/kcache.toml

# A file where the store should be: refused, the file untouched, nothing created beside it.
echo "not a directory" > afile
before=$(top_level)
expect_exit 4 "$KCACHE" build p/kcache.toml --store afile
expect_in err "afile"
[[ $(cat afile) == "not a directory" ]] || fail "afile was changed: $(head -c 100 afile)"
[[ $(top_level) == "$before" ]] || fail "files appeared beside afile: $(comm -13 <(echo "$before") <(top_level))"
no_temps "store is a file"

# Not an LMDB store: refused as corruption (exit 6), its data file as it was
# and nothing but the (empty) lock files created beside it.
mkdir -p garbage && head -c 65536 /dev/urandom > garbage/data.mdb
before=$(data_files garbage)
expect_exit 6 "$KCACHE" inspect --store garbage
expect_in err "garbage"
[[ $(data_files garbage) == "$before" ]] || fail "inspect changed the garbage store: $(diff <(echo "$before") <(data_files garbage))"
expect_exit 6 "$KCACHE" build p/kcache.toml --store garbage
[[ $(data_files garbage) == "$before" ]] || fail "build changed the garbage store: $(diff <(echo "$before") <(data_files garbage))"
[[ ! -s garbage/kcache.lock ]] || fail "kcache.lock in the garbage store is not empty"
no_temps "garbage store"

# A good store: a refused write (--read-only) and read-only commands leave its
# data file and its entries exactly as they were.
expect_exit 0 "$KCACHE" build p/kcache.toml --store good
[[ -s good/data.mdb ]] || fail "the build wrote no store"
before=$(snapshot good)
entries() { "$KCACHE" inspect --store good --read-only --json >"$WORK/entries.json" 2>&1 || fail "inspect: $(cat "$WORK/entries.json")"
  json_get "$WORK/entries.json" 'sorted((e["namespace"], e["kernel"], e["id"], e["ir"], e["created"]) for e in j["entries"])'; }
want=$(entries)
[[ $want == *"'k'"* ]] || fail "good store does not hold k: $want"
# An edited source makes the refused build want to write.
printf '#version 450\nlayout(local_size_x=2) in;\nvoid main() {}\n' > p/k.comp
expect_exit 4 "$KCACHE" build p/kcache.toml --store good --read-only
expect_in err "read-only"
[[ $(snapshot good) == "$before" ]] || fail "a refused build changed the store: $(diff <(echo "$before") <(snapshot good))"
expect_exit 0 "$KCACHE" inspect --store good --read-only
[[ $(snapshot good) == "$before" ]] || fail "inspect --read-only changed the store"
expect_exit 3 "$KCACHE" get nope --store good
[[ $(snapshot good) == "$before" ]] || fail "a failed get changed the store"
[[ $(entries) == "$want" ]] || fail "entries changed: $(entries)"
no_temps "good store"
