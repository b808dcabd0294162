// Reading a whole store where a damaged page cannot take the caller down.
// LMDB keeps no page checksums (docs/reliability.md "A damaged store"): a
// damaged data.mdb can make a read fault (SIGSEGV, SIGBUS) or abort (a
// hopeless allocation, a sanitizer report) in whatever process reads it.
// Thread-safety: call before the process starts threads and before it opens
// the store (an LMDB environment must not cross fork()).
#pragma once

#include "kcache/util/error.hpp"

#include <filesystem>
#include <functional>

namespace kcache::store {

/// Runs `walk` (which reads every page of the store in `dir`) in a forked
/// child and returns what it returned, as its exit status (0..255). A child
/// that died of SIGSEGV, SIGBUS or SIGABRT is corruption naming the store,
/// the signal and what to do; one killed by another signal returns 128 +
/// the signal, as a shell reports it. stdout and stderr are flushed before
/// the fork and by the child before it exits, so what it prints appears
/// once, in order. Where no child can be forked, `walk` runs here. io_error
/// when waiting for the child fails.
Result<int> walk_isolated(const std::filesystem::path& dir, const std::function<int()>& walk);

}  // namespace kcache::store
