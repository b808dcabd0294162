#!/usr/bin/env bash
# `kcache devices` on lavapipe (mesa-vulkan-drivers), and the paths without
# Vulkan: no loader, and a loader with no driver, each exit 7 with a message
# naming what to install; kcache's other commands keep working without it.
source "$(dirname "$0")/lib.bash"

expect_exit 0 "$KCACHE" devices
expect_in out "llvmpipe"
expect_in out "(default)"
expect_in out "vendorID: 0x10005"
expect_in out "pipelineCacheUUID:"
expect_in out "deviceProfile:"
expect_in out "this card: deviceUUID "   # provenance, shown but not in the record

expect_exit 0 "$KCACHE" devices --json
cp out devices.json
[[ $(json_get devices.json 'j["schema"]') == kcache.devices/1 ]] || fail "bad schema"
lvp=$(json_get devices.json '[d["index"] for d in j["devices"] if "llvmpipe" in d["name"]][0]')
fp=$(json_get devices.json "j['devices'][$lvp]['fingerprint']")
[[ $fp =~ ^[0-9a-f]{16}$ ]] || fail "fingerprint '$fp' is not 16 hex digits"
[[ $(json_get devices.json "j['devices'][$lvp]['namespace']") == "vulkan/$fp" ]] || fail "namespace is not vulkan/<fp>"
[[ $(json_get devices.json "j['devices'][$lvp]['device_uuid']") =~ ^[0-9a-f-]{36}$ ]] || fail "no device_uuid in devices --json"
fields=$(json_get devices.json "' '.join(j['devices'][$lvp]['record'])")
[[ $fields == "vendorID deviceID driverID driverVersion driverInfo driverUUID pipelineCacheUUID pointerSize deviceProfile" ]] \
  || fail "record fields: $fields"
[[ $(json_get devices.json "j['devices'][$lvp]['type']") == cpu ]] || fail "llvmpipe is not a cpu device"
[[ $(json_get devices.json 'sum(d["default"] for d in j["devices"])') == 1 ]] || fail "not exactly one default device"
note "llvmpipe is device $lvp, fingerprint $fp"

# No loader at all.
expect_exit 7 env KCACHE_VULKAN_LOADER=/nonexistent/libvulkan.so.1 "$KCACHE" devices
expect_in err "no Vulkan loader"
expect_in err "mesa-vulkan-drivers"
# A loader that finds no driver.
expect_exit 7 env VK_DRIVER_FILES=/nonexistent.json VK_ICD_FILENAMES=/nonexistent.json "$KCACHE" devices
expect_in err "mesa-vulkan-drivers"
note "no loader / no driver: exit 7 with: $(head -c 160 err)"

# Without Vulkan, SPIR-V builds and store checks still work; a vulkan build
# fails before compiling anything.
copy_example proj
expect_exit 7 env KCACHE_VULKAN_LOADER=/nonexistent/libvulkan.so.1 "$KCACHE" build proj/kcache.toml --backend vulkan
expect_in err "mesa-vulkan-drivers"
[[ ! -e store/data.mdb ]] || fail "a vulkan build without a device touched the store"
expect_exit 0 env KCACHE_VULKAN_LOADER=/nonexistent/libvulkan.so.1 "$KCACHE" build proj/kcache.toml -j 2
expect_exit 0 env KCACHE_VULKAN_LOADER=/nonexistent/libvulkan.so.1 "$KCACHE" verify
expect_in out "no problems"
expect_exit 7 env KCACHE_VULKAN_LOADER=/nonexistent/libvulkan.so.1 "$KCACHE" verify --device 0

# Selectors.
expect_exit 3 "$KCACHE" build proj/kcache.toml --backend vulkan --device no-such-gpu
expect_in err "no Vulkan device's name or fingerprint id matches 'no-such-gpu'"
expect_in err "llvmpipe"
# A number is an index only: "5" is in "LLVM 15.0.6" but names no device.
expect_exit 3 "$KCACHE" build proj/kcache.toml --backend vulkan --device 5
expect_in err "no Vulkan device 5: this machine has"
expect_exit 2 "$KCACHE" build proj/kcache.toml --device 0
expect_in err "--device only applies to --backend vulkan"
