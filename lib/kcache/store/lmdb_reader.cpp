// Reads of the LMDB store: LmdbStore::read's snapshot and the Reader over it
// (get, scans, namespace records and counts, usage records, the run log).
// Every read runs in one read transaction, so it sees one consistent
// snapshot however many records it visits.
#include "kcache/store/lmdb_store_impl_internal.hpp"
#include "kcache/store/pending_runs_internal.hpp"

namespace kcache::store::internal {
namespace {

class LmdbReader final : public Reader {
 public:
  LmdbReader(const Txn& txn, std::size_t run_log_capacity, PayloadDigest payload_digests)
      : m_txn(txn), m_env(txn.env()), m_run_log_capacity(run_log_capacity), m_payload_digests(payload_digests) {}

  Result<std::optional<Entry>> get(std::string_view ns_name, std::string_view kernel) override {
    std::string key = KCACHE_TRY(internal::entry_key(ns_name, kernel));
    auto value = KCACHE_TRY(m_txn.get(m_env.entries(), key, "an entry"));
    if (!value) return std::optional<Entry>{};
    auto entry = internal::decode_stored_entry(key, *value, m_payload_digests);
    if (!entry) return in_store(std::move(entry).error());
    return std::optional(std::move(*entry));
  }

  Result<std::optional<EntryHead>> get_head(std::string_view ns_name, std::string_view kernel) override {
    std::string key = KCACHE_TRY(internal::entry_key(ns_name, kernel));
    auto value = KCACHE_TRY(m_txn.get(m_env.entries(), key, "an entry"));
    if (!value) return std::optional<EntryHead>{};
    auto head = internal::decode_stored_entry_head(key, *value);
    if (!head) return in_store(std::move(head).error());
    return std::optional(std::move(*head));
  }

  Result<void> scan(std::string_view ns_name, const std::function<bool(Entry&&)>& visit) override {
    return each_entry(ns_name, [&](Entry&& entry, const MDB_val&, const MDB_val&) -> Result<bool> {
      return visit(std::move(entry));
    });
  }

  Result<std::vector<NamespaceRecord>> namespace_records() override {
    std::vector<NamespaceRecord> out;
    Cursor cursor = KCACHE_TRY(Cursor::open(m_txn, m_env.namespaces()));
    MDB_val key{}, value{};
    for (bool found = KCACHE_TRY(cursor.get(key, value, MDB_FIRST)); found;
         found = KCACHE_TRY(cursor.get(key, value, MDB_NEXT))) {
      auto ns = internal::decode_namespace_record(to_string(key), to_bytes(value));
      if (!ns) return in_store(std::move(ns).error());
      out.push_back({std::move(*ns)});
    }
    return out;
  }

  Result<std::optional<EntryUsage>> usage(std::string_view ns_name, std::string_view kernel) override {
    std::string key = KCACHE_TRY(internal::entry_key(ns_name, kernel));
    return usage_of(key);
  }

  Result<void> scan_facts(std::string_view ns_name,
                          const std::function<bool(Entry&&, const EntryFacts&)>& visit) override {
    return each_entry(ns_name, [&](Entry&& entry, const MDB_val& key, const MDB_val& value) -> Result<bool> {
      EntryFacts facts{key.mv_size + value.mv_size, KCACHE_TRY(usage_of(to_string(key)))};
      return visit(std::move(entry), facts);
    });
  }

  Result<void> runs(const std::function<bool(RunRecord&&)>& visit) override {
    if (!m_env.has_lifecycle()) return {};  // a version-1 store has no run log
    // The database's runs, then the pending run log's that are not folded
    // yet (pending_runs_internal.hpp); the newest run_log_capacity of both.
    std::optional<PendingMark> mark;
    if (auto value = KCACHE_TRY(m_txn.get(m_env.meta(), k_meta_pending_runs, "the pending run log's mark")))
      mark = decode_pending_mark(*value);
    auto pending = unfolded_runs(read_pending_runs(m_env.dir()), mark);
    MDB_stat stat{};
    if (int rc = mdb_stat(m_txn.handle(), m_env.runs(), &stat); rc != MDB_SUCCESS)
      return lmdb_fail(m_env.dir(), "count the run log", rc);
    std::size_t total = stat.ms_entries + pending.size();
    std::size_t skip = total > m_run_log_capacity ? total - m_run_log_capacity : 0;
    Cursor cursor = KCACHE_TRY(Cursor::open(m_txn, m_env.runs()));
    MDB_val key{}, value{};
    for (bool found = KCACHE_TRY(cursor.get(key, value, MDB_FIRST)); found;
         found = KCACHE_TRY(cursor.get(key, value, MDB_NEXT))) {
      if (skip > 0 && skip--) continue;
      auto n = internal::run_number(to_string(key));
      if (!n) return in_store(Error{Category::corruption, "the run log holds a key that is not a run number"});
      auto run = internal::decode_run(*n, to_bytes(value));
      if (!run) return in_store(std::move(run).error());
      if (!visit(std::move(*run))) return {};
    }
    for (auto& run : pending) {
      if (skip > 0 && skip--) continue;
      if (!visit(std::move(run))) break;
    }
    return {};
  }

  Result<std::optional<Failure>> failure(std::string_view ns_name, std::string_view kernel) override {
    std::string key = KCACHE_TRY(internal::entry_key(ns_name, kernel));
    if (!m_env.has_failures()) return std::optional<Failure>{};  // an older store has none
    auto value = KCACHE_TRY(m_txn.get(m_env.failures(), key, "a failure record"));
    if (!value) return std::optional<Failure>{};
    auto failure = internal::decode_stored_failure(key, *value);
    if (!failure) return in_store(std::move(failure).error());
    return std::optional(std::move(*failure));
  }

  Result<void> scan_failures(std::string_view ns_name,
                             const std::function<bool(Failure&&, std::size_t)>& visit) override {
    KCACHE_CHECK(internal::check_namespace_name(ns_name));
    if (!m_env.has_failures()) return {};
    std::string prefix = internal::entry_prefix(ns_name);
    if (prefix.size() >= k_max_key_bytes) return {};
    Cursor cursor = KCACHE_TRY(Cursor::open(m_txn, m_env.failures()));
    MDB_val key = to_val(prefix), value{};
    for (bool found = KCACHE_TRY(cursor.get(key, value, MDB_SET_RANGE)); found && to_string(key).starts_with(prefix);
         found = KCACHE_TRY(cursor.get(key, value, MDB_NEXT))) {
      auto failure = internal::decode_stored_failure(to_string(key), to_bytes(value));
      if (!failure) {
        note_damaged(ns_name, to_string(key).substr(prefix.size()),
                     std::move(failure).error().context(fmt::format("store {}", m_env.dir().string())));
        continue;
      }
      if (!visit(std::move(*failure), key.mv_size + value.mv_size)) break;
    }
    return {};
  }

 private:
  /// Decodes every entry of `ns_name` in key order and hands it to `visit`
  /// with its raw key and value, until `visit` returns false; a record that
  /// fails to decode goes to damaged() instead.
  template <typename Visit>
  Result<void> each_entry(std::string_view ns_name, Visit&& visit) {
    KCACHE_CHECK(internal::check_namespace_name(ns_name));
    std::string prefix = internal::entry_prefix(ns_name);
    if (prefix.size() >= k_max_key_bytes) return {};  // no entry key can be that long
    Cursor cursor = KCACHE_TRY(Cursor::open(m_txn, m_env.entries()));
    MDB_val key = to_val(prefix), value{};
    for (bool found = KCACHE_TRY(cursor.get(key, value, MDB_SET_RANGE)); found && to_string(key).starts_with(prefix);
         found = KCACHE_TRY(cursor.get(key, value, MDB_NEXT))) {
      auto entry = internal::decode_stored_entry(to_string(key), to_bytes(value), m_payload_digests);
      if (!entry) {
        // One damaged record must not make the rest of the store unreadable.
        note_damaged(ns_name, to_string(key).substr(prefix.size()),
                     std::move(entry).error().context(fmt::format("store {}", m_env.dir().string())));
        continue;
      }
      if (!KCACHE_TRY(visit(std::move(*entry), key, value))) break;
    }
    return {};
  }

  Result<std::optional<EntryUsage>> usage_of(std::string_view key) {
    if (!m_env.has_lifecycle()) return std::optional<EntryUsage>{};
    auto value = KCACHE_TRY(m_txn.get(m_env.usage(), key, "a usage record"));
    if (!value) return std::optional<EntryUsage>{};
    auto usage = internal::decode_usage(key, *value);
    if (!usage) return in_store(std::move(usage).error());
    return std::optional(*usage);
  }
  tl::unexpected<Error> in_store(Error error) {
    return tl::unexpected(std::move(error).context(fmt::format("store {}", m_env.dir().string())));
  }
  const Txn& m_txn;
  Env& m_env;
  std::size_t m_run_log_capacity;
  PayloadDigest m_payload_digests;
};

}  // namespace

Result<void> LmdbStore::read(const std::function<Result<void>(Reader&)>& fn) {
  Txn txn = KCACHE_TRY(Txn::begin(*m_env, false));
  LmdbReader reader(txn, m_run_log_capacity, m_payload_digests);
  return fn(reader);
}

}  // namespace kcache::store::internal
