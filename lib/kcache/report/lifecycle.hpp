// Reports of the store's lifecycle commands: `kcache stats` (totals over the
// run log) and `kcache gc` (what was removed, and what happened to the
// file's space). Data in, text or JSON out; the CLI decides where it goes.
//
// Thread-safety: pure functions over their arguments, except run_totals,
// which reads the store in one snapshot.
#pragma once

#include "kcache/maintain/gc.hpp"
#include "kcache/maintain/stats.hpp"

#include "kcache/store/gc.hpp"
#include "kcache/store/store.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::report {

/// Text: the store's size against its limit (when known), hit rate, counts,
/// time per phase, then the newest runs one a line.
std::string stats_text(const maintain::RunTotals& totals, std::size_t rows = 10);
/// JSON, schema "kcache.stats/1".
std::string stats_json(const maintain::RunTotals& totals);

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

/// What an automatic eviction after a build did (the max_size setting, from
/// `source`: "store", "user", "environment"): a line saying how many entries
/// went and the store's entries before and after, when any went; a line
/// counting the entries kept because a running build uses them; a warning
/// when it could not get under the limit (the rest is what the manifest, or
/// a running build, uses).
std::string eviction_text(const maintain::Eviction& eviction, std::string_view source);

/// Text for `kcache compact`.
std::string compact_text(const store::CompactResult& result);
/// The same as JSON (schema kcache.compact/1): bytes_before, bytes_after.
std::string compact_json(const store::CompactResult& result);

}  // namespace kcache::report
