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
#include "kcache/store/store.hpp"

#include <map>
#include <mutex>

namespace kcache::store {
namespace {

using Bytes = std::vector<std::uint8_t>;

struct State {
  std::map<std::string, std::shared_ptr<const Bytes>, std::less<>> entries;
  std::map<std::string, Bytes, std::less<>> namespaces;
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

  Result<void> scan(std::string_view ns_name, const std::function<bool(Entry&&)>& visit) override {
    KCACHE_CHECK(internal::check_namespace_name(ns_name));
    std::string prefix = internal::entry_prefix(ns_name);
    for (auto it = m_state->entries.lower_bound(prefix);
         it != m_state->entries.end() && it->first.starts_with(prefix); ++it) {
      Entry entry = KCACHE_TRY(internal::decode_stored_entry(it->first, *it->second));
      if (!visit(std::move(entry))) break;
    }
    return {};
  }

  Result<std::vector<NamespaceInfo>> namespaces() override {
    std::vector<NamespaceInfo> out;
    for (const auto& [name, record] : m_state->namespaces) {
      NamespaceInfo info{KCACHE_TRY(internal::decode_namespace_record(name, record))};
      KCACHE_CHECK(scan(name, [&](Entry&& e) {
        ++info.entries;
        info.payload_bytes += e.payload.size();
        return true;
      }));
      out.push_back(std::move(info));
    }
    return out;
  }

 private:
  std::shared_ptr<const State> m_state;
};

class MemoryStore final : public Store {
 public:
  Result<void> read(const std::function<Result<void>(Reader&)>& fn) override {
    MemoryReader reader(snapshot());
    return fn(reader);
  }

  Result<PutSummary> put(const Namespace& ns, std::span<const Entry> entries) override {
    // Encode outside the lock, as the LMDB store does outside its write txn.
    auto prepared = KCACHE_TRY(internal::prepare_put(ns, entries));
    std::lock_guard lock(m_mutex);
    auto next = std::make_shared<State>(*m_state);
    bool changed = false;
    std::string ns_name = ns.name();
    if (!next->namespaces.contains(ns_name)) {
      next->namespaces.emplace(ns_name, internal::encode_namespace_record(ns));
      changed = true;
    }
    PutSummary summary;
    for (auto& entry : prepared) {
      auto it = next->entries.find(entry.key);
      std::optional<std::span<const std::uint8_t>> existing;
      if (it != next->entries.end()) existing = std::span<const std::uint8_t>(*it->second);
      auto action = internal::classify_put(entry, existing);
      internal::count_put(summary, action);
      if (action == internal::PutAction::keep) continue;
      next->entries.insert_or_assign(std::move(entry.key), std::make_shared<const Bytes>(std::move(entry.value)));
      changed = true;
    }
    if (changed) publish(std::move(next));
    return summary;
  }

  Result<std::size_t> remove(std::string_view ns_name, std::span<const std::string> kernels) override {
    std::vector<std::string> keys;
    keys.reserve(kernels.size());
    for (const auto& kernel : kernels) keys.push_back(KCACHE_TRY(internal::entry_key(ns_name, kernel)));
    std::lock_guard lock(m_mutex);
    auto next = std::make_shared<State>(*m_state);
    std::size_t removed = 0;
    for (const auto& key : keys) removed += next->entries.erase(key);
    if (removed > 0) publish(std::move(next));
    return removed;
  }

  Result<std::uint64_t> last_transaction_id() override {
    std::lock_guard lock(m_mutex);
    return m_transaction_id;
  }

  bool read_only() const override { return false; }

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
  std::shared_ptr<const State> m_state = std::make_shared<State>();
  std::uint64_t m_transaction_id = 0;
};

}  // namespace

std::unique_ptr<Store> make_memory_store() { return std::make_unique<MemoryStore>(); }

}  // namespace kcache::store
