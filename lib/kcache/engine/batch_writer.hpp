// The one way a build stage writes what it made: entries are collected per
// namespace and committed in batches, so compilation never runs inside a
// write transaction and a killed build loses at most one batch. A refused
// write marks the batch's receipts refused_write (a warning, not a failure).
//
// Internal to the engine module. Thread-safety: one thread (the stage's
// calling thread) owns a BatchWriter.
#pragma once

#include "kcache/engine/build.hpp"
#include "kcache/store/store.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kcache::engine {

class BatchWriter {
 public:
  /// Committed when this many entries are pending or the oldest pending one
  /// waited this long: large enough to amortise a transaction's fsync, small
  /// enough that a killed build loses little work.
  static constexpr std::size_t k_batch_entries = 256;
  static constexpr std::chrono::milliseconds k_batch_interval{500};

  /// Writes into `store`, updating `receipts` (indexed by add()'s `receipt`)
  /// and `bytes_written`.
  BatchWriter(store::Store& store, std::vector<Receipt>& receipts, std::size_t& bytes_written)
      : m_store(store), m_receipts(receipts), m_bytes_written(bytes_written) {}

  /// Queues `entry`, the result for receipts[receipt], for namespace `ns`.
  void add(const Namespace& ns, std::size_t receipt, Entry entry);
  /// Queues a failure record for namespace `ns`, written by the next flush
  /// (Store::put_failures, before that namespace's entries). A refused write
  /// of it is dropped: it costs only a compile in the next run.
  void add_failure(const Namespace& ns, Failure failure);
  /// Whether a batch should be committed now (size or age).
  bool due() const;
  std::size_t pending() const { return m_pending; }
  /// Commits every pending entry, one transaction per namespace; the write
  /// time is shared out over the receipts' store phase. Calls `written(i)`
  /// for each receipt after its transaction, committed or refused.
  void flush(const std::function<void(std::size_t receipt)>& written = {});

 private:
  struct Batch {
    Namespace ns;
    std::vector<std::pair<std::size_t, Entry>> items;
    std::vector<Failure> failures;
  };
  store::Store& m_store;
  std::vector<Receipt>& m_receipts;
  std::size_t& m_bytes_written;
  std::map<std::string, Batch> m_batches;
  std::size_t m_pending = 0;
  std::chrono::steady_clock::time_point m_last_flush = std::chrono::steady_clock::now();
};

/// What a stage's worker made of one job, for the writing thread: an entry
/// and/or a failure record for receipts[receipt], both for namespace `ns`;
/// neither when there is nothing to write (the receipt says why).
struct Made {
  std::size_t receipt = 0;
  Namespace ns;
  std::optional<Entry> entry;
  std::optional<Failure> failure;
};

}  // namespace kcache::engine
