// `kcache compact`: give a store's free pages back to the file system.
//
// LMDB never shrinks data.mdb: pages freed by deletes go to its free list and
// are reused by later writes. mdb_env_copy2 with MDB_CP_COMPACT writes a copy
// holding only live pages; swapping it in must be exclusive, because
// (1) a process with the old data.mdb open would keep writing into the
// replaced file, and (2) the copy restarts LMDB's transaction ids at 1 while
// lock.mdb still holds the old ones, which readers of an already-open lock
// file would trust. So:
//   1. kcache.lock exclusively (no waiting): refuse while any kcache process
//      has the store open; kcache processes opening it meanwhile wait.
//   2. An fcntl write lock on byte 0 of lock.mdb, where LMDB keeps its own
//      "is anyone here" lock: refuse while any other LMDB user (mdb_stat, an
//      older kcache) has it open; such users opening it meanwhile block.
//   3. Copy (read-only, MDB_NOLOCK environment) into <dir>/.compact-<pid>/,
//      fsync, rename over data.mdb, fsync the directory.
//   4. Still holding the lock of step 2, open the new file once: LMDB then
//      sees itself alone and re-initialises lock.mdb from the new file.
// A crash before the rename leaves the old store intact (and a stale
// .compact-* folder that the next compaction removes); the rename itself is
// atomic; after it, the next opener re-initialises lock.mdb (it is alone).
#include "kcache/store/layout_internal.hpp"
#include "kcache/store/lmdb_env_internal.hpp"

#include <fcntl.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace kcache::store {
namespace {

namespace fs = std::filesystem;

tl::unexpected<Error> lmdb_error(const fs::path& dir, std::string_view action, int rc) {
  Category c = rc == ENOSPC || rc == EDQUOT ? Category::store_full : Category::io_error;
  return fail(c, "store {}: compact: {}: {}; the store is unchanged", dir.string(), action, mdb_strerror(rc));
}

tl::unexpected<Error> os_error(const fs::path& dir, std::string_view action, int err) {
  Category c = err == ENOSPC || err == EDQUOT                  ? Category::store_full
               : err == EACCES || err == EPERM || err == EROFS ? Category::read_only
                                                               : Category::io_error;
  return fail(c, "store {}: compact: {}: {}", dir.string(), action, std::strerror(err));
}

/// An fd closed on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

/// An environment closed on scope exit.
struct EnvHandle {
  MDB_env* env = nullptr;
  ~EnvHandle() {
    if (env) mdb_env_close(env);
  }
};

Result<void> fsync_path(const fs::path& dir, const fs::path& path, int flags) {
  Fd f{::open(path.c_str(), flags | O_CLOEXEC)};
  if (f.fd < 0 || ::fsync(f.fd) != 0) return os_error(dir, fmt::format("fsync {}", path.string()), errno);
  return {};
}

/// Checks that `dir` holds a kcache store this code reads (the copy is of
/// whatever is there, so never compact someone else's LMDB file).
Result<void> check_kcache_store(const fs::path& dir, MDB_env* env) {
  MDB_txn* txn = nullptr;
  if (int rc = mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn); rc != MDB_SUCCESS)
    return lmdb_error(dir, "begin a read transaction", rc);
  MDB_dbi meta = 0;
  int rc = mdb_dbi_open(txn, std::string(internal::k_meta_db).c_str(), 0, &meta);
  std::string version;
  if (rc == MDB_SUCCESS) {
    std::string key(internal::k_schema_key);
    MDB_val k{key.size(), key.data()}, v{};
    if (mdb_get(txn, meta, &k, &v) == MDB_SUCCESS) version.assign(static_cast<const char*>(v.mv_data), v.mv_size);
  }
  mdb_txn_abort(txn);
  if (version.empty())
    return fail(Category::corruption, "store {} is not a kcache store; compact leaves it alone", dir.string());
  if (!internal::readable_schema(version))
    return fail(Category::version_mismatch, "store {} has layout version '{}', which this kcache does not read",
                dir.string(), version);
  return {};
}

}  // namespace

Result<CompactResult> compact_lmdb_store(const fs::path& dir) {
  fs::path data = dir / "data.mdb", lock_mdb = dir / "lock.mdb";
  struct stat data_stat {};
  if (::stat(data.c_str(), &data_stat) != 0) {
    if (errno == ENOENT) return fail(Category::not_found, "no store at {} (it has no data.mdb)", dir.string());
    return os_error(dir, "stat data.mdb", errno);
  }
  for (const fs::path& p : {dir, data})
    if (::access(p.c_str(), W_OK) != 0)
      return fail(Category::read_only, "store {} is not writable ({}: {}); compact rewrites data.mdb", dir.string(),
                  p.string(), std::strerror(errno));
  if (internal::open_in_this_process(dir))
    return fail(Category::busy, "store {} is open in this process; close it before compacting", dir.string());

  // 1 and 2: nobody else may have the store open, now or until we are done.
  auto kcache_lock = KCACHE_TRY(internal::StoreLock::exclusive(dir));
  Fd lock_fd{::open(lock_mdb.c_str(), O_RDWR | O_CLOEXEC)};
  if (lock_fd.fd < 0 && errno != ENOENT) return os_error(dir, "open lock.mdb", errno);
  if (lock_fd.fd >= 0) {
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = 0;
    fl.l_len = 1;
    if (::fcntl(lock_fd.fd, F_SETLK, &fl) != 0) {
      if (errno == EAGAIN || errno == EACCES)
        return fail(Category::busy,
                    "store {} is open in another process (it holds LMDB's lock in lock.mdb); compact needs it to "
                    "itself: retry when it has finished",
                    dir.string());
      return os_error(dir, "lock lock.mdb", errno);
    }
  }

  // Leftovers of a compaction that crashed: nobody else can be using them.
  std::error_code ec;
  for (const auto& item : fs::directory_iterator(dir, ec))
    if (item.path().filename().string().starts_with(".compact-")) fs::remove_all(item.path(), ec);
  fs::path tmp = dir / fmt::format(".compact-{}", ::getpid());
  fs::create_directory(tmp, ec);
  if (ec)
    return fail(Category::io_error, "store {}: compact: cannot create {}: {}", dir.string(), tmp.string(),
                ec.message());
  struct RemoveTmp {
    fs::path path;
    ~RemoveTmp() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  } remove_tmp{tmp};

  // 3: copy, then swap.
  std::size_t map_size = std::max<std::uint64_t>(OpenOptions{}.map_size, static_cast<std::uint64_t>(data_stat.st_size));
  {
    EnvHandle env;
    if (int rc = mdb_env_create(&env.env); rc != MDB_SUCCESS) return lmdb_error(dir, "create an environment", rc);
    mdb_env_set_maxdbs(env.env, 8);
    // The copy records this map size; kcache sets its own on every open anyway.
    mdb_env_set_mapsize(env.env, map_size);
    if (int rc = mdb_env_open(env.env, dir.c_str(), MDB_RDONLY | MDB_NOLOCK, 0664); rc != MDB_SUCCESS)
      return lmdb_error(dir, "open", rc);
    KCACHE_CHECK(internal::check_file_length(env.env, dir));  // before any page of the tree is read
    KCACHE_CHECK(check_kcache_store(dir, env.env));
    if (int rc = mdb_env_copy2(env.env, tmp.c_str(), MDB_CP_COMPACT); rc != MDB_SUCCESS)
      return lmdb_error(dir, "copy the live pages", rc);
  }
  fs::path copy = tmp / "data.mdb";
  if (::chmod(copy.c_str(), data_stat.st_mode & 07777) != 0) return os_error(dir, "chmod the copy", errno);
  KCACHE_CHECK(fsync_path(dir, copy, O_RDONLY));
  struct stat copy_stat {};
  if (::stat(copy.c_str(), &copy_stat) != 0) return os_error(dir, "stat the copy", errno);
  if (::rename(copy.c_str(), data.c_str()) != 0) return os_error(dir, "rename the copy over data.mdb", errno);
  KCACHE_CHECK(fsync_path(dir, dir, O_RDONLY | O_DIRECTORY));

  // 4: re-initialise lock.mdb from the new file while we still hold byte 0
  // (LMDB's own exclusive-open lock is per process, so it succeeds here).
  {
    EnvHandle env;
    if (int rc = mdb_env_create(&env.env); rc != MDB_SUCCESS) return lmdb_error(dir, "create an environment", rc);
    mdb_env_set_maxdbs(env.env, 8);
    mdb_env_set_mapsize(env.env, map_size);
    if (int rc = mdb_env_open(env.env, dir.c_str(), 0, 0664); rc != MDB_SUCCESS)
      return fail(Category::io_error,
                  "store {}: compact: the compacted data.mdb is in place but reopening it failed: {}; "
                  "run `kcache verify` on it",
                  dir.string(), mdb_strerror(rc));
    KCACHE_CHECK(check_kcache_store(dir, env.env));
  }
  return CompactResult{static_cast<std::uint64_t>(data_stat.st_size), static_cast<std::uint64_t>(copy_stat.st_size)};
}

}  // namespace kcache::store
