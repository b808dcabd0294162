// util/worker_pool: the -j rule and parallel_for; util/ordered_parallel_map's
// byte budget.
#include "kcache/util/ordered_parallel_map.hpp"
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

TEST_CASE("OrderedParallelMap with a byte budget: in flight stays within it, or one item alone, in order") {
  // Costs 10, 10, 10, 100, 10, 10 against a budget of 25: at most two small
  // items at once, the large one alone (over the budget, but never with
  // another), and results in input order.
  const std::vector<std::uint64_t> costs = {10, 10, 10, 100, 10, 10};
  std::size_t produced = 0, in_flight = 0, most = 0;
  std::uint64_t bytes = 0, most_bytes = 0;
  using Map = OrderedParallelMap<std::size_t, std::size_t>;
  Map::Budget budget{25, [&](const std::size_t& i) { return costs[i]; },
                     [&]() -> std::uint64_t { return produced < costs.size() ? costs[produced] : 0; }};
  auto map = Map::start(
      4, [](const std::size_t& i) { return i * 2; }, std::move(budget));
  REQUIRE(map);
  auto produce = [&]() -> kcache::Result<std::optional<std::size_t>> {
    if (produced == costs.size()) return std::optional<std::size_t>{};
    ++in_flight;
    bytes += costs[produced];
    most = std::max(most, in_flight);
    most_bytes = std::max(most_bytes, bytes);
    return std::optional<std::size_t>(produced++);
  };
  for (std::size_t want = 0; want < costs.size(); ++want) {
    auto got = (*map)->next(produce);
    REQUIRE(got);
    REQUIRE(got->has_value());
    CHECK((*got)->item == want);
    CHECK((*got)->result == want * 2);
    --in_flight;
    bytes -= costs[want];
  }
  CHECK(!(*map)->next(produce)->has_value());
  CHECK(most == 2);
  CHECK(most_bytes == 100);  // the large item, alone
}

TEST_CASE("OrderedParallelMap: a thread the OS refuses means fewer workers; none at all is an error") {
  using Map = OrderedParallelMap<std::size_t, std::size_t>;
  // Starts the first `allowed` threads, then refuses, as a thread limit does.
  auto limited = [](unsigned allowed) {
    return [allowed, started = 0u](std::function<void()> run) mutable -> std::thread {
      if (started++ >= allowed)
        throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
      return std::thread(std::move(run));
    };
  };
  for (unsigned allowed : {1u, 2u}) {
    CAPTURE(allowed);
    auto map = Map::start(
        8, [](const std::size_t& i) { return i + 1; }, {}, limited(allowed));
    REQUIRE(map);
    std::size_t produced = 0;
    auto produce = [&]() -> kcache::Result<std::optional<std::size_t>> {
      if (produced == 100) return std::optional<std::size_t>{};
      return std::optional<std::size_t>(produced++);
    };
    for (std::size_t want = 0; want < 100; ++want) {
      auto got = (*map)->next(produce);
      REQUIRE(got);
      REQUIRE(got->has_value());
      CHECK((*got)->result == want + 1);
    }
  }
  auto none = Map::start(
      8, [](const std::size_t& i) { return i; }, {}, limited(0));
  REQUIRE_FALSE(none);
  CHECK(none.error().category == kcache::Category::io_error);
  CHECK(none.error().message.find("pass a smaller -j") != std::string::npos);
}
