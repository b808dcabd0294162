// LMDB and OS failures of the LMDB store as kcache Errors: which Category an
// LMDB return code is, and messages that name the store, the action and the
// cause. Kept apart so every lmdb_*.cpp reports failures the same way.
#include "kcache/store/lmdb_env_internal.hpp"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

namespace kcache::store::internal {
namespace {

Category category_of(int rc) {
  switch (rc) {
    case MDB_MAP_FULL:
    case MDB_TXN_FULL:
    case ENOSPC:
    case EDQUOT: return Category::store_full;
    case MDB_INVALID:
    case MDB_VERSION_MISMATCH:
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INCOMPATIBLE: return Category::corruption;
    case MDB_READERS_FULL:
    case MDB_MAP_RESIZED:
    case EAGAIN:
    case EBUSY: return Category::busy;
    case MDB_BAD_VALSIZE: return Category::invalid_argument;
    case ENOENT: return Category::not_found;
    case EROFS: return Category::read_only;
    default: return Category::io_error;
  }
}

}  // namespace

tl::unexpected<Error> lmdb_fail(const fs::path& dir, std::string_view action, int rc) {
  Category c = category_of(rc);
  std::string_view hint;
  if (c == Category::store_full) hint = "; nothing from this transaction was written";
  else if (rc == MDB_READERS_FULL) hint = "; every reader slot is held by a live process, retry later";
  return fail(c, "store {}: {}: {}{}", dir.string(), action, mdb_strerror(rc), hint);
}

tl::unexpected<Error> os_fail(Category c, const fs::path& dir, std::string_view what, int err) {
  return fail(c, "store {}: {}: {}", dir.string(), what, std::strerror(err));
}

bool disk_full(const fs::path& dir, std::uint64_t needed) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return false;
  constexpr std::uint64_t k_slack = 1 << 20;  // page rounding, tree pages, the lock file
  return std::uint64_t{st.f_bavail} * st.f_frsize < needed + k_slack;
}

}  // namespace kcache::store::internal
