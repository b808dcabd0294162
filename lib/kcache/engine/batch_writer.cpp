#include "kcache/engine/batch_writer.hpp"

namespace kcache::engine {

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

}  // namespace kcache::engine
