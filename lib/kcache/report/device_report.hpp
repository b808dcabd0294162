// Reports of the device backend: `kcache devices`, `kcache verify` and the
// device stage of `kcache build --backend vulkan`, as text and JSON. JSON
// schemas are versioned by name ("kcache.devices/1", "kcache.verify/1");
// fields are only ever added.
//
// Thread-safety: pure functions over their arguments.
#pragma once

#include "kcache/build/build.hpp"
#include "kcache/device/device.hpp"
#include "kcache/maintain/verify.hpp"

#include <optional>
#include <string>
#include <vector>

namespace kcache::report {

/// One block per device: index, name, type, API and driver version, short
/// fingerprint id and the full fingerprint record. `chosen` (an index) is
/// marked as the device kcache uses when no --device is given.
std::string devices_text(const std::vector<device::DeviceInfo>& devices, std::optional<std::uint32_t> chosen);
/// The same as JSON (schema "kcache.devices/1").
std::string devices_json(const std::vector<device::DeviceInfo>& devices, std::optional<std::uint32_t> chosen);

/// One line on the device stage of a build: how many of `result`'s receipts
/// in namespace `ns` were hits, created, failed, and the summed creation time.
std::string device_stage_summary(const build::BuildResult& result, const device::DeviceInfo& device);

/// Problems by entry, then a one-line verdict.
std::string store_check_text(const maintain::StoreCheck& check);
/// Schema "kcache.verify/1", mode "store".
std::string store_check_json(const maintain::StoreCheck& check);

/// One line per refused or failed pipeline, or one the driver refused the blob of (every one with
/// `all`), the counts, and creation times (hits: with the blob; timed: with
/// and without it, and their ratio).
std::string device_verify_text(const maintain::DeviceVerify& verify, const device::DeviceInfo& device, bool all);
/// Schema "kcache.verify/1", mode "device".
std::string device_verify_json(const maintain::DeviceVerify& verify, const device::DeviceInfo& device);

}  // namespace kcache::report
