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

std::optional<kcache::runtime::Store> open_store(const Args& args) {
  auto store = args.file.empty() ? kcache::runtime::Store::open(args.store, args.open_flags)
                                 : kcache::runtime::Store::open_file(args.file);
  if (!store) {
    std::fprintf(stderr, "kcache-bench-start: %s\n", store.error().message.c_str());
    return std::nullopt;
  }
  return std::move(*store);
}

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
// scripts: the open, the mean and the fastest round's cost per lookup, and
// the median over kernels of each kernel's fastest lookup (each lookup timed
// alone: what one kernel costs, whatever the others cost).
int time_lookups(const kcache_device& dev, const Args& args) {
  const auto opening = std::chrono::steady_clock::now();
  auto store = open_store(args);
  if (!store) return 3;
  const double open_ms = ms_since(opening);
  auto listed = kernel_names(*store, args);
  if (!listed) return 3;
  const std::vector<std::string>& names = *listed;
  std::size_t served = 0, failed = 0;
  double total_ms = 0, best_ms = -1;
  std::vector<double> fastest_us(names.size(), -1);
  for (unsigned round = 0; round < args.lookups; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < names.size(); ++i) {
      const auto one = std::chrono::steady_clock::now();
      auto k = store->lookup(names[i], &dev, args.target);
      const double us = ms_since(one) * 1000.0;
      if (fastest_us[i] < 0 || us < fastest_us[i]) fastest_us[i] = us;
      if (!k) ++failed;
      else if (round == 0) served += k->blob_status() == KCACHE_BLOB_SERVED;
    }
    const double ms = ms_since(start);
    total_ms += ms;
    if (best_ms < 0 || ms < best_ms) best_ms = ms;
  }
  std::sort(fastest_us.begin(), fastest_us.end());
  const double median_us = fastest_us.empty() ? 0.0 : fastest_us[fastest_us.size() / 2];
  const double n = static_cast<double>(names.size());
  std::printf(
      "lookups source=%s trusted=%d kernels=%zu rounds=%u blobs_served=%zu failed=%zu open_ms=%.3f mean_us=%.2f "
      "best_us=%.2f median_us=%.2f\n",
      args.file.empty() ? "store" : "file", args.open_flags != 0 ? 1 : 0, names.size(), args.lookups, served, failed,
      open_ms, n > 0 ? total_ms * 1000.0 / (n * args.lookups) : 0.0, n > 0 ? best_ms * 1000.0 / n : 0.0, median_us);
  return failed ? 1 : 0;
}

}  // namespace bench_start
