// Writing entries into the LMDB store: put and put_stream, both through one
// write transaction fed one prepared entry at a time (write_prepared), with
// the namespace record and each entry's usage record.
//
// Write transactions only write: entries are validated and encoded before one
// begins (layout_internal.hpp prepare_put), and a transaction that would
// change nothing is aborted, so the last transaction id moves only when the
// store's contents do. The same holds for removals (lmdb_remove.cpp) and usage
// records (lmdb_usage.cpp).
#include "kcache/store/lmdb_store_impl_internal.hpp"

namespace kcache::store::internal {

Result<PutSummary> LmdbStore::put(const Namespace& ns, std::span<const Entry> entries) {
  if (m_read_only) return refuse_write(fmt::format("write {} entries into '{}'", entries.size(), ns.name()));
  auto prepared = internal::prepare_put(ns, entries);
  if (!prepared) return tl::unexpected(std::move(prepared).error().context(store_name()));
  std::size_t i = 0;
  return write_prepared({&ns, 1}, [&]() -> Result<std::optional<internal::PreparedEntry>> {
    if (i == prepared->size()) return std::nullopt;
    return std::move((*prepared)[i++]);
  });
}

Result<PutSummary> LmdbStore::put_stream(const Namespace& ns, const EntryStream& next) {
  return put_streams({&ns, 1}, [&]() -> Result<std::optional<NamespacedEntry>> {
    auto item = KCACHE_TRY(next());
    if (!item) return std::nullopt;
    return NamespacedEntry{0, std::move(*item)};
  });
}

Result<PutSummary> LmdbStore::put_streams(std::span<const Namespace> namespaces, const NamespacedStream& next,
                                          std::span<const NamespacedKernel> remove) {
  if (m_read_only)
    return refuse_write(fmt::format("write entries into '{}'{}", namespaces.empty() ? "" : namespaces[0].name(),
                                    namespaces.size() > 1 ? " and other namespaces" : ""));
  for (const auto& ns : namespaces)
    KCACHE_CHECK(internal::prepare_put(ns, {}));  // checks the namespace name before locking
  std::vector<std::string> remove_keys;
  for (const auto& r : remove) {
    if (r.ns >= namespaces.size())
      return fail(Category::invalid_argument, "a removal for namespace {} of {}", r.ns, namespaces.size());
    auto key = internal::entry_key(namespaces[r.ns].name(), r.kernel);
    if (!key) return tl::unexpected(std::move(key).error().context(store_name()));
    remove_keys.push_back(std::move(*key));
  }
  return write_prepared(
      namespaces,
      [&]() -> Result<std::optional<internal::PreparedEntry>> {
        auto item = KCACHE_TRY(next());
        if (!item) return std::nullopt;
        if (item->ns >= namespaces.size())
          return fail(Category::invalid_argument, "an entry for namespace {} of {}", item->ns, namespaces.size());
        auto prepared = internal::prepare_put(namespaces[item->ns], std::span<const Entry>(&item->entry, 1));
        if (!prepared) return tl::unexpected(std::move(prepared).error().context(store_name()));
        return std::move(prepared->front());
      },
      remove_keys);
}

Result<PutSummary> LmdbStore::write_prepared(
    std::span<const Namespace> namespaces, const std::function<Result<std::optional<internal::PreparedEntry>>()>& next,
    std::span<const std::string> remove_keys) {
  Txn txn = KCACHE_TRY(Txn::begin(*m_env, true));
  bool changed = false;
  PutSummary summary;
  for (const auto& key : remove_keys)
    if (KCACHE_TRY(delete_entry(txn, key))) ++summary.removed, changed = true;
  for (const auto& ns : namespaces) {
    std::string ns_name = ns.name();
    if (!KCACHE_TRY(txn.get(m_env->namespaces(), ns_name, "a namespace record"))) {
      KCACHE_CHECK(txn.put(m_env->namespaces(), ns_name, internal::encode_namespace_record(ns),
                           fmt::format("the record of namespace '{}'", ns_name)));
      changed = true;
    }
  }
  std::uint64_t written_bytes = 0;
  const auto now = m_clock.now();
  auto usage = internal::encode_usage({now, now});
  while (auto entry = KCACHE_TRY(next())) {
    // A kernel that built has no failure to remember (layout_internal.hpp "Failures").
    if (m_env->has_failures() && KCACHE_TRY(txn.get(m_env->failures(), entry->key, "a failure record"))) {
      MDB_val k = to_val(entry->key);
      if (int rc = mdb_del(txn.handle(), m_env->failures(), &k, nullptr); rc != MDB_SUCCESS)
        return lmdb_fail(m_env->dir(), "remove a failure record", rc);
      changed = true;
    }
    auto existing = KCACHE_TRY(txn.get(m_env->entries(), entry->key, "an entry"));
    auto action = internal::classify_put(*entry, existing);
    internal::count_put(summary, action);
    if (action == internal::PutAction::keep) continue;
    KCACHE_CHECK(txn.put(m_env->entries(), entry->key, entry->value, "an entry"));
    KCACHE_CHECK(txn.put(m_env->usage(), entry->key, usage, "a usage record"));
    written_bytes += entry->key.size() + entry->value.size() + usage.size();
    changed = true;
  }
  if (changed) KCACHE_CHECK(txn.commit(written_bytes));
  return summary;  // when nothing changed, the transaction aborts here
}

}  // namespace kcache::store::internal

namespace kcache::store::internal {

Result<void> LmdbStore::put_failures(const Namespace& ns, std::span<const Failure> failures) {
  if (m_read_only) return refuse_write(fmt::format("record {} failures in '{}'", failures.size(), ns.name()));
  if (failures.empty()) return {};
  std::string ns_name = ns.name();
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> records;
  records.reserve(failures.size());
  for (const auto& f : failures) {
    auto key = internal::entry_key(ns_name, f.kernel);
    if (!key) return tl::unexpected(std::move(key).error().context(store_name()));
    records.emplace_back(std::move(*key), encode_failure(f));
  }
  Txn txn = KCACHE_TRY(Txn::begin(*m_env, true));
  std::uint64_t written_bytes = 0;
  if (!KCACHE_TRY(txn.get(m_env->namespaces(), ns_name, "a namespace record")))
    KCACHE_CHECK(txn.put(m_env->namespaces(), ns_name, internal::encode_namespace_record(ns),
                         fmt::format("the record of namespace '{}'", ns_name)));
  for (const auto& [key, value] : records) {
    KCACHE_CHECK(txn.put(m_env->failures(), key, value, "a failure record"));
    written_bytes += key.size() + value.size();
  }
  KCACHE_CHECK(txn.commit(written_bytes));
  return {};
}

}  // namespace kcache::store::internal
