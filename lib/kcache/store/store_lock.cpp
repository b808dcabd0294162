// kcache.lock (layout_internal.hpp): keeps `kcache compact` from swapping
// data.mdb under any kcache process that has the store open.
//
// flock(2), not fcntl(2): flock locks belong to the open file description,
// so closing some other descriptor of the file in this process (as LMDB does
// with lock.mdb) never drops them, and they need only a read-only descriptor.
#include "kcache/store/layout_internal.hpp"
#include "kcache/store/lmdb_store_internal.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace kcache::store::internal {
namespace {

namespace fs = std::filesystem;

Result<int> open_lock_file(const fs::path& dir, bool create) {
  fs::path path = dir / k_lock_file_name;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0 || errno != ENOENT || !create) {
    if (fd < 0 && errno != ENOENT && errno != EACCES)
      return fail(Category::io_error, "store {}: cannot open {}: {}", dir.string(), path.string(),
                  std::strerror(errno));
    return fd;
  }
  fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0664);
  if (fd < 0 && errno != EACCES && errno != EPERM && errno != EROFS)
    return fail(Category::io_error, "store {}: cannot create {}: {}", dir.string(), path.string(),
                std::strerror(errno));
  return fd;
}

}  // namespace

StoreLock& StoreLock::operator=(StoreLock&& other) noexcept {
  if (this != &other) {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = std::exchange(other.m_fd, -1);
  }
  return *this;
}

StoreLock::~StoreLock() {
  if (m_fd >= 0) ::close(m_fd);  // releases the flock
}

Result<StoreLock> StoreLock::shared(const fs::path& dir, std::chrono::milliseconds wait) {
  int fd = KCACHE_TRY(open_lock_file(dir, true));
  if (fd < 0) return StoreLock();
  StoreLock lock(fd);
  auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    if (::flock(fd, LOCK_SH | LOCK_NB) == 0) return lock;
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK)
      return fail(Category::io_error, "store {}: cannot lock {}: {}", dir.string(), k_lock_file_name,
                  std::strerror(errno));
    if (std::chrono::steady_clock::now() >= deadline)
      return fail(Category::busy,
                  "store {} is being compacted by another process (it holds {}); retry when `kcache compact` ends",
                  dir.string(), k_lock_file_name);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Result<StoreLock> StoreLock::exclusive(const fs::path& dir) {
  fs::path path = dir / k_lock_file_name;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0664);
  if (fd < 0) {
    int err = errno;
    Category c = err == EACCES || err == EPERM || err == EROFS ? Category::read_only : Category::io_error;
    return fail(c, "store {}: cannot open {}: {}", dir.string(), path.string(), std::strerror(err));
  }
  StoreLock lock(fd);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK)
      return fail(Category::busy,
                  "store {} is open in another kcache process (a build, inspect or get holds {}); "
                  "compact needs it to itself: retry when they finish",
                  dir.string(), k_lock_file_name);
    return fail(Category::io_error, "store {}: cannot lock {}: {}", dir.string(), k_lock_file_name,
                std::strerror(errno));
  }
  return lock;
}

}  // namespace kcache::store::internal
