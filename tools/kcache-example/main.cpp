// kcache-example: how an application uses kcache's runtime API. It opens the
// deployment file it ships (`kcache deploy` wrote it for the GPU class),
// checked once at open and signed by the key it names, and creates the
// compute pipeline of every kernel in it (or of the kernels named) on a
// Vulkan device, each with the pipeline-cache blob the file carries for that
// class, and says for each whether the blob was served. It can read a kcache
// store instead (--store), as a tool on a build machine would: then every
// lookup checks its record. Everything that measures lives in
// tools/kcache-bench-start.
//
// What makes a blob hit: the device created as kcache creates its own (every
// supported Vulkan 1.0-1.3 core feature, robustness off), and the pipeline
// created from exactly what the lookup returns: module, entry point,
// specialization map, and a layout made from its bindings and push-constant
// size.
//
// Exit status: 0 when every pipeline was created, 1 otherwise, 2 for bad
// usage, 3 when there is no Vulkan device, no file or store, or the file is
// damaged or not signed by the key.
#include "kcache/runtime/kcache_vulkan.h"
#include "kcache/runtime/runtime.hpp"

#include <vulkan/vulkan.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace {

constexpr const char* k_usage =
    "usage: kcache-example [--file FILE [--key PUB] | --store DIR] [--device SEL]\n"
    "                      [--target ENV] [KERNEL...]\n"
    "\n"
    "Creates the compute pipeline of KERNEL... (default: every compute kernel of the\n"
    "deployment file) on a Vulkan device with kcache's pipeline-cache blob where there is one.\n"
    "  --file FILE     the deployment file `kcache deploy` wrote (default: kernels.kcdeploy)\n"
    "  --key PUB       the public key file (`kcache keygen`) the file must be signed by\n"
    "  --store DIR     a kcache store instead of a file (e.g. $KCACHE_STORE): each lookup\n"
    "                  checks its record, spirv-val and reflection included\n"
    "  --device SEL    a device index, or the one device whose name contains SEL\n"
    "                  (default: a GPU, else CPU; `kcache devices` lists them)\n"
    "  --target ENV    SPIR-V target to look kernels up in, e.g. vulkan1.2\n"
    "Timing: kcache-bench-start.\n";

// The device as kcache creates its own: every feature the physical device
// supports in the 1.0-1.3 core structs, except the robustness ones.
VkDevice open_device(VkPhysicalDevice pd, std::uint32_t api) {
  VkPhysicalDeviceVulkan13Features v13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                       api >= VK_API_VERSION_1_3 ? &v13 : nullptr};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &v12};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &v11};
  vkGetPhysicalDeviceFeatures2(pd, &features);
  features.features.robustBufferAccess = VK_FALSE;
  v13.robustImageAccess = VK_FALSE;

  std::uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families.data());
  std::uint32_t family = 0;
  while (family < n && !(families[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family;
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &features};
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  VkDevice device = VK_NULL_HANDLE;
  if (family == n || vkCreateDevice(pd, &info, nullptr, &device) != VK_SUCCESS) return VK_NULL_HANDLE;
  return device;
}

// The pipeline of one looked-up kernel: layout from its bindings (one set
// layout per set index up to the highest, gaps empty) and push-constant size
// (an application with many kernels keeps one per k.layout_id()),
// specialization as given, the blob (if served) as the pipeline cache.
VkResult create_pipeline(VkDevice device, const kcache::runtime::Kernel& k) {
  std::vector<VkDescriptorSetLayout> sets;
  std::uint32_t set_count = 0;
  for (const auto& b : k.bindings()) set_count = std::max(set_count, b.set + 1);
  for (std::uint32_t set = 0; set < set_count; ++set) {
    std::vector<VkDescriptorSetLayoutBinding> bindings;
    for (const auto& b : k.bindings())
      if (b.set == set)
        bindings.push_back({b.binding, static_cast<VkDescriptorType>(b.descriptor_type), b.count,
                            VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
    VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    li.bindingCount = static_cast<std::uint32_t>(bindings.size());
    li.pBindings = bindings.data();
    vkCreateDescriptorSetLayout(device, &li, nullptr, &sets.emplace_back());
  }
  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, k.push_constant_size()};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = set_count;
  pli.pSetLayouts = sets.data();
  pli.pushConstantRangeCount = push.size > 0 ? 1 : 0;
  pli.pPushConstantRanges = &push;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  vkCreatePipelineLayout(device, &pli, nullptr, &layout);

  VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = k.spirv().size_bytes();
  mi.pCode = k.spirv().data();
  VkShaderModule module = VK_NULL_HANDLE;
  vkCreateShaderModule(device, &mi, nullptr, &module);

  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  ci.initialDataSize = k.pipeline_cache().size();  // 0 unless the blob was served
  ci.pInitialData = k.pipeline_cache().data();
  VkPipelineCache cache = VK_NULL_HANDLE;
  vkCreatePipelineCache(device, &ci, nullptr, &cache);

  const auto entries = k.spec_entries();
  VkSpecializationInfo spec{static_cast<std::uint32_t>(entries.size()),
                            reinterpret_cast<const VkSpecializationMapEntry*>(entries.data()), k.spec_data().size(),
                            k.spec_data().data()};
  VkComputePipelineCreateInfo pi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pi.stage.module = module;
  pi.stage.pName = k.entry_point();
  pi.stage.pSpecializationInfo = entries.empty() ? nullptr : &spec;
  pi.layout = layout;
  pi.basePipelineIndex = -1;
  VkPipeline pipeline = VK_NULL_HANDLE;
  const VkResult r = module && layout && cache ? vkCreateComputePipelines(device, cache, 1, &pi, nullptr, &pipeline)
                                               : VK_ERROR_INITIALIZATION_FAILED;

  // An application keeps these; the example only shows that they are made.
  vkDestroyPipeline(device, pipeline, nullptr);
  vkDestroyPipelineCache(device, cache, nullptr);
  vkDestroyShaderModule(device, module, nullptr);
  vkDestroyPipelineLayout(device, layout, nullptr);
  for (auto s : sets) vkDestroyDescriptorSetLayout(device, s, nullptr);
  return r;
}

// The 32 key bytes of a public key file's "public-key HEX" line, or nullopt.
std::optional<std::vector<std::uint8_t>> read_public_key(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("public-key ") || line.size() != 11 + 64) continue;
    std::vector<std::uint8_t> key(32);
    for (std::size_t i = 0; i < key.size(); ++i) {
      const char* digits = line.data() + 11 + 2 * i;
      if (std::from_chars(digits, digits + 2, key[i], 16).ptr != digits + 2) return std::nullopt;
    }
    return key;
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  std::string file = "kernels.kcdeploy", key_file, store_dir, device_name, target;
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    std::string* value = a == "--file"     ? &file
                         : a == "--key"    ? &key_file
                         : a == "--store"  ? &store_dir
                         : a == "--device" ? &device_name
                         : a == "--target" ? &target
                                           : nullptr;
    if (a == "-h" || a == "--help") {
      std::fputs(k_usage, stdout);
      return 0;
    }
    if (value && i + 1 < argc) *value = argv[++i];
    else if (value || a.starts_with("-")) return std::fputs(k_usage, stderr), 2;
    else names.push_back(a);
  }

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "kcache-example";
  app.apiVersion = VK_API_VERSION_1_3;
  VkInstanceCreateInfo ii{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ii.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  if (vkCreateInstance(&ii, nullptr, &instance) != VK_SUCCESS) {
    std::fputs("kcache-example: no Vulkan instance (install a Vulkan driver, e.g. mesa-vulkan-drivers)\n", stderr);
    return 3;
  }
  // The device as kcache's own --device picks it: a number is an index, a
  // name must match one device; by default a GPU before a CPU device.
  VkPhysicalDevice pd = VK_NULL_HANDLE;
  if (kcache_vulkan_select_device(instance, vkEnumeratePhysicalDevices, vkGetPhysicalDeviceProperties2,
                                  device_name.c_str(), &pd) != KCACHE_OK) {
    std::fprintf(stderr, "kcache-example: %s\n", kcache_last_error());
    return 3;
  }
  VkPhysicalDeviceProperties props{};
  vkGetPhysicalDeviceProperties(pd, &props);
  if (props.apiVersion < VK_API_VERSION_1_2) {
    std::fprintf(stderr, "kcache-example: %s offers Vulkan %u.%u; kcache's pipelines need 1.2\n", props.deviceName,
                 VK_API_VERSION_MAJOR(props.apiVersion), VK_API_VERSION_MINOR(props.apiVersion));
    return 3;
  }

  // The device's identity for kcache: which blobs fit it.
  kcache_device dev;
  kcache_device_from_vulkan(pd, vkGetPhysicalDeviceProperties2, &dev);
  // The deployment file: its digest (and, with a key, its signature) is
  // checked once, here; a damaged or tampered file is refused, and lookups
  // afterwards are index probes of about a microsecond. A store (--store)
  // is checked record by record instead: every lookup runs spirv-val and
  // reflection on its module, milliseconds for a large one.
  std::optional<std::vector<std::uint8_t>> key;
  if (!key_file.empty() && !(key = read_public_key(key_file))) {
    std::fprintf(stderr, "kcache-example: %s holds no public-key line (make one with `kcache keygen`)\n",
                 key_file.c_str());
    return 3;
  }
  auto store = store_dir.empty() ? kcache::runtime::Store::open_file(file, key ? key->data() : nullptr)
                                 : kcache::runtime::Store::open(store_dir);
  if (!store) {
    std::fprintf(stderr, "kcache-example: %s\n", store.error().message.c_str());
    return 3;
  }
  if (names.empty()) {
    auto all = store->kernels(target);
    if (!all) {
      std::fprintf(stderr, "kcache-example: %s\n", all.error().message.c_str());
      return 3;
    }
    names = std::move(*all);
    names.erase(std::unique(names.begin(), names.end()), names.end());  // once per target
  }
  VkDevice device = open_device(pd, std::min(props.apiVersion, VK_API_VERSION_1_3));
  if (!device) {
    std::fputs("kcache-example: vkCreateDevice failed\n", stderr);
    return 3;
  }

  // Every kernel looked up first, then the pipelines created: lookups run
  // back to back, not between driver calls that evict the CPU's caches.
  std::size_t created = 0, served = 0, failures = 0;
  std::vector<kcache::runtime::Kernel> kernels;
  for (const auto& name : names) {
    auto k = store->lookup(name, &dev, target);
    if (!k) {
      std::fprintf(stderr, "kcache-example: %s\n", k.error().message.c_str());
      ++failures;
    } else if (k->stage() == "compute") {
      kernels.push_back(std::move(*k));
    }
  }
  std::string absent_note;
  for (const auto& k : kernels) {
    const bool has_blob = k.blob_status() == KCACHE_BLOB_SERVED;
    const std::string name(k.name());
    if (const VkResult r = create_pipeline(device, k); r != VK_SUCCESS) {
      std::fprintf(stderr, "kcache-example: %s: pipeline creation failed (VkResult %d)\n", name.c_str(), r);
      ++failures;
      continue;
    }
    ++created;
    served += has_blob;
    std::printf("  %-44s %s\n", name.c_str(), has_blob ? "blob served" : "no blob");
    // A refusal is worth a line each; an absent blob is said once below.
    if (k.blob_status() == KCACHE_BLOB_REFUSED)
      std::printf("      (%.*s)\n", static_cast<int>(k.blob_reason().size()), k.blob_reason().data());
    if (k.blob_status() == KCACHE_BLOB_ABSENT && absent_note.empty()) absent_note = k.blob_reason();
  }
  if (!absent_note.empty()) std::printf("kernels without a blob: e.g. %s\n", absent_note.c_str());
  std::printf("device: %s; %zu pipelines created, %zu blobs served\n", props.deviceName, created, served);
  vkDestroyDevice(device, nullptr);
  vkDestroyInstance(instance, nullptr);
  return failures ? 1 : 0;
}
