// The store: entries by namespace and kernel name. One interface, two
// implementations (LMDB for real use, memory for unit tests), so tests can
// swap one for the other or for a failing one. The
// on-disk layout (databases, keys, records) is specified in layout_internal.hpp.
//
// Thread-safety: a Store may be shared by threads; each read() runs in its
// own snapshot and writes are serialised (LMDB's writer lock, across
// processes too). A Reader is valid only inside the read() callback that
// handed it out, on that thread.
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/core/failure.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/util/clock.hpp"
#include "kcache/util/error.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::store {

/// LMDB's compiled-in key limit. An entry's key is the namespace name, one
/// separator byte and the kernel name; put refuses longer keys with
/// invalid_argument before writing anything.
inline constexpr std::size_t k_max_key_bytes = 511;

/// When an entry was last written into this store and when a build last
/// found it fresh, in unix seconds (layout_internal.hpp "usage"). `written`
/// is 0 when unknown (an entry from a store without usage records): callers
/// then use the entry's `created`. `last_used` starts equal to `written`.
struct EntryUsage {
  std::uint64_t written = 0;
  std::uint64_t last_used = 0;
  bool operator==(const EntryUsage&) const = default;
};

/// What a scan knows about an entry besides its record.
struct EntryFacts {
  std::size_t record_bytes = 0;     ///< key + encoded record: what the entry occupies
  std::optional<EntryUsage> usage;  ///< nullopt when none was recorded
};

/// Wall and CPU time of one build phase, summed over a run's kernels.
struct PhaseRecord {
  std::string name;  ///< phase_name() ("glslang", "spirv-opt", ...)
  std::uint64_t wall_us = 0;
  std::uint64_t cpu_us = 0;
  bool operator==(const PhaseRecord&) const = default;
};

/// A compile command the launcher (`kcache glslc`, `kcache glslangValidator`
/// or a link of that name) ran: what `manifest from-commands --from-store`
/// reads back, and why a command was not cacheable (`kcache stats`).
struct Invocation {
  std::string tool;               ///< "glslc" or "glslangValidator"
  std::string directory;          ///< where it ran (absolute)
  std::vector<std::string> args;  ///< the words after the program, as given
  std::string not_cacheable;      ///< why the real program ran instead ("" = kcache served it)
  bool operator==(const Invocation&) const = default;
};
/// Most bytes of an invocation's strings a run record keeps; a longer
/// command is recorded without its args (a run record stays small).
inline constexpr std::size_t k_max_invocation_bytes = 16u << 10;

/// One build run in the store's bounded run log (`kcache stats`).
struct RunRecord {
  std::uint64_t time = 0;  ///< unix seconds when the run ended
  std::string command;     ///< "build"
  std::uint32_t kernels = 0;
  std::uint32_t hits = 0;
  std::uint32_t compiled = 0;
  std::uint32_t stale_replaced = 0;
  std::uint32_t failed = 0;
  std::uint32_t refused_write = 0;
  std::uint64_t wall_us = 0;
  std::uint64_t bytes_written = 0;
  std::vector<PhaseRecord> phases;
  /// Remote caches (run record version 2; 0 in version-1 records): kernels
  /// taken from a remote, and over every remote the values missed, refused,
  /// failed requests and bytes read and written.
  std::uint32_t remote_hit = 0, remote_misses = 0, remote_refused = 0, remote_errors = 0;
  std::uint64_t remote_bytes_read = 0, remote_bytes_written = 0;
  /// The launcher's command (run record version 3), command "glslc" or
  /// "glslangValidator"; nullopt for other runs.
  std::optional<Invocation> invocation;
  /// Entries the max_size setting evicted after the run, and their bytes
  /// (run record version 4; 0 before). An eviction is recorded here rather
  /// than printed where a compiler prints nothing (the launcher).
  std::uint32_t evicted = 0;
  std::uint64_t evicted_bytes = 0;
  bool operator==(const RunRecord&) const = default;
};

/// The run log keeps this many runs; appending one more drops the oldest.
/// A launcher build records one run per compile command, and a large
/// project runs a few thousand.
inline constexpr std::size_t k_run_log_capacity = 10000;
/// A hit within this many seconds of the recorded last use is not written
/// again: back-to-back builds then cost no usage writes at all.
inline constexpr std::uint64_t k_last_used_resolution = 60;

/// What one build run used, recorded in one small write transaction.
struct UsageBatch {
  std::uint64_t time = 0;  ///< unix seconds
  /// (namespace name, kernel) of the entries found fresh; names that are no
  /// longer stored are skipped.
  std::vector<std::pair<std::string, std::string>> used;
  std::optional<RunRecord> run;  ///< appended to the run log
};

/// How the store's space is used (for gc and compact reports).
struct SpaceInfo {
  std::uint64_t file_bytes = 0;  ///< size of data.mdb (memory store: bytes of its records)
  std::uint64_t page_size = 0;   ///< 0 for the memory store
  std::uint64_t pages_used = 0;  ///< pages up to the file's high-water mark
  /// Pages in LMDB's free list: freed by deletes, reused by later writes;
  /// the file does not shrink until `kcache compact`.
  std::uint64_t pages_free = 0;
};

/// A kernel to remove only if its stored key is still `key`.
struct RemoveItem {
  std::string kernel;
  Key key;
};

/// Counts from remove_unchanged.
struct RemoveSummary {
  std::size_t removed = 0;
  std::size_t changed = 0;         ///< rewritten since it was listed: kept
  std::size_t absent = 0;          ///< already gone
  std::uint64_t record_bytes = 0;  ///< key + record bytes of the removed entries
};

/// One namespace a store holds, from its namespace record alone (no entry is
/// read). A struct rather than a bare Namespace so that it reads like
/// NamespaceInfo (`info.ns`) and can gain fields that need no entry scan.
struct NamespaceRecord {
  Namespace ns;  ///< with its full fingerprint record
  bool operator==(const NamespaceRecord&) const = default;
};

/// What a store holds for one namespace.
struct NamespaceInfo {
  Namespace ns;  ///< with its full fingerprint record
  std::uint64_t entries = 0;
  std::uint64_t payload_bytes = 0;
};

/// A stored entry whose record fails its checks (damaged bytes, a record of
/// another kernel, an unsupported record version). Scans skip it so that one
/// damaged entry costs that entry alone; callers report it.
struct DamagedEntry {
  std::string ns;      ///< its namespace name
  std::string kernel;  ///< from its key (untrusted bytes: escape before printing)
  Error error;         ///< corruption or version_mismatch, naming the store and the entry
};

/// Read access inside one snapshot.
class Reader {
 public:
  virtual ~Reader() = default;
  /// The entry for `kernel` in namespace `ns_name` ("spirv/vulkan1.2"), or
  /// nullopt. corruption when the stored record fails its checks;
  /// invalid_argument for a malformed namespace or a name no key can hold.
  virtual Result<std::optional<Entry>> get(std::string_view ns_name, std::string_view kernel) = 0;
  /// As get, but only the entry's head (core/entry.hpp decode_entry_head:
  /// the payload is neither copied nor read, no digest is checked): for
  /// deciding freshness of many entries, where a fresh one needs nothing
  /// more. Read the payload with get.
  virtual Result<std::optional<EntryHead>> get_head(std::string_view ns_name, std::string_view kernel) = 0;
  /// Visits every entry of `ns_name` in kernel-name order; stops early when
  /// `visit` returns false. An entry whose record fails its checks is not
  /// visited: it is added to damaged() and the scan goes on. Errors: the
  /// store cannot be read, or a malformed namespace name.
  virtual Result<void> scan(std::string_view ns_name, const std::function<bool(Entry&&)>& visit) = 0;
  /// The entries the scans of this snapshot skipped (scan, scan_facts,
  /// namespaces), in the order met, each once however many scans met it.
  const std::vector<DamagedEntry>& damaged() const { return m_damaged; }
  /// Every namespace with counts of its readable entries. Decodes every
  /// entry of the store (O(entries)); damaged ones are skipped into
  /// damaged(). Callers that need only the namespaces use
  /// namespace_records().
  Result<std::vector<NamespaceInfo>> namespaces();
  /// Every namespace, in name order, from the namespace records alone: no
  /// entry is read (O(namespaces)), so a corrupt entry does not fail it.
  /// corruption for a namespace record that fails its checks,
  /// version_mismatch for one of an unsupported record version.
  virtual Result<std::vector<NamespaceRecord>> namespace_records() = 0;
  /// The usage record of an entry, or nullopt when none was recorded (or the
  /// store predates usage records). corruption for a malformed record.
  virtual Result<std::optional<EntryUsage>> usage(std::string_view ns_name, std::string_view kernel) = 0;
  /// As scan (damaged entries skipped into damaged()), with each entry's
  /// record size and usage record.
  virtual Result<void> scan_facts(std::string_view ns_name,
                                  const std::function<bool(Entry&&, const EntryFacts&)>& visit) = 0;
  /// Visits the run log oldest first; stops early when `visit` returns false.
  /// corruption names the run whose record fails its checks.
  virtual Result<void> runs(const std::function<bool(RunRecord&&)>& visit) = 0;
  /// The failure record of `kernel` in `ns_name` (layout_internal.hpp
  /// "Failures"), or nullopt (none, or a store of layout 1 or 2 opened
  /// read-only). corruption / version_mismatch when the record fails its
  /// checks; invalid_argument as get.
  virtual Result<std::optional<Failure>> failure(std::string_view ns_name, std::string_view kernel) = 0;
  /// Visits every failure record of `ns_name` in kernel-name order with its
  /// key + record size; stops early when `visit` returns false. A record
  /// that fails its checks is skipped into damaged(), as scan does.
  virtual Result<void> scan_failures(std::string_view ns_name,
                                     const std::function<bool(Failure&&, std::size_t record_bytes)>& visit) = 0;

 protected:
  /// Records an entry a scan skipped (kept once per (namespace, kernel)).
  void note_damaged(std::string_view ns_name, std::string_view kernel, Error error);

 private:
  std::vector<DamagedEntry> m_damaged;
  std::set<std::pair<std::string, std::string>, std::less<>> m_damaged_seen;  ///< (ns, kernel) of m_damaged
};

/// Counts from one write transaction.
struct PutSummary {
  std::size_t written = 0;          ///< new entries
  std::size_t replaced = 0;         ///< an entry of that name existed with another key or bytes
  std::size_t already_present = 0;  ///< an identical entry (same key and payload) was there
  std::size_t removed = 0;          ///< entries put_streams removed on request
};

/// A running build's claim on a store (Store::begin_lease). While it lives,
/// eviction and gc in every process keep what was created or used at or
/// after its start (store/gc.hpp GcRules::leased_since). Released when
/// destroyed, or by the OS when its process dies, so a crashed build never
/// holds eviction back. Move-only through its unique_ptr; it may outlive the
/// Store that made it.
class Lease {
 public:
  virtual ~Lease() = default;
  /// Unix seconds when it was taken (begin_lease's `now`).
  virtual std::uint64_t started() const = 0;
  /// Names it among the store's leases (LMDB: its file's name), for
  /// oldest_lease's `except`.
  virtual const std::string& id() const = 0;
};

namespace internal {
class LeaseList;
}

class Store {
 public:
  Store();
  virtual ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  /// Runs `fn` with a reader over one consistent snapshot.
  virtual Result<void> read(const std::function<Result<void>(Reader&)>& fn) = 0;

  /// Writes `entries` into `ns` in one transaction: all of them or none.
  /// Records `ns`'s fingerprint record if new, and deletes the failure
  /// record of each written kernel (it builds now). read_only on a read-only
  /// store; store_full when the map or disk is full; invalid_argument for an
  /// empty or too-long kernel name or an oversized payload (nothing written).
  virtual Result<PutSummary> put(const Namespace& ns, std::span<const Entry> entries) = 0;

  /// Yields a streamed put's entries one at a time: the next entry, nullopt
  /// after the last one, or an error that aborts the put.
  using EntryStream = std::function<Result<std::optional<Entry>>()>;

  /// As put, but pulls the entries from `next` one at a time inside one write
  /// transaction, so the caller holds one entry at a time however many there
  /// are (bundle import). All or nothing: an error from `next` (returned
  /// unchanged) or from the store aborts the transaction. The writer lock is
  /// held while `next` runs, so `next` should be quick.
  virtual Result<PutSummary> put_stream(const Namespace& ns, const EntryStream& next) = 0;

  /// An entry of a put across namespaces, with the index of its namespace
  /// in the put's list.
  struct NamespacedEntry {
    std::size_t ns = 0;
    Entry entry;
  };
  /// Yields a put_streams's entries as EntryStream does.
  using NamespacedStream = std::function<Result<std::optional<NamespacedEntry>>()>;

  /// A kernel put_streams removes: its namespace's index in the put's list.
  struct NamespacedKernel {
    std::size_t ns = 0;
    std::string kernel;
  };

  /// As put_stream, into several namespaces in one transaction (a release
  /// bundle's import: all of its namespaces or none). Records each listed
  /// namespace's fingerprint record if new; first removes the entries
  /// `remove` names (a delta bundle's removals; absent ones are no error).
  /// invalid_argument for an entry whose index is outside `namespaces`.
  virtual Result<PutSummary> put_streams(std::span<const Namespace> namespaces, const NamespacedStream& next,
                                         std::span<const NamespacedKernel> remove = {}) = 0;

  /// Records `failures` in `ns` in one transaction, replacing the failure
  /// record of the same kernel, and `ns`'s namespace record if new. Never
  /// touches entries; put of an entry deletes its kernel's failure record.
  /// read_only / store_full / invalid_argument as put.
  virtual Result<void> put_failures(const Namespace& ns, std::span<const Failure> failures) = 0;

  /// Removes the failure records of `ns_name` whose recorded key is still
  /// the item's (a record rewritten since the caller listed it is kept:
  /// `changed`), in one transaction, as remove_unchanged does for entries.
  virtual Result<RemoveSummary> remove_failures(std::string_view ns_name, std::span<const RemoveItem> items) = 0;

  /// Removes the named kernels of `ns_name` (and their usage records) in one
  /// transaction; returns how many existed. Removing a namespace's last
  /// entry keeps its record.
  virtual Result<std::size_t> remove(std::string_view ns_name, std::span<const std::string> kernels) = 0;

  /// Removes the named kernels of `ns_name` whose stored key is still the
  /// given one, with their usage records, in one transaction. An entry
  /// rewritten since the caller listed it (a concurrent build) is kept.
  virtual Result<RemoveSummary> remove_unchanged(std::string_view ns_name, std::span<const RemoveItem> items) = 0;

  /// Records one build run in one write transaction: the last-used time of
  /// every used entry (skipping those used within k_last_used_resolution)
  /// and, when given, the run record (dropping the oldest beyond
  /// k_run_log_capacity). Writes nothing when nothing would change. When
  /// the run record is all there is to write, the LMDB store appends it to
  /// its pending run log instead (no transaction, no fsync; Reader::runs
  /// shows it at once; pending_runs_internal.hpp).
  /// read_only on a read-only store; store_full as put.
  virtual Result<void> record_usage(const UsageBatch& batch) = 0;

  /// How the store's file is used; cheap (no scan of entries).
  virtual Result<SpaceInfo> space() = 0;

  /// An id that changes with every committed write transaction ("store
  /// unchanged" = same id before and after).
  virtual Result<std::uint64_t> last_transaction_id() = 0;

  virtual bool read_only() const = 0;

  /// Takes a lease for a build that starts at `now` (unix seconds, on the
  /// clock that stamps its entries and usage records), held until the
  /// returned object is destroyed. The LMDB store: a file
  /// STORE/leases/<pid>.<random> holding `now` and flock'ed while held
  /// (layout_internal.hpp "Leases"), seen by every process. This default,
  /// which the memory store uses: a list in this Store object. read_only
  /// on a read-only store; io_error when the lease file cannot be made.
  virtual Result<std::unique_ptr<Lease>> begin_lease(std::uint64_t now);

  /// The start of the oldest live lease other than `except` (the caller's
  /// own, or null), nullopt when there is none. The LMDB store removes the
  /// lease files it finds unlocked (their process died) unless read-only;
  /// io_error when its leases folder cannot be read.
  virtual Result<std::optional<std::uint64_t>> oldest_lease(const Lease* except = nullptr);

 private:
  std::shared_ptr<internal::LeaseList> m_leases;  ///< the default's in-process leases
};

struct OpenOptions {
  /// Open without writing the data file (put/remove return read_only). The
  /// lock file gets this process's reader slot when it is writable (so
  /// concurrent writers keep our snapshot intact); when it is not, the store
  /// is opened without it and no file is touched at all.
  bool read_only = false;
  /// Map size for a new or existing environment. Large and sparse: LMDB only
  /// uses the disk it needs, and growing the map under other processes is fragile.
  std::uint64_t map_size = std::uint64_t{64} << 30;
  unsigned max_readers = 1024;
  /// Runs the run log keeps (k_run_log_capacity; tests of the trimming
  /// rule pass a few, so that they need not write thousands of runs).
  std::size_t run_log_capacity = k_run_log_capacity;
  /// Stamps usage records (written, last used); never null.
  const util::Clock* clock = &util::system_clock();
  /// covered: entries read through this handle are not hashed again past
  /// their record digest (core/entry.hpp PayloadDigest). Only for a store
  /// whose writer is vouched for: a runtime opened KCACHE_OPEN_TRUSTED.
  PayloadDigest payload_digests = PayloadDigest::check;
};

/// Opens (creating if needed, unless read-only) the LMDB store in `dir`.
/// Errors: io_error (permissions, not a directory), corruption (not an LMDB
/// store, or a data.mdb truncated below what its meta page says is in use:
/// refused before any page is read, never SIGBUS), read_only when `dir` is
/// not writable and read_only was not asked, not_found when read-only and
/// there is no store, version_mismatch for a newer store layout, busy when
/// this process already holds `dir` open read-only and a writable open is
/// asked. Clears stale reader slots on open. Opening one directory again in
/// the same process shares its environment (LMDB allows one per process); the
/// first open's map size and reader count apply.
Result<std::unique_ptr<Store>> open_lmdb_store(const std::filesystem::path& dir, const OpenOptions& options = {});

/// Removes the store in `dir` if it holds no namespace (what a refused first
/// import leaves behind): its files (data.mdb, lock.mdb, kcache.lock) and the
/// folder when nothing else is in it. Returns whether it was removed; a
/// store with any namespace, or in use by another process, is left as is.
/// No Store of `dir` may be open in this process.
Result<bool> remove_store_if_empty(const std::filesystem::path& dir);

/// Sizes of data.mdb before and after compact_lmdb_store.
struct CompactResult {
  std::uint64_t bytes_before = 0;
  std::uint64_t bytes_after = 0;
};

/// Copies the store in `dir` without its free pages (mdb_env_copy2 with
/// MDB_CP_COMPACT) into a temporary folder inside `dir` and renames the copy
/// over data.mdb, so the file shrinks to what the entries use. Exclusive:
/// busy (store unchanged) when any process, this one included, has the
/// store open; kcache processes that open it meanwhile wait until it is
/// done (kcache.lock). read_only / not_found / corruption as open_lmdb_store.
Result<CompactResult> compact_lmdb_store(const std::filesystem::path& dir);

/// The LMDB library's version string, for `kcache --version`.
std::string lmdb_version();

/// A store held in memory, for unit tests; `clock` stamps usage records and
/// must outlive the store.
std::unique_ptr<Store> make_memory_store(const util::Clock& clock = util::system_clock(),
                                         std::size_t run_log_capacity = k_run_log_capacity);

}  // namespace kcache::store
