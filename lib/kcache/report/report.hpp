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
  std::uint64_t written = 0;    ///< usage record: last written here (0 = unknown)
  std::uint64_t last_used = 0;  ///< usage record: last hit (0 = unknown)
  std::size_t record_bytes = 0; ///< key + record: what removing it frees
};

/// Entries of one origin in a namespace: built here (detail: host and tool)
/// or imported (detail: the bundle), with when the latest of them was written.
struct OriginSummary {
  OriginKind kind = OriginKind::built;
  std::string detail;
  std::uint64_t entries = 0;
  std::uint64_t latest_written = 0;  ///< 0 when no usage record says
};

/// What `kcache inspect` says about a namespace beyond its record.
struct NamespaceSummary {
  std::string ns;
  std::uint64_t entries = 0;
  std::uint64_t record_bytes = 0;   ///< keys + records: the space its entries take
  std::uint64_t payload_bytes = 0;
  std::uint64_t oldest = 0;         ///< earliest `created`
  std::uint64_t newest = 0;         ///< latest `created`
  std::uint64_t last_used = 0;      ///< latest usage last_used; 0 = never recorded
  std::vector<OriginSummary> origins;
  /// Matches no local device (vulkan) or no target the manifest uses (spirv).
  bool foreign = false;
  std::string foreign_reason;
};

struct StoreReport {
  std::vector<store::NamespaceInfo> namespaces;
  std::vector<NamespaceSummary> summaries;  ///< one per namespace, same order
  std::vector<EntryRow> entries;
  /// Manifest kernels with no entry: (namespace, kernel).
  std::vector<std::pair<std::string, std::string>> missing;
  bool with_manifest = false;
};

/// Lists a store and, given a manifest, marks every entry fresh, stale or
/// orphan and lists manifest kernels that are missing. Without a manifest an
/// entry built by another toolchain is marked stale (it can never hit again).
Result<StoreReport> inspect_store(store::Store& store, const manifest::Manifest* manifest);

/// Marks foreign namespaces: a vulkan namespace whose fingerprint record is
/// none of `local_devices` (all of them when that is an error: no loader or
/// device, said in the reason), a spirv namespace of a target `manifest`
/// uses for no kernel (never without a manifest: SPIR-V is portable).
void mark_foreign(StoreReport& report, const manifest::Manifest* manifest,
                  const Result<std::vector<FingerprintRecord>>& local_devices);

/// Text table of a store report.
std::string store_text(const StoreReport& report);
/// JSON of a store report (schema "kcache.inspect/1").
std::string store_json(const StoreReport& report);

}  // namespace kcache::report
