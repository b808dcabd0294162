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
