// What the files of kcache-bench-start share (main.cpp says what it measures).
#pragma once

#include "cuda_mode.hpp"
#include "kcache/runtime/runtime.hpp"

#include <vulkan/vulkan.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace bench_start {

/// The usage text: printed by --help (stdout) and on bad usage (stderr).
extern const char* const k_usage;

/// The command line: the Vulkan modes' options, and --cuda's (CudaArgs).
struct Args {
  std::string store, device, target;
  std::string file;     ///< --file: a deployment file instead of a store
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

/// The command line; nullopt on bad usage. --help prints k_usage and exits 0.
std::optional<Args> parse(int argc, char** argv);

/// Milliseconds from `start` to now.
inline double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

/// How a pipeline's stage gets its module (--modules objects|inline|identifier).
enum class ModuleMode { objects, inline_info, identifier };

/// The ModuleMode of a --modules value (anything else: objects).
ModuleMode module_mode(const std::string& name);

/// A VkDevice of open_device (destroyed with it), and what it was made with.
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
bool open_device(VkPhysicalDevice pd, std::uint32_t api, ModuleMode modules, Gpu& gpu);

/// The message and exit status when open_device failed.
int device_failed(ModuleMode modules);

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

// Pipeline layouts shared by kernels with the same interface, as an
// application that creates many pipelines keeps them: one layout per
// kcache_kernel_layout_id instead of one per kernel. Thread-safe.
class LayoutCache {
 public:
  explicit LayoutCache(VkDevice device) : m_device(device) {}
  /// The layout for `k`'s interface, created on first use; VK_NULL_HANDLE on failure.
  VkPipelineLayout get(const kcache::runtime::Kernel& k);

 private:
  VkDevice m_device;
  std::mutex m_mutex;
  std::map<std::uint64_t, std::unique_ptr<Layout>> m_layouts;
};

/// How a pipeline was made: created (not probed), a blob hit or miss (probed), or failed.
enum class Made { created, hit, miss, failed };

/// One pipeline's creation: how it was made, and the time each driver object took.
struct Creation {
  Made made = Made::failed;
  double ms = 0;                                      ///< vkCreateComputePipelines (the successful call)
  double module_ms = 0, layout_ms = 0, cache_ms = 0;  ///< creating (and destroying) the other objects
  VkResult result = VK_SUCCESS;
};

/// How create() makes a pipeline (defaults: cold-style, no probe, shader-module objects).
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

/// Creates (and destroys) `k`'s pipeline on `gpu` from `blob` (empty = cold), each object timed.
Creation create(const Gpu& gpu, const kcache::runtime::Kernel& k, std::span<const std::uint8_t> blob,
                const CreateOptions& options = {});

/// The store the options name: --file's deployment file (kcache_file_open),
/// else --store opened with --trusted's flags; nullopt after saying why.
std::optional<kcache::runtime::Store> open_store(const Args& args);

/// The kernels named on the command line, else every kernel of the store
/// (once, whatever the targets); nullopt after saying why.
std::optional<std::vector<std::string>> kernel_names(const kcache::runtime::Store& store, const Args& args);

/// --lookups: times the runtime's lookups alone and prints their line; the exit status.
int time_lookups(const kcache_device& dev, const Args& args);

/// --startup: times an application's start from `process_start` and prints its line; the exit status.
int startup(VkPhysicalDevice pd, std::uint32_t api, const kcache_device& dev, const Args& args, bool probe,
            std::chrono::steady_clock::time_point process_start);

/// The default mode: every kernel's pipeline cold, then warm, each on a fresh device, printed
/// per kernel and in total; destroys `instance` (not when a VkDevice fails); the exit status.
int cold_and_warm(VkInstance instance, VkPhysicalDevice pd, std::uint32_t api, const VkPhysicalDeviceProperties& props,
                  const kcache_device& dev, const Args& args, bool probe);

}  // namespace bench_start
