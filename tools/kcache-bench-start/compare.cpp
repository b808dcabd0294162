// The default mode: every kernel's pipeline created cold, then warm, and the times printed.
#include "bench_start.hpp"
#include "kcache/runtime/kcache.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace bench_start {
namespace {

/// Prints each kernel's cold and warm times and the totals; the failed creations.
int print_cold_and_warm(const std::vector<kcache::runtime::Kernel>& kernels, const std::vector<Creation>& cold,
                        const std::vector<Creation>& warm) {
  int failures = 0;
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
  return failures;
}

}  // namespace

int cold_and_warm(VkInstance instance, VkPhysicalDevice pd, std::uint32_t api, const VkPhysicalDeviceProperties& props,
                  const kcache_device& dev, const Args& args, bool probe) {
  auto store = kcache::runtime::Store::open(args.store);
  if (!store) {
    std::fprintf(stderr, "kcache-bench-start: %s\n", store.error().message.c_str());
    vkDestroyInstance(instance, nullptr);
    return 3;
  }

  // The kernels: named ones, else every compute kernel in the store.
  std::vector<kcache::runtime::Kernel> kernels;
  auto listed = kernel_names(*store, args);
  if (!listed) {
    vkDestroyInstance(instance, nullptr);
    return 3;
  }
  const std::vector<std::string>& names = *listed;
  int failures = 0;
  for (const auto& name : names) {
    auto k = store->lookup(name, &dev, args.target);
    if (!k) {
      std::fprintf(stderr, "kcache-bench-start: %s\n", k.error().message.c_str());
      ++failures;
      continue;
    }
    if (k->stage() == "compute") kernels.push_back(std::move(*k));
  }

  const ModuleMode modules = module_mode(args.modules);
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

  failures += print_cold_and_warm(kernels, cold, warm);
  vkDestroyInstance(instance, nullptr);
  return failures ? 1 : 0;
}

}  // namespace bench_start
