// `kcache gc` over a real store: gathers the facts store/gc.hpp plans from
// (one read snapshot: every entry with its size, usage record and state
// against an optional manifest), then removes a plan's victims with
// remove_unchanged, so an entry a concurrent build rewrote after the scan is
// kept.
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

}  // namespace kcache::maintain
