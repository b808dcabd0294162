// `kcache inspect` over a store: every namespace with what its entries add
// up to, every entry with its usage record and, given a manifest, its state
// (maintain/entry_state.hpp), and the manifest kernels that are missing.
// Data only; report/ renders it.
//
// Thread-safety: each call reads the store in one snapshot.
#pragma once

#include "kcache/compile/compiler.hpp"
#include "kcache/cuda_device/cuda_device.hpp"
#include "kcache/engine/explain.hpp"
#include "kcache/engine/freshness.hpp"
#include "kcache/maintain/entry_state.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/store/store.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kcache::maintain {

struct EntryRow {
  std::string ns;
  std::string kernel;
  Key key;
  std::size_t bytes = 0;
  std::uint64_t created = 0;
  OriginKind origin_kind = OriginKind::built;
  std::string origin_detail;
  EntryState state = EntryState::unknown;  ///< unknown when no manifest was given
  std::vector<engine::Change> changes;     ///< why stale (stale entries)
  std::uint64_t written = 0;               ///< usage record: last written here (0 = unknown)
  std::uint64_t last_used = 0;             ///< usage record: last hit (0 = unknown)
  std::size_t record_bytes = 0;            ///< key + record: what removing it frees
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
  std::uint64_t record_bytes = 0;  ///< keys + records: the space its entries take
  std::uint64_t payload_bytes = 0;
  std::uint64_t oldest = 0;     ///< earliest `created`
  std::uint64_t newest = 0;     ///< latest `created`
  std::uint64_t last_used = 0;  ///< latest usage last_used; 0 = never recorded
  std::vector<OriginSummary> origins;
  /// Failure records of this namespace (core/failure.hpp): kernels whose
  /// last build failed; in no other count.
  std::uint64_t failure_records = 0;
  /// Matches no local device (vulkan), runs on no local CUDA device (cuda),
  /// or is a target the manifest uses for no kernel (spirv).
  bool foreign = false;
  std::string foreign_reason;
};

struct StoreReport {
  std::vector<store::NamespaceInfo> namespaces;
  std::vector<NamespaceSummary> summaries;  ///< one per namespace, same order
  std::vector<EntryRow> entries;
  /// Manifest kernels with no entry: (namespace, kernel).
  std::vector<std::pair<std::string, std::string>> missing;
  /// Entries whose records fail their checks: skipped (in no count or row
  /// above), listed here so that the caller reports them (store::DamagedEntry).
  std::vector<store::DamagedEntry> damaged;
  bool with_manifest = false;
  /// Given a manifest: how many of the store's entries are in each state, and
  /// how many manifest kernels are missing, counted before any filter
  /// (apply_filter keeps these: a filtered listing still tells the whole).
  std::map<EntryState, std::size_t> state_counts;
  std::size_t missing_count = 0;
  /// Whether apply_filter left out rows (entries counts only those shown).
  bool filtered = false;
};

/// Lists a store and, given a manifest, marks every entry fresh, stale or
/// orphan and lists manifest kernels that are missing. Without a manifest an
/// entry built by another toolchain is marked stale (it can never hit again).
/// A damaged entry is not an error: it is skipped into `damaged`.
Result<StoreReport> inspect_store(store::Store& store, const manifest::Manifest* manifest,
                                  const compile::Toolchain& toolchain);

/// Marks foreign namespaces: a vulkan namespace whose fingerprint record is
/// none of `local_devices` (all of them when that is an error: no loader or
/// device, said in the reason); a cuda namespace that runs on none of
/// `cuda_devices` by cuda_device::check_runs, the rule of `verify --device
/// cuda:N` (all of them when that is an error: no libcuda or device); a spirv
/// namespace of a target `manifest` uses for no kernel (never without a
/// manifest: SPIR-V is portable). The device lists are passed in (the CLI
/// asks the drivers, tests describe devices). Every namespace is decided
/// afresh: marking a report again replaces the earlier marks.
void mark_foreign(StoreReport& report, const manifest::Manifest* manifest,
                  const Result<std::vector<FingerprintRecord>>& local_devices,
                  const Result<std::vector<cuda_device::DeviceInfo>>& cuda_devices);

/// The fingerprint records of this machine's Vulkan devices, one per device
/// profile (each has its namespace), for
/// mark_foreign; device_unavailable when there is no loader or device.
Result<std::vector<FingerprintRecord>> local_device_records();

/// Which rows `kcache inspect --stale / --orphans / --foreign` keep.
struct InspectFilter {
  bool stale = false;
  bool orphans = false;
  bool foreign = false;
  bool any() const { return stale || orphans || foreign; }
};

/// Keeps the entries any given filter selects (stale, orphan, or in a
/// foreign namespace); with --foreign alone, only foreign namespaces too
/// (and only their damaged entries). Missing kernels are dropped: a filter
/// asks about what is stored. Damaged entries are kept: whatever is asked,
/// they are what the store cannot say.
void apply_filter(StoreReport& report, const InspectFilter& filter);

/// Everything `kcache inspect KERNEL` shows: the stored entries of that
/// name in every namespace and, given a manifest, the explanation of its
/// state against the store.
struct KernelReport {
  std::string kernel;
  struct Stored {
    std::string ns;
    Entry entry;
    /// Built by another toolchain: never hits again (engine::toolchain_changes).
    std::vector<engine::Change> toolchain_changes;
  };
  std::vector<Stored> stored;
  /// A manifest was given; `in_manifest` says whether it has the kernel.
  std::string manifest_path;
  bool in_manifest = false;
  std::optional<engine::Explanation> explanation;  ///< when the manifest has it
};

/// Reads one snapshot. not_found when the kernel is neither stored nor in
/// the manifest (the message says which were searched); store errors.
Result<KernelReport> inspect_kernel(store::Store& store, const std::string& kernel, const manifest::Manifest* manifest,
                                    const compile::Toolchain& toolchain);

/// Explains every manifest kernel (`inspect --why`), in manifest order, on
/// `jobs` threads (0 = number of cores), as `kcache build -j` checks them:
/// each thread reads its own snapshot with its own engine::Explainer (the
/// build's id-key lookup and recorded-input check first; a kernel is
/// preprocessed only when an input changed), and all share one FileCache so
/// every input file is hashed once. Errors: the store's read errors.
Result<std::vector<engine::Explanation>> explain_manifest(store::Store& store, const manifest::Manifest& manifest,
                                                          const compile::Toolchain& toolchain, unsigned jobs = 1);

}  // namespace kcache::maintain
