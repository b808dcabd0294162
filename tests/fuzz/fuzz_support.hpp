// Shared by the fuzz targets and the seed generator: the hand-built Vulkan
// device the pipeline-cache target checks against (no Vulkan needed).
// Thread-safety: the device is built once, then only read.
#pragma once

#include "kcache/device/device.hpp"

namespace kcache::fuzz {

/// A device with vendor 0x10005 (Mesa), device 0, driver version 1 and
/// pipelineCacheUUID 00 01 .. 0f. Seeds for fuzz_pipeline_cache_header are
/// made for it, so they start on the accepting paths.
inline const device::DeviceInfo& fixed_device() {
  static const device::DeviceInfo dev = [] {
    device::DeviceInfo d;
    d.name = "fuzz device";
    d.vendor_id = 0x10005;
    d.device_id = 0;
    d.driver_version = 1;
    d.driver_info = "fuzz";
    for (int i = 0; i < 16; ++i) d.pipeline_cache_uuid[i] = static_cast<std::uint8_t>(i);
    d.seal_fingerprint();
    return d;
  }();
  return dev;
}

}  // namespace kcache::fuzz
