// `kcache stats`: totals over a store's run log. Data only; report/ renders it.
// Thread-safety: run_totals reads the store in one snapshot.
#pragma once

#include "kcache/store/store.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kcache::maintain {

/// Sums over the most recent runs of the run log.
/// The run log's command of an eviction by max_size recorded on its own
/// (after a launcher command or a build): not a run.
inline constexpr std::string_view k_eviction_command = "evict";

struct RunTotals {
  std::size_t runs = 0;     ///< runs summed
  std::size_t logged = 0;   ///< runs in the log
  std::uint64_t first = 0;  ///< time of the oldest run summed
  std::uint64_t last = 0;   ///< time of the newest
  std::uint64_t kernels = 0, hits = 0, compiled = 0, stale_replaced = 0, failed = 0, refused_write = 0;
  std::uint64_t wall_us = 0, bytes_written = 0;
  /// Remote caches (run record version 2): kernels from remotes, and values
  /// missed, refused, failed requests, bytes read and written over all remotes.
  std::uint64_t remote_hit = 0, remote_misses = 0, remote_refused = 0, remote_errors = 0;
  std::uint64_t remote_bytes_read = 0, remote_bytes_written = 0;
  /// Compile commands the launcher ran (`kcache glslc`), and of them the
  /// ones the real program ran instead, by reason (most frequent first), as
  /// ccache counts "unsupported compiler option".
  std::uint64_t launcher_commands = 0;
  std::vector<std::pair<std::string, std::uint64_t>> not_cacheable;
  /// What the max_size setting evicted (run record version 4): entries,
  /// their bytes, and the evictions that did it, since the counters were
  /// zeroed whatever `last` says (an eviction is not a run).
  std::uint64_t evicted = 0, evicted_bytes = 0, evictions = 0;
  std::vector<store::PhaseRecord> phases;  ///< summed, in first-seen order
  std::vector<store::RunRecord> recent;    ///< the runs summed, oldest first
  /// Set by the caller, not by run_totals: the bytes of the store's entries
  /// (stored_bytes), its max_size setting and where that came from.
  std::optional<std::uint64_t> stored_bytes, limit;
  std::string limit_source;
  /// Runs up to this time (unix seconds; `stats --zero`) are left out; 0: none.
  std::uint64_t zeroed = 0;
  /// Lookups that neither the store nor a remote answered.
  std::uint64_t misses() const { return kernels - hits - remote_hit; }
};

/// Totals of the newest `last` runs (0 = every run in the log) that ended
/// after `zeroed` (unix seconds, `kcache stats --zero`; 0 = all). Errors: the
/// store's read errors; corruption naming a damaged run record.
Result<RunTotals> run_totals(store::Store& store, std::size_t last, std::uint64_t zeroed = 0);

}  // namespace kcache::maintain
