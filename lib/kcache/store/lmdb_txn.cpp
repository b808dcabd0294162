// Transactions and cursors of the LMDB store (declared in
// lmdb_env_internal.hpp): beginning, committing and aborting transactions,
// reading and writing single values, moving cursors.
//
// MDB_MAP_RESIZED (another process grew the map) is handled by adopting the
// new size, which LMDB allows only while this process has no transaction open
// on the environment: every transaction passes the Env's TxnGate, which the
// resize closes. Stale reader slots are cleared (once) when the reader table
// is full, as they are on open (lmdb_env.cpp).
#include "kcache/store/lmdb_env_internal.hpp"

#include <cerrno>

namespace kcache::store::internal {

Result<Txn> Txn::begin(Env& env, bool write) {
  bool cleared_readers = false;
  for (int resizes = 0;;) {
    env.gate().enter();
    MDB_txn* txn = nullptr;
    int rc = mdb_txn_begin(env.handle(), nullptr, write ? 0 : MDB_RDONLY, &txn);
    if (rc == MDB_SUCCESS) return Txn(env, txn);
    env.gate().leave();
    if (rc == MDB_MAP_RESIZED && resizes++ < 3) {
      KCACHE_CHECK(env.adopt_map_size());
      continue;
    }
    if (rc == MDB_READERS_FULL && !cleared_readers) {
      cleared_readers = true;
      KCACHE_CHECK(env.clear_stale_readers());
      continue;
    }
    return lmdb_fail(env.dir(), write ? "begin a write transaction" : "begin a read transaction", rc);
  }
}

Result<void> Txn::commit(std::uint64_t written_bytes) {
  int rc = mdb_txn_commit(std::exchange(m_txn, nullptr));
  m_env->gate().leave();
  if (rc == EIO && disk_full(m_env->dir(), written_bytes))
    return fail(Category::store_full,
                "store {}: commit: the disk holding the store is full; nothing from this transaction was written",
                m_env->dir().string());
  if (rc != MDB_SUCCESS) return lmdb_fail(m_env->dir(), "commit", rc);
  return {};
}

void Txn::abort() {
  if (!m_txn) return;
  mdb_txn_abort(std::exchange(m_txn, nullptr));
  m_env->gate().leave();
}

Result<std::optional<Bytes>> Txn::get(MDB_dbi dbi, std::string_view key, std::string_view what) const {
  MDB_val k = to_val(key), v{};
  int rc = mdb_get(m_txn, dbi, &k, &v);
  if (rc == MDB_NOTFOUND) return std::optional<Bytes>{};
  if (rc != MDB_SUCCESS) return lmdb_fail(m_env->dir(), fmt::format("read {}", what), rc);
  return std::optional(to_bytes(v));
}

Result<void> Txn::put(MDB_dbi dbi, std::string_view key, Bytes value, std::string_view what) const {
  MDB_val k = to_val(key), v = to_val(value);
  if (int rc = mdb_put(m_txn, dbi, &k, &v, 0); rc != MDB_SUCCESS)
    return lmdb_fail(m_env->dir(), fmt::format("write {}", what), rc);
  return {};
}

Result<Cursor> Cursor::open(const Txn& txn, MDB_dbi dbi) {
  MDB_cursor* cursor = nullptr;
  if (int rc = mdb_cursor_open(txn.handle(), dbi, &cursor); rc != MDB_SUCCESS)
    return lmdb_fail(txn.env().dir(), "open a cursor", rc);
  return Cursor(txn.env(), cursor);
}

Result<bool> Cursor::get(MDB_val& key, MDB_val& value, MDB_cursor_op op) {
  int rc = mdb_cursor_get(m_cursor, &key, &value, op);
  if (rc == MDB_NOTFOUND) return false;
  if (rc != MDB_SUCCESS) return lmdb_fail(m_env->dir(), "move a cursor", rc);
  return true;
}

}  // namespace kcache::store::internal
