#!/usr/bin/env bash
# Conflicts say what differs: the same kernels built from a source at another
# path (same module, so the same ir; another id) conflict in `merge`, and the
# message names the id field and both values, never one value twice (it was
# "kernel 'saxpy[...]' is ir X in bundle A but ir X in bundle B"). An older
# build imported over a newer one names what differs too; a module built
# differently names the module bytes.
source "$(dirname "$0")/lib.bash"
copy_example a
copy_example b
mv b/shaders/saxpy.comp b/shaders/saxpy_moved.comp
sed -i 's|source = "shaders/saxpy.comp"|source = "shaders/saxpy_moved.comp"|' b/kcache.toml
export KCACHE_TEST_NOW=1800000000
expect_exit 0 "$KCACHE_TESTING" build a/kcache.toml --store A -j2
export KCACHE_TEST_NOW=1700000000
expect_exit 0 "$KCACHE_TESTING" build b/kcache.toml --store B -j2
unset KCACHE_TEST_NOW
expect_exit 0 "$KCACHE" export --store A --namespace spirv/vulkan1.2 --kernel 'saxpy[*' -o a.kcb
expect_exit 0 "$KCACHE" export --store B --namespace spirv/vulkan1.2 --kernel 'saxpy[*' -o b.kcb

note "merge: the id field that differs, with both values"
expect_exit 1 "$KCACHE" merge a.kcb b.kcb -o m.kcb
expect_in err "kcache: conflict: kernel 'saxpy[T=float,WIDTH=1]' was built differently: id field source is 'shaders/saxpy.comp' in bundle a.kcb but 'shaders/saxpy_moved.comp' in bundle b.kcb"
# What differs is the source path, not the module: no byte difference named.
if grep -q "module bytes differ" err; then cat err; fail "the modules are the same, yet named as differing"; fi
# Never one value shown as two: no line holds the same 16-hex value twice.
python3 - err <<'EOF' || fail "a conflict line repeats one value"
import re, sys
for line in open(sys.argv[1]):
    values = re.findall(r"\b[0-9a-f]{16}\b", line)
    if len(values) != len(set(values)):
        sys.exit(f"repeated value in: {line}")
EOF
expect_exit 1 "$KCACHE" merge a.kcb b.kcb -o m.kcb --json
[[ $(json_get out 'j["conflicts"][0]["difference"].split("; ")[:2]') == \
   "[\"id field source is 'shaders/saxpy.comp' in bundle a.kcb but 'shaders/saxpy_moved.comp' in bundle b.kcb\", 'input shaders/saxpy.comp only in bundle a.kcb']" ]] \
  || fail "json difference: $(json_get out 'j["conflicts"][0]')"

note "import of an older build over a newer one: the difference named"
expect_exit 1 "$KCACHE" import b.kcb --store A
expect_in err "before the stored one built 2027-01-15T08:00:00Z, and differs from it (id field source is 'shaders/saxpy.comp' in the store but 'shaders/saxpy_moved.comp' in the bundle; input shaders/saxpy.comp only in the store"
