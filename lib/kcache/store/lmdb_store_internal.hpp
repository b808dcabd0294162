// LMDB store internals that tests need to reach. Thread-safety: as store.hpp.
#pragma once

#include "kcache/store/store.hpp"

#include <filesystem>
#include <memory>

namespace kcache::store::internal {

/// How a read-only open uses LMDB's lock file (lock.mdb).
enum class LockFile {
  /// Use it when it (or, if missing, the directory) is writable, so writers
  /// in other processes see our reader slot; otherwise open with MDB_NOLOCK.
  automatic,
  /// Always MDB_NOLOCK: the path a user without write access takes. Lets
  /// tests that run as root (where permissions do not stop writes) reach it.
  never,
};

/// open_lmdb_store with an explicit lock-file policy; `lock_file` matters only
/// for read-only opens that create the environment (not for a shared one).
Result<std::unique_ptr<Store>> open_lmdb_store(const std::filesystem::path& dir, const OpenOptions& options,
                                               LockFile lock_file);

}  // namespace kcache::store::internal
