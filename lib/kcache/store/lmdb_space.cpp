// How the LMDB store's file is used: space (file size, pages in use, pages on
// LMDB's free list, for gc and compact reports) and the last transaction id
// ("store unchanged" checks). Both read only the environment's statistics and
// the free list, never the entries. Compaction itself is lmdb_compact.cpp.
#include "kcache/store/lmdb_store_impl_internal.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace kcache::store::internal {

Result<SpaceInfo> LmdbStore::space() {
  SpaceInfo info;
  struct stat st {};
  fs::path data = m_env->dir() / "data.mdb";
  if (::stat(data.c_str(), &st) != 0) return os_fail(Category::io_error, m_env->dir(), "stat data.mdb", errno);
  info.file_bytes = static_cast<std::uint64_t>(st.st_size);
  Txn txn = KCACHE_TRY(Txn::begin(*m_env, false));
  MDB_stat stat{};
  if (int rc = mdb_env_stat(m_env->handle(), &stat); rc != MDB_SUCCESS)
    return lmdb_fail(m_env->dir(), "read the environment statistics", rc);
  MDB_envinfo env_info{};
  if (int rc = mdb_env_info(m_env->handle(), &env_info); rc != MDB_SUCCESS)
    return lmdb_fail(m_env->dir(), "read the environment info", rc);
  info.page_size = stat.ms_psize;
  info.pages_used = static_cast<std::uint64_t>(env_info.me_last_pgno) + 1;
  // LMDB's free list is database 0: each record is an ID list whose first
  // word is its length (as mdb_stat -f counts it).
  Cursor cursor = KCACHE_TRY(Cursor::open(txn, 0));
  MDB_val key{}, value{};
  for (bool found = KCACHE_TRY(cursor.get(key, value, MDB_FIRST)); found;
       found = KCACHE_TRY(cursor.get(key, value, MDB_NEXT))) {
    if (value.mv_size < sizeof(std::size_t)) continue;
    std::size_t count = 0;
    std::memcpy(&count, value.mv_data, sizeof count);
    info.pages_free += count;
  }
  return info;
}

Result<std::uint64_t> LmdbStore::last_transaction_id() {
  MDB_envinfo info{};
  if (int rc = mdb_env_info(m_env->handle(), &info); rc != MDB_SUCCESS)
    return lmdb_fail(m_env->dir(), "read the environment info", rc);
  return static_cast<std::uint64_t>(info.me_last_txnid);
}

}  // namespace kcache::store::internal
