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
//
// This file picks the device and the mode; the rest, by job: options.cpp (the
// command line), device.cpp (the VkDevice), pipeline.cpp (one pipeline, timed),
// compare.cpp (cold against warm), startup.cpp (--startup), lookups.cpp
// (--lookups), cuda_mode.cpp (--cuda); bench_start.hpp is what they share.
#include "bench_start.hpp"
#include "cuda_mode.hpp"
#include "kcache/runtime/kcache_vulkan.h"

#include <vulkan/vulkan.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

using namespace bench_start;

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
  return cold_and_warm(instance, pd, api, props, dev, *args, probe);
}
