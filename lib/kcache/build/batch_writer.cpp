#include "kcache/build/batch_writer.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace kcache::build {

void BatchWriter::add(const Namespace& ns, std::size_t receipt, Entry entry) {
  auto [it, fresh] = m_batches.try_emplace(ns.name());
  if (fresh) it->second.ns = ns;
  it->second.items.emplace_back(receipt, std::move(entry));
  ++m_pending;
}

void BatchWriter::add_failure(const Namespace& ns, Failure failure) {
  auto [it, fresh] = m_batches.try_emplace(ns.name());
  if (fresh) it->second.ns = ns;
  it->second.failures.push_back(std::move(failure));
  ++m_pending;
}

bool BatchWriter::due() const {
  return m_pending >= k_batch_entries ||
         (m_pending && std::chrono::steady_clock::now() - m_last_flush >= k_batch_interval);
}

void BatchWriter::flush(const std::function<void(std::size_t)>& written) {
  for (auto& [name, batch] : m_batches) {
    if (!batch.failures.empty()) {
      (void)m_store.put_failures(batch.ns, batch.failures);  // dropped when refused: see add_failure
      batch.failures.clear();
    }
    auto& items = batch.items;
    if (items.empty()) continue;
    Stopwatch watch;
    std::vector<Entry> entries;
    entries.reserve(items.size());
    for (auto& [i, e] : items) entries.push_back(std::move(e));
    auto put = m_store.put(batch.ns, entries);
    PhaseTime spent;
    watch.lap(spent);
    for (auto& [i, e] : items) {
      Receipt& r = m_receipts[i];
      r.times[Phase::store].wall_ms += spent.wall_ms / static_cast<double>(items.size());
      r.times[Phase::store].cpu_ms += spent.cpu_ms / static_cast<double>(items.size());
      if (!put) {
        if (r.outcome != Outcome::hit) r.outcome = Outcome::refused_write;
        r.error = put.error();
      } else if (r.outcome != Outcome::hit) {
        m_bytes_written += r.bytes;
      }
    }
    if (written)
      for (auto& [i, e] : items) written(i);
    items.clear();
  }
  m_pending = 0;
  m_last_flush = std::chrono::steady_clock::now();
}

void compile_and_write(store::Store& store, std::vector<Receipt>& receipts, std::size_t& bytes_written,
                       std::size_t count, unsigned threads, const std::function<Made(std::size_t)>& work,
                       const std::function<void(std::size_t receipt)>& done) {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<Made> queue;
  std::atomic<std::size_t> next{0};
  const unsigned wanted = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
  const auto thread_count = static_cast<unsigned>(std::min<std::size_t>(wanted, count));
  std::vector<std::jthread> workers;
  for (unsigned t = 0; t < thread_count; ++t)
    workers.emplace_back([&] {
      for (std::size_t j; (j = next.fetch_add(1)) < count;) {
        Made made = work(j);
        std::lock_guard lock(mutex);
        queue.push_back(std::move(made));
        ready.notify_one();
      }
    });
  // This thread commits batches while the workers compile, so compiling
  // never waits for a write transaction.
  BatchWriter writer(store, receipts, bytes_written);
  for (std::size_t received = 0; received < count;) {
    std::unique_lock lock(mutex);
    ready.wait_for(lock, BatchWriter::k_batch_interval, [&] { return !queue.empty(); });
    std::deque<Made> got;
    got.swap(queue);
    lock.unlock();
    for (auto& m : got) {
      ++received;
      if (m.failure) writer.add_failure(m.ns, std::move(*m.failure));
      if (m.entry) writer.add(m.ns, m.receipt, std::move(*m.entry));
      else done(m.receipt);
    }
    if (writer.due() || received == count) writer.flush(done);
  }
}

}  // namespace kcache::build
