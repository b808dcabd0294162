// Reports: what `build` did and what a store holds, as data and as text or
// JSON. The library renders to strings; the CLI decides where they go.
// This module is the only one that links nlohmann/json.
//
// Thread-safety: pure functions over their arguments.
#pragma once

#include "kcache/manifest/manifest.hpp"
#include "kcache/pipeline/build.hpp"
#include "kcache/pipeline/freshness.hpp"
#include "kcache/store/store.hpp"

#include <optional>
#include <string>
#include <vector>

namespace kcache::report {

/// Short text summary of a build: counts per outcome, time per phase,
/// bytes written, failures with their messages.
std::string build_summary(const pipeline::BuildResult& result, bool explain);

/// The whole build result as JSON (schema "kcache.build/1").
std::string build_json(const pipeline::BuildResult& result);

/// An entry's state against a manifest.
enum class EntryState { unknown, fresh, stale, orphan };
std::string_view entry_state_name(EntryState s);

struct EntryRow {
  std::string ns;
  std::string kernel;
  Key key;
  std::size_t bytes = 0;
  std::uint64_t created = 0;
  OriginKind origin_kind = OriginKind::built;
  std::string origin_detail;
  EntryState state = EntryState::unknown;  ///< unknown when no manifest was given
  std::vector<pipeline::Change> changes;   ///< for stale entries
};

struct StoreReport {
  std::vector<store::NamespaceInfo> namespaces;
  std::vector<EntryRow> entries;
  /// Manifest kernels with no entry: (namespace, kernel).
  std::vector<std::pair<std::string, std::string>> missing;
  bool with_manifest = false;
};

/// Lists a store and, given a manifest, marks every entry fresh, stale or
/// orphan and lists manifest kernels that are missing.
Result<StoreReport> inspect_store(store::Store& store, const manifest::Manifest* manifest);

/// Text table of a store report.
std::string store_text(const StoreReport& report);
/// JSON of a store report (schema "kcache.inspect/1").
std::string store_json(const StoreReport& report);

}  // namespace kcache::report
