#!/usr/bin/env bash
# Store problems are clear messages with exit code 4; nothing is half-written.
source "$(dirname "$0")/lib.bash"
mkdir -p p && printf '#version 450\nlayout(local_size_x=1) in;\nvoid main() {}\n' > p/k.comp
printf '[[kernel]]\nname = "k"\nsource = "k.comp"\n' > p/kcache.toml
echo "not a directory" > afile
expect_exit 4 "$KCACHE" build p/kcache.toml --store afile
expect_in err "afile"
mkdir -p garbage && head -c 65536 /dev/urandom > garbage/data.mdb
expect_exit 6 "$KCACHE" inspect --store garbage
expect_in err "garbage"
expect_exit 0 "$KCACHE" build p/kcache.toml --store good
expect_exit 4 "$KCACHE" build p/kcache.toml --store good --read-only
expect_in err "read-only"
expect_exit 0 "$KCACHE" inspect --store good --read-only
expect_exit 3 "$KCACHE" get nope --store good
