// The VkDevice each measurement runs on: its features, extensions and failure message.
#include "bench_start.hpp"

#include <cstdint>
#include <cstdio>
#include <vector>

namespace bench_start {
namespace {

// A VkDevice with every feature the physical device supports except the
// robustness ones: kernels may need any of them (16-bit types, subgroup size
// control, ...), and kcache's device stage likewise enables what the device
// has and never robustBufferAccess, so the pipelines match its blobs.
// Without shader-module objects (--modules), also the feature that allows
// it: graphicsPipelineLibrary lets a stage carry its VkShaderModuleCreateInfo
// (in Vulkan headers before VK_KHR_maintenance5 the only one that does),
// shaderModuleIdentifier lets it name the module by identifier.
struct DeviceFeatures {
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan13Features v13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceGraphicsPipelineLibraryFeaturesEXT gpl{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_GRAPHICS_PIPELINE_LIBRARY_FEATURES_EXT};
  VkPhysicalDeviceShaderModuleIdentifierFeaturesEXT identifier{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_MODULE_IDENTIFIER_FEATURES_EXT};
  DeviceFeatures(VkPhysicalDevice pd, std::uint32_t api, ModuleMode modules) {
    void** next = &f2.pNext;
    if (api >= VK_API_VERSION_1_2) {
      *next = &v11;
      v11.pNext = &v12;
      next = &v12.pNext;
    }
    if (api >= VK_API_VERSION_1_3) {
      *next = &v13;
      next = &v13.pNext;
    }
    if (modules == ModuleMode::inline_info) *next = &gpl;
    if (modules == ModuleMode::identifier) *next = &identifier;
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    f2.features.robustBufferAccess = VK_FALSE;
    v13.robustImageAccess = VK_FALSE;
  }
};

}  // namespace

bool open_device(VkPhysicalDevice pd, std::uint32_t api, ModuleMode modules, Gpu& gpu) {
  std::uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families.data());
  std::uint32_t family = 0;
  while (family < n && !(families[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family;
  if (family == n) return false;
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  DeviceFeatures features(pd, api, modules);
  std::vector<const char*> extensions;
  if (modules == ModuleMode::inline_info) {
    if (!features.gpl.graphicsPipelineLibrary) return false;
    extensions = {VK_KHR_PIPELINE_LIBRARY_EXTENSION_NAME, VK_EXT_GRAPHICS_PIPELINE_LIBRARY_EXTENSION_NAME};
  } else if (modules == ModuleMode::identifier) {
    if (!features.identifier.shaderModuleIdentifier || !features.v13.pipelineCreationCacheControl) return false;
    extensions = {VK_EXT_SHADER_MODULE_IDENTIFIER_EXTENSION_NAME};
  }
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.pNext = &features.f2;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  di.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
  di.ppEnabledExtensionNames = extensions.data();
  if (vkCreateDevice(pd, &di, nullptr, &gpu.device) != VK_SUCCESS) return false;
  gpu.cache_control = features.v13.pipelineCreationCacheControl == VK_TRUE;
  if (modules == ModuleMode::identifier)
    gpu.module_identifier = reinterpret_cast<PFN_vkGetShaderModuleCreateInfoIdentifierEXT>(
        vkGetDeviceProcAddr(gpu.device, "vkGetShaderModuleCreateInfoIdentifierEXT"));
  return modules != ModuleMode::identifier || gpu.module_identifier;
}

int device_failed(ModuleMode modules) {
  const char* why =
      modules == ModuleMode::inline_info ? " (--modules inline needs VK_EXT_graphics_pipeline_library)"
      : modules == ModuleMode::identifier
          ? " (--modules identifier needs VK_EXT_shader_module_identifier and pipelineCreationCacheControl)"
          : "";
  std::fprintf(stderr, "kcache-bench-start: vkCreateDevice failed%s\n", why);
  return 3;
}

}  // namespace bench_start
