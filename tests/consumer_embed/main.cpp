// The embedded consumer: every kernel the build compiled into the program
// (app_kernels, from `kcache emit`) is looked up through the runtime API as in
// a store, and its compute pipeline is created on the first Vulkan device
// with the interface kcache reflects (bindings, push constants, spec
// constants). Prints one line per kernel with its key; exit 1 on any failure.
#include "app_kernels.hpp"

#include <vulkan/vulkan.h>
#include <kcache/runtime/runtime.hpp>

#include <cstdio>
#include <vector>

int main() {
  auto store = kcache::runtime::Store::open_embedded(app_kernels::table);
  if (!store) {
    std::fprintf(stderr, "embedded: %s\n", store.error().message.c_str());
    return 1;
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ii{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ii.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  if (vkCreateInstance(&ii, nullptr, &instance) != VK_SUCCESS) {
    std::fputs("embedded: no Vulkan instance\n", stderr);
    return 1;
  }
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> physical(count);
  vkEnumeratePhysicalDevices(instance, &count, physical.data());
  if (physical.empty()) {
    std::fputs("embedded: no Vulkan device\n", stderr);
    return 1;
  }
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(physical[0], &props);
  uint32_t families = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical[0], &families, nullptr);
  std::vector<VkQueueFamilyProperties> qf(families);
  vkGetPhysicalDeviceQueueFamilyProperties(physical[0], &families, qf.data());
  uint32_t family = 0;
  while (family < families && !(qf[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family;
  float priority = 1;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  VkDevice device = VK_NULL_HANDLE;
  if (family == families || vkCreateDevice(physical[0], &di, nullptr, &device) != VK_SUCCESS) {
    std::fputs("embedded: vkCreateDevice failed\n", stderr);
    return 1;
  }
  std::printf("device: %s\n", props.deviceName);

  auto names = store->kernels();
  int bad = 0, created = 0;
  for (const auto& name : names ? *names : std::vector<std::string>{}) {
    auto k = store->lookup(name);
    if (!k || k->stage() != "compute") {
      std::fprintf(stderr, "embedded: %s: %s\n", name.c_str(), k ? "not compute" : k.error().message.c_str());
      ++bad;
      continue;
    }
    // The same kernel through the emitted table directly.
    const kcache_embedded_kernel* raw = app_kernels::find(name);
    if (!raw || raw->spirv_words != k->spirv().size() || std::string_view(raw->key_id) != k->key_id()) {
      std::fprintf(stderr, "embedded: %s: the table and the lookup disagree\n", name.c_str());
      ++bad;
      continue;
    }
    std::vector<VkDescriptorSetLayoutBinding> bindings;
    for (const auto& b : k->bindings())
      bindings.push_back(
          {b.binding, static_cast<VkDescriptorType>(b.descriptor_type), b.count, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
    VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dl.bindingCount = static_cast<uint32_t>(bindings.size());
    dl.pBindings = bindings.data();
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    vkCreateDescriptorSetLayout(device, &dl, nullptr, &set_layout);
    VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, k->push_constant_size()};
    VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &set_layout;
    pl.pushConstantRangeCount = push.size ? 1 : 0;
    pl.pPushConstantRanges = &push;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    vkCreatePipelineLayout(device, &pl, nullptr, &layout);
    VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    mi.codeSize = k->spirv().size() * 4;
    mi.pCode = k->spirv().data();
    VkShaderModule module = VK_NULL_HANDLE;
    vkCreateShaderModule(device, &mi, nullptr, &module);
    VkSpecializationInfo spec{};
    spec.mapEntryCount = static_cast<uint32_t>(k->spec_entries().size());
    spec.pMapEntries = reinterpret_cast<const VkSpecializationMapEntry*>(k->spec_entries().data());
    spec.dataSize = k->spec_data().size();
    spec.pData = k->spec_data().data();
    VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = module;
    ci.stage.pName = k->entry_point();
    ci.stage.pSpecializationInfo = &spec;
    ci.layout = layout;
    VkPipeline pipeline = VK_NULL_HANDLE;
    const VkResult r = vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &ci, nullptr, &pipeline);
    std::printf("%s %s: key %s, %zu words, %zu spec constants, pipeline %s\n", r == VK_SUCCESS ? "ok" : "BAD",
                name.c_str(), std::string(k->key_id()).c_str(), k->spirv().size(), k->spec_entries().size(),
                r == VK_SUCCESS ? "created" : "FAILED");
    if (r == VK_SUCCESS) ++created;
    else ++bad;
    vkDestroyPipeline(device, pipeline, nullptr);
    vkDestroyShaderModule(device, module, nullptr);
    vkDestroyPipelineLayout(device, layout, nullptr);
    vkDestroyDescriptorSetLayout(device, set_layout, nullptr);
  }
  vkDestroyDevice(device, nullptr);
  vkDestroyInstance(instance, nullptr);
  std::printf("embedded: %d pipelines created, %d bad\n", created, bad);
  return bad || created == 0 ? 1 : 0;
}
