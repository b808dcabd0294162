#!/usr/bin/env bash
# Bad manifests are refused before any compile, naming file:line and the key.
source "$(dirname "$0")/lib.bash"
mkdir -p p && printf '#version 450\nlayout(local_size_x=1) in;\nvoid main() {}\n' > p/k.comp
check() {  # check MANIFEST-TEXT EXPECTED-MESSAGE
  printf '%s\n' "$1" > p/kcache.toml
  expect_exit 2 "$KCACHE" build p/kcache.toml
  expect_in err "$2"
  [[ ! -e "$KCACHE_STORE" ]] || fail "store created for a bad manifest"
}
check '[[kernel]
name = "k"' 'p/kcache.toml:1:'
check '[[kernel]]
name = "k"
source = "k.comp"
colour = "red"' "p/kcache.toml:4: unknown key 'colour'"
check '[[kernel]]
name = "k"
source = "nope.comp"' "p/kcache.toml:3: kernel 'k': source 'nope.comp' does not exist"
check '[[kernel]]
name = "k"
source = "k.comp"
[[kernel]]
name = "k"
source = "k.comp"' "duplicate kernel name 'k'"
check '[[kernel]]
name = "k"
source = "k.comp"
[kernel.variants]
T = []' "p/kcache.toml:5: variant 'T' has an empty list"
check '[[kernel]]
name = "k"
source = "k.comp"
target = "vulkan9"' "p/kcache.toml:4: unknown target 'vulkan9'"
expect_exit 3 "$KCACHE" build does-not-exist.toml
expect_in err "manifest does-not-exist.toml not found"
# Hostile manifests (issue 14): a source outside the folder, a define that
# would inject preprocessor lines, and 10^10 variants, refused at once by the
# real binary (the product is never expanded: memory stays small).
printf 'void f() {}\n' > outside.comp
check '[[kernel]]
name = "k"
source = "../outside.comp"' "p/kcache.toml:3: kernel 'k': source '../outside.comp' does not name a file inside the manifest's folder"
check '[[kernel]]
name = "k"
source = "k.comp"
defines = { X = "1\n#error injected" }' "p/kcache.toml:4: define 'X' holds a newline"
big='[[kernel]]
name = "k"
source = "k.comp"
[kernel.variants]'
for key in A B C D E F G H I J; do big+=$'\n'"$key = [0,1,2,3,4,5,6,7,8,9]"; done
printf '%s\n' "$big" > p/kcache.toml
/usr/bin/time -f '%M' -o rss.txt "$KCACHE" build p/kcache.toml >out 2>err && fail "10^10 variants accepted"
expect_in err "p/kcache.toml:4: kernel 'k' expands to over 65536 variants"
(( $(tail -1 rss.txt) < 200000 )) || fail "refusing 10^10 variants took $(tail -1 rss.txt) KiB"
# A source that is a FIFO is named as such, and nothing waits on it.
mkfifo p/fifo.comp
check '[[kernel]]
name = "k"
source = "fifo.comp"' "p/kcache.toml:3: kernel 'k': source 'fifo.comp' is not a regular file"

note "UTF-8 in comments and strings is read as written"
printf '# Noyaux du caf\xc3\xa9 \xe2\x80\x94 r\xc3\xa9sum\xc3\xa9\n[[kernel]]\nname = "k"  # na\xc3\xafve\nsource = "k.comp"\ndefines = { NOTE = "\xc3\xa9t\xc3\xa9 \xc2\xbb" }\n' > p/kcache.toml
expect_exit 0 "$KCACHE" manifest p/kcache.toml
expect_in out "k  compute"
expect_exit 0 "$KCACHE" build p/kcache.toml
expect_in out "1 kernels: 0 hit, 1 compiled"
