#include "kcache/util/worker_pool.hpp"

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>
#include <vector>

namespace kcache::util {

unsigned worker_threads(unsigned jobs) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return std::clamp(jobs ? jobs : cores, 1u, std::max(k_max_worker_threads, cores));
}

void parallel_for(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& fn) {
  if (count == 0) return;
  const std::size_t wanted = std::min<std::size_t>(std::max(1u, threads), count);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < count;) fn(i);
  };
  std::vector<std::thread> pool;
  pool.reserve(wanted - 1);
  try {
    for (std::size_t t = 1; t < wanted; ++t) pool.emplace_back(work);
  } catch (const std::system_error&) {
    // Refused by the OS (a thread or process limit): fewer threads share the
    // same indices, so the result is the same, only later.
  }
  work();
  for (auto& t : pool) t.join();
}

}  // namespace kcache::util
