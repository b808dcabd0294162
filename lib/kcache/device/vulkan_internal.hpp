// Internals of the device module shared by its .cpp files: the process-wide
// Vulkan runtime (loader + instance), physical-device queries and the feature
// structs. Only this module includes Vulkan (through volk, VK_NO_PROTOTYPES):
// nothing outside it links or includes Vulkan.
#pragma once

#include "kcache/device/device.hpp"

#include <volk.h>

#include <string>
#include <string_view>
#include <vector>

namespace kcache::device::detail {

/// The loader library and the one VkInstance of this process. Created on
/// first use and never destroyed: devices and their tables refer to it, and
/// unloading a Vulkan driver at exit is a known source of crashes.
struct Runtime {
  std::string library;     ///< the path that was dlopen'ed
  void* handle = nullptr;  ///< dlopen handle
  VkInstance instance = VK_NULL_HANDLE;
  std::uint32_t api_version = 0;  ///< the instance's apiVersion (1.3, or 1.0 on a 1.0 loader)
};

/// The runtime, created on first call. Thread-safe. device_unavailable when
/// the loader (KCACHE_VULKAN_LOADER or libvulkan.so.1) cannot be loaded or no
/// driver accepts the instance.
Result<const Runtime*> runtime();

/// The device features kcache cares about, laid out as Vulkan 1.2/1.3 group
/// them. On a Vulkan 1.1 device only `core` and the 1.1 storage/variable-
/// pointer fields of `v11` are filled (from their 1.1 structs).
struct FeatureSet {
  VkPhysicalDeviceFeatures core{};
  VkPhysicalDeviceVulkan11Features v11{};
  VkPhysicalDeviceVulkan12Features v12{};
  VkPhysicalDeviceVulkan13Features v13{};
};

/// The VkPhysicalDeviceFeatures2 pNext chain for one device's API version,
/// used both to query features and to enable them at vkCreateDevice. Not
/// copyable: the structs point at each other.
class FeatureChain {
 public:
  FeatureChain(std::uint32_t api, bool ext_cache_control);
  FeatureChain(const FeatureChain&) = delete;
  FeatureChain& operator=(const FeatureChain&) = delete;

  VkPhysicalDeviceFeatures2* head() { return &m_features2; }
  /// Copies the chain's values into `out` (after a query).
  void store(FeatureSet& out) const;
  /// Copies `in` into the chain (before vkCreateDevice).
  void load(const FeatureSet& in);

 private:
  std::uint32_t m_api;
  bool m_ext_cache_control;
  VkPhysicalDeviceFeatures2 m_features2{};
  VkPhysicalDeviceVulkan11Features m_v11{};
  VkPhysicalDeviceVulkan12Features m_v12{};
  VkPhysicalDeviceVulkan13Features m_v13{};
  VkPhysicalDevice16BitStorageFeatures m_storage16{};
  VkPhysicalDeviceVariablePointersFeatures m_variable_pointers{};
  VkPhysicalDevicePipelineCreationCacheControlFeatures m_cache_control{};
};

/// A physical device with what Device::open and the support checks need.
struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  DeviceInfo info;
  std::uint32_t api = 0;  ///< usable API version: min(device, instance)
  VkPhysicalDeviceLimits limits{};
  VkPhysicalDeviceSubgroupProperties subgroup{};  ///< zero before Vulkan 1.1
  FeatureSet supported;
  std::vector<std::string> extensions;  ///< device extensions offered
  bool has_extension(std::string_view name) const;
};

/// Every physical device with its properties and features. Thread-safe.
/// device_unavailable as list_devices().
Result<std::vector<PhysicalDevice>> enumerate_physical_devices();

/// "VK_ERROR_OUT_OF_HOST_MEMORY", or "VkResult(-13)" for one it does not know.
std::string result_name(VkResult result);

}  // namespace kcache::device::detail
