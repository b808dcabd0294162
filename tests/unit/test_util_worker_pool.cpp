// util/worker_pool: the -j rule and parallel_for.
#include "kcache/util/worker_pool.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using namespace kcache::util;

TEST_CASE("worker_threads: 0 is every core, never 0, capped") {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  CHECK(worker_threads(0) == cores);
  CHECK(worker_threads(1) == 1);
  CHECK(worker_threads(3) == 3);
  CHECK(worker_threads(100000) == std::max(k_max_worker_threads, cores));
}

TEST_CASE("parallel_for calls fn once per index on at most min(threads, count) threads, the caller one") {
  for (std::size_t count : {0u, 1u, 2u, 7u, 1000u})
    for (unsigned threads : {0u, 1u, 2u, 4u, 64u}) {
      CAPTURE(count);
      CAPTURE(threads);
      std::vector<std::atomic<int>> calls(count);
      std::mutex mutex;
      std::set<std::thread::id> ids;
      parallel_for(count, threads, [&](std::size_t i) {
        calls[i].fetch_add(1);
        std::lock_guard lock(mutex);
        ids.insert(std::this_thread::get_id());
      });
      for (std::size_t i = 0; i < count; ++i) CHECK(calls[i].load() == 1);
      CHECK(ids.size() <= std::max<std::size_t>(1, std::min<std::size_t>(threads, count)));
      if (count > 0 && threads <= 1) {
        CHECK(ids.size() == 1);
        CHECK(ids.count(std::this_thread::get_id()) == 1);
      }
    }
}

TEST_CASE("parallel_for really runs in parallel when asked (one index waits for another)") {
  // Two indices that each wait for the other to have started: only two
  // threads can finish this.
  std::atomic<int> started{0};
  parallel_for(2, 2, [&](std::size_t) {
    started.fetch_add(1);
    while (started.load() < 2) std::this_thread::yield();
  });
  CHECK(started.load() == 2);
}
