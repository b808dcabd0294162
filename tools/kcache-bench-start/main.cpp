// kcache-bench-start: measures what kcache saves an application at start
// (scripts/bench_gpu and scripts/bench_cuda_gpu run it; tools/kcache-example
// is the short program an application author reads). It creates the compute
// pipelines of the kernels in a kcache store on a Vulkan device, using only
// the runtime API (kcache/runtime/runtime.hpp) and Vulkan, twice:
//   cold: every pipeline from its SPIR-V with an empty VkPipelineCache;
//   warm: every pipeline with the VkPipelineCache kcache's blob initialises
//         (checked against this device by the runtime; a kernel without one
//         is created cold and counted as such).
// Each pass runs on its own fresh VkDevice, so a driver's in-memory cache
// from one pass cannot serve the other, and the drivers' own disk caches are
// turned off (unless the user set their variables), so "cold" is cold.
// Where the device has pipelineCreationCacheControl, warm pipelines are first
// created with FAIL_ON_PIPELINE_COMPILE_REQUIRED, which tells a blob hit from
// a driver recompile. One pipeline cache per kernel, as docs/design.md explains.
//
// With --startup cold|warm it instead measures an application's start: the
// wall time from opening the store to the last pipeline created, with every
// kernel looked up and its pipeline created on --threads threads (one
// VkPipelineCache per kernel: empty when cold, kcache's blob when warm). Run
// once per mode in fresh processes; set the driver's disk-cache variables to
// measure that cache instead.
//
// --modules inline|identifier creates no VkShaderModule, to learn whether a
// blob still hits without one and what that saves: inline, each stage
// carries its module's create info (VK_EXT_graphics_pipeline_library);
// identifier, each stage names its module by the identifier the driver
// computes from it (VK_EXT_shader_module_identifier), and pipeline creation
// gets no SPIR-V at all: a miss then creates the module and compiles.
// --caches thread measures one pipeline cache per thread instead of one per
// kernel: every blob is merged into one beforehand, outside the timed start
// (kcache stores no merged blob: this measures what one would give).
// --caches kernel-sync keeps one cache per kernel but creates each with
// VK_PIPELINE_CACHE_CREATE_EXTERNALLY_SYNCHRONIZED_BIT (each is used by one
// thread), to learn whether the driver's locking of the caches is what
// contends when many threads create pipelines.
// --lookups-first looks every kernel up before the first pipeline is
// created, as kcache-example does.
//
// With --lookups N it times the runtime's lookups alone: every kernel looked
// up N times (no pipeline created), the mean per lookup printed.
//
// Exit status: 0 when every pipeline was created, 1 otherwise, 2 for bad
// usage, 3 when there is no Vulkan device or store.
#include "cuda_mode.hpp"
#include "kcache/runtime/kcache_vulkan.h"
#include "kcache/runtime/runtime.hpp"

#include <vulkan/vulkan.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr const char* k_usage =
    "usage: kcache-bench-start [--store DIR] [--device SEL] [--target ENV]\n"
    "                          [--startup cold|warm [--threads N] | --lookups N] [--trusted]\n"
    "                          [--modules objects|inline|identifier]\n"
    "                          [--caches kernel|kernel-sync|thread]\n"
    "                          [--lookups-first] [KERNEL...]\n"
    "\n"
    "Creates the compute pipelines of KERNEL... (default: every compute kernel in the\n"
    "store) on a Vulkan device, cold (no blob) and warm (kcache's pipeline-cache blob),\n"
    "and prints both creation times.\n"
    "  --store DIR     kcache store (default: $KCACHE_STORE, else ~/.cache/kcache)\n"
    "  --device SEL    a device index, or the one device whose name contains SEL\n"
    "                  (default: the first discrete GPU, else integrated, virtual, CPU)\n"
    "  --target ENV    SPIR-V target to look kernels up in, e.g. vulkan1.2\n"
    "  --startup MODE  instead, time an application's start once: store open, every\n"
    "                  lookup and pipeline (cold: empty caches; warm: kcache's blobs)\n"
    "  --threads N     threads for --startup (default 1), one pipeline cache per kernel\n"
    "  --lookups N     instead, time N lookups of every kernel (no pipelines created)\n"
    "  --trusted       open the store with KCACHE_OPEN_TRUSTED (no spirv-val per lookup)\n"
    "  --modules MODE  objects: a VkShaderModule per pipeline (default); inline: none,\n"
    "                  the stage carries the module's create info (needs and enables\n"
    "                  VK_EXT_graphics_pipeline_library); identifier: none, the stage\n"
    "                  names the module by its identifier, a miss then makes the module\n"
    "                  (needs and enables VK_EXT_shader_module_identifier)\n"
    "  --lookups-first for --startup: look every kernel up before creating any pipeline\n"
    "                  (default: each lookup just before its pipeline)\n"
    "  --caches MODE   for a warm --startup: kernel = a VkPipelineCache per kernel from\n"
    "                  its blob (default); thread = every blob merged into one beforehand\n"
    "                  (untimed), and one VkPipelineCache per thread made from that;\n"
    "                  kernel-sync = as kernel, each cache created externally synchronized\n"
    "                  (needs pipelineCreationCacheControl)\n"
    "\n"
    "CUDA (no Vulkan used): kcache-bench-start --cuda [--startup nvrtc|ptx|cubin] [--store DIR]\n"
    "                      [--manifest DIR] [--cuda-device N] [--launch] | --cuda --list [--cc X.Y]\n"
    "  --startup MODE  time getting a CUfunction for every CUDA kernel of the store: nvrtc =\n"
    "                  compile the recorded source in process (sources under --manifest DIR),\n"
    "                  ptx = driver JIT of the stored PTX, cubin = the stored cubin (default)\n"
    "  --launch        then run saxpy once and check its result\n"
    "  --list          print the cubin or PTX kcache_lookup_cuda picks at compute capability --cc\n";

struct Args {
  std::string store, device, target;
  std::string startup;  ///< "", "cold" or "warm"
  unsigned threads = 1;
  unsigned lookups = 0;             ///< --lookups: rounds of lookups to time
  unsigned open_flags = 0;          ///< --trusted: KCACHE_OPEN_TRUSTED
  std::string modules = "objects";  ///< --modules
  std::string caches = "kernel";    ///< --caches
  bool lookups_first = false;       ///< --lookups-first
  std::vector<std::string> kernels;
  bool cuda = false;
  CudaArgs cuda_args;
};

std::optional<Args> parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    if (s == "-h" || s == "--help") {
      std::fputs(k_usage, stdout);
      std::exit(0);
    } else if (s == "--store") {
      if (!value(a.store)) return std::nullopt;
    } else if (s == "--device") {
      if (!value(a.device)) return std::nullopt;
    } else if (s == "--target") {
      if (!value(a.target)) return std::nullopt;
    } else if (s == "--cuda") {
      a.cuda = true;
    } else if (s == "--manifest") {
      if (!value(a.cuda_args.manifest_dir)) return std::nullopt;
    } else if (s == "--launch") {
      a.cuda_args.launch = true;
    } else if (s == "--list") {
      a.cuda_args.list = true;
    } else if (s == "--cc") {
      std::string cc;
      if (!value(cc) || std::sscanf(cc.c_str(), "%d.%d", &a.cuda_args.cc_major, &a.cuda_args.cc_minor) != 2)
        return std::nullopt;
    } else if (s == "--cuda-device") {
      std::string n;
      if (!value(n)) return std::nullopt;
      a.cuda_args.device = std::atoi(n.c_str());
    } else if (s == "--startup") {
      if (!value(a.startup)) return std::nullopt;
    } else if (s == "--threads") {
      std::string n;
      if (!value(n)) return std::nullopt;
      char* end = nullptr;
      const unsigned long v = std::strtoul(n.c_str(), &end, 10);
      if (n.empty() || *end != '\0' || v < 1 || v > 256) return std::nullopt;
      a.threads = static_cast<unsigned>(v);
    } else if (s == "--trusted") {
      a.open_flags = KCACHE_OPEN_TRUSTED;
    } else if (s == "--lookups-first") {
      a.lookups_first = true;
    } else if (s == "--caches") {
      if (!value(a.caches) || (a.caches != "kernel" && a.caches != "kernel-sync" && a.caches != "thread"))
        return std::nullopt;
    } else if (s == "--modules") {
      if (!value(a.modules) || (a.modules != "objects" && a.modules != "inline" && a.modules != "identifier"))
        return std::nullopt;
    } else if (s == "--lookups") {
      std::string n;
      if (!value(n)) return std::nullopt;
      char* end = nullptr;
      const unsigned long v = std::strtoul(n.c_str(), &end, 10);
      if (n.empty() || *end != '\0' || v < 1 || v > 1000000) return std::nullopt;
      a.lookups = static_cast<unsigned>(v);
    } else if (s.starts_with("-")) {
      return std::nullopt;
    } else {
      a.kernels.push_back(s);
    }
  }
  return a;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// A VkDevice with every feature the physical device supports except the
// robustness ones: kernels may need any of them (16-bit types, subgroup size
// control, ...), and kcache's device stage likewise enables what the device
// has and never robustBufferAccess, so the pipelines match its blobs.
// Without shader-module objects (--modules), also the feature that allows
// it: graphicsPipelineLibrary lets a stage carry its VkShaderModuleCreateInfo
// (in Vulkan headers before VK_KHR_maintenance5 the only one that does),
// shaderModuleIdentifier lets it name the module by identifier.
enum class ModuleMode { objects, inline_info, identifier };

ModuleMode module_mode(const std::string& name) {
  return name == "inline"       ? ModuleMode::inline_info
         : name == "identifier" ? ModuleMode::identifier
                                : ModuleMode::objects;
}

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

struct Gpu {
  VkDevice device = VK_NULL_HANDLE;
  /// With --modules identifier: the driver's identifier of a module's create info.
  PFN_vkGetShaderModuleCreateInfoIdentifierEXT module_identifier = nullptr;
  /// pipelineCreationCacheControl is enabled (externally synchronized caches).
  bool cache_control = false;
  ~Gpu() {
    if (device) vkDestroyDevice(device, nullptr);
  }
};

/// Creates the device as kcache's device stage does, and with the extension
/// `modules` needs (false when the device lacks it).
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

/// The message and exit status when open_device failed.
int device_failed(ModuleMode modules) {
  const char* why =
      modules == ModuleMode::inline_info ? " (--modules inline needs VK_EXT_graphics_pipeline_library)"
      : modules == ModuleMode::identifier
          ? " (--modules identifier needs VK_EXT_shader_module_identifier and pipelineCreationCacheControl)"
          : "";
  std::fprintf(stderr, "kcache-bench-start: vkCreateDevice failed%s\n", why);
  return 3;
}

// The pipeline layout kcache's device stage creates: one set layout per set
// index up to the highest used (gaps empty), push constants at offset 0.
struct Layout {
  VkDevice device;
  std::vector<VkDescriptorSetLayout> sets;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  ~Layout() {
    if (layout) vkDestroyPipelineLayout(device, layout, nullptr);
    for (auto s : sets) vkDestroyDescriptorSetLayout(device, s, nullptr);
  }
};

bool make_layout(const kcache::runtime::Kernel& k, Layout& out) {
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
    VkDescriptorSetLayout s = VK_NULL_HANDLE;
    if (vkCreateDescriptorSetLayout(out.device, &li, nullptr, &s) != VK_SUCCESS) return false;
    out.sets.push_back(s);
  }
  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, k.push_constant_size()};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = static_cast<std::uint32_t>(out.sets.size());
  pli.pSetLayouts = out.sets.data();
  pli.pushConstantRangeCount = push.size > 0 ? 1 : 0;
  pli.pPushConstantRanges = &push;
  return vkCreatePipelineLayout(out.device, &pli, nullptr, &out.layout) == VK_SUCCESS;
}

// Pipeline layouts shared by kernels with the same interface, as an
// application that creates many pipelines keeps them: one layout per
// kcache_kernel_layout_id instead of one per kernel. Thread-safe.
class LayoutCache {
 public:
  explicit LayoutCache(VkDevice device) : m_device(device) {}
  /// The layout for `k`'s interface, created on first use; VK_NULL_HANDLE on failure.
  VkPipelineLayout get(const kcache::runtime::Kernel& k) {
    const std::uint64_t key = k.layout_id();
    std::lock_guard lock(m_mutex);
    auto [it, inserted] = m_layouts.try_emplace(key, nullptr);
    if (inserted) {
      auto layout = std::make_unique<Layout>(Layout{m_device});
      if (make_layout(k, *layout)) it->second = std::move(layout);
    }
    return it->second ? it->second->layout : VK_NULL_HANDLE;
  }

 private:
  VkDevice m_device;
  std::mutex m_mutex;
  std::map<std::uint64_t, std::unique_ptr<Layout>> m_layouts;
};

enum class Made { created, hit, miss, failed };

struct Creation {
  Made made = Made::failed;
  double ms = 0;                                      ///< vkCreateComputePipelines (the successful call)
  double module_ms = 0, layout_ms = 0, cache_ms = 0;  ///< creating (and destroying) the other objects
  VkResult result = VK_SUCCESS;
};

struct CreateOptions {
  /// First try with FAIL_ON_PIPELINE_COMPILE_REQUIRED, to learn whether the blob served it.
  bool probe = false;
  /// How the stage gets its module (the device was created for it).
  ModuleMode modules = ModuleMode::objects;
  /// Shared layouts; nullptr = a layout made for this kernel.
  LayoutCache* layouts = nullptr;
  /// A pipeline cache to create with instead of one made from the blob.
  VkPipelineCache cache = VK_NULL_HANDLE;
  /// The kernel's own cache is created externally synchronized.
  bool external_sync = false;
};

// Creates `k`'s pipeline on `gpu` from `blob` (empty = cold), timing each
// driver object it makes on the way. With ModuleMode::identifier the first
// try names the module by identifier (and so fails on a compile): a hit, or
// a miss that then creates the module and compiles.
Creation create(const Gpu& gpu, const kcache::runtime::Kernel& k, std::span<const std::uint8_t> blob,
                const CreateOptions& options = {}) {
  Creation c;
  const VkDevice device = gpu.device;
  auto timed = [](double& ms, auto&& call) {
    const auto start = std::chrono::steady_clock::now();
    auto r = call();
    ms += ms_since(start);
    return r;
  };
  VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = k.spirv().size_bytes();
  mi.pCode = k.spirv().data();
  VkShaderModule module = VK_NULL_HANDLE;
  auto make_module = [&] {
    c.result = timed(c.module_ms, [&] { return vkCreateShaderModule(device, &mi, nullptr, &module); });
    return c.result == VK_SUCCESS;
  };
  if (options.modules == ModuleMode::objects && !make_module()) return c;
  Layout own_layout{device};
  const VkPipelineLayout layout = timed(c.layout_ms, [&] {
    return options.layouts ? options.layouts->get(k) : make_layout(k, own_layout) ? own_layout.layout : nullptr;
  });
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  ci.initialDataSize = blob.size();
  ci.pInitialData = blob.data();
  if (options.external_sync) ci.flags = VK_PIPELINE_CACHE_CREATE_EXTERNALLY_SYNCHRONIZED_BIT;
  VkPipelineCache cache = options.cache;
  if (!layout) {
    c.result = VK_ERROR_INITIALIZATION_FAILED;
  } else if (cache || (c.result = timed(c.cache_ms, [&] {
                         return vkCreatePipelineCache(device, &ci, nullptr, &cache);
                       })) == VK_SUCCESS) {
    const auto entries = k.spec_entries();
    const auto data = k.spec_data();
    VkSpecializationInfo si{static_cast<std::uint32_t>(entries.size()),
                            reinterpret_cast<const VkSpecializationMapEntry*>(entries.data()), data.size(),
                            data.data()};
    VkShaderModuleIdentifierEXT id{VK_STRUCTURE_TYPE_SHADER_MODULE_IDENTIFIER_EXT};
    VkPipelineShaderStageModuleIdentifierCreateInfoEXT by_id{
        VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_MODULE_IDENTIFIER_CREATE_INFO_EXT};
    VkComputePipelineCreateInfo pi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    pi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    pi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pi.stage.module = module;
    pi.stage.pName = k.entry_point();
    pi.stage.pSpecializationInfo = entries.empty() ? nullptr : &si;
    pi.layout = layout;
    pi.basePipelineIndex = -1;
    if (options.modules == ModuleMode::inline_info) pi.stage.pNext = &mi;
    if (options.modules == ModuleMode::identifier) {
      timed(c.module_ms, [&] {
        gpu.module_identifier(device, &mi, &id);
        return 0;
      });
      by_id.identifierSize = id.identifierSize;
      by_id.pIdentifier = id.identifier;
      pi.stage.pNext = &by_id;
    }
    VkPipeline pipeline = VK_NULL_HANDLE;
    c.made = Made::created;
    if (options.probe || options.modules == ModuleMode::identifier) {
      pi.flags = VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT;
      c.result = timed(c.ms, [&] { return vkCreateComputePipelines(device, cache, 1, &pi, nullptr, &pipeline); });
      c.made = c.result == VK_SUCCESS ? Made::hit : Made::miss;
      pi.flags = 0;
    }
    if (c.made != Made::hit) {
      // A miss by identifier: the driver needs the code after all.
      if (options.modules == ModuleMode::identifier) {
        pi.stage.pNext = nullptr;
        if (make_module()) pi.stage.module = module;
      }
      if (pi.stage.module != VK_NULL_HANDLE || options.modules == ModuleMode::inline_info) {
        c.ms = 0;
        c.result = timed(c.ms, [&] { return vkCreateComputePipelines(device, cache, 1, &pi, nullptr, &pipeline); });
      }
      if (c.result != VK_SUCCESS) c.made = Made::failed;
    }
    if (pipeline) vkDestroyPipeline(device, pipeline, nullptr);
    if (cache != options.cache)
      timed(c.cache_ms, [&] {
        vkDestroyPipelineCache(device, cache, nullptr);
        return 0;
      });
  }
  if (module)
    timed(c.module_ms, [&] {
      vkDestroyShaderModule(device, module, nullptr);
      return 0;
    });
  if (c.result != VK_SUCCESS && c.made != Made::miss) c.made = Made::failed;
  return c;
}

/// The kernels named on the command line, else every kernel of the store
/// (once, whatever the targets); nullopt after saying why.
std::optional<std::vector<std::string>> kernel_names(const kcache::runtime::Store& store, const Args& args) {
  if (!args.kernels.empty()) return args.kernels;
  auto all = store.kernels(args.target);
  if (!all) {
    std::fprintf(stderr, "kcache-bench-start: %s\n", all.error().message.c_str());
    return std::nullopt;
  }
  all->erase(std::unique(all->begin(), all->end()), all->end());  // once per target
  return std::move(*all);
}

/// --caches thread: every served blob of `names` merged into one pipeline
/// cache, as data: what a merged blob stored by kcache would hand an
/// application. Made on a device of its own, destroyed before the start is
/// timed, so that nothing of it stays in the driver. nullopt after saying why.
std::optional<std::vector<std::uint8_t>> merged_blobs(VkPhysicalDevice pd, std::uint32_t api, ModuleMode modules,
                                                      const kcache_device& dev, const Args& args) {
  Gpu gpu;
  if (!open_device(pd, api, modules, gpu)) return device_failed(modules), std::nullopt;
  auto store = kcache::runtime::Store::open(args.store, args.open_flags);
  if (!store) {
    std::fprintf(stderr, "kcache-bench-start: %s\n", store.error().message.c_str());
    return std::nullopt;
  }
  auto names = kernel_names(*store, args);
  if (!names) return std::nullopt;
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  VkPipelineCache merged = VK_NULL_HANDLE;
  if (vkCreatePipelineCache(gpu.device, &ci, nullptr, &merged) != VK_SUCCESS) return std::nullopt;
  for (const auto& name : *names) {
    auto k = store->lookup(name, &dev, args.target);
    if (!k || k->blob_status() != KCACHE_BLOB_SERVED) continue;
    ci.initialDataSize = k->pipeline_cache().size();
    ci.pInitialData = k->pipeline_cache().data();
    VkPipelineCache one = VK_NULL_HANDLE;
    if (vkCreatePipelineCache(gpu.device, &ci, nullptr, &one) != VK_SUCCESS) continue;
    vkMergePipelineCaches(gpu.device, merged, 1, &one);
    vkDestroyPipelineCache(gpu.device, one, nullptr);
  }
  std::size_t size = 0;
  std::vector<std::uint8_t> data;
  if (vkGetPipelineCacheData(gpu.device, merged, &size, nullptr) == VK_SUCCESS) {
    data.resize(size);
    if (vkGetPipelineCacheData(gpu.device, merged, &size, data.data()) != VK_SUCCESS) data.clear();
    data.resize(std::min(size, data.size()));
  }
  vkDestroyPipelineCache(gpu.device, merged, nullptr);
  return data;
}

// --startup: every kernel looked up and its pipeline created on
// args.threads threads, as an application would at start, timed from
// `start` (before the store was opened) to the last pipeline.
// A warm start on a device with pipelineCreationCacheControl (`probe`)
// creates each pipeline with FAIL_ON_PIPELINE_COMPILE_REQUIRED first: a hit
// costs the same, and the line then counts hits and misses.
int startup(VkPhysicalDevice pd, std::uint32_t api, const kcache_device& dev, const Args& args, bool probe,
            std::chrono::steady_clock::time_point process_start) {
  const bool warm = args.startup == "warm";
  const ModuleMode modules = module_mode(args.modules);
  std::vector<std::uint8_t> merged;
  double merge_ms = 0;  // not the application's: kept out of device_ms
  if (warm && args.caches == "thread") {
    const auto merging = std::chrono::steady_clock::now();
    auto m = merged_blobs(pd, api, modules, dev, args);
    if (!m) return 3;
    merged = std::move(*m);
    merge_ms = ms_since(merging);
  }
  Gpu gpu;
  if (!open_device(pd, api, modules, gpu)) return device_failed(modules);
  const bool external_sync = warm && args.caches == "kernel-sync";
  if (external_sync && !gpu.cache_control) {
    std::fputs("kcache-bench-start: --caches kernel-sync needs pipelineCreationCacheControl\n", stderr);
    return 3;
  }
  // The application has its device; kcache's part starts with the store.
  const double device_ms = ms_since(process_start) - merge_ms;
  const auto start = std::chrono::steady_clock::now();
  auto opened = kcache::runtime::Store::open(args.store, args.open_flags);
  if (!opened) {
    std::fprintf(stderr, "kcache-bench-start: %s\n", opened.error().message.c_str());
    return 3;
  }
  const auto& store = *opened;
  auto listed = kernel_names(store, args);
  if (!listed) return 3;
  const std::vector<std::string>& names = *listed;
  const double list_ms = ms_since(start);
  std::atomic<std::size_t> next{0}, created{0}, failed{0}, served{0}, other_stage{0}, hits{0}, misses{0};
  std::atomic<std::uint64_t> create_us{0}, lookup_us{0}, module_us{0}, layout_us{0}, cache_us{0};
  LayoutCache layouts(gpu.device);
  auto us = [](double ms) { return static_cast<std::uint64_t>(ms * 1000); };
  // --lookups-first: every kernel looked up before any pipeline is created,
  // on this thread, so that the lookups run back to back with warm caches
  // instead of between driver calls.
  auto lookup = [&](std::size_t i) {
    const auto looking = std::chrono::steady_clock::now();
    auto k = store.lookup(names[i], &dev, args.target);
    lookup_us += us(ms_since(looking));
    return k;
  };
  std::vector<std::optional<decltype(lookup(0))>> looked(names.size());
  if (args.lookups_first)
    for (std::size_t i = 0; i < names.size(); ++i) looked[i].emplace(lookup(i));
  auto work = [&] {
    // --caches thread: this thread's one pipeline cache, from the merged blob.
    VkPipelineCache thread_cache = VK_NULL_HANDLE;
    if (!merged.empty()) {
      const auto creating = std::chrono::steady_clock::now();
      VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
      ci.initialDataSize = merged.size();
      ci.pInitialData = merged.data();
      if (vkCreatePipelineCache(gpu.device, &ci, nullptr, &thread_cache) != VK_SUCCESS) ++failed;
      cache_us += us(ms_since(creating));
    }
    for (std::size_t i; (i = next.fetch_add(1)) < names.size();) {
      auto k = looked[i] ? std::move(*looked[i]) : lookup(i);
      if (!k) {
        std::fprintf(stderr, "kcache-bench-start: %s\n", k.error().message.c_str());
        ++failed;
        continue;
      }
      if (k->stage() != "compute") {
        ++other_stage;
        continue;
      }
      const bool has_blob = k->blob_status() == KCACHE_BLOB_SERVED;
      served += has_blob;
      const bool use_blob = warm && has_blob;
      const Creation c = create(gpu, *k, use_blob ? k->pipeline_cache() : std::span<const std::uint8_t>{},
                                {use_blob && probe, modules, &layouts, thread_cache, external_sync});
      create_us += us(c.ms);
      module_us += us(c.module_ms);
      layout_us += us(c.layout_ms);
      cache_us += us(c.cache_ms);
      hits += c.made == Made::hit;
      misses += c.made == Made::miss;
      if (c.made == Made::failed) {
        std::fprintf(stderr, "kcache-bench-start: %.*s: pipeline creation failed (VkResult %d)\n",
                     static_cast<int>(k->name().size()), k->name().data(), c.result);
        ++failed;
      } else {
        ++created;
      }
    }
    if (thread_cache) {
      const auto destroying = std::chrono::steady_clock::now();
      vkDestroyPipelineCache(gpu.device, thread_cache, nullptr);
      cache_us += us(ms_since(destroying));
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < args.threads; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  const double wall_ms = ms_since(start);
  // One line, key=value, for scripts (scripts/bench_gpu parses it): wall_ms
  // from store open to the last pipeline; device_ms before it (process start
  // to VkDevice, the application's cost with or without kcache); the *_sum_ms
  // are summed over threads: lookups, vkCreateComputePipelines, and the other
  // driver objects, each (shader modules, shared layouts, pipeline caches;
  // created and destroyed) and together (objects); list_ms is store open and
  // the kernel list; hits and misses, of blobs, when probed (else -1).
  auto sum_ms = [](const std::atomic<std::uint64_t>& v) { return static_cast<double>(v.load()) / 1000.0; };
  const bool probed = (warm && probe) || modules == ModuleMode::identifier;
  std::printf(
      "startup mode=%s threads=%u pipelines=%zu failed=%zu blobs_served=%zu hits=%lld misses=%lld modules=%s "
      "caches=%s lookups_first=%d "
      "wall_ms=%.3f device_ms=%.3f create_sum_ms=%.3f lookup_sum_ms=%.3f objects_sum_ms=%.3f module_sum_ms=%.3f "
      "layout_sum_ms=%.3f cache_sum_ms=%.3f list_ms=%.3f\n",
      args.startup.c_str(), args.threads, created.load(), failed.load(), warm ? served.load() : 0,
      probed ? static_cast<long long>(hits.load()) : -1LL, probed ? static_cast<long long>(misses.load()) : -1LL,
      args.modules.c_str(),
      !merged.empty() ? "thread"
      : external_sync ? "kernel-sync"
                      : "kernel",
      args.lookups_first ? 1 : 0, wall_ms, device_ms, sum_ms(create_us), sum_ms(lookup_us),
      sum_ms(module_us) + sum_ms(layout_us) + sum_ms(cache_us), sum_ms(module_us), sum_ms(layout_us), sum_ms(cache_us),
      list_ms);
  return failed ? 1 : 0;
}

// --lookups: every kernel of the store looked up args.lookups times, as
// an application's start does once, without creating anything. One line for
// scripts: the mean and the fastest round's cost per lookup.
int time_lookups(const kcache_device& dev, const Args& args) {
  auto store = kcache::runtime::Store::open(args.store, args.open_flags);
  if (!store) {
    std::fprintf(stderr, "kcache-bench-start: %s\n", store.error().message.c_str());
    return 3;
  }
  auto listed = kernel_names(*store, args);
  if (!listed) return 3;
  const std::vector<std::string>& names = *listed;
  std::size_t served = 0, failed = 0;
  double total_ms = 0, best_ms = -1;
  for (unsigned round = 0; round < args.lookups; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (const auto& name : names) {
      auto k = store->lookup(name, &dev, args.target);
      if (!k) ++failed;
      else if (round == 0) served += k->blob_status() == KCACHE_BLOB_SERVED;
    }
    const double ms = ms_since(start);
    total_ms += ms;
    if (best_ms < 0 || ms < best_ms) best_ms = ms;
  }
  const double n = static_cast<double>(names.size());
  std::printf("lookups trusted=%d kernels=%zu rounds=%u blobs_served=%zu failed=%zu mean_us=%.2f best_us=%.2f\n",
              args.open_flags != 0 ? 1 : 0, names.size(), args.lookups, served, failed,
              n > 0 ? total_ms * 1000.0 / (n * args.lookups) : 0.0, n > 0 ? best_ms * 1000.0 / n : 0.0);
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto args = parse(argc, argv);
  if (!args) {
    std::fputs(k_usage, stderr);
    return 2;
  }
  if (args->cuda) {
    args->cuda_args.store = args->store;
    if (!args->startup.empty()) args->cuda_args.startup = args->startup;
    const auto& m = args->cuda_args.startup;
    if (m != "nvrtc" && m != "ptx" && m != "cubin") {
      std::fputs(k_usage, stderr);
      return 2;
    }
    return run_cuda(args->cuda_args);
  }
  if (!args->startup.empty() && args->startup != "cold" && args->startup != "warm") {
    std::fputs(k_usage, stderr);
    return 2;
  }
  // Before the loader starts any driver: a driver's own disk cache would make
  // "cold" warm (kcache's device stage does the same).
  setenv("MESA_SHADER_CACHE_DISABLE", "true", 0);
  setenv("__GL_SHADER_DISK_CACHE", "0", 0);

  const auto process_start = std::chrono::steady_clock::now();
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "kcache-bench-start";
  app.apiVersion = VK_API_VERSION_1_3;
  VkInstanceCreateInfo ii{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ii.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  if (vkCreateInstance(&ii, nullptr, &instance) != VK_SUCCESS) {
    std::fputs("kcache-bench-start: no Vulkan instance (install a Vulkan driver, e.g. mesa-vulkan-drivers)\n", stderr);
    return 3;
  }
  VkPhysicalDevice pd = VK_NULL_HANDLE;
  if (kcache_vulkan_select_device(instance, vkEnumeratePhysicalDevices, vkGetPhysicalDeviceProperties2,
                                  args->device.c_str(), &pd) != KCACHE_OK) {
    std::fprintf(stderr, "kcache-bench-start: %s\n", kcache_last_error());
    vkDestroyInstance(instance, nullptr);
    return 3;
  }
  VkPhysicalDeviceProperties props{};
  vkGetPhysicalDeviceProperties(pd, &props);
  if (props.apiVersion < VK_API_VERSION_1_2) {
    std::fprintf(stderr, "kcache-bench-start: %s offers Vulkan %u.%u, not 1.2\n", props.deviceName,
                 VK_API_VERSION_MAJOR(props.apiVersion), VK_API_VERSION_MINOR(props.apiVersion));
    vkDestroyInstance(instance, nullptr);
    return 3;
  }
  const std::uint32_t api = std::min(props.apiVersion, VK_API_VERSION_1_3);
  kcache_device dev;
  kcache_device_from_vulkan(pd, vkGetPhysicalDeviceProperties2, &dev);
  VkPhysicalDeviceVulkan13Features v13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                               api >= VK_API_VERSION_1_3 ? &v13 : nullptr};
  vkGetPhysicalDeviceFeatures2(pd, &f2);
  const bool probe = v13.pipelineCreationCacheControl == VK_TRUE;
  if (args->lookups > 0) {
    const int rc = time_lookups(dev, *args);
    vkDestroyInstance(instance, nullptr);
    return rc;
  }
  if (!args->startup.empty()) {
    const int rc = startup(pd, api, dev, *args, probe, process_start);
    vkDestroyInstance(instance, nullptr);
    return rc;
  }
  auto store = kcache::runtime::Store::open(args->store);
  if (!store) {
    std::fprintf(stderr, "kcache-bench-start: %s\n", store.error().message.c_str());
    vkDestroyInstance(instance, nullptr);
    return 3;
  }

  // The kernels: named ones, else every compute kernel in the store.
  std::vector<kcache::runtime::Kernel> kernels;
  auto listed = kernel_names(*store, *args);
  if (!listed) {
    vkDestroyInstance(instance, nullptr);
    return 3;
  }
  const std::vector<std::string>& names = *listed;
  int failures = 0;
  for (const auto& name : names) {
    auto k = store->lookup(name, &dev, args->target);
    if (!k) {
      std::fprintf(stderr, "kcache-bench-start: %s\n", k.error().message.c_str());
      ++failures;
      continue;
    }
    if (k->stage() == "compute") kernels.push_back(std::move(*k));
  }

  const ModuleMode modules = module_mode(args->modules);
  std::printf("device: %s; %zu compute kernels; blob hits %s\n", props.deviceName, kernels.size(),
              probe ? "probed with FAIL_ON_PIPELINE_COMPILE_REQUIRED" : "not observable on this device");
  std::vector<Creation> cold, warm;
  {
    Gpu gpu;
    if (!open_device(pd, api, modules, gpu)) return device_failed(modules);
    for (const auto& k : kernels) cold.push_back(create(gpu, k, {}, {false, modules}));
  }
  {
    Gpu gpu;
    if (!open_device(pd, api, modules, gpu)) return device_failed(modules);
    for (const auto& k : kernels)
      warm.push_back(create(gpu, k, k.pipeline_cache(), {probe && k.blob_status() == KCACHE_BLOB_SERVED, modules}));
  }

  double cold_ms = 0, warm_ms = 0;
  std::size_t served = 0, hits = 0, misses = 0;
  std::string absent_note;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const auto& k = kernels[i];
    const bool has_blob = k.blob_status() == KCACHE_BLOB_SERVED;
    served += has_blob;
    hits += warm[i].made == Made::hit;
    misses += warm[i].made == Made::miss;
    for (const Creation* c : {&cold[i], &warm[i]})
      if (c->made == Made::failed) {
        std::fprintf(stderr, "kcache-bench-start: %.*s: pipeline creation failed (VkResult %d)\n",
                     static_cast<int>(k.name().size()), k.name().data(), c->result);
        ++failures;
      }
    cold_ms += cold[i].ms;
    warm_ms += warm[i].ms;
    const char* how = !has_blob                    ? "no blob"
                      : warm[i].made == Made::hit  ? "hit"
                      : warm[i].made == Made::miss ? "miss"
                                                   : "blob";
    std::printf("  %-44.*s cold %9.3f ms  warm %9.3f ms  %s\n", static_cast<int>(k.name().size()), k.name().data(),
                cold[i].ms, warm[i].ms, how);
    // A refusal is worth a line each; an absent blob is said once below.
    if (k.blob_status() == KCACHE_BLOB_REFUSED)
      std::printf("      (%.*s)\n", static_cast<int>(k.blob_reason().size()), k.blob_reason().data());
    if (k.blob_status() == KCACHE_BLOB_ABSENT && absent_note.empty()) absent_note = k.blob_reason();
  }
  if (!absent_note.empty()) std::printf("kernels without a blob: e.g. %s\n", absent_note.c_str());
  std::printf("total: %zu kernels, %zu blobs served, %zu hits, %zu misses; cold %.3f ms, warm %.3f ms, %.1fx\n",
              kernels.size(), served, hits, misses, cold_ms, warm_ms, warm_ms > 0 ? cold_ms / warm_ms : 0.0);
  vkDestroyInstance(instance, nullptr);
  return failures ? 1 : 0;
}
