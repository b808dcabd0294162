#!/usr/bin/env bash
# Device profiles on lavapipe: a manifest's [vulkan] device_profile =
# "minimal" builds into its own namespace (deviceProfile 2-minimal), which
# verify --device reaches with --device-profile minimal and inspect counts
# as this machine's (not foreign, so gc keeps it); an application's lookup,
# whose device has no blob of the default profile, is told the store holds
# blobs of another profile; an unknown profile name is refused.
source "$(dirname "$0")/lib.bash"
: "${KCACHE_BUILD_DIR:?set by ctest}"
EXAMPLE=$KCACHE_BUILD_DIR/tools/kcache-example/kcache-example
copy_example proj
{ printf '[vulkan]\ndevice_profile = "minimal"\n\n'; cat proj/kcache.toml; } >proj/minimal.toml

expect_exit 0 "$KCACHE" devices --json
fp=$(json_get out '[d["fingerprint"] for d in j["devices"] if "llvmpipe" in d["name"]][0]')

expect_exit 0 "$KCACHE" build proj/minimal.toml --backend vulkan --device llvmpipe --json -j 2
mns=$(json_get out '[k["namespace"] for k in j["kernels"] if k["namespace"].startswith("vulkan/")][0]')
[[ $mns != "vulkan/$fp" ]] || fail "the minimal profile built into the default namespace $mns"
[[ $(json_get out 'j["counts"]["failed"]') -eq 0 ]] || fail "minimal build failed kernels"
expect_exit 0 "$KCACHE" inspect --json
[[ $(json_get out "[n['record'].get('deviceProfile') for n in j['namespaces'] if n['name'] == '$mns'][0]") == 2-minimal ]] \
  || fail "no deviceProfile 2-minimal in $mns"
[[ $(json_get out "[n['foreign'] for n in j['namespaces'] if n['name'] == '$mns'][0]") == False ]] \
  || fail "$mns is called foreign on the machine that built it"

expect_exit 0 "$KCACHE" verify --device llvmpipe --device-profile minimal
expect_in out "blobs passed kcache's checks and went to the driver"
expect_exit 3 "$KCACHE" verify --device llvmpipe  # not_found: no namespace of the default profile
expect_in err "holds no pipelines for device"
expect_exit 2 "$KCACHE" verify --device llvmpipe --device-profile maximal
expect_in err "unknown device profile 'maximal' (known: all-supported, minimal)"

# The application (the default profile) gets the SPIR-V, and the reason names the other profile.
expect_exit 0 "$EXAMPLE" --device llvmpipe --store "$KCACHE_STORE" 'saxpy[T=float,WIDTH=4]'
expect_in out "another device profile ($mns deviceProfile 2-minimal, this runtime's is deviceProfile 2)"

{ printf '[vulkan]\ndevice_profile = "maximal"\n\n'; cat proj/kcache.toml; } >proj/bad.toml
expect_exit 2 "$KCACHE" build proj/bad.toml --backend vulkan --device llvmpipe
expect_in err "[vulkan] device_profile: unknown device profile 'maximal'"
{ printf '[vulkan]\nprofile = "minimal"\n\n'; cat proj/kcache.toml; } >proj/bad.toml
expect_exit 2 "$KCACHE" build proj/bad.toml
expect_in err "unknown key 'profile' in [vulkan]"
