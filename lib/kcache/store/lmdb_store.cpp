// The LMDB store (layout in layout_internal.hpp): opening it. The checks here
// turn permission problems into clear errors before LMDB reports them less
// clearly; then the directory's environment is acquired (shared within the
// process) and wrapped in an LmdbStore.
//
// The LMDB store's other files, one concern each:
//   lmdb_env_internal.hpp     the LMDB layer they share (Env, Txn, Cursor, errors)
//   lmdb_store_impl_internal.hpp  the LmdbStore class
//   lmdb_errors.cpp           LMDB/OS failures as Errors
//   lmdb_lock_file.cpp        reserving lock.mdb's disk blocks
//   lmdb_env.cpp              opening one environment and its databases
//   lmdb_env_registry.cpp     one environment per directory per process
//   lmdb_txn.cpp              transactions and cursors
//   lmdb_reader.cpp           reads: the Reader over one snapshot
//   lmdb_writer.cpp           put, put_stream, put_failures
//   lmdb_remove.cpp           remove, remove_unchanged, remove_failures (gc)
//   lmdb_usage.cpp            usage records and the run log
//   lmdb_space.cpp            space use and transaction ids
//   lmdb_compact.cpp          `kcache compact`; store_lock.cpp: kcache.lock
//
// Read-only opens use MDB_RDONLY (data.mdb is opened O_RDONLY) and keep the
// lock file when it is writable, so writers in other processes see our
// snapshot. When it is not (a store on read-only media or owned by another
// user) they use MDB_RDONLY|MDB_NOLOCK and touch no file; such a reader is
// invisible to writers, which is acceptable because a user who cannot write
// the lock file cannot write the store either, and any torn read is caught by
// the entry records' digests.
#include "kcache/store/lmdb_store_impl_internal.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kcache::store {

namespace internal {
namespace {

/// stat(2) that distinguishes "missing" (nullopt) from other failures.
Result<std::optional<struct stat>> stat_path(const fs::path& dir, const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return std::optional(st);
  int err = errno;
  if (err == ENOENT) return std::optional<struct stat>{};
  return os_fail(Category::io_error, dir, fmt::format("cannot access {}", path.string()), err);
}

bool writable(const fs::path& path) { return ::access(path.c_str(), W_OK) == 0; }

Result<void> check_writable(const fs::path& dir) {
  for (const fs::path& path : {dir, dir / "data.mdb", dir / "lock.mdb"}) {
    if (path != dir && !KCACHE_TRY(stat_path(dir, path))) continue;
    if (::access(path.c_str(), W_OK) == 0) continue;
    int err = errno;
    if (err == EACCES || err == EPERM || err == EROFS)
      return fail(Category::read_only, "store {} is not writable ({}: {}); pass --read-only to inspect it",
                  dir.string(), path.string(), std::strerror(err));
    return os_fail(Category::io_error, dir, fmt::format("cannot access {}", path.string()), err);
  }
  return {};
}

Result<EnvConfig> check_read_only(const fs::path& dir, internal::LockFile lock_file) {
  fs::path data = dir / "data.mdb", lock = dir / "lock.mdb";
  auto data_stat = KCACHE_TRY(stat_path(dir, data));
  if (!data_stat) return fail(Category::not_found, "no store at {} (it has no data.mdb)", dir.string());
  if (data_stat->st_size == 0)
    return fail(Category::not_found, "store {} is empty: nothing was ever written to it", dir.string());
  if (::access(data.c_str(), R_OK) != 0) {
    int err = errno;
    return os_fail(Category::io_error, dir, fmt::format("cannot read {}", data.string()), err);
  }
  EnvConfig config{.read_only = true, .use_lock = false};
  if (lock_file == internal::LockFile::automatic)
    config.use_lock = KCACHE_TRY(stat_path(dir, lock)) ? writable(lock) : writable(dir);
  return config;
}

}  // namespace

Result<std::unique_ptr<Store>> open_lmdb_store(const fs::path& dir, const OpenOptions& options, LockFile lock_file) {
  if (options.map_size == 0) return fail(Category::invalid_argument, "store {}: map size must not be 0", dir.string());
  if (options.max_readers == 0)
    return fail(Category::invalid_argument, "store {}: max readers must not be 0", dir.string());

  auto dir_stat = KCACHE_TRY(stat_path(dir, dir));
  if (!dir_stat) {
    if (options.read_only)
      return fail(Category::not_found, "no store at {} (the directory does not exist)", dir.string());
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return fail(Category::io_error, "cannot create store directory {}: {}", dir.string(), ec.message());
    dir_stat = KCACHE_TRY(stat_path(dir, dir));
    if (!dir_stat) return fail(Category::io_error, "store directory {} vanished after creating it", dir.string());
  }
  if (!S_ISDIR(dir_stat->st_mode)) return fail(Category::io_error, "store {} is not a directory", dir.string());
  if (::access(dir.c_str(), R_OK | X_OK) != 0) {
    int err = errno;
    return os_fail(Category::io_error, dir, "cannot read the store directory", err);
  }

  EnvConfig config;
  if (options.read_only) {
    config = KCACHE_TRY(check_read_only(dir, lock_file));
  } else {
    KCACHE_CHECK(check_writable(dir));
  }

  EnvKey key{dir_stat->st_dev, dir_stat->st_ino, ::getpid()};
  auto env = KCACHE_TRY(acquire_env(dir, key, options, config));
  if (env->read_only() && !options.read_only)
    return fail(Category::busy,
                "store {} is already open read-only in this process; close it before opening it for writing",
                dir.string());
  bool read_only = options.read_only || env->read_only();
  return std::make_unique<LmdbStore>(std::move(env), read_only, *options.clock, options.run_log_capacity,
                                     options.payload_digests);
}

}  // namespace internal

Result<std::unique_ptr<Store>> open_lmdb_store(const std::filesystem::path& dir, const OpenOptions& options) {
  return internal::open_lmdb_store(dir, options, internal::LockFile::automatic);
}

Result<bool> remove_store_if_empty(const std::filesystem::path& dir) {
  {
    // The exclusive kcache.lock (as compact takes it) proves no other kcache
    // process has the store open while its files go.
    auto lock = internal::StoreLock::exclusive(dir);
    if (!lock) return false;
    // Without LMDB's lock file: nobody else has the store open, and the
    // shared kcache.lock a normal open takes would wait for our own.
    OpenOptions options;
    options.read_only = true;
    auto store = KCACHE_TRY(internal::open_lmdb_store(dir, options, internal::LockFile::never));
    bool empty = false;
    KCACHE_CHECK(store->read([&](Reader& r) -> Result<void> {
      empty = KCACHE_TRY(r.namespace_records()).empty();
      return {};
    }));
    if (!empty) return false;
  }
  std::error_code ec;
  for (const char* name : {"data.mdb", "lock.mdb", "kcache.lock"}) std::filesystem::remove(dir / name, ec);
  std::filesystem::remove(dir, ec);  // only when empty: anything else in the folder stays
  return true;
}

}  // namespace kcache::store
