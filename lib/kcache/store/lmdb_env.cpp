// Opening one LMDB environment: creating it with the flags kcache relies on,
// and opening (creating, upgrading) the store's named databases. Sharing an
// environment between the Stores of one process is lmdb_env_registry.cpp.
//
// - MDB_NOTLS: read transactions are not tied to threads, so a Store can be
//   used from any thread. No MDB_WRITEMAP: a full disk must be an error, not
//   SIGBUS. An explicit, large, sparse map size; stale reader slots are
//   cleared on open and again (once) when the reader table is full
//   (lmdb_txn.cpp).
// - Before LMDB touches lock.mdb, the open takes kcache.lock shared (a running
//   compaction must finish first) and reserves the lock file's disk blocks
//   (lmdb_lock_file.cpp).
#include "kcache/store/layout_internal.hpp"
#include "kcache/store/lmdb_env_internal.hpp"
#include "kcache/util/bytes.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <string>

namespace kcache::store::internal {
namespace {

constexpr unsigned k_max_dbs = 8;  // five used; room for later databases

tl::unexpected<Error> env_open_error(const fs::path& dir, const EnvConfig& config, int rc) {
  switch (rc) {
    case MDB_INVALID:
      return fail(Category::corruption,
                  "store {}: data.mdb is not an LMDB store ({}); kcache leaves it alone: move it away or use "
                  "another --store directory",
                  dir.string(), mdb_strerror(rc));
    case MDB_VERSION_MISMATCH:
      return fail(Category::corruption, "store {}: data.mdb was written by an incompatible LMDB version ({})",
                  dir.string(), mdb_strerror(rc));
    case EACCES:
    case EPERM:
    case EROFS:
      if (!config.read_only)
        return fail(Category::read_only, "store {} is not writable ({}); pass --read-only to inspect it", dir.string(),
                    mdb_strerror(rc));
      return fail(Category::io_error, "store {}: cannot open: {}", dir.string(), mdb_strerror(rc));
    case ENOENT: return fail(Category::not_found, "no store at {} ({})", dir.string(), mdb_strerror(rc));
    default: return lmdb_fail(dir, "open", rc);
  }
}

}  // namespace

// Why: LMDB maps data.mdb and trusts its meta page, so a page past the end
// of a truncated file (an interrupted copy, a full disk under another tool)
// is SIGBUS on first touch, in every command and in every application that
// calls kcache_lookup. Safe to ask: mdb_env_open has read both meta pages
// with read(2), refusing a file too short to hold them, and mdb_env_info and
// mdb_env_stat read only those pages (mdb_env_pick_meta: the one with the
// larger txnid). A writer in another process writes its data pages before
// its meta page, so the file is never shorter than a meta it has written:
// the meta is read before the file's size.
Result<void> check_file_length(MDB_env* env, const fs::path& dir) {
  MDB_envinfo info{};
  MDB_stat stat{};
  if (int rc = mdb_env_info(env, &info); rc != MDB_SUCCESS) return lmdb_fail(dir, "read the environment info", rc);
  if (int rc = mdb_env_stat(env, &stat); rc != MDB_SUCCESS) return lmdb_fail(dir, "read the environment stats", rc);
  mdb_filehandle_t fd = -1;
  if (int rc = mdb_env_get_fd(env, &fd); rc != MDB_SUCCESS) return lmdb_fail(dir, "get data.mdb's descriptor", rc);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return os_fail(Category::io_error, dir, "cannot stat data.mdb", errno);
  const std::uint64_t needed = (static_cast<std::uint64_t>(info.me_last_pgno) + 1) * stat.ms_psize;
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size < needed)
    return fail(Category::corruption,
                "store {} is damaged: data.mdb was truncated ({} bytes, but its last transaction uses {}: {} pages "
                "of {} bytes); kcache will not read it: restore it from a copy, or move the store away and rebuild",
                dir.string(), size, needed, info.me_last_pgno + 1, stat.ms_psize);
  return {};
}

Result<bool> Env::open_databases(bool create) {
  Txn txn = KCACHE_TRY(Txn::begin(*this, create));
  auto open_dbi = [&](std::string_view name, unsigned flags, MDB_dbi& dbi) -> Result<bool> {
    int rc = mdb_dbi_open(txn.handle(), std::string(name).c_str(), flags, &dbi);
    if (rc == MDB_NOTFOUND) return false;
    if (rc == MDB_INCOMPATIBLE)
      return fail(Category::corruption,
                  "store {} is an LMDB environment but not a kcache store ('{}' is not a database)", m_dir.string(),
                  name);
    if (rc != MDB_SUCCESS) return lmdb_fail(m_dir, fmt::format("open database '{}'", name), rc);
    return true;
  };

  bool have_meta = KCACHE_TRY(open_dbi(internal::k_meta_db, 0, m_meta));
  if (!have_meta) {
    // Creating our databases inside someone else's LMDB environment would
    // mix two programs' data in one file.
    MDB_dbi main_dbi = 0;
    MDB_stat stat{};
    if (int rc = mdb_dbi_open(txn.handle(), nullptr, 0, &main_dbi); rc != MDB_SUCCESS)
      return lmdb_fail(m_dir, "open the main database", rc);
    if (int rc = mdb_stat(txn.handle(), main_dbi, &stat); rc != MDB_SUCCESS)
      return lmdb_fail(m_dir, "read the main database", rc);
    if (stat.ms_entries != 0)
      return fail(Category::corruption,
                  "store {} is an LMDB environment but not a kcache store (it has no 'meta' database); "
                  "kcache leaves it alone: use another --store directory",
                  m_dir.string());
    if (!create) return fail(Category::not_found, "store {} is empty: nothing was ever written to it", m_dir.string());
    KCACHE_CHECK(open_dbi(internal::k_meta_db, MDB_CREATE, m_meta));
  }
  unsigned flags = create ? MDB_CREATE : 0;
  const std::pair<std::string_view, MDB_dbi*> data_dbs[] = {{internal::k_entries_db, &m_entries},
                                                            {internal::k_namespaces_db, &m_namespaces}};
  for (auto [name, dbi] : data_dbs)
    if (!KCACHE_TRY(open_dbi(name, flags, *dbi)))
      return fail(Category::corruption, "store {} is damaged: its '{}' database is missing", m_dir.string(), name);

  auto schema = KCACHE_TRY(txn.get(m_meta, internal::k_schema_key, "the store's layout version"));
  std::string version = schema ? std::string(reinterpret_cast<const char*>(schema->data()), schema->size()) : "";
  if (!schema) {
    if (have_meta)
      return fail(Category::corruption, "store {} is damaged: it records no layout version", m_dir.string());
  } else if (!internal::readable_schema(version)) {
    return fail(Category::version_mismatch,
                "store {} has layout version '{}'; this kcache reads versions {} to {} (a newer kcache wrote it?)",
                m_dir.string(), version, internal::k_schema_min_version, internal::k_schema_version);
  }
  bool current = version == internal::k_schema_version;
  if (!current && !create) {
    // Version 1, read-only or before the upgrade: no usage, no run log.
    KCACHE_CHECK(txn.commit());
    return false;
  }
  const std::pair<std::string_view, MDB_dbi*> lifecycle_dbs[] = {{internal::k_usage_db, &m_usage},
                                                                 {internal::k_runs_db, &m_runs}};
  for (auto [name, dbi] : lifecycle_dbs)
    if (!KCACHE_TRY(open_dbi(name, flags, *dbi)))
      return fail(Category::corruption, "store {} is damaged: its '{}' database is missing", m_dir.string(), name);
  if (!current)  // a new store, or the upgrade of a version-1 one (layout_internal.hpp)
    KCACHE_CHECK(txn.put(m_meta, internal::k_schema_key, util::as_bytes(internal::k_schema_version),
                         "the store's layout version"));
  // Committing (a read transaction too) makes the handles usable by later
  // transactions.
  KCACHE_CHECK(txn.commit());
  m_has_lifecycle = true;
  return true;
}

Result<std::unique_ptr<Env>> open_env(const fs::path& dir, EnvKey key, const OpenOptions& options,
                                      const EnvConfig& config) {
  MDB_env* raw = nullptr;
  if (int rc = mdb_env_create(&raw); rc != MDB_SUCCESS) return lmdb_fail(dir, "create an environment", rc);
  // From here the Env owns `raw`: LMDB requires mdb_env_close even after a
  // failed mdb_env_open.
  auto env = std::make_unique<Env>(raw, dir, key, config.read_only);
  // Before LMDB touches lock.mdb: a running compaction must finish first.
  if (config.use_lock) env->hold(KCACHE_TRY(internal::StoreLock::shared(dir, internal::k_compaction_wait)));
  if (int rc = mdb_env_set_mapsize(raw, options.map_size); rc != MDB_SUCCESS)
    return lmdb_fail(dir, "set the map size", rc);
  if (int rc = mdb_env_set_maxreaders(raw, options.max_readers); rc != MDB_SUCCESS)
    return lmdb_fail(dir, "set the reader count", rc);
  if (int rc = mdb_env_set_maxdbs(raw, k_max_dbs); rc != MDB_SUCCESS)
    return lmdb_fail(dir, "set the database count", rc);
  if (!config.read_only && config.use_lock) KCACHE_CHECK(reserve_lock_file(dir, options.max_readers));
  unsigned flags = MDB_NOTLS;
  if (config.read_only) flags |= MDB_RDONLY;
  if (!config.use_lock) flags |= MDB_NOLOCK;
  if (int rc = mdb_env_open(raw, dir.c_str(), flags, k_file_mode); rc != MDB_SUCCESS)
    return env_open_error(dir, config, rc);
  // Before anything reads a page of the tree.
  KCACHE_CHECK(check_file_length(raw, dir));
  // Slots of killed readers pin old pages and fill the table (docs/reliability.md).
  KCACHE_CHECK(env->clear_stale_readers());
  auto opened = env->open_databases(false);
  if (!opened) {
    if (opened.error().category != Category::not_found || config.read_only)
      return tl::unexpected(std::move(opened).error());
    KCACHE_CHECK(env->open_databases(true));
  } else if (!*opened && !config.read_only) {
    KCACHE_CHECK(env->open_databases(true));  // upgrade a version-1 store
  }
  return env;
}

}  // namespace kcache::store::internal
