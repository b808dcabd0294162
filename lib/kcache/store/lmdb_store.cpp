// The LMDB store (layout in layout_internal.hpp).
//
// Decisions, with the LMDB facts of docs/reliability.md behind them:
// - One environment per directory per process. LMDB forbids opening an
//   environment twice in one process (closing either copy's lock-file
//   descriptor drops the other's fcntl locks), so a process-wide registry
//   keyed by the directory's (st_dev, st_ino) and our pid shares one Env
//   between every Store opened on it; the last Store to go closes it, under
//   the registry's lock so no reopen can race the close. The pid is part of
//   the key so a forked child opens its own environment instead of using the
//   parent's.
// - MDB_NOTLS: read transactions are not tied to threads, so a Store can be
//   used from any thread. No MDB_WRITEMAP: a full disk must be an error, not
//   SIGBUS. An explicit, large, sparse map size; stale reader slots are
//   cleared on open and again (once) when the reader table is full.
// - MDB_MAP_RESIZED (another process grew the map) is handled by adopting
//   the new size, which LMDB allows only while this process has no
//   transaction open on the environment: every transaction passes a TxnGate
//   that the resize closes.
// - Write transactions only write: entries are validated and encoded before
//   one begins, and a transaction that would change nothing is aborted, so
//   the last transaction id moves only when the store's contents do.
// - Read-only opens use MDB_RDONLY (data.mdb is opened O_RDONLY) and keep the
//   lock file when it is writable, so writers in other processes see our
//   snapshot. When it is not (a store on read-only media or owned by another
//   user) they use MDB_RDONLY|MDB_NOLOCK and touch no file; such a reader is
//   invisible to writers, which is acceptable because a user who cannot
//   write the lock file cannot write the store either, and any torn read is
//   caught by the entry records' digests.
#include "kcache/util/file.hpp"
#include "kcache/store/layout_internal.hpp"
#include "kcache/store/lmdb_store_internal.hpp"
#include "kcache/util/bytes.hpp"

#include <fcntl.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

namespace kcache::store {
namespace {

namespace fs = std::filesystem;
using Bytes = std::span<const std::uint8_t>;

constexpr unsigned k_max_dbs = 8;  // five used; room for later databases
constexpr mdb_mode_t k_file_mode = 0664;
// How long a map resize waits for this process's other transactions to end.
constexpr std::chrono::seconds k_resize_wait{10};

MDB_val to_val(std::string_view s) { return {s.size(), const_cast<char*>(s.data())}; }
MDB_val to_val(Bytes b) { return {b.size(), const_cast<std::uint8_t*>(b.data())}; }
Bytes to_bytes(const MDB_val& v) { return {static_cast<const std::uint8_t*>(v.mv_data), v.mv_size}; }
std::string_view to_string(const MDB_val& v) { return {static_cast<const char*>(v.mv_data), v.mv_size}; }

Category category_of(int rc) {
  switch (rc) {
    case MDB_MAP_FULL:
    case MDB_TXN_FULL:
    case ENOSPC:
    case EDQUOT: return Category::store_full;
    case MDB_INVALID:
    case MDB_VERSION_MISMATCH:
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INCOMPATIBLE: return Category::corruption;
    case MDB_READERS_FULL:
    case MDB_MAP_RESIZED:
    case EAGAIN:
    case EBUSY: return Category::busy;
    case MDB_BAD_VALSIZE: return Category::invalid_argument;
    case ENOENT: return Category::not_found;
    case EROFS: return Category::read_only;
    default: return Category::io_error;
  }
}

/// An LMDB failure as an Error naming the store, the action and LMDB's text.
tl::unexpected<Error> lmdb_fail(const fs::path& dir, std::string_view action, int rc) {
  Category c = category_of(rc);
  std::string_view hint;
  if (c == Category::store_full) hint = "; nothing from this transaction was written";
  else if (rc == MDB_READERS_FULL) hint = "; every reader slot is held by a live process, retry later";
  return fail(c, "store {}: {}: {}{}", dir.string(), action, mdb_strerror(rc), hint);
}

tl::unexpected<Error> os_fail(Category c, const fs::path& dir, std::string_view what, int err) {
  return fail(c, "store {}: {}: {}", dir.string(), what, std::strerror(err));
}

/// Whether the file system holding `dir` lacks room for `needed` more bytes.
/// LMDB reports a short write, which is how a full disk shows up, as EIO
/// ("short write, filesystem full?"); the free space tells the two apart.
bool disk_full(const fs::path& dir, std::uint64_t needed) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return false;
  constexpr std::uint64_t k_slack = 1 << 20;  // page rounding, tree pages, the lock file
  return std::uint64_t{st.f_bavail} * st.f_frsize < needed + k_slack;
}

/// Reserves the disk blocks of the lock file before LMDB creates it. LMDB
/// sizes lock.mdb with ftruncate (a sparse file) and then writes it through
/// a shared mmap, so on a full disk the first write is SIGBUS, not an error
/// (docs/reliability.md D1; seen on a full tmpfs). With the blocks allocated
/// first (FALLOC_FL_KEEP_SIZE leaves the size to LMDB), a full disk is a
/// clean store_full. A reader slot is one 64-byte cache line, plus the
/// table's header: 4 KiB covers it. File systems without fallocate, and lock
/// files LMDB would not be able to open anyway, are left to LMDB.
Result<void> reserve_lock_file(const fs::path& dir, unsigned max_readers) {
  const fs::path path = dir / "lock.mdb";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, k_file_mode);
  if (fd < 0) return {};
  const off_t bytes = 4096 + off_t{64} * max_readers;
  int rc = ::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, bytes) == 0 ? 0 : errno;
  ::close(fd);
  if (rc == ENOSPC || rc == EDQUOT)
    return fail(Category::store_full, "store {}: the disk holding the store is full: no room for its lock file ({} KiB)",
                dir.string(), bytes >> 10);
  return {};
}

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
  /// Keeps kcache.lock held for the environment's life (closed after it).
  void hold(internal::StoreLock lock) { m_lock = std::move(lock); }

  /// Opens (creating when `create`) the named databases and checks the
  /// store's layout version; with `create`, upgrades a version-1 store.
  /// False when the store is version 1 and `create` is false (it needs the
  /// upgrade). not_found when there is no kcache store yet and `create` is
  /// false; corruption for an LMDB environment that is not one.
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
    if (int rc = mdb_reader_check(m_env, &dead); rc != MDB_SUCCESS)
      return lmdb_fail(m_dir, "clear stale readers", rc);
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
  internal::StoreLock m_lock;  // destroyed after ~Env closed the environment
};

/// A transaction; aborted on destruction unless committed. Holds its place
/// in the Env's gate for its whole life.
class Txn {
 public:
  /// Begins a read (or write) transaction, adopting a grown map and clearing
  /// stale readers once when the reader table is full.
  static Result<Txn> begin(Env& env, bool write) {
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

  Txn(Txn&& other) noexcept : m_env(other.m_env), m_txn(std::exchange(other.m_txn, nullptr)) {}
  Txn& operator=(Txn&&) = delete;
  ~Txn() { abort(); }

  MDB_txn* handle() const { return m_txn; }
  Env& env() const { return *m_env; }

  /// Commits; the transaction is over either way (LMDB frees it on failure).
  /// `written_bytes` (about what the transaction wrote) lets a short write
  /// on a full disk be reported as store_full rather than io_error.
  Result<void> commit(std::uint64_t written_bytes = 0) {
    int rc = mdb_txn_commit(std::exchange(m_txn, nullptr));
    m_env->gate().leave();
    if (rc == EIO && disk_full(m_env->dir(), written_bytes))
      return fail(Category::store_full,
                  "store {}: commit: the disk holding the store is full; nothing from this transaction was written",
                  m_env->dir().string());
    if (rc != MDB_SUCCESS) return lmdb_fail(m_env->dir(), "commit", rc);
    return {};
  }

  void abort() {
    if (!m_txn) return;
    mdb_txn_abort(std::exchange(m_txn, nullptr));
    m_env->gate().leave();
  }

  /// The value under `key`, or nullopt. The bytes stay valid until this
  /// transaction writes or ends.
  Result<std::optional<Bytes>> get(MDB_dbi dbi, std::string_view key, std::string_view what) const {
    MDB_val k = to_val(key), v{};
    int rc = mdb_get(m_txn, dbi, &k, &v);
    if (rc == MDB_NOTFOUND) return std::optional<Bytes>{};
    if (rc != MDB_SUCCESS) return lmdb_fail(m_env->dir(), fmt::format("read {}", what), rc);
    return std::optional(to_bytes(v));
  }

  Result<void> put(MDB_dbi dbi, std::string_view key, Bytes value, std::string_view what) const {
    MDB_val k = to_val(key), v = to_val(value);
    if (int rc = mdb_put(m_txn, dbi, &k, &v, 0); rc != MDB_SUCCESS)
      return lmdb_fail(m_env->dir(), fmt::format("write {}", what), rc);
    return {};
  }

 private:
  Txn(Env& env, MDB_txn* txn) : m_env(&env), m_txn(txn) {}
  Env* m_env;
  MDB_txn* m_txn;
};

/// A cursor, closed on destruction; it must not outlive its transaction.
class Cursor {
 public:
  static Result<Cursor> open(const Txn& txn, MDB_dbi dbi) {
    MDB_cursor* cursor = nullptr;
    if (int rc = mdb_cursor_open(txn.handle(), dbi, &cursor); rc != MDB_SUCCESS)
      return lmdb_fail(txn.env().dir(), "open a cursor", rc);
    return Cursor(txn.env(), cursor);
  }
  Cursor(Cursor&& other) noexcept : m_env(other.m_env), m_cursor(std::exchange(other.m_cursor, nullptr)) {}
  Cursor& operator=(Cursor&&) = delete;
  ~Cursor() {
    if (m_cursor) mdb_cursor_close(m_cursor);
  }

  MDB_cursor* handle() const { return m_cursor; }

  /// Moves by `op`; false when there is no such record (MDB_NOTFOUND).
  Result<bool> get(MDB_val& key, MDB_val& value, MDB_cursor_op op) {
    int rc = mdb_cursor_get(m_cursor, &key, &value, op);
    if (rc == MDB_NOTFOUND) return false;
    if (rc != MDB_SUCCESS) return lmdb_fail(m_env->dir(), "move a cursor", rc);
    return true;
  }

 private:
  Cursor(Env& env, MDB_cursor* cursor) : m_env(&env), m_cursor(cursor) {}
  Env* m_env;
  MDB_cursor* m_cursor;
};

Result<bool> Env::open_databases(bool create) {
  Txn txn = KCACHE_TRY(Txn::begin(*this, create));
  auto open_dbi = [&](std::string_view name, unsigned flags, MDB_dbi& dbi) -> Result<bool> {
    int rc = mdb_dbi_open(txn.handle(), std::string(name).c_str(), flags, &dbi);
    if (rc == MDB_NOTFOUND) return false;
    if (rc == MDB_INCOMPATIBLE)
      return fail(Category::corruption, "store {} is an LMDB environment but not a kcache store ('{}' is not a database)",
                  m_dir.string(), name);
    if (rc != MDB_SUCCESS) return lmdb_fail(m_dir, fmt::format("open database '{}'", name), rc);
    return true;
  };

  bool have_meta = KCACHE_TRY(open_dbi(internal::k_meta_db, 0, m_meta));
  if (!have_meta) {
    // Creating our databases inside someone else's LMDB environment would
    // mix two programs' data in one file.
    MDB_dbi main_dbi = 0;
    MDB_stat stat{};
    if (int rc = mdb_dbi_open(txn.handle(), nullptr, 0, &main_dbi); rc != MDB_SUCCESS)
      return lmdb_fail(m_dir, "open the main database", rc);
    if (int rc = mdb_stat(txn.handle(), main_dbi, &stat); rc != MDB_SUCCESS)
      return lmdb_fail(m_dir, "read the main database", rc);
    if (stat.ms_entries != 0)
      return fail(Category::corruption,
                  "store {} is an LMDB environment but not a kcache store (it has no 'meta' database); "
                  "kcache leaves it alone: use another --store directory",
                  m_dir.string());
    if (!create) return fail(Category::not_found, "store {} is empty: nothing was ever written to it", m_dir.string());
    KCACHE_CHECK(open_dbi(internal::k_meta_db, MDB_CREATE, m_meta));
  }
  unsigned flags = create ? MDB_CREATE : 0;
  const std::pair<std::string_view, MDB_dbi*> data_dbs[] = {{internal::k_entries_db, &m_entries},
                                                            {internal::k_namespaces_db, &m_namespaces}};
  for (auto [name, dbi] : data_dbs)
    if (!KCACHE_TRY(open_dbi(name, flags, *dbi)))
      return fail(Category::corruption, "store {} is damaged: its '{}' database is missing", m_dir.string(), name);

  auto schema = KCACHE_TRY(txn.get(m_meta, internal::k_schema_key, "the store's layout version"));
  std::string version = schema ? std::string(reinterpret_cast<const char*>(schema->data()), schema->size()) : "";
  if (!schema) {
    if (have_meta)
      return fail(Category::corruption, "store {} is damaged: it records no layout version", m_dir.string());
  } else if (!internal::readable_schema(version)) {
    return fail(Category::version_mismatch,
                "store {} has layout version '{}'; this kcache reads versions {} to {} (a newer kcache wrote it?)",
                m_dir.string(), version, internal::k_schema_min_version, internal::k_schema_version);
  }
  bool current = version == internal::k_schema_version;
  if (!current && !create) {
    // Version 1, read-only or before the upgrade: no usage, no run log.
    KCACHE_CHECK(txn.commit());
    return false;
  }
  const std::pair<std::string_view, MDB_dbi*> lifecycle_dbs[] = {{internal::k_usage_db, &m_usage},
                                                                 {internal::k_runs_db, &m_runs}};
  for (auto [name, dbi] : lifecycle_dbs)
    if (!KCACHE_TRY(open_dbi(name, flags, *dbi)))
      return fail(Category::corruption, "store {} is damaged: its '{}' database is missing", m_dir.string(), name);
  if (!current)  // a new store, or the upgrade of a version-1 one (layout_internal.hpp)
    KCACHE_CHECK(txn.put(m_meta, internal::k_schema_key, util::as_bytes(internal::k_schema_version),
                         "the store's layout version"));
  // Committing (a read transaction too) makes the handles usable by later
  // transactions.
  KCACHE_CHECK(txn.commit());
  m_has_lifecycle = true;
  return true;
}

// ---------------------------------------------------------------------------
// The process-wide registry of open environments.

struct Registry {
  std::mutex mutex;
  std::condition_variable closed;
  std::map<EnvKey, std::weak_ptr<Env>> envs;

  // Never destroyed: a Store may be released during static destruction.
  static Registry& instance() {
    static auto* registry = new Registry;
    return *registry;
  }
};

// The shared_ptr deleter: closes the environment under the registry lock, so
// a concurrent open of the same directory waits until the close is complete.
void release_env(Env* env) {
  auto& registry = Registry::instance();
  std::lock_guard lock(registry.mutex);
  registry.envs.erase(env->key());
  delete env;
  registry.closed.notify_all();
}

struct EnvConfig {
  bool read_only = false;
  bool use_lock = true;
};

tl::unexpected<Error> env_open_error(const fs::path& dir, const EnvConfig& config, int rc) {
  switch (rc) {
    case MDB_INVALID:
      return fail(Category::corruption,
                  "store {}: data.mdb is not an LMDB store ({}); kcache leaves it alone: move it away or use "
                  "another --store directory",
                  dir.string(), mdb_strerror(rc));
    case MDB_VERSION_MISMATCH:
      return fail(Category::corruption, "store {}: data.mdb was written by an incompatible LMDB version ({})",
                  dir.string(), mdb_strerror(rc));
    case EACCES:
    case EPERM:
    case EROFS:
      if (!config.read_only)
        return fail(Category::read_only, "store {} is not writable ({}); pass --read-only to inspect it",
                    dir.string(), mdb_strerror(rc));
      return fail(Category::io_error, "store {}: cannot open: {}", dir.string(), mdb_strerror(rc));
    case ENOENT: return fail(Category::not_found, "no store at {} ({})", dir.string(), mdb_strerror(rc));
    default: return lmdb_fail(dir, "open", rc);
  }
}

Result<std::unique_ptr<Env>> open_env(const fs::path& dir, EnvKey key, const OpenOptions& options,
                                      const EnvConfig& config) {
  MDB_env* raw = nullptr;
  if (int rc = mdb_env_create(&raw); rc != MDB_SUCCESS) return lmdb_fail(dir, "create an environment", rc);
  // From here the Env owns `raw`: LMDB requires mdb_env_close even after a
  // failed mdb_env_open.
  auto env = std::make_unique<Env>(raw, dir, key, config.read_only);
  // Before LMDB touches lock.mdb: a running compaction must finish first.
  if (config.use_lock) env->hold(KCACHE_TRY(internal::StoreLock::shared(dir, internal::k_compaction_wait)));
  if (int rc = mdb_env_set_mapsize(raw, options.map_size); rc != MDB_SUCCESS)
    return lmdb_fail(dir, "set the map size", rc);
  if (int rc = mdb_env_set_maxreaders(raw, options.max_readers); rc != MDB_SUCCESS)
    return lmdb_fail(dir, "set the reader count", rc);
  if (int rc = mdb_env_set_maxdbs(raw, k_max_dbs); rc != MDB_SUCCESS)
    return lmdb_fail(dir, "set the database count", rc);
  if (!config.read_only && config.use_lock) KCACHE_CHECK(reserve_lock_file(dir, options.max_readers));
  unsigned flags = MDB_NOTLS;
  if (config.read_only) flags |= MDB_RDONLY;
  if (!config.use_lock) flags |= MDB_NOLOCK;
  if (int rc = mdb_env_open(raw, dir.c_str(), flags, k_file_mode); rc != MDB_SUCCESS)
    return env_open_error(dir, config, rc);
  // Slots of killed readers pin old pages and fill the table (docs/reliability.md).
  KCACHE_CHECK(env->clear_stale_readers());
  auto opened = env->open_databases(false);
  if (!opened) {
    if (opened.error().category != Category::not_found || config.read_only)
      return tl::unexpected(std::move(opened).error());
    KCACHE_CHECK(env->open_databases(true));
  } else if (!*opened && !config.read_only) {
    KCACHE_CHECK(env->open_databases(true));  // upgrade a version-1 store
  }
  return env;
}

/// The environment for `dir`, shared when this process has it open already.
Result<std::shared_ptr<Env>> acquire_env(const fs::path& dir, EnvKey key, const OpenOptions& options,
                                         const EnvConfig& config) {
  auto& registry = Registry::instance();
  std::unique_lock lock(registry.mutex);
  for (;;) {
    auto it = registry.envs.find(key);
    if (it == registry.envs.end()) break;
    if (auto env = it->second.lock()) return env;
    registry.closed.wait(lock);  // its last Store is closing it right now
  }
  // Opened under the lock: a second thread opening the same directory must
  // find this Env, not open another.
  auto env = KCACHE_TRY(open_env(dir, key, options, config));
  std::shared_ptr<Env> shared(env.release(), release_env);
  registry.envs.emplace(key, shared);
  return shared;
}

// ---------------------------------------------------------------------------
// Reader and Store.

class LmdbReader final : public Reader {
 public:
  explicit LmdbReader(const Txn& txn) : m_txn(txn), m_env(txn.env()) {}

  Result<std::optional<Entry>> get(std::string_view ns_name, std::string_view kernel) override {
    std::string key = KCACHE_TRY(internal::entry_key(ns_name, kernel));
    auto value = KCACHE_TRY(m_txn.get(m_env.entries(), key, "an entry"));
    if (!value) return std::optional<Entry>{};
    auto entry = internal::decode_stored_entry(key, *value);
    if (!entry) return in_store(std::move(entry).error());
    return std::optional(std::move(*entry));
  }

  Result<void> scan(std::string_view ns_name, const std::function<bool(Entry&&)>& visit) override {
    KCACHE_CHECK(internal::check_namespace_name(ns_name));
    std::string prefix = internal::entry_prefix(ns_name);
    if (prefix.size() >= k_max_key_bytes) return {};  // no entry key can be that long
    Cursor cursor = KCACHE_TRY(Cursor::open(m_txn, m_env.entries()));
    MDB_val key = to_val(prefix), value{};
    for (bool found = KCACHE_TRY(cursor.get(key, value, MDB_SET_RANGE)); found && to_string(key).starts_with(prefix);
         found = KCACHE_TRY(cursor.get(key, value, MDB_NEXT))) {
      auto entry = internal::decode_stored_entry(to_string(key), to_bytes(value));
      if (!entry) return in_store(std::move(entry).error());
      if (!visit(std::move(*entry))) break;
    }
    return {};
  }

  Result<std::vector<NamespaceInfo>> namespaces() override {
    std::vector<NamespaceInfo> out;
    Cursor cursor = KCACHE_TRY(Cursor::open(m_txn, m_env.namespaces()));
    MDB_val key{}, value{};
    for (bool found = KCACHE_TRY(cursor.get(key, value, MDB_FIRST)); found;
         found = KCACHE_TRY(cursor.get(key, value, MDB_NEXT))) {
      auto ns = internal::decode_namespace_record(to_string(key), to_bytes(value));
      if (!ns) return in_store(std::move(ns).error());
      NamespaceInfo info{std::move(*ns)};
      KCACHE_CHECK(scan(info.ns.name(), [&](Entry&& e) {
        ++info.entries;
        info.payload_bytes += e.payload.size();
        return true;
      }));
      out.push_back(std::move(info));
    }
    return out;
  }

  Result<std::optional<EntryUsage>> usage(std::string_view ns_name, std::string_view kernel) override {
    std::string key = KCACHE_TRY(internal::entry_key(ns_name, kernel));
    return usage_of(key);
  }

  Result<void> scan_facts(std::string_view ns_name,
                          const std::function<bool(Entry&&, const EntryFacts&)>& visit) override {
    KCACHE_CHECK(internal::check_namespace_name(ns_name));
    std::string prefix = internal::entry_prefix(ns_name);
    if (prefix.size() >= k_max_key_bytes) return {};
    Cursor cursor = KCACHE_TRY(Cursor::open(m_txn, m_env.entries()));
    MDB_val key = to_val(prefix), value{};
    for (bool found = KCACHE_TRY(cursor.get(key, value, MDB_SET_RANGE)); found && to_string(key).starts_with(prefix);
         found = KCACHE_TRY(cursor.get(key, value, MDB_NEXT))) {
      auto entry = internal::decode_stored_entry(to_string(key), to_bytes(value));
      if (!entry) return in_store(std::move(entry).error());
      EntryFacts facts{key.mv_size + value.mv_size, KCACHE_TRY(usage_of(to_string(key)))};
      if (!visit(std::move(*entry), facts)) break;
    }
    return {};
  }

  Result<void> runs(const std::function<bool(RunRecord&&)>& visit) override {
    if (!m_env.has_lifecycle()) return {};  // a version-1 store has no run log
    Cursor cursor = KCACHE_TRY(Cursor::open(m_txn, m_env.runs()));
    MDB_val key{}, value{};
    for (bool found = KCACHE_TRY(cursor.get(key, value, MDB_FIRST)); found;
         found = KCACHE_TRY(cursor.get(key, value, MDB_NEXT))) {
      auto n = internal::run_number(to_string(key));
      if (!n) return in_store(Error{Category::corruption, "the run log holds a key that is not a run number"});
      auto run = internal::decode_run(*n, to_bytes(value));
      if (!run) return in_store(std::move(run).error());
      if (!visit(std::move(*run))) break;
    }
    return {};
  }

 private:
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
};

class LmdbStore final : public Store {
 public:
  LmdbStore(std::shared_ptr<Env> env, bool read_only, const util::Clock& clock)
      : m_env(std::move(env)), m_read_only(read_only), m_clock(clock) {}

  Result<void> read(const std::function<Result<void>(Reader&)>& fn) override {
    Txn txn = KCACHE_TRY(Txn::begin(*m_env, false));
    LmdbReader reader(txn);
    return fn(reader);
  }

  Result<PutSummary> put(const Namespace& ns, std::span<const Entry> entries) override {
    if (m_read_only) return refuse_write(fmt::format("write {} entries into '{}'", entries.size(), ns.name()));
    auto prepared = internal::prepare_put(ns, entries);
    if (!prepared) return tl::unexpected(std::move(prepared).error().context(store_name()));
    std::size_t i = 0;
    return write_prepared(ns, [&]() -> Result<std::optional<internal::PreparedEntry>> {
      if (i == prepared->size()) return std::nullopt;
      return std::move((*prepared)[i++]);
    });
  }

  Result<PutSummary> put_stream(const Namespace& ns, const EntryStream& next) override {
    if (m_read_only) return refuse_write(fmt::format("write entries into '{}'", ns.name()));
    KCACHE_CHECK(internal::prepare_put(ns, {}));  // checks the namespace name before locking
    return write_prepared(ns, [&]() -> Result<std::optional<internal::PreparedEntry>> {
      auto item = KCACHE_TRY(next());
      if (!item) return std::nullopt;
      auto prepared = internal::prepare_put(ns, std::span<const Entry>(&*item, 1));
      if (!prepared) return tl::unexpected(std::move(prepared).error().context(store_name()));
      return std::move(prepared->front());
    });
  }

  Result<std::size_t> remove(std::string_view ns_name, std::span<const std::string> kernels) override {
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

  Result<RemoveSummary> remove_unchanged(std::string_view ns_name, std::span<const RemoveItem> items) override {
    if (m_read_only) return refuse_write(fmt::format("remove entries from '{}'", ns_name));
    std::vector<std::string> keys;
    keys.reserve(items.size());
    for (const auto& item : items) {
      auto key = internal::entry_key(ns_name, item.kernel);
      if (!key) return tl::unexpected(std::move(key).error().context(store_name()));
      keys.push_back(std::move(*key));
    }
    Txn txn = KCACHE_TRY(Txn::begin(*m_env, true));
    RemoveSummary summary;
    for (std::size_t i = 0; i < items.size(); ++i) {
      auto value = KCACHE_TRY(txn.get(m_env->entries(), keys[i], "an entry"));
      if (!value) {
        ++summary.absent;
        continue;
      }
      auto stored = internal::decode_stored_entry(keys[i], *value);
      if (!stored || stored->key != items[i].key) {
        ++summary.changed;
        continue;
      }
      std::uint64_t bytes = keys[i].size() + value->size();
      KCACHE_CHECK(delete_entry(txn, keys[i]));
      ++summary.removed;
      summary.record_bytes += bytes;
    }
    if (summary.removed > 0) KCACHE_CHECK(txn.commit());
    return summary;
  }

  Result<void> record_usage(const UsageBatch& batch) override {
    if (m_read_only) return refuse_write("record which entries a build used");
    std::vector<std::string> keys;
    keys.reserve(batch.used.size());
    for (const auto& [ns_name, kernel] : batch.used) {
      auto key = internal::entry_key(ns_name, kernel);
      if (!key) return tl::unexpected(std::move(key).error().context(store_name()));
      keys.push_back(std::move(*key));
    }
    auto run = batch.run ? internal::encode_run(*batch.run) : std::vector<std::uint8_t>{};

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
    if (batch.run) {
      KCACHE_CHECK(append_run(txn, run));
      written_bytes += run.size();
      changed = true;
    }
    if (changed) KCACHE_CHECK(txn.commit(written_bytes));
    return {};
  }

  Result<SpaceInfo> space() override {
    SpaceInfo info;
    struct stat st {};
    fs::path data = m_env->dir() / "data.mdb";
    if (::stat(data.c_str(), &st) != 0) return os_fail(Category::io_error, m_env->dir(), "stat data.mdb", errno);
    info.file_bytes = static_cast<std::uint64_t>(st.st_size);
    Txn txn = KCACHE_TRY(Txn::begin(*m_env, false));
    MDB_stat stat{};
    if (int rc = mdb_env_stat(m_env->handle(), &stat); rc != MDB_SUCCESS)
      return lmdb_fail(m_env->dir(), "read the environment statistics", rc);
    MDB_envinfo env_info{};
    if (int rc = mdb_env_info(m_env->handle(), &env_info); rc != MDB_SUCCESS)
      return lmdb_fail(m_env->dir(), "read the environment info", rc);
    info.page_size = stat.ms_psize;
    info.pages_used = static_cast<std::uint64_t>(env_info.me_last_pgno) + 1;
    // LMDB's free list is database 0: each record is an ID list whose first
    // word is its length (as mdb_stat -f counts it).
    Cursor cursor = KCACHE_TRY(Cursor::open(txn, 0));
    MDB_val key{}, value{};
    for (bool found = KCACHE_TRY(cursor.get(key, value, MDB_FIRST)); found;
         found = KCACHE_TRY(cursor.get(key, value, MDB_NEXT))) {
      if (value.mv_size < sizeof(std::size_t)) continue;
      std::size_t count = 0;
      std::memcpy(&count, value.mv_data, sizeof count);
      info.pages_free += count;
    }
    return info;
  }

  Result<std::uint64_t> last_transaction_id() override {
    MDB_envinfo info{};
    if (int rc = mdb_env_info(m_env->handle(), &info); rc != MDB_SUCCESS)
      return lmdb_fail(m_env->dir(), "read the environment info", rc);
    return static_cast<std::uint64_t>(info.me_last_txnid);
  }

  bool read_only() const override { return m_read_only; }

 private:
  /// put and put_stream: one write transaction fed one prepared entry at a
  /// time; any error returns early and ~Txn aborts, so nothing is written.
  Result<PutSummary> write_prepared(const Namespace& ns,
                                    const std::function<Result<std::optional<internal::PreparedEntry>>()>& next) {
    Txn txn = KCACHE_TRY(Txn::begin(*m_env, true));
    bool changed = false;
    std::string ns_name = ns.name();
    if (!KCACHE_TRY(txn.get(m_env->namespaces(), ns_name, "a namespace record"))) {
      KCACHE_CHECK(txn.put(m_env->namespaces(), ns_name, internal::encode_namespace_record(ns),
                           fmt::format("the record of namespace '{}'", ns_name)));
      changed = true;
    }
    PutSummary summary;
    std::uint64_t written_bytes = 0;
    const auto now = m_clock.now();
    auto usage = internal::encode_usage({now, now});
    while (auto entry = KCACHE_TRY(next())) {
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

  std::string store_name() const { return fmt::format("store {}", m_env->dir().string()); }

  /// Deletes an entry and its usage record; false when there was no entry.
  Result<bool> delete_entry(const Txn& txn, const std::string& key) {
    MDB_val k = to_val(key);
    int rc = mdb_del(txn.handle(), m_env->entries(), &k, nullptr);
    if (rc == MDB_NOTFOUND) return false;
    if (rc != MDB_SUCCESS) return lmdb_fail(m_env->dir(), "remove an entry", rc);
    rc = mdb_del(txn.handle(), m_env->usage(), &k, nullptr);
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) return lmdb_fail(m_env->dir(), "remove a usage record", rc);
    return true;
  }

  /// Appends a run record after the last one and trims the log to
  /// k_run_log_capacity.
  Result<void> append_run(const Txn& txn, std::span<const std::uint8_t> run) {
    Cursor cursor = KCACHE_TRY(Cursor::open(txn, m_env->runs()));
    MDB_val key{}, value{};
    std::uint64_t last = 0;
    if (KCACHE_TRY(cursor.get(key, value, MDB_LAST))) last = internal::run_number(to_string(key)).value_or(0);
    KCACHE_CHECK(txn.put(m_env->runs(), internal::run_key(last + 1), run, "a run record"));
    MDB_stat stat{};
    if (int rc = mdb_stat(txn.handle(), m_env->runs(), &stat); rc != MDB_SUCCESS)
      return lmdb_fail(m_env->dir(), "count the run log", rc);
    for (std::size_t n = stat.ms_entries; n > k_run_log_capacity; --n) {
      if (!KCACHE_TRY(cursor.get(key, value, MDB_FIRST))) break;
      if (int rc = mdb_cursor_del(cursor.handle(), 0); rc != MDB_SUCCESS)
        return lmdb_fail(m_env->dir(), "trim the run log", rc);
    }
    return {};
  }
  tl::unexpected<Error> refuse_write(std::string_view what) const {
    return fail(Category::read_only, "store {} is open read-only: cannot {}", m_env->dir().string(), what);
  }

  std::shared_ptr<Env> m_env;
  bool m_read_only;
  const util::Clock& m_clock;
};

// ---------------------------------------------------------------------------
// Opening: the checks that turn permission problems into clear errors
// before LMDB reports them less clearly.

/// stat(2) that distinguishes "missing" (nullopt) from other failures.
Result<std::optional<struct stat>> stat_path(const fs::path& dir, const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return std::optional(st);
  int err = errno;
  if (err == ENOENT) return std::optional<struct stat>{};
  return os_fail(Category::io_error, dir, fmt::format("cannot access {}", path.string()), err);
}

bool writable(const fs::path& path) { return ::access(path.c_str(), W_OK) == 0; }

Result<void> check_writable(const fs::path& dir) {
  for (const fs::path& path : {dir, dir / "data.mdb", dir / "lock.mdb"}) {
    if (path != dir && !KCACHE_TRY(stat_path(dir, path))) continue;
    if (::access(path.c_str(), W_OK) == 0) continue;
    int err = errno;
    if (err == EACCES || err == EPERM || err == EROFS)
      return fail(Category::read_only, "store {} is not writable ({}: {}); pass --read-only to inspect it",
                  dir.string(), path.string(), std::strerror(err));
    return os_fail(Category::io_error, dir, fmt::format("cannot access {}", path.string()), err);
  }
  return {};
}

Result<EnvConfig> check_read_only(const fs::path& dir, internal::LockFile lock_file) {
  fs::path data = dir / "data.mdb", lock = dir / "lock.mdb";
  auto data_stat = KCACHE_TRY(stat_path(dir, data));
  if (!data_stat) return fail(Category::not_found, "no store at {} (it has no data.mdb)", dir.string());
  if (data_stat->st_size == 0)
    return fail(Category::not_found, "store {} is empty: nothing was ever written to it", dir.string());
  if (::access(data.c_str(), R_OK) != 0) {
    int err = errno;
    return os_fail(Category::io_error, dir, fmt::format("cannot read {}", data.string()), err);
  }
  EnvConfig config{.read_only = true, .use_lock = false};
  if (lock_file == internal::LockFile::automatic)
    config.use_lock = KCACHE_TRY(stat_path(dir, lock)) ? writable(lock) : writable(dir);
  return config;
}

}  // namespace

namespace internal {

bool open_in_this_process(const fs::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return false;
  auto& registry = Registry::instance();
  std::lock_guard lock(registry.mutex);
  auto it = registry.envs.find(EnvKey{st.st_dev, st.st_ino, ::getpid()});
  return it != registry.envs.end() && !it->second.expired();
}

Result<std::unique_ptr<Store>> open_lmdb_store(const fs::path& dir, const OpenOptions& options, LockFile lock_file) {
  if (options.map_size == 0) return fail(Category::invalid_argument, "store {}: map size must not be 0", dir.string());
  if (options.max_readers == 0)
    return fail(Category::invalid_argument, "store {}: max readers must not be 0", dir.string());

  auto dir_stat = KCACHE_TRY(stat_path(dir, dir));
  if (!dir_stat) {
    if (options.read_only)
      return fail(Category::not_found, "no store at {} (the directory does not exist)", dir.string());
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return fail(Category::io_error, "cannot create store directory {}: {}", dir.string(), ec.message());
    dir_stat = KCACHE_TRY(stat_path(dir, dir));
    if (!dir_stat) return fail(Category::io_error, "store directory {} vanished after creating it", dir.string());
  }
  if (!S_ISDIR(dir_stat->st_mode))
    return fail(Category::io_error, "store {} is not a directory", dir.string());
  if (::access(dir.c_str(), R_OK | X_OK) != 0) {
    int err = errno;
    return os_fail(Category::io_error, dir, "cannot read the store directory", err);
  }

  EnvConfig config;
  if (options.read_only) {
    config = KCACHE_TRY(check_read_only(dir, lock_file));
  } else {
    KCACHE_CHECK(check_writable(dir));
  }

  EnvKey key{dir_stat->st_dev, dir_stat->st_ino, ::getpid()};
  auto env = KCACHE_TRY(acquire_env(dir, key, options, config));
  if (env->read_only() && !options.read_only)
    return fail(Category::busy,
                "store {} is already open read-only in this process; close it before opening it for writing",
                dir.string());
  bool read_only = options.read_only || env->read_only();
  return std::make_unique<LmdbStore>(std::move(env), read_only, *options.clock);
}

}  // namespace internal

Result<std::unique_ptr<Store>> open_lmdb_store(const fs::path& dir, const OpenOptions& options) {
  return internal::open_lmdb_store(dir, options, internal::LockFile::automatic);
}

}  // namespace kcache::store
