// libFuzzer entry point over what guards the driver from pipeline-cache
// bytes (docs/reliability.md F1): the Vulkan header check and kcache's blob
// wrapper. None of it needs a Vulkan device: the devices here are built by
// hand. Build with clang: -fsanitize=fuzzer,address,undefined.
//
// Each input is tried three ways: as a raw Vulkan blob and as a wrapped blob
// against a fixed device, and as a raw blob against a device made from the
// input's own header fields, so the fuzzer reaches the accepting paths too.
// The fixed device is fuzz_support.hpp's, for which the seeds are made.
#include "fuzz_support.hpp"
#include "kcache/device/device.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

using namespace kcache::device;

namespace {

std::uint32_t le32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> input(data, size);
  const DeviceInfo& fixed = kcache::fuzz::fixed_device();

  auto header = check_pipeline_cache_header(input, fixed);
  if (header && size < k_pipeline_cache_header_size) std::abort();  // accepted a truncated header

  if (auto raw = unwrap_blob(input, fixed)) {
    // Whatever unwrap returns must lie inside the input and pass the header check.
    if (raw->data() < data || raw->data() + raw->size() > data + size) std::abort();
    if (!check_pipeline_cache_header(*raw, fixed)) std::abort();
  }
  if (auto wrapper = parse_blob_wrapper(input)) {
    // Re-wrapping what was parsed gives back the same bytes (the format has
    // one encoding of each blob), except the fingerprint and pointer size,
    // which come from the device doing the wrapping.
    DeviceInfo d = fixed;
    d.driver_version = wrapper->driver_version;
    auto again = wrap_blob(d, wrapper->blob);
    if (again.size() != size) std::abort();
    if (std::memcmp(again.data(), data, 8) != 0 || std::memcmp(again.data() + 24, data + 24, 4) != 0 ||
        std::memcmp(again.data() + 32, data + 32, size - 32) != 0)
      std::abort();
  }

  if (size >= k_pipeline_cache_header_size) {
    DeviceInfo own = fixed;
    own.vendor_id = le32(data + 8);
    own.device_id = le32(data + 12);
    std::memcpy(own.pipeline_cache_uuid.data(), data + 16, 16);
    auto r = check_pipeline_cache_header(input, own);
    // With the device fields matching, only headerSize/headerVersion can refuse.
    const bool well_formed = le32(data) == 32 && le32(data + 4) == 1;
    if (bool(r) != well_formed) std::abort();
  }
  return 0;
}
