// LMDB store internals that tests need to reach. Thread-safety: as store.hpp.
#pragma once

#include "kcache/store/store.hpp"

#include <chrono>
#include <filesystem>
#include <memory>
#include <utility>

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

/// A flock(2) on the store's kcache.lock (layout_internal.hpp): shared by
/// every open environment that uses LMDB's lock file, exclusive for
/// `kcache compact`. Released when destroyed. Move-only.
class StoreLock {
 public:
  StoreLock() = default;
  StoreLock(StoreLock&& other) noexcept : m_fd(std::exchange(other.m_fd, -1)) {}
  StoreLock& operator=(StoreLock&& other) noexcept;
  ~StoreLock();

  /// Takes the shared lock, creating kcache.lock when missing and the
  /// directory is writable; without it and without permission to create it,
  /// holds nothing (such an opener cannot write the store, and a compaction's
  /// rename leaves its open file intact). Waits up to `wait` while a
  /// compaction holds the lock, then busy.
  static Result<StoreLock> shared(const std::filesystem::path& dir, std::chrono::milliseconds wait);
  /// Takes the exclusive lock without waiting: busy when any open holds it.
  static Result<StoreLock> exclusive(const std::filesystem::path& dir);
  bool held() const { return m_fd >= 0; }

 private:
  explicit StoreLock(int fd) : m_fd(fd) {}
  int m_fd = -1;
};

/// How long an open waits for a running compaction.
inline constexpr std::chrono::seconds k_compaction_wait{300};

/// Whether this process has the store in `dir` open (compaction refuses).
bool open_in_this_process(const std::filesystem::path& dir);

/// open_lmdb_store with an explicit lock-file policy; `lock_file` matters only
/// for read-only opens that create the environment (not for a shared one).
Result<std::unique_ptr<Store>> open_lmdb_store(const std::filesystem::path& dir, const OpenOptions& options,
                                               LockFile lock_file);

}  // namespace kcache::store::internal
