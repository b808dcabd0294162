// --startup: an application's start timed, its kernels looked up and created on --threads threads.
#include "bench_start.hpp"
#include "kcache/runtime/kcache.h"
#include "kcache/runtime/kcache_vulkan.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace bench_start {
namespace {

/// --caches thread: every served blob of `names` merged into one pipeline
/// cache, as data: what a merged blob stored by kcache would hand an
/// application. Made on a device of its own, destroyed before the start is
/// timed, so that nothing of it stays in the driver. nullopt after saying why.
std::optional<std::vector<std::uint8_t>> merged_blobs(VkPhysicalDevice pd, std::uint32_t api, ModuleMode modules,
                                                      const kcache_device& dev, const Args& args) {
  Gpu gpu;
  if (!open_device(pd, api, modules, gpu)) return device_failed(modules), std::nullopt;
  auto store = open_store(args);
  if (!store) return std::nullopt;
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

// What the threads of one timed start share: what they read (the store, the
// kernels, the device, --caches thread's merged blob) and the counts and summed
// times (microseconds) they add to.
struct Start {
  const Gpu& gpu;
  const kcache::runtime::Store& store;
  const kcache_device& dev;
  const Args& args;
  const std::vector<std::string>& names;
  /// --caches thread: every blob merged, from the deployment file or merged here.
  std::span<const std::uint8_t> merged;
  bool warm, probe, external_sync;
  ModuleMode modules;
  std::atomic<std::size_t> next{0}, created{0}, failed{0}, served{0}, other_stage{0}, hits{0}, misses{0};
  std::atomic<std::uint64_t> create_us{0}, lookup_us{0}, module_us{0}, layout_us{0}, cache_us{0};
  LayoutCache layouts{gpu.device};
  /// --lookups-first: each kernel's lookup, made before the threads start.
  std::vector<std::optional<kcache::runtime::Result<kcache::runtime::Kernel>>> looked =
      std::vector<std::optional<kcache::runtime::Result<kcache::runtime::Kernel>>>(names.size());

  static std::uint64_t us(double ms) { return static_cast<std::uint64_t>(ms * 1000); }
  /// names[i] looked up, its time added to lookup_us.
  kcache::runtime::Result<kcache::runtime::Kernel> lookup(std::size_t i) {
    const auto looking = std::chrono::steady_clock::now();
    auto k = store.lookup(names[i], &dev, args.target);
    lookup_us += us(ms_since(looking));
    return k;
  }
  /// One thread's share: kernels taken from `next` until none is left.
  void work();
  /// The start's line, for scripts.
  void print(double wall_ms, double device_ms, double list_ms) const;
};

void Start::work() {
  // --caches thread: this thread's one pipeline cache, from the merged blob.
  VkPipelineCache thread_cache = VK_NULL_HANDLE;
  if (!merged.empty()) {
    const auto creating = std::chrono::steady_clock::now();
    if (!args.file.empty()) {
      // As an application does: the runtime's helper, from the file's merged cache.
      int served_cache = 0;
      if (kcache_vulkan_create_thread_cache(gpu.device, vkCreatePipelineCache, store.handle(), &dev, &thread_cache,
                                            &served_cache) != VK_SUCCESS ||
          !served_cache)
        ++failed;
    } else {
      VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
      ci.initialDataSize = merged.size();
      ci.pInitialData = merged.data();
      if (vkCreatePipelineCache(gpu.device, &ci, nullptr, &thread_cache) != VK_SUCCESS) ++failed;
    }
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
}

// One line, key=value, for scripts (scripts/bench_gpu parses it): wall_ms
// from store open to the last pipeline; device_ms before it (process start
// to VkDevice, the application's cost with or without kcache); the *_sum_ms
// are summed over threads: lookups, vkCreateComputePipelines, and the other
// driver objects, each (shader modules, shared layouts, pipeline caches;
// created and destroyed) and together (objects); list_ms is store open and
// the kernel list; hits and misses, of blobs, when probed (else -1).
void Start::print(double wall_ms, double device_ms, double list_ms) const {
  auto sum_ms = [](const std::atomic<std::uint64_t>& v) { return static_cast<double>(v.load()) / 1000.0; };
  const bool probed = (warm && probe) || modules == ModuleMode::identifier;
  std::printf(
      "startup mode=%s threads=%u pipelines=%zu failed=%zu blobs_served=%zu hits=%lld misses=%lld modules=%s "
      "caches=%s lookups_first=%d "
      "wall_ms=%.3f device_ms=%.3f create_sum_ms=%.3f lookup_sum_ms=%.3f objects_sum_ms=%.3f module_sum_ms=%.3f "
      "layout_sum_ms=%.3f cache_sum_ms=%.3f list_ms=%.3f source=%s\n",
      args.startup.c_str(), args.threads, created.load(), failed.load(), warm ? served.load() : 0,
      probed ? static_cast<long long>(hits.load()) : -1LL, probed ? static_cast<long long>(misses.load()) : -1LL,
      args.modules.c_str(),
      !merged.empty() ? "thread"
      : external_sync ? "kernel-sync"
                      : "kernel",
      args.lookups_first ? 1 : 0, wall_ms, device_ms, sum_ms(create_us), sum_ms(lookup_us),
      sum_ms(module_us) + sum_ms(layout_us) + sum_ms(cache_us), sum_ms(module_us), sum_ms(layout_us), sum_ms(cache_us),
      list_ms, args.file.empty() ? "store" : "file");
}

}  // namespace

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
  // From a deployment file the merged cache is the file's (`kcache deploy
  // --merge-caches`), read inside the timed start; from a store it is
  // merged here first, untimed.
  const bool file_cache = warm && args.caches == "thread" && !args.file.empty();
  if (warm && args.caches == "thread" && !file_cache) {
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
  auto opened = open_store(args);
  if (!opened) return 3;
  const auto& store = *opened;
  auto listed = kernel_names(store, args);
  if (!listed) return 3;
  const std::vector<std::string>& names = *listed;
  std::span<const std::uint8_t> thread_cache = merged;
  if (file_cache) {
    auto from_file = store.class_cache(dev);
    if (!from_file) {
      std::fprintf(stderr, "kcache-bench-start: %s\n", from_file.error().message.c_str());
      return 3;
    }
    thread_cache = *from_file;
  }
  const double list_ms = ms_since(start);
  Start s{gpu, store, dev, args, names, thread_cache, warm, probe, external_sync, modules};
  // --lookups-first: every kernel looked up before any pipeline is created,
  // on this thread, so that the lookups run back to back with warm caches
  // instead of between driver calls.
  if (args.lookups_first)
    for (std::size_t i = 0; i < names.size(); ++i) s.looked[i].emplace(s.lookup(i));
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < args.threads; ++t) threads.emplace_back([&s] { s.work(); });
  s.work();
  for (auto& t : threads) t.join();
  const double wall_ms = ms_since(start);
  s.print(wall_ms, device_ms, list_ms);
  return s.failed ? 1 : 0;
}

}  // namespace bench_start
