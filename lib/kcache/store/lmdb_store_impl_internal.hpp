// The LMDB Store, declared once here and defined by concern: reads
// (lmdb_reader.cpp, with the Reader), writing entries and failure records
// (lmdb_writer.cpp), removing them (lmdb_remove.cpp), usage records and the run log
// (lmdb_usage.cpp), space and transaction ids (lmdb_space.cpp), build leases
// (lease.cpp). Opening one
// is lmdb_store.cpp. Internal to the store module. Thread-safety: as store.hpp.
#pragma once

#include "kcache/store/layout_internal.hpp"
#include "kcache/store/lmdb_env_internal.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kcache::store::internal {

class LmdbStore final : public Store {
 public:
  LmdbStore(std::shared_ptr<Env> env, bool read_only, const util::Clock& clock, std::size_t run_log_capacity,
            PayloadDigest payload_digests)
      : m_env(std::move(env)),
        m_read_only(read_only),
        m_clock(clock),
        m_run_log_capacity(run_log_capacity),
        m_payload_digests(payload_digests) {}

  // lmdb_reader.cpp
  Result<void> read(const std::function<Result<void>(Reader&)>& fn) override;

  // lmdb_writer.cpp
  Result<PutSummary> put(const Namespace& ns, std::span<const Entry> entries) override;
  Result<PutSummary> put_stream(const Namespace& ns, const EntryStream& next) override;
  Result<PutSummary> put_streams(std::span<const Namespace> namespaces, const NamespacedStream& next,
                                 std::span<const NamespacedKernel> remove = {}) override;
  Result<void> put_failures(const Namespace& ns, std::span<const Failure> failures) override;

  // lmdb_remove.cpp
  Result<std::size_t> remove(std::string_view ns_name, std::span<const std::string> kernels) override;
  Result<RemoveSummary> remove_unchanged(std::string_view ns_name, std::span<const RemoveItem> items) override;
  Result<RemoveSummary> remove_failures(std::string_view ns_name, std::span<const RemoveItem> items) override;

  // lmdb_usage.cpp
  Result<void> record_usage(const UsageBatch& batch) override;

  // lmdb_space.cpp
  Result<SpaceInfo> space() override;
  Result<std::uint64_t> last_transaction_id() override;

  bool read_only() const override { return m_read_only; }

  // lease.cpp
  Result<std::unique_ptr<Lease>> begin_lease(std::uint64_t now) override;
  Result<std::optional<std::uint64_t>> oldest_lease(const Lease* except = nullptr) override;

 private:
  /// put and put_stream: one write transaction fed one prepared entry at a
  /// time; any error returns early and ~Txn aborts, so nothing is written.
  /// (lmdb_writer.cpp)
  Result<PutSummary> write_prepared(std::span<const Namespace> namespaces,
                                    const std::function<Result<std::optional<internal::PreparedEntry>>()>& next,
                                    std::span<const std::string> remove_keys = {});

  std::string store_name() const { return fmt::format("store {}", m_env->dir().string()); }

  /// Deletes an entry and its usage record; false when there was no entry.
  /// (lmdb_remove.cpp)
  Result<bool> delete_entry(const Txn& txn, const std::string& key);

  /// Appends a run record after the last one and trims the log to
  /// k_run_log_capacity. (lmdb_usage.cpp)
  Result<void> append_run(const Txn& txn, std::span<const std::uint8_t> run);

  /// Folds the pending run log into `txn` (pending_runs_internal.hpp), then
  /// appends `run` (when not empty), commits, and restarts the log.
  /// (lmdb_usage.cpp)
  Result<void> commit_folding(Txn& txn, std::span<const std::uint8_t> run, std::uint64_t written_bytes);
  /// Whether any entry of `keys` has a last use to write at `time`
  /// (touch_usage), read in a read transaction.
  Result<bool> usage_due(const std::vector<std::string>& keys, std::uint64_t time);
  /// Appends `run` to the pending run log, folding the log when it is due.
  Result<void> append_pending(const RunRecord& run);

  tl::unexpected<Error> refuse_write(std::string_view what) const {
    return fail(Category::read_only, "store {} is open read-only: cannot {}", m_env->dir().string(), what);
  }

  std::shared_ptr<Env> m_env;
  bool m_read_only;
  const util::Clock& m_clock;
  std::size_t m_run_log_capacity;   ///< OpenOptions::run_log_capacity
  PayloadDigest m_payload_digests;  ///< OpenOptions::payload_digests
};

}  // namespace kcache::store::internal
