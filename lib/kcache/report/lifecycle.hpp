// Reports of the store's lifecycle commands: `kcache stats` (totals over the
// run log) and `kcache gc` (what was removed, and what happened to the
// file's space). Data in, text or JSON out; the CLI decides where it goes.
//
// Thread-safety: pure functions over their arguments, except run_totals,
// which reads the store in one snapshot.
#pragma once

#include "kcache/store/gc.hpp"
#include "kcache/store/store.hpp"

#include <optional>
#include <string>
#include <vector>

namespace kcache::report {

/// Sums over the most recent runs of the run log.
struct RunTotals {
  std::size_t runs = 0;       ///< runs summed
  std::size_t logged = 0;     ///< runs in the log
  std::uint64_t first = 0;    ///< time of the oldest run summed
  std::uint64_t last = 0;     ///< time of the newest
  std::uint64_t kernels = 0, hits = 0, compiled = 0, stale_replaced = 0, failed = 0, refused_write = 0;
  std::uint64_t wall_us = 0, bytes_written = 0;
  std::vector<store::PhaseRecord> phases;  ///< summed, in first-seen order
  std::vector<store::RunRecord> recent;    ///< the runs summed, oldest first
  /// Lookups that did not hit (kernels − hits).
  std::uint64_t misses() const { return kernels - hits; }
};

/// Totals of the newest `last` runs (0 = every run in the log). Errors: the
/// store's read errors; corruption naming a damaged run record.
Result<RunTotals> run_totals(store::Store& store, std::size_t last);

/// Text: hit rate, counts, time per phase, then the newest runs one a line.
std::string stats_text(const RunTotals& totals, std::size_t rows = 10);
/// JSON, schema "kcache.stats/1".
std::string stats_json(const RunTotals& totals);

/// What one `kcache gc` did (or, dry run, would do).
struct GcReport {
  bool dry_run = false;
  std::vector<store::GcCandidate> candidates;
  store::GcPlan plan;
  std::optional<store::RemoveSummary> removed;  ///< nullopt for a dry run
  store::SpaceInfo space_before;
  std::optional<store::SpaceInfo> space_after;
  std::optional<std::uint64_t> max_size;
};

/// Text: one line per removed entry, totals, the space verdict (the file
/// shrank, or its freed pages are reused by later writes and `kcache
/// compact` gives them back).
std::string gc_text(const GcReport& report);
/// JSON, schema "kcache.gc/1".
std::string gc_json(const GcReport& report);

/// Text for `kcache compact`.
std::string compact_text(const store::CompactResult& result);

}  // namespace kcache::report
