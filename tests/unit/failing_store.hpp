// A store that fails on command: wraps any store::Store (usually
// store::make_memory_store()) and, for the operations told to fail, returns an
// Error of a chosen Category instead of calling the wrapped store, so nothing
// reaches it. Everything else passes straight through. Tests swap it in
// wherever a Store& is taken to see what a caller does with a refused write
// or an unreadable store (docs/architecture.md "Errors, output and test seams").
//
//   test::FailingStore store(store::make_memory_store(clock));
//   store.fail(test::FailingStore::Op::put, Category::store_full);
//   ... engine::build(manifest, store, options) ...
//   store.heal(test::FailingStore::Op::put);
//
// Thread-safety: as the wrapped store; the failure settings and counters are
// guarded by a mutex, so they may be changed while another thread uses the store.
#pragma once

#include "kcache/store/store.hpp"

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace kcache::test {

class FailingStore final : public store::Store {
 public:
  /// The operations that can be made to fail.
  enum class Op { put, put_stream, read, record_usage };
  static constexpr std::size_t k_ops = 4;

  explicit FailingStore(std::unique_ptr<store::Store> inner) : m_inner(std::move(inner)) {}

  /// From now on `op` succeeds `after` more times, then fails with
  /// `category` and `message` (prefixed "injected: ") until heal(op).
  void fail(Op op, Category category, std::string message = "injected failure", std::size_t after = 0) {
    std::lock_guard lock(m_mutex);
    m_rules[index(op)] = Rule{category, "injected: " + std::move(message), after};
  }
  /// `op` passes through again.
  void heal(Op op) {
    std::lock_guard lock(m_mutex);
    m_rules[index(op)].reset();
  }
  void heal_all() {
    std::lock_guard lock(m_mutex);
    for (auto& r : m_rules) r.reset();
  }
  /// How many times `op` was called, and how many of those calls were failed.
  std::size_t calls(Op op) const {
    std::lock_guard lock(m_mutex);
    return m_calls[index(op)];
  }
  std::size_t failures(Op op) const {
    std::lock_guard lock(m_mutex);
    return m_failures[index(op)];
  }
  /// The wrapped store, to look at what really got written.
  store::Store& inner() { return *m_inner; }

  Result<void> read(const std::function<Result<void>(store::Reader&)>& fn) override {
    if (auto e = injected(Op::read)) return tl::unexpected(std::move(*e));
    return m_inner->read(fn);
  }
  Result<store::PutSummary> put(const Namespace& ns, std::span<const Entry> entries) override {
    if (auto e = injected(Op::put)) return tl::unexpected(std::move(*e));
    return m_inner->put(ns, entries);
  }
  Result<store::PutSummary> put_stream(const Namespace& ns, const EntryStream& next) override {
    if (auto e = injected(Op::put_stream)) return tl::unexpected(std::move(*e));
    return m_inner->put_stream(ns, next);
  }
  Result<store::PutSummary> put_streams(std::span<const Namespace> namespaces, const NamespacedStream& next,
                                        std::span<const NamespacedKernel> remove = {}) override {
    if (auto e = injected(Op::put_stream)) return tl::unexpected(std::move(*e));
    return m_inner->put_streams(namespaces, next, remove);
  }
  Result<void> record_usage(const store::UsageBatch& batch) override {
    if (auto e = injected(Op::record_usage)) return tl::unexpected(std::move(*e));
    return m_inner->record_usage(batch);
  }
  Result<std::size_t> remove(std::string_view ns_name, std::span<const std::string> kernels) override {
    return m_inner->remove(ns_name, kernels);
  }
  Result<store::RemoveSummary> remove_unchanged(std::string_view ns_name,
                                                std::span<const store::RemoveItem> items) override {
    return m_inner->remove_unchanged(ns_name, items);
  }
  Result<void> put_failures(const Namespace& ns, std::span<const Failure> failures) override {
    return m_inner->put_failures(ns, failures);
  }
  Result<store::RemoveSummary> remove_failures(std::string_view ns_name,
                                               std::span<const store::RemoveItem> items) override {
    return m_inner->remove_failures(ns_name, items);
  }
  Result<store::SpaceInfo> space() override { return m_inner->space(); }
  Result<std::uint64_t> last_transaction_id() override { return m_inner->last_transaction_id(); }
  bool read_only() const override { return m_inner->read_only(); }

 private:
  struct Rule {
    Category category;
    std::string message;
    std::size_t after = 0;  ///< successes left before failing
  };
  static std::size_t index(Op op) { return static_cast<std::size_t>(op); }

  /// Counts the call; the error to return when `op` is to fail now.
  std::optional<Error> injected(Op op) {
    std::lock_guard lock(m_mutex);
    const auto i = index(op);
    ++m_calls[i];
    auto& rule = m_rules[i];
    if (!rule) return std::nullopt;
    if (rule->after > 0) {
      --rule->after;
      return std::nullopt;
    }
    ++m_failures[i];
    return Error{rule->category, rule->message};
  }

  std::unique_ptr<store::Store> m_inner;
  mutable std::mutex m_mutex;
  std::array<std::optional<Rule>, k_ops> m_rules{};
  std::array<std::size_t, k_ops> m_calls{};
  std::array<std::size_t, k_ops> m_failures{};
};

}  // namespace kcache::test
