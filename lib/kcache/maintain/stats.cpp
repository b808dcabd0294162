#include "kcache/maintain/stats.hpp"

#include <algorithm>
#include <deque>

namespace kcache::maintain {

Result<RunTotals> run_totals(store::Store& store, std::size_t last, std::uint64_t zeroed) {
  RunTotals t;
  t.zeroed = zeroed;
  std::deque<store::RunRecord> window;
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    return reader.runs([&](store::RunRecord&& run) {
      const bool eviction = run.command == k_eviction_command;
      if (!eviction) ++t.logged;
      if (run.time <= zeroed) return true;
      // An eviction is counted, not a run: `last` counts runs only.
      if (eviction) {
        ++t.evictions;
        t.evicted += run.evicted;
        t.evicted_bytes += run.evicted_bytes;
        return true;
      }
      window.push_back(std::move(run));
      if (last && window.size() > last) window.pop_front();
      return true;
    });
  }));
  for (auto& run : window) {
    t.evicted += run.evicted;
    t.evicted_bytes += run.evicted_bytes;
    if (!t.runs++) t.first = run.time;
    t.last = run.time;
    t.kernels += run.kernels;
    t.hits += run.hits;
    t.compiled += run.compiled;
    t.stale_replaced += run.stale_replaced;
    t.failed += run.failed;
    t.refused_write += run.refused_write;
    t.wall_us += run.wall_us;
    t.bytes_written += run.bytes_written;
    t.remote_hit += run.remote_hit;
    t.remote_misses += run.remote_misses;
    t.remote_refused += run.remote_refused;
    t.remote_errors += run.remote_errors;
    t.remote_bytes_read += run.remote_bytes_read;
    t.remote_bytes_written += run.remote_bytes_written;
    if (run.invocation) {
      ++t.launcher_commands;
      if (const auto& why = run.invocation->not_cacheable; !why.empty()) {
        auto it = std::find_if(t.not_cacheable.begin(), t.not_cacheable.end(),
                               [&](const auto& entry) { return entry.first == why; });
        if (it == t.not_cacheable.end()) t.not_cacheable.emplace_back(why, 1);
        else ++it->second;
      }
    }
    for (const auto& p : run.phases) {
      auto it = std::find_if(t.phases.begin(), t.phases.end(), [&](const auto& q) { return q.name == p.name; });
      if (it == t.phases.end()) it = t.phases.insert(t.phases.end(), {p.name, 0, 0});
      it->wall_us += p.wall_us;
      it->cpu_us += p.cpu_us;
    }
    t.recent.push_back(std::move(run));
  }
  std::stable_sort(t.not_cacheable.begin(), t.not_cacheable.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return t;
}

}  // namespace kcache::maintain
