// The LMDB layer that every source file of the LMDB store shares: value
// conversions, LMDB and OS failures as Errors, the shared environment (Env)
// with its transaction gate, transactions and cursors, and how an environment
// is opened and shared. Declared here once so that each lmdb_*.cpp can hold
// one concern; the decisions behind each piece are in the file that
// implements it (lmdb_env.cpp, lmdb_env_registry.cpp, lmdb_txn.cpp,
// lmdb_errors.cpp, lmdb_lock_file.cpp). Internal to the store module.
// Thread-safety: as store.hpp.
#pragma once

#include "kcache/store/lmdb_store_internal.hpp"

#include <lmdb.h>
#include <sys/types.h>

#include <chrono>
#include <compare>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

namespace kcache::store::internal {

namespace fs = std::filesystem;
using Bytes = std::span<const std::uint8_t>;

/// Mode of the files LMDB creates (data.mdb, lock.mdb).
inline constexpr mdb_mode_t k_file_mode = 0664;
/// How long a map resize waits for this process's other transactions to end.
inline constexpr std::chrono::seconds k_resize_wait{10};

inline MDB_val to_val(std::string_view s) { return {s.size(), const_cast<char*>(s.data())}; }
inline MDB_val to_val(Bytes b) { return {b.size(), const_cast<std::uint8_t*>(b.data())}; }
inline Bytes to_bytes(const MDB_val& v) { return {static_cast<const std::uint8_t*>(v.mv_data), v.mv_size}; }
inline std::string_view to_string(const MDB_val& v) { return {static_cast<const char*>(v.mv_data), v.mv_size}; }

// --- lmdb_errors.cpp -----------------------------------------------------------

/// An LMDB failure as an Error naming the store, the action and LMDB's text.
tl::unexpected<Error> lmdb_fail(const fs::path& dir, std::string_view action, int rc);

/// An OS failure (errno `err`) as an Error of category `c` naming the store.
tl::unexpected<Error> os_fail(Category c, const fs::path& dir, std::string_view what, int err);

/// Whether the file system holding `dir` lacks room for `needed` more bytes.
/// LMDB reports a short write, which is how a full disk shows up, as EIO
/// ("short write, filesystem full?"); the free space tells the two apart.
bool disk_full(const fs::path& dir, std::uint64_t needed);

// --- lmdb_lock_file.cpp --------------------------------------------------------

/// Reserves the disk blocks of LMDB's lock file (lock.mdb) before LMDB
/// creates it, so that a full disk is a clean store_full rather than SIGBUS.
/// File systems without fallocate, and lock files LMDB would not be able to
/// open anyway, are left to LMDB.
Result<void> reserve_lock_file(const fs::path& dir, unsigned max_readers);

// --- lmdb_env.cpp: integrity at open ----------------------------------------------

/// corruption when data.mdb is shorter than (last page + 1) × page size of
/// its newest meta page (a truncated copy, a cut last page) and a page past
/// its end is one a tree may read (a root, or any page its free-page tree
/// does not list as free), which LMDB would meet as SIGBUS. Call right after
/// mdb_env_open succeeded, before any other LMDB call that reads a page of
/// the tree; it reads the meta pages, the main tree's root and the free-page
/// tree with pread, never through the map.
Result<void> check_file_length(MDB_env* env, const fs::path& dir);

// --- The environment -------------------------------------------------------------

/// Lets transactions run concurrently, and lets a map resize wait until none
/// is open in this process (mdb_env_set_mapsize's precondition). New
/// transactions wait while a resize is pending.
class TxnGate {
 public:
  void enter() {
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [&] { return !m_resizing; });
    ++m_active;
  }
  void leave() {
    std::lock_guard lock(m_mutex);
    if (--m_active == 0) m_cv.notify_all();
  }
  /// Runs `fn` with no transaction open; false (without running it) when
  /// transactions stay open past `timeout`, e.g. a thread resizing inside
  /// its own read() callback.
  template <typename Fn>
  bool exclusive(Fn&& fn, std::chrono::seconds timeout) {
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [&] { return !m_resizing; });
    m_resizing = true;
    bool idle = m_cv.wait_for(lock, timeout, [&] { return m_active == 0; });
    if (idle) fn();
    m_resizing = false;
    m_cv.notify_all();
    return idle;
  }

 private:
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::size_t m_active = 0;
  bool m_resizing = false;
};

/// Identifies one environment in the process-wide registry.
struct EnvKey {
  dev_t dev;
  ino_t ino;
  pid_t pid;
  auto operator<=>(const EnvKey&) const = default;
};

/// An open LMDB environment with its database handles. Shared by every Store
/// on the same directory; closed when the last one goes.
class Env {
 public:
  Env(MDB_env* env, fs::path dir, EnvKey key, bool read_only)
      : m_env(env), m_dir(std::move(dir)), m_key(key), m_read_only(read_only) {}
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;
  ~Env() { mdb_env_close(m_env); }

  MDB_env* handle() const { return m_env; }
  const fs::path& dir() const { return m_dir; }
  const EnvKey& key() const { return m_key; }
  /// Opened with MDB_RDONLY: no Store on it may write.
  bool read_only() const { return m_read_only; }
  TxnGate& gate() { return m_gate; }
  MDB_dbi entries() const { return m_entries; }
  MDB_dbi namespaces() const { return m_namespaces; }
  MDB_dbi meta() const { return m_meta; }
  /// The usage and runs databases; only when has_lifecycle() (a version-1
  /// store opened read-only has neither).
  MDB_dbi usage() const { return m_usage; }
  MDB_dbi runs() const { return m_runs; }
  bool has_lifecycle() const { return m_has_lifecycle; }
  /// The failures database; only when has_failures() (a version-1 or -2
  /// store opened read-only has none).
  MDB_dbi failures() const { return m_failures; }
  bool has_failures() const { return m_has_failures; }
  /// Keeps kcache.lock held for the environment's life (closed after it).
  void hold(internal::StoreLock lock) { m_lock = std::move(lock); }

  /// Opens (creating when `create`) the named databases and checks the
  /// store's layout version; with `create`, upgrades an older store.
  /// False when the store is of an older version and `create` is false (it
  /// needs the upgrade; what it has is opened for reading). not_found when there is no kcache store yet and `create` is
  /// false; corruption for an LMDB environment that is not one.
  /// (lmdb_env.cpp)
  Result<bool> open_databases(bool create);

  /// Adopts the map size another process grew the environment to.
  Result<void> adopt_map_size() {
    int rc = 0;
    if (!m_gate.exclusive([&] { rc = mdb_env_set_mapsize(m_env, 0); }, k_resize_wait))
      return fail(Category::busy,
                  "store {}: another process grew the store's map and this process still has transactions "
                  "open, so it cannot adopt the new size; retry",
                  m_dir.string());
    if (rc != MDB_SUCCESS) return lmdb_fail(m_dir, "adopt the grown map size", rc);
    return {};
  }

  /// Frees reader slots held by processes that no longer exist.
  Result<void> clear_stale_readers() {
    int dead = 0;
    if (int rc = mdb_reader_check(m_env, &dead); rc != MDB_SUCCESS) return lmdb_fail(m_dir, "clear stale readers", rc);
    return {};
  }

 private:
  MDB_env* m_env;
  fs::path m_dir;
  EnvKey m_key;
  bool m_read_only;
  TxnGate m_gate;
  MDB_dbi m_entries = 0;
  MDB_dbi m_namespaces = 0;
  MDB_dbi m_meta = 0;
  MDB_dbi m_usage = 0;
  MDB_dbi m_runs = 0;
  bool m_has_lifecycle = false;
  MDB_dbi m_failures = 0;
  bool m_has_failures = false;
  internal::StoreLock m_lock;  // destroyed after ~Env closed the environment
};

/// How an environment is opened: with MDB_RDONLY, and with LMDB's lock file
/// or MDB_NOLOCK.
struct EnvConfig {
  bool read_only = false;
  bool use_lock = true;
};

/// Creates and opens a new environment for `dir` with the given options,
/// then opens (creating or upgrading when writable) the store's databases
/// (lmdb_env.cpp). Callers go through acquire_env.
Result<std::unique_ptr<Env>> open_env(const fs::path& dir, EnvKey key, const OpenOptions& options,
                                      const EnvConfig& config);

/// The environment for `dir`, shared when this process has it open already
/// (lmdb_env_registry.cpp).
Result<std::shared_ptr<Env>> acquire_env(const fs::path& dir, EnvKey key, const OpenOptions& options,
                                         const EnvConfig& config);

// --- lmdb_txn.cpp: transactions and cursors ----------------------------------------

/// A transaction; aborted on destruction unless committed. Holds its place
/// in the Env's gate for its whole life.
class Txn {
 public:
  /// Begins a read (or write) transaction, adopting a grown map and clearing
  /// stale readers once when the reader table is full.
  static Result<Txn> begin(Env& env, bool write);

  Txn(Txn&& other) noexcept : m_env(other.m_env), m_txn(std::exchange(other.m_txn, nullptr)) {}
  Txn& operator=(Txn&&) = delete;
  ~Txn() { abort(); }

  MDB_txn* handle() const { return m_txn; }
  Env& env() const { return *m_env; }

  /// Commits; the transaction is over either way (LMDB frees it on failure).
  /// `written_bytes` (about what the transaction wrote) lets a short write
  /// on a full disk be reported as store_full rather than io_error.
  Result<void> commit(std::uint64_t written_bytes = 0);

  /// Aborts unless already over.
  void abort();

  /// The value under `key`, or nullopt. The bytes stay valid until this
  /// transaction writes or ends.
  Result<std::optional<Bytes>> get(MDB_dbi dbi, std::string_view key, std::string_view what) const;

  /// Writes `value` under `key`; `what` names it in errors.
  Result<void> put(MDB_dbi dbi, std::string_view key, Bytes value, std::string_view what) const;

 private:
  Txn(Env& env, MDB_txn* txn) : m_env(&env), m_txn(txn) {}
  Env* m_env;
  MDB_txn* m_txn;
};

/// A cursor, closed on destruction; it must not outlive its transaction.
class Cursor {
 public:
  static Result<Cursor> open(const Txn& txn, MDB_dbi dbi);
  Cursor(Cursor&& other) noexcept : m_env(other.m_env), m_cursor(std::exchange(other.m_cursor, nullptr)) {}
  Cursor& operator=(Cursor&&) = delete;
  ~Cursor() {
    if (m_cursor) mdb_cursor_close(m_cursor);
  }

  MDB_cursor* handle() const { return m_cursor; }

  /// Moves by `op`; false when there is no such record (MDB_NOTFOUND).
  Result<bool> get(MDB_val& key, MDB_val& value, MDB_cursor_op op);

 private:
  Cursor(Env& env, MDB_cursor* cursor) : m_env(&env), m_cursor(cursor) {}
  Env* m_env;
  MDB_cursor* m_cursor;
};

}  // namespace kcache::store::internal
