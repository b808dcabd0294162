// A build's last look at its own entries before it reports success: a
// concurrent gc or eviction (in another process, which may not know of this
// build) or another build's rewrite may have taken what this build reported
// as stored. The build's lease (Store::begin_lease, held by RunResult)
// keeps eviction away from what it wrote and used; this check is what makes
// a success mean "every reported kernel is in the store" even so.
//
// Thread-safety: blocks the calling thread; reads the store in one snapshot.
#pragma once

#include "kcache/engine/build.hpp"
#include "kcache/store/store.hpp"

#include <functional>

namespace kcache::engine {

/// Re-reads, in one snapshot, the entry head of every receipt of `result`
/// that says its kernel is in the store (hit, compiled, stale_replaced,
/// remote_hit) and checks it is still there with the receipt's key. Call it
/// after the build's last write and its own eviction. `before_read`, when
/// set, runs first (a test build pauses there). Errors: busy, counting the
/// entries gone or replaced and naming the first few ("evicted by a
/// concurrent gc/eviction while this build ran; run the build again"); the
/// store's read errors.
Result<void> recheck_stored(store::Store& store, const BuildResult& result,
                            const std::function<void()>& before_read = {});

}  // namespace kcache::engine
