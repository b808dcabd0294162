// DeviceInfo helpers, fingerprint records and device selection. Nothing here
// touches Vulkan: list_devices() lives in vulkan_runtime.cpp.
#include "kcache/device/device.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace kcache::device {
namespace {

constexpr std::uint32_t k_vendor_nvidia = 0x10de;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_decimal(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string describe(const DeviceInfo& d) {
  return fmt::format("{}: {} (fingerprint {})", d.index, d.name, d.fingerprint());
}

std::string describe_all(const std::vector<DeviceInfo>& devices) {
  std::string out;
  for (const auto& d : devices) out += "\n  " + describe(d);
  return out;
}

}  // namespace

std::string_view device_type_name(DeviceType type) {
  switch (type) {
    case DeviceType::integrated_gpu: return "integrated-gpu";
    case DeviceType::discrete_gpu: return "discrete-gpu";
    case DeviceType::virtual_gpu: return "virtual-gpu";
    case DeviceType::cpu: return "cpu";
    case DeviceType::other: break;
  }
  return "other";
}

std::string uuid_text(const Uuid& uuid) {
  std::string out;
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += fmt::format("{:02x}", uuid[i]);
  }
  return out;
}

std::string api_version_text(std::uint32_t v) {
  // VK_API_VERSION_MAJOR/MINOR/PATCH without the Vulkan headers.
  return fmt::format("{}.{}.{}", (v >> 22) & 0x7f, (v >> 12) & 0x3ff, v & 0xfff);
}

std::string driver_version_text(std::uint32_t vendor_id, std::uint32_t v) {
  if (vendor_id == k_vendor_nvidia)
    return fmt::format("{}.{}.{}.{}", v >> 22, (v >> 14) & 0xff, (v >> 6) & 0xff, v & 0x3f);
  // The 10-bit major keeps the variant bits, so no bit is lost.
  return fmt::format("{}.{}.{}", v >> 22, (v >> 12) & 0x3ff, v & 0xfff);
}

std::string DeviceInfo::api_version_text() const { return device::api_version_text(api_version); }

std::string DeviceInfo::driver_version_text() const { return device::driver_version_text(vendor_id, driver_version); }

void DeviceInfo::seal_fingerprint() {
  ns = vulkan_namespace(make_fingerprint_record());
  blob_fingerprint = fingerprint_hash(ns.record);
}

FingerprintRecord DeviceInfo::make_fingerprint_record() const {
  // A vulkan namespace names a compatibility class: every card whose driver
  // accepts the others' pipeline-cache blobs. Each field below is kept
  // because two devices that differ in it can make a blob miss (silently: a
  // driver that does not recognise a blob recompiles) or be refused:
  //   vendorID, deviceID   the GPU model; the Vulkan header check compares them
  //   driverID             which driver (NVIDIA proprietary, RADV, AMDVLK,
  //                        ANV, lavapipe…): two drivers of one GPU never share blobs
  //   driverVersion,       the driver build; NVIDIA's pipelineCacheUUID changes
  //   driverInfo           per release, but Mesa's lavapipe reports one UUID in
  //                        every version, so the version must be in the id
  //   driverUUID           the driver build as the spec defines it (devices with
  //                        equal driverUUIDs run the same driver build)
  //   pipelineCacheUUID    the spec's blob compatibility key
  //   pointerSize          32- and 64-bit processes write different blobs
  //   deviceProfile        how kcache creates its device and pipelines can
  //                        change code (k_device_profile): "1" (kcache
  //                        0.1.0's fixed feature list), "2" (every supported
  //                        core feature, spec constants explicit), "2-minimal"
  //                        (DeviceProfile::minimal)
  // Per-card identities are left out: deviceUUID (one physical card; every
  // H200 has its own), deviceLUID (one adapter, Windows) and the PCI address.
  // A blob filled on one H200 served 64 of 64 pipelines on another H200 with
  // FAIL_ON_PIPELINE_COMPILE_REQUIRED, so they are provenance (`kcache
  // devices`, the origin of built entries), never part of the id.
  // Field names and their order are persisted (in stores and bundles, and via
  // the namespace hash): append only. Until kcache 0.1.0 the record also had
  // deviceUUID after driverInfo (is_per_card_field; compatible_record drops it).
  FingerprintRecord r;
  r.fields = {
      {"vendorID", fmt::format("{:#06x}", vendor_id)},
      {"deviceID", fmt::format("{:#06x}", device_id)},
      {"driverID", std::to_string(driver_id)},
      {"driverVersion", driver_version_text()},
      {"driverInfo", driver_info},
      {"driverUUID", uuid_text(driver_uuid)},
      {"pipelineCacheUUID", uuid_text(pipeline_cache_uuid)},
      {"pointerSize", std::to_string(sizeof(void*))},
      {"deviceProfile", std::to_string(k_device_profile) + (profile == DeviceProfile::minimal ? "-minimal" : "")},
  };
  return r;
}

std::string_view device_profile_name(DeviceProfile profile) {
  return profile == DeviceProfile::minimal ? "minimal" : "all-supported";
}

Result<DeviceProfile> parse_device_profile(std::string_view name) {
  for (DeviceProfile p : k_device_profiles)
    if (name == device_profile_name(p)) return p;
  return fail(Category::invalid_argument, "unknown device profile '{}' (known: all-supported, minimal)",
              util::shown_untrusted(name));
}

Result<DeviceInfo> select_from(const std::vector<DeviceInfo>& devices, std::string_view selector) {
  if (selector.empty())
    return fail(Category::invalid_argument,
                "empty device selector: give an index, a name substring or a fingerprint id");
  if (devices.empty()) return fail(Category::device_unavailable, "no Vulkan device to choose from");
  const std::string shown = util::escape_untrusted(selector);
  // A number is an index, never a name substring: "5" must not pick the
  // device whose driver is "LLVM 15.0.6". Only a whole 16-digit fingerprint
  // id can be all digits.
  if (is_decimal(selector) && selector.size() < 16) {
    std::uint64_t index = 0;
    auto [end, ec] = std::from_chars(selector.data(), selector.data() + selector.size(), index);
    if (ec == std::errc() && end == selector.data() + selector.size() && index < devices.size()) return devices[index];
    return fail(Category::not_found, "no Vulkan device {}: this machine has {} (indices 0 to {}):{}", shown,
                devices.size(), devices.size() - 1, describe_all(devices));
  }
  const std::string needle = lower(selector);
  std::vector<DeviceInfo> matches;
  for (const auto& d : devices) {
    bool by_name = lower(d.name).find(needle) != std::string::npos;
    bool by_fingerprint = d.fingerprint().starts_with(needle);
    if (by_name || by_fingerprint) matches.push_back(d);
  }
  if (matches.size() == 1) return matches.front();
  if (matches.empty())
    return fail(Category::not_found, "no Vulkan device's name or fingerprint id matches '{}'; devices:{}", shown,
                describe_all(devices));
  return fail(Category::ambiguous,
              "device selector '{}' matches {} devices; select one of them by index or fingerprint id:{}", shown,
              matches.size(), describe_all(matches));
}

Result<DeviceInfo> select_device(std::string_view selector) {
  return select_from(KCACHE_TRY(list_devices()), selector);
}

Result<DeviceInfo> default_from(const std::vector<DeviceInfo>& devices) {
  if (devices.empty()) return fail(Category::device_unavailable, "no Vulkan device to choose from");
  auto rank = [](DeviceType t) {
    switch (t) {
      case DeviceType::discrete_gpu: return 0;
      case DeviceType::integrated_gpu: return 1;
      case DeviceType::virtual_gpu: return 2;
      case DeviceType::other: return 3;
      case DeviceType::cpu: return 4;
    }
    return 5;
  };
  // stable: among equals, the loader's order decides
  return *std::min_element(devices.begin(), devices.end(),
                           [&](const DeviceInfo& a, const DeviceInfo& b) { return rank(a.type) < rank(b.type); });
}

Result<DeviceInfo> select_from_or_default(const std::vector<DeviceInfo>& devices, std::string_view selector) {
  return selector.empty() ? default_from(devices) : select_from(devices, selector);
}

Result<DeviceInfo> default_device() { return default_from(KCACHE_TRY(list_devices())); }

Result<DeviceInfo> select_device_or_default(std::string_view selector) {
  return select_from_or_default(KCACHE_TRY(list_devices()), selector);
}

}  // namespace kcache::device
