// Looking kernels up: the kernels a run measures, and --lookups, the runtime's lookups timed alone.
#include "bench_start.hpp"
#include "kcache/runtime/kcache.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bench_start {

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

}  // namespace bench_start
