// What builds used, in the LMDB store: record_usage writes the last-used
// time of the entries a build found fresh and appends the build's run record
// to the bounded run log (formats in layout_internal.hpp, encoding in
// lifecycle.cpp), all in one small write transaction. A build that has
// nothing else to write (a warm no-op build: every last-used time within
// k_last_used_resolution) appends its run record to the pending run log
// instead, with no transaction and no fsync; a later transaction folds it in
// (pending_runs_internal.hpp).
#include "kcache/store/lmdb_store_impl_internal.hpp"
#include "kcache/store/pending_runs_internal.hpp"

namespace kcache::store::internal {

Result<void> LmdbStore::record_usage(const UsageBatch& batch) {
  if (m_read_only) return refuse_write("record which entries a build used");
  std::vector<std::string> keys;
  keys.reserve(batch.used.size());
  for (const auto& [ns_name, kernel] : batch.used) {
    auto key = internal::entry_key(ns_name, kernel);
    if (!key) return tl::unexpected(std::move(key).error().context(store_name()));
    keys.push_back(std::move(*key));
  }
  auto run = batch.run ? internal::encode_run(*batch.run) : std::vector<std::uint8_t>{};
  // Most warm runs have no last use to write: that is decided in a read
  // transaction, which takes no writer lock (a launcher hit, one process per
  // command, would otherwise queue behind every compile's write).
  if (batch.run && !KCACHE_TRY(usage_due(keys, batch.time))) return append_pending(*batch.run);

  Txn txn = KCACHE_TRY(Txn::begin(*m_env, true));
  bool changed = false;
  std::uint64_t written_bytes = 0;
  for (const auto& key : keys) {
    if (!KCACHE_TRY(txn.get(m_env->entries(), key, "an entry"))) continue;  // removed meanwhile
    std::optional<EntryUsage> stored;
    if (auto value = KCACHE_TRY(txn.get(m_env->usage(), key, "a usage record"))) {
      // A damaged usage record is replaced: it holds nothing worth keeping.
      if (auto decoded = internal::decode_usage(key, *value)) stored = *decoded;
    }
    auto next = internal::touch_usage(stored, batch.time);
    if (!next) continue;
    KCACHE_CHECK(txn.put(m_env->usage(), key, internal::encode_usage(*next), "a usage record"));
    written_bytes += key.size() + internal::k_usage_record_bytes;
    changed = true;
  }
  if (!changed && batch.run) {
    txn.abort();  // another process wrote them meanwhile
    return append_pending(*batch.run);
  }
  if (!changed) return {};
  return commit_folding(txn, run, written_bytes);
}

Result<bool> LmdbStore::usage_due(const std::vector<std::string>& keys, std::uint64_t time) {
  Txn txn = KCACHE_TRY(Txn::begin(*m_env, false));
  for (const auto& key : keys) {
    if (!KCACHE_TRY(txn.get(m_env->entries(), key, "an entry"))) continue;
    std::optional<EntryUsage> stored;
    if (auto value = KCACHE_TRY(txn.get(m_env->usage(), key, "a usage record")))
      if (auto decoded = internal::decode_usage(key, *value)) stored = *decoded;
    if (internal::touch_usage(stored, time)) return true;
  }
  return false;
}

Result<void> LmdbStore::append_pending(const RunRecord& run) {
  // Only the run record to write: no transaction, no fsync, unless the
  // pending log is due to be folded (then this run is folded with it).
  auto file = KCACHE_TRY(PendingRunsFile::open_locked(m_env->dir(), true));
  auto size = KCACHE_TRY(file->append(run));
  if (size <= k_pending_fold_bytes) return {};
  file.reset();  // the fold takes LMDB's write lock first, then the file's
  Txn fold = KCACHE_TRY(Txn::begin(*m_env, true));
  return commit_folding(fold, {}, 0);
}

Result<void> LmdbStore::commit_folding(Txn& txn, std::span<const std::uint8_t> run, std::uint64_t written_bytes) {
  auto file = KCACHE_TRY(PendingRunsFile::open_locked(m_env->dir(), false));
  if (file) {
    PendingLog log = KCACHE_TRY(file->read());
    std::optional<PendingMark> mark;
    if (auto value = KCACHE_TRY(txn.get(m_env->meta(), k_meta_pending_runs, "the pending run log's mark")))
      mark = decode_pending_mark(*value);
    const std::uint64_t generation = log.generation, end = log.valid_end;
    for (const auto& pending : unfolded_runs(std::move(log), mark)) {
      auto bytes = internal::encode_run(pending);
      KCACHE_CHECK(append_run(txn, bytes));
      written_bytes += bytes.size();
    }
    if (generation != 0)
      KCACHE_CHECK(txn.put(m_env->meta(), k_meta_pending_runs, encode_pending_mark({generation, end}),
                           "the pending run log's mark"));
  }
  if (!run.empty()) {
    KCACHE_CHECK(append_run(txn, run));
    written_bytes += run.size();
  }
  KCACHE_CHECK(txn.commit(written_bytes));
  // The mark now covers the file's runs: a new generation starts it again.
  // A failure here costs nothing (the mark keeps them from being folded
  // twice; the next fold retries), so it does not fail the build.
  if (file) (void)file->restart();
  return {};
}

Result<void> LmdbStore::append_run(const Txn& txn, std::span<const std::uint8_t> run) {
  Cursor cursor = KCACHE_TRY(Cursor::open(txn, m_env->runs()));
  MDB_val key{}, value{};
  std::uint64_t last = 0;
  if (KCACHE_TRY(cursor.get(key, value, MDB_LAST))) last = internal::run_number(to_string(key)).value_or(0);
  KCACHE_CHECK(txn.put(m_env->runs(), internal::run_key(last + 1), run, "a run record"));
  MDB_stat stat{};
  if (int rc = mdb_stat(txn.handle(), m_env->runs(), &stat); rc != MDB_SUCCESS)
    return lmdb_fail(m_env->dir(), "count the run log", rc);
  for (std::size_t n = stat.ms_entries; n > m_run_log_capacity; --n) {
    if (!KCACHE_TRY(cursor.get(key, value, MDB_FIRST))) break;
    if (int rc = mdb_cursor_del(cursor.handle(), 0); rc != MDB_SUCCESS)
      return lmdb_fail(m_env->dir(), "trim the run log", rc);
  }
  return {};
}

}  // namespace kcache::store::internal
