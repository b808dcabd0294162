// Applies a function to a stream of items on worker threads while the caller
// keeps producing them, and hands results back in input order. At most
// `window` items are in flight, so memory stays bounded whatever the stream's
// length; with a byte budget, items of a few hundred MiB are not multiplied
// by the window either. Used where reading must stay on one thread (a
// decompressing bundle reader) but the per-item work (spirv-val) is CPU-bound.
//
// Thread-safety: next() is called from one thread; `fn` runs on the workers.
#pragma once

#include "kcache/util/error.hpp"
#include "kcache/util/worker_pool.hpp"  // worker_threads, the -j rule its callers apply

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

namespace kcache::util {

template <typename In, typename Out>
class OrderedParallelMap {
 public:
  /// One item with the result `fn` gave it.
  struct Mapped {
    In item;
    Out result;
  };
  /// `fn` must not touch the item's other holders: it gets a const view of
  /// the item while the caller's thread keeps reading further ones.
  using Fn = std::function<Out(const In&)>;
  /// Produces the next item, nullopt at the end, or an error that next() returns at once.
  using Produce = std::function<Result<std::optional<In>>()>;
  /// Optional memory accounting: `cost` is what an item holds while in
  /// flight, `next_cost` what producing the next one will take (0 at the
  /// end). A next item is produced only while the items in flight plus
  /// next_cost() stay within `bytes`, or when nothing is in flight, so
  /// memory stays within bytes + one item whatever the items' sizes.
  struct Budget {
    std::uint64_t bytes = 0;  ///< 0: count only (4 items per worker)
    std::function<std::uint64_t(const In&)> cost;
    std::function<std::uint64_t()> next_cost;
  };

  /// Starts a thread running its argument (std::thread's constructor; a
  /// test passes one that refuses, as a process or thread limit does).
  using Spawn = std::function<std::thread(std::function<void()>)>;

  /// Starts max(1, threads) workers with a window of 4 items per started
  /// worker. A thread the OS refuses (a process or thread limit) means fewer
  /// workers, as util::parallel_for's rule has it; only when none starts is
  /// it an io_error naming the OS's reason. The caller bounds `threads` (the
  /// window is computed in size_t).
  static Result<std::unique_ptr<OrderedParallelMap>> start(unsigned threads, Fn fn, Budget budget = {},
                                                           const Spawn& spawn = {}) {
    threads = std::max(1u, threads);
    std::unique_ptr<OrderedParallelMap> map(new OrderedParallelMap(std::move(fn), 0, std::move(budget)));
    map->m_workers.reserve(threads);
    for (unsigned t = 0; t < threads; ++t) {
      try {
        std::function<void()> run = [p = map.get()] { p->work(); };
        map->m_workers.push_back(spawn ? spawn(std::move(run)) : std::thread(std::move(run)));
      } catch (const std::system_error& e) {
        if (t == 0)
          return fail(Category::io_error,
                      "cannot start a worker thread: {} (a process or thread limit? pass a smaller -j)", e.what());
        break;
      }
    }
    map->m_window = std::size_t{4} * map->m_workers.size();
    return map;
  }

  ~OrderedParallelMap() {
    {
      // Under the lock, so no worker is between its predicate and its wait.
      std::lock_guard lock(m_mutex);
      m_stop = true;
    }
    m_wake.notify_all();
    for (auto& t : m_workers) t.join();
  }
  OrderedParallelMap(const OrderedParallelMap&) = delete;
  OrderedParallelMap& operator=(const OrderedParallelMap&) = delete;

  /// The next item in input order with its result; nullopt when `produce`
  /// has no more. Keeps the window full before waiting.
  Result<std::optional<Mapped>> next(const Produce& produce) {
    while (!m_exhausted && m_slots.size() < m_window) {
      if (m_budget.bytes != 0 && !m_slots.empty() && m_in_flight + m_budget.next_cost() > m_budget.bytes) break;
      auto item = KCACHE_TRY(produce());
      if (!item) {
        m_exhausted = true;
        break;
      }
      auto slot = std::make_shared<Slot>(std::move(*item));
      if (m_budget.bytes != 0) m_in_flight += slot->cost = m_budget.cost(slot->item);
      m_slots.push_back(slot);
      std::lock_guard lock(m_mutex);
      m_todo.push_back(std::move(slot));
      m_wake.notify_one();
    }
    if (m_slots.empty()) return std::optional<Mapped>{};
    auto slot = std::move(m_slots.front());
    m_slots.pop_front();
    m_in_flight -= slot->cost;
    std::unique_lock lock(m_mutex);
    m_done.wait(lock, [&] { return slot->result.has_value(); });
    return std::optional<Mapped>{Mapped{std::move(slot->item), std::move(*slot->result)}};
  }

 private:
  struct Slot {
    explicit Slot(In&& i) : item(std::move(i)) {}
    In item;
    std::uint64_t cost = 0;     ///< Budget::cost of the item (caller's thread only)
    std::optional<Out> result;  ///< set by a worker under m_mutex
  };

  OrderedParallelMap(Fn fn, std::size_t window, Budget budget)
      : m_fn(std::move(fn)), m_window(window), m_budget(std::move(budget)) {}

  void work() {
    for (;;) {
      std::shared_ptr<Slot> slot;
      {
        std::unique_lock lock(m_mutex);
        m_wake.wait(lock, [&] { return m_stop || !m_todo.empty(); });
        if (m_stop) return;
        slot = std::move(m_todo.front());
        m_todo.pop_front();
      }
      Out result = m_fn(slot->item);
      std::lock_guard lock(m_mutex);
      slot->result.emplace(std::move(result));
      m_done.notify_all();
    }
  }

  Fn m_fn;
  std::size_t m_window;
  Budget m_budget;
  std::uint64_t m_in_flight = 0;  // Budget::cost of m_slots (caller's thread only)
  bool m_exhausted = false;
  std::deque<std::shared_ptr<Slot>> m_slots;  // in flight, input order (caller's thread only)
  std::mutex m_mutex;
  std::condition_variable m_wake, m_done;
  bool m_stop = false;                       // guarded by m_mutex
  std::deque<std::shared_ptr<Slot>> m_todo;  // guarded by m_mutex
  std::vector<std::thread> m_workers;        // joined by the destructor
};

}  // namespace kcache::util
