// `kcache gc` over a real store: gathers the facts store/gc.hpp plans from
// (one read snapshot: every entry with its size, usage record and state
// against an optional manifest), then removes a plan's victims with
// remove_unchanged, so an entry a concurrent build rewrote after the scan is
// kept; what a running build wrote or used since it started is never planned
// for removal (its lease: running_builds_since).
//
// Thread-safety: functions block the calling thread; the store serialises
// the writes.
#pragma once

#include "kcache/compile/compiler.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/store/gc.hpp"
#include "kcache/store/store.hpp"

#include <span>
#include <vector>

namespace kcache::maintain {

/// Every stored entry and failure record as a gc candidate, from one
/// snapshot (a failure record by EntryClassifier's rule for failures). With `manifest`:
/// an entry of a namespace the manifest uses for that kernel is assessed
/// (fresh = protected, stale); an entry of a kernel the manifest no longer
/// has, or in a spirv namespace of another target, is an orphan; a device
/// (vulkan) entry of a manifest kernel counts as fresh, since the manifest
/// alone cannot tell which device it is for. With or without one, an entry
/// built by another toolchain (explain.hpp toolchain_changes) is stale: it
/// can never hit again. Errors: the store's read errors, corruption naming
/// an entry whose record fails its checks.
Result<std::vector<store::GcCandidate>> gc_candidates(store::Store& store, const manifest::Manifest* manifest,
                                                      const compile::Toolchain& toolchain);

/// Removes `plan`'s victims, one remove_unchanged transaction per namespace,
/// and sums what happened. read_only / store_full as the store's; an error
/// after some namespaces were done says how many entries were removed.
Result<store::RemoveSummary> apply_gc(store::Store& store, std::span<const store::GcCandidate> candidates,
                                      const store::GcPlan& plan);

/// The bytes the store's entries and failure records take (key + record):
/// what a max_size limit is held to (the sum over gc_candidates). One scan.
Result<std::uint64_t> stored_bytes(store::Store& store, const compile::Toolchain& toolchain);

/// What an automatic eviction did (evict_to_limit).
struct Eviction {
  std::uint64_t limit = 0;
  store::GcPlan plan;              ///< the max_size plan: scope_bytes_before/after, max_size_reached
  store::RemoveSummary removed;    ///< what remove_unchanged did
  std::vector<std::string> names;  ///< "namespace kernel" of each entry evicted, in eviction order
};

/// The start of the oldest build running on `store` but the caller's own
/// lease `own` (null: none), taken after the caller's scan, for
/// GcRules::leased_since: any build that wrote an entry the scan saw held
/// its lease before that write. Errors as Store::oldest_lease.
Result<std::optional<std::uint64_t>> running_builds_since(store::Store& store, const store::Lease* own);

/// The max_size setting applied after a build: when the store's entries
/// (and failure records) take more than `limit` bytes, evicts the least
/// recently used down to it by plan_gc's max_size rule (the one `gc
/// --max-size` applies), never an entry `manifest` uses fresh, so nothing
/// the build just used or stored goes, and never one created or used since
/// the oldest other running build started (its lease; `own` is the caller's,
/// null for none), so nothing a concurrent build wrote or used goes either.
/// An eviction that removed something writes its own run record (command
/// k_eviction_command, what it evicted) for `kcache stats`. A caller of
/// engine::run applies a store's max_size with this after the run, as
/// `kcache build` and the launcher do.
/// nullopt when the store is within the limit; that is known without a
/// scan while the pages in use are within it. Errors as gc_candidates,
/// running_builds_since, apply_gc and Store::record_usage.
Result<std::optional<Eviction>> evict_to_limit(store::Store& store, const manifest::Manifest& manifest,
                                               const compile::Toolchain& toolchain, std::uint64_t limit,
                                               std::uint64_t now, const store::Lease* own = nullptr);

}  // namespace kcache::maintain
