// The in-memory store, for unit tests. It keeps the same encoded records as
// the LMDB store and goes through the same layout functions, so the contract
// tests exercise the same key limits, counting and corruption checks.
//
// Thread-safety: the state is an immutable snapshot behind a mutex. read()
// takes the current snapshot (a pointer copy) and runs without the lock, so a
// callback may itself call put(); a write copies the maps (the values are
// shared, not copied), edits the copy and publishes it, which makes it all or
// nothing.
#include "kcache/store/layout_internal.hpp"
#include "kcache/store/memory_store_internal.hpp"
#include "kcache/store/store.hpp"
#include "kcache/util/file.hpp"

#include <map>
#include <mutex>

namespace kcache::store {
namespace {

using Bytes = std::vector<std::uint8_t>;

struct State {
  std::map<std::string, std::shared_ptr<const Bytes>, std::less<>> entries;
  std::map<std::string, Bytes, std::less<>> namespaces;
  std::map<std::string, Bytes, std::less<>> usage;     ///< by entry key
  std::map<std::uint64_t, Bytes> runs;                 ///< by run number
  std::map<std::string, Bytes, std::less<>> failures;  ///< by entry key
};

class MemoryReader final : public Reader {
 public:
  explicit MemoryReader(std::shared_ptr<const State> state) : m_state(std::move(state)) {}

  Result<std::optional<Entry>> get(std::string_view ns_name, std::string_view kernel) override {
    std::string key = KCACHE_TRY(internal::entry_key(ns_name, kernel));
    auto it = m_state->entries.find(key);
    if (it == m_state->entries.end()) return std::optional<Entry>{};
    return internal::decode_stored_entry(key, *it->second).map([](Entry e) { return std::optional(std::move(e)); });
  }

  Result<std::optional<EntryHead>> get_head(std::string_view ns_name, std::string_view kernel) override {
    std::string key = KCACHE_TRY(internal::entry_key(ns_name, kernel));
    auto it = m_state->entries.find(key);
    if (it == m_state->entries.end()) return std::optional<EntryHead>{};
    return internal::decode_stored_entry_head(key, *it->second).map([](EntryHead h) {
      return std::optional(std::move(h));
    });
  }

  Result<void> scan(std::string_view ns_name, const std::function<bool(Entry&&)>& visit) override {
    return each_entry(ns_name, [&](Entry&& entry, const auto&) -> Result<bool> { return visit(std::move(entry)); });
  }

  Result<std::vector<NamespaceRecord>> namespace_records() override {
    std::vector<NamespaceRecord> out;
    for (const auto& [name, record] : m_state->namespaces)
      out.push_back({KCACHE_TRY(internal::decode_namespace_record(name, record))});
    return out;
  }

  Result<std::optional<EntryUsage>> usage(std::string_view ns_name, std::string_view kernel) override {
    std::string key = KCACHE_TRY(internal::entry_key(ns_name, kernel));
    return usage_of(key);
  }

  Result<void> scan_facts(std::string_view ns_name,
                          const std::function<bool(Entry&&, const EntryFacts&)>& visit) override {
    return each_entry(ns_name, [&](Entry&& entry, const auto& stored) -> Result<bool> {
      EntryFacts facts{stored.first.size() + stored.second->size(), KCACHE_TRY(usage_of(stored.first))};
      return visit(std::move(entry), facts);
    });
  }

  /// Every readable entry of `ns_name` with its stored (key, record), in key
  /// order, until `fn` returns false; a damaged one is noted and skipped.
  template <typename Fn>
  Result<void> each_entry(std::string_view ns_name, Fn&& fn) {
    KCACHE_CHECK(internal::check_namespace_name(ns_name));
    std::string prefix = internal::entry_prefix(ns_name);
    for (auto it = m_state->entries.lower_bound(prefix); it != m_state->entries.end() && it->first.starts_with(prefix);
         ++it) {
      auto entry = internal::decode_stored_entry(it->first, *it->second);
      if (!entry) {
        note_damaged(ns_name, std::string_view(it->first).substr(prefix.size()), std::move(entry).error());
        continue;
      }
      if (!KCACHE_TRY(fn(std::move(*entry), *it))) break;
    }
    return {};
  }

  Result<void> runs(const std::function<bool(RunRecord&&)>& visit) override {
    for (const auto& [n, bytes] : m_state->runs)
      if (!visit(KCACHE_TRY(internal::decode_run(n, bytes)))) break;
    return {};
  }

  Result<std::optional<Failure>> failure(std::string_view ns_name, std::string_view kernel) override {
    std::string key = KCACHE_TRY(internal::entry_key(ns_name, kernel));
    auto it = m_state->failures.find(key);
    if (it == m_state->failures.end()) return std::optional<Failure>{};
    return std::optional(KCACHE_TRY(internal::decode_stored_failure(key, it->second)));
  }

  Result<void> scan_failures(std::string_view ns_name,
                             const std::function<bool(Failure&&, std::size_t)>& visit) override {
    KCACHE_CHECK(internal::check_namespace_name(ns_name));
    std::string prefix = internal::entry_prefix(ns_name);
    for (auto it = m_state->failures.lower_bound(prefix);
         it != m_state->failures.end() && it->first.starts_with(prefix); ++it) {
      auto failure = internal::decode_stored_failure(it->first, it->second);
      if (!failure) {
        note_damaged(ns_name, std::string_view(it->first).substr(prefix.size()), std::move(failure).error());
        continue;
      }
      if (!visit(std::move(*failure), it->first.size() + it->second.size())) break;
    }
    return {};
  }

 private:
  Result<std::optional<EntryUsage>> usage_of(const std::string& key) {
    auto it = m_state->usage.find(key);
    if (it == m_state->usage.end()) return std::optional<EntryUsage>{};
    return std::optional(KCACHE_TRY(internal::decode_usage(key, it->second)));
  }
  std::shared_ptr<const State> m_state;
};

/// Build leases: Store's default, a list in this object.
class MemoryStore final : public Store {
 public:
  MemoryStore(const util::Clock& clock, std::size_t run_log_capacity)
      : m_clock(clock), m_run_log_capacity(run_log_capacity) {}

  Result<void> read(const std::function<Result<void>(Reader&)>& fn) override {
    MemoryReader reader(snapshot());
    return fn(reader);
  }

  Result<PutSummary> put(const Namespace& ns, std::span<const Entry> entries) override {
    // Encode outside the lock, as the LMDB store does outside its write txn.
    auto prepared = KCACHE_TRY(internal::prepare_put(ns, entries));
    std::size_t i = 0;
    return write_prepared({&ns, 1}, [&]() -> Result<std::optional<internal::PreparedEntry>> {
      if (i == prepared.size()) return std::nullopt;
      return std::move(prepared[i++]);
    });
  }

  Result<PutSummary> put_stream(const Namespace& ns, const EntryStream& next_entry) override {
    return put_streams({&ns, 1}, [&]() -> Result<std::optional<NamespacedEntry>> {
      auto item = KCACHE_TRY(next_entry());
      if (!item) return std::nullopt;
      return NamespacedEntry{0, std::move(*item)};
    });
  }

  Result<PutSummary> put_streams(std::span<const Namespace> namespaces, const NamespacedStream& next_entry,
                                 std::span<const NamespacedKernel> remove = {}) override {
    for (const auto& ns : namespaces) KCACHE_CHECK(internal::prepare_put(ns, {}));
    std::vector<std::string> remove_keys;
    for (const auto& r : remove) {
      if (r.ns >= namespaces.size())
        return fail(Category::invalid_argument, "a removal for namespace {} of {}", r.ns, namespaces.size());
      remove_keys.push_back(KCACHE_TRY(internal::entry_key(namespaces[r.ns].name(), r.kernel)));
    }
    return write_prepared(
        namespaces,
        [&]() -> Result<std::optional<internal::PreparedEntry>> {
          auto item = KCACHE_TRY(next_entry());
          if (!item) return std::nullopt;
          if (item->ns >= namespaces.size())
            return fail(Category::invalid_argument, "an entry for namespace {} of {}", item->ns, namespaces.size());
          auto prepared =
              KCACHE_TRY(internal::prepare_put(namespaces[item->ns], std::span<const Entry>(&item->entry, 1)));
          return std::move(prepared.front());
        },
        remove_keys);
  }

  /// put and put_stream: a copy of the state, published only when every
  /// entry was taken (all or nothing).
  Result<PutSummary> write_prepared(std::span<const Namespace> namespaces,
                                    const std::function<Result<std::optional<internal::PreparedEntry>>()>& next_entry,
                                    std::span<const std::string> remove_keys = {}) {
    std::lock_guard lock(m_mutex);
    auto next = std::make_shared<State>(*m_state);
    bool changed = false;
    PutSummary summary;
    for (const auto& key : remove_keys)
      if (next->entries.erase(key)) next->usage.erase(key), ++summary.removed, changed = true;
    for (const auto& ns : namespaces) {
      std::string ns_name = ns.name();
      if (!next->namespaces.contains(ns_name)) {
        next->namespaces.emplace(ns_name, internal::encode_namespace_record(ns));
        changed = true;
      }
    }
    const auto now = m_clock.now();
    auto usage = internal::encode_usage({now, now});
    while (auto entry = KCACHE_TRY(next_entry())) {
      if (next->failures.erase(entry->key)) changed = true;  // it builds now
      auto it = next->entries.find(entry->key);
      std::optional<std::span<const std::uint8_t>> existing;
      if (it != next->entries.end()) existing = std::span<const std::uint8_t>(*it->second);
      auto action = internal::classify_put(*entry, existing);
      internal::count_put(summary, action);
      if (action == internal::PutAction::keep) continue;
      next->usage.insert_or_assign(entry->key, usage);
      next->entries.insert_or_assign(std::move(entry->key), std::make_shared<const Bytes>(std::move(entry->value)));
      changed = true;
    }
    if (changed) publish(std::move(next));
    return summary;
  }

  Result<void> put_failures(const Namespace& ns, std::span<const Failure> failures) override {
    if (failures.empty()) return {};
    std::string ns_name = ns.name();
    std::vector<std::pair<std::string, Bytes>> records;
    for (const auto& f : failures)
      records.emplace_back(KCACHE_TRY(internal::entry_key(ns_name, f.kernel)), encode_failure(f));
    std::lock_guard lock(m_mutex);
    auto next = std::make_shared<State>(*m_state);
    if (!next->namespaces.contains(ns_name)) next->namespaces.emplace(ns_name, internal::encode_namespace_record(ns));
    for (auto& [key, value] : records) next->failures.insert_or_assign(std::move(key), std::move(value));
    publish(std::move(next));
    return {};
  }

  Result<RemoveSummary> remove_failures(std::string_view ns_name, std::span<const RemoveItem> items) override {
    const auto keys = KCACHE_TRY(internal::entry_keys(ns_name, items));
    std::lock_guard lock(m_mutex);
    auto next = std::make_shared<State>(*m_state);
    RemoveSummary summary;
    for (std::size_t i = 0; i < items.size(); ++i) {
      auto it = next->failures.find(keys[i]);
      std::optional<std::span<const std::uint8_t>> value;
      if (it != next->failures.end()) value = it->second;
      if (internal::judge_removal(internal::RemovedRecord::failure, keys[i], value, items[i], summary))
        next->failures.erase(it);
    }
    if (summary.removed > 0) publish(std::move(next));
    return summary;
  }

  Result<std::size_t> remove(std::string_view ns_name, std::span<const std::string> kernels) override {
    std::vector<std::string> keys;
    keys.reserve(kernels.size());
    for (const auto& kernel : kernels) keys.push_back(KCACHE_TRY(internal::entry_key(ns_name, kernel)));
    std::lock_guard lock(m_mutex);
    auto next = std::make_shared<State>(*m_state);
    std::size_t removed = 0;
    for (const auto& key : keys) {
      if (!next->entries.erase(key)) continue;
      next->usage.erase(key);
      ++removed;
    }
    if (removed > 0) publish(std::move(next));
    return removed;
  }

  Result<RemoveSummary> remove_unchanged(std::string_view ns_name, std::span<const RemoveItem> items) override {
    const auto keys = KCACHE_TRY(internal::entry_keys(ns_name, items));
    std::lock_guard lock(m_mutex);
    auto next = std::make_shared<State>(*m_state);
    RemoveSummary summary;
    for (std::size_t i = 0; i < items.size(); ++i) {
      auto it = next->entries.find(keys[i]);
      std::optional<std::span<const std::uint8_t>> value;
      if (it != next->entries.end()) value = *it->second;
      if (!internal::judge_removal(internal::RemovedRecord::entry, keys[i], value, items[i], summary)) continue;
      next->entries.erase(it);
      next->usage.erase(keys[i]);
    }
    if (summary.removed > 0) publish(std::move(next));
    return summary;
  }

  Result<void> record_usage(const UsageBatch& batch) override {
    std::vector<std::string> keys;
    keys.reserve(batch.used.size());
    for (const auto& [ns_name, kernel] : batch.used) keys.push_back(KCACHE_TRY(internal::entry_key(ns_name, kernel)));
    std::lock_guard lock(m_mutex);
    auto next = std::make_shared<State>(*m_state);
    bool changed = false;
    for (const auto& key : keys) {
      if (!next->entries.contains(key)) continue;
      std::optional<EntryUsage> stored;
      if (auto it = next->usage.find(key); it != next->usage.end())
        if (auto decoded = internal::decode_usage(key, it->second)) stored = *decoded;
      auto touched = internal::touch_usage(stored, batch.time);
      if (!touched) continue;
      next->usage.insert_or_assign(key, internal::encode_usage(*touched));
      changed = true;
    }
    if (batch.run) {
      std::uint64_t last = next->runs.empty() ? 0 : next->runs.rbegin()->first;
      next->runs.emplace(last + 1, internal::encode_run(*batch.run));
      while (next->runs.size() > m_run_log_capacity) next->runs.erase(next->runs.begin());
      changed = true;
    }
    if (changed) publish(std::move(next));
    return {};
  }

  Result<SpaceInfo> space() override {
    auto state = snapshot();
    SpaceInfo info;
    for (const auto& [k, v] : state->entries) info.file_bytes += k.size() + v->size();
    for (const auto& [k, v] : state->namespaces) info.file_bytes += k.size() + v.size();
    for (const auto& [k, v] : state->usage) info.file_bytes += k.size() + v.size();
    for (const auto& [k, v] : state->runs) info.file_bytes += 8 + v.size();
    for (const auto& [k, v] : state->failures) info.file_bytes += k.size() + v.size();
    return info;
  }

  Result<std::uint64_t> last_transaction_id() override {
    std::lock_guard lock(m_mutex);
    return m_transaction_id;
  }

  bool read_only() const override { return false; }

  /// internal::put_raw_entry_record: `record` under `key`, unchecked.
  void put_raw(std::string key, Bytes record) {
    std::lock_guard lock(m_mutex);
    auto next = std::make_shared<State>(*m_state);
    next->entries.insert_or_assign(std::move(key), std::make_shared<const Bytes>(std::move(record)));
    publish(std::move(next));
  }

 private:
  std::shared_ptr<const State> snapshot() {
    std::lock_guard lock(m_mutex);
    return m_state;
  }
  // Caller holds m_mutex. Only writes that change something count as a
  // transaction, as the LMDB store aborts write transactions that change nothing.
  void publish(std::shared_ptr<const State> next) {
    m_state = std::move(next);
    ++m_transaction_id;
  }

  std::mutex m_mutex;
  const util::Clock& m_clock;
  std::size_t m_run_log_capacity;
  std::shared_ptr<const State> m_state = std::make_shared<State>();
  std::uint64_t m_transaction_id = 0;
};

}  // namespace

std::unique_ptr<Store> make_memory_store(const util::Clock& clock, std::size_t run_log_capacity) {
  return std::make_unique<MemoryStore>(clock, run_log_capacity);
}

namespace internal {

Result<void> put_raw_entry_record(Store& store, std::string key, std::vector<std::uint8_t> record) {
  auto* memory = dynamic_cast<MemoryStore*>(&store);
  if (!memory) return fail(Category::invalid_argument, "put_raw_entry_record: not a memory store");
  memory->put_raw(std::move(key), std::move(record));
  return {};
}

}  // namespace internal

}  // namespace kcache::store
