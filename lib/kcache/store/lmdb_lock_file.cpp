// LMDB's own lock file (lock.mdb, not kcache.lock: that is store_lock.cpp):
// reserving its disk blocks before LMDB creates it.
#include "kcache/store/lmdb_env_internal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace kcache::store::internal {

/// Reserves the disk blocks of the lock file before LMDB creates it. LMDB
/// sizes lock.mdb with ftruncate (a sparse file) and then writes it through
/// a shared mmap, so on a full disk the first write is SIGBUS, not an error
/// (docs/reliability.md D1; seen on a full tmpfs). With the blocks allocated
/// first (FALLOC_FL_KEEP_SIZE leaves the size to LMDB), a full disk is a
/// clean store_full. A reader slot is one 64-byte cache line, plus the
/// table's header: 4 KiB covers it. File systems without fallocate, and lock
/// files LMDB would not be able to open anyway, are left to LMDB.
Result<void> reserve_lock_file(const fs::path& dir, unsigned max_readers) {
  const fs::path path = dir / "lock.mdb";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, k_file_mode);
  if (fd < 0) return {};
  const off_t bytes = 4096 + off_t{64} * max_readers;
  int rc = ::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, bytes) == 0 ? 0 : errno;
  ::close(fd);
  if (rc == ENOSPC || rc == EDQUOT)
    return fail(Category::store_full,
                "store {}: the disk holding the store is full: no room for its lock file ({} KiB)", dir.string(),
                bytes >> 10);
  return {};
}

}  // namespace kcache::store::internal
