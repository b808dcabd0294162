// Removing entries from the LMDB store, the primitives behind `kcache gc`:
// remove, remove_unchanged (which keeps an entry a concurrent build rewrote
// since gc listed it), and deleting one entry with its usage record.
#include "kcache/store/lmdb_store_impl_internal.hpp"

namespace kcache::store::internal {

Result<std::size_t> LmdbStore::remove(std::string_view ns_name, std::span<const std::string> kernels) {
  if (m_read_only) return refuse_write(fmt::format("remove entries from '{}'", ns_name));
  std::vector<std::string> keys;
  keys.reserve(kernels.size());
  for (const auto& kernel : kernels) {
    auto key = internal::entry_key(ns_name, kernel);
    if (!key) return tl::unexpected(std::move(key).error().context(store_name()));
    keys.push_back(std::move(*key));
  }
  Txn txn = KCACHE_TRY(Txn::begin(*m_env, true));
  std::size_t removed = 0;
  for (const auto& key : keys) {
    if (!KCACHE_TRY(delete_entry(txn, key))) continue;
    ++removed;
  }
  if (removed > 0) KCACHE_CHECK(txn.commit());
  return removed;
}

Result<RemoveSummary> LmdbStore::remove_unchanged(std::string_view ns_name, std::span<const RemoveItem> items) {
  if (m_read_only) return refuse_write(fmt::format("remove entries from '{}'", ns_name));
  auto keys = internal::entry_keys(ns_name, items);
  if (!keys) return tl::unexpected(std::move(keys).error().context(store_name()));
  Txn txn = KCACHE_TRY(Txn::begin(*m_env, true));
  RemoveSummary summary;
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto value = KCACHE_TRY(txn.get(m_env->entries(), (*keys)[i], "an entry"));
    if (internal::judge_removal(internal::RemovedRecord::entry, (*keys)[i], value, items[i], summary))
      KCACHE_CHECK(delete_entry(txn, (*keys)[i]));
  }
  if (summary.removed > 0) KCACHE_CHECK(txn.commit());
  return summary;
}

Result<RemoveSummary> LmdbStore::remove_failures(std::string_view ns_name, std::span<const RemoveItem> items) {
  if (m_read_only) return refuse_write(fmt::format("remove failure records from '{}'", ns_name));
  auto keys = internal::entry_keys(ns_name, items);
  if (!keys) return tl::unexpected(std::move(keys).error().context(store_name()));
  RemoveSummary summary;
  if (!m_env->has_failures()) {
    summary.absent = items.size();
    return summary;
  }
  Txn txn = KCACHE_TRY(Txn::begin(*m_env, true));
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto value = KCACHE_TRY(txn.get(m_env->failures(), (*keys)[i], "a failure record"));
    if (!internal::judge_removal(internal::RemovedRecord::failure, (*keys)[i], value, items[i], summary)) continue;
    MDB_val k = to_val((*keys)[i]);
    if (int rc = mdb_del(txn.handle(), m_env->failures(), &k, nullptr); rc != MDB_SUCCESS)
      return lmdb_fail(m_env->dir(), "remove a failure record", rc);
  }
  if (summary.removed > 0) KCACHE_CHECK(txn.commit());
  return summary;
}

Result<bool> LmdbStore::delete_entry(const Txn& txn, const std::string& key) {
  MDB_val k = to_val(key);
  int rc = mdb_del(txn.handle(), m_env->entries(), &k, nullptr);
  if (rc == MDB_NOTFOUND) return false;
  if (rc != MDB_SUCCESS) return lmdb_fail(m_env->dir(), "remove an entry", rc);
  rc = mdb_del(txn.handle(), m_env->usage(), &k, nullptr);
  if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) return lmdb_fail(m_env->dir(), "remove a usage record", rc);
  return true;
}

}  // namespace kcache::store::internal
