// The store's layout: how entries and namespace records are keyed and
// encoded. Shared by the LMDB and memory stores so both apply exactly the
// same rules (key limits, duplicate detection, corruption checks); callers
// outside this module use store.hpp. Thread-safety: pure functions.
//
// Store layout version 3 (meta "schema" = "3"). One LMDB environment per
// store directory (data.mdb + lock.mdb, and kcache.lock: see below), with
// six named databases:
//
//   database     key                               value
//   entries      namespace name, 0x1f, kernel name  entry record (core/entry.hpp)
//   namespaces   namespace name ("spirv/vulkan1.2") namespace record (below)
//   usage        the entry's `entries` key          usage record (below)       [since 2]
//   runs         run number, u64 big-endian         run record (below)         [since 2]
//   failures     namespace name, 0x1f, kernel name  failure record             [since 3]
//                                                   (core/failure.hpp)
//   meta         "schema"                           ASCII store layout version, "3"
//                "pending_runs"                     fold mark of runs.pending (below)
//
// Version history. 1: entries, namespaces, meta. 2: adds usage and runs;
// nothing else changed. 3: adds failures; nothing else changed. Readers
// accept 1..3: a version-1 store reads as one with no usage records and an
// empty run log, a version-1 or -2 store as one with no failure records; the
// first writable open upgrades it in one transaction (creates the missing
// databases, writes "3"), after which a kcache that reads only older
// versions refuses it by name.
//
// Failures. A kernel whose build failed (and that has no fresh entry) may
// have a failure record, keyed like its entry would be: a warm build reports
// it without compiling while the record is current (build/freshness.hpp).
// put of an entry deletes the failure record of the same key in the same
// transaction (a kernel that now builds has no failure), so the two never
// disagree after a successful build. A failure's namespace gets its
// namespace record like an entry's. Failure records are never entries:
// scans, counts, exports and bundles do not see them; a damaged one is
// skipped into Reader::damaged() as a damaged entry would be.
//
// Keys compare bytewise (LMDB's default), so a namespace's entries are
// contiguous and in kernel-name order. Namespace names never contain 0x1f,
// so the separator cannot make two (namespace, kernel) pairs collide. A key
// is at most k_max_key_bytes (LMDB's compiled-in limit); longer ones are
// refused before any write. `meta` has room for later keys; an unknown key is
// ignored, an unknown schema value is a version_mismatch.
//
// Namespace record format, version 1 (integers little-endian; str = u32
// length + UTF-8 bytes; h128 = 16 raw bytes):
//
//   field            type         meaning
//   magic            4 bytes      "KCN\x01"
//   version          u16          record format version (1)
//   backend          str          "spirv", "vulkan"
//   fingerprint      str          short form used in the namespace name
//   n_fields         u32          then n × (str name, str value): the full
//                                 FingerprintRecord, in its order
//   record_digest    h128         XXH3-128 of every byte above
//
// A new field is appended before record_digest and bumps the version;
// readers accept k_namespace_min_version..k_namespace_max_version.
//
// Usage record (value in `usage`, integers little-endian), one per entry,
// written with the entry by put and updated by record_usage after a build:
//
//   field            type         meaning
//   written          u64          unix seconds the entry was last written here
//                                 (built, imported or refreshed); 0 = unknown
//   last_used        u64          unix seconds a build last found it fresh
//                                 (= written until then)
//
// Version 1 is exactly these 16 bytes. Later versions append fields; readers
// use the first 16 bytes and ignore the rest; shorter values are corruption.
// A missing usage record is not an error (an entry written by a kcache or a
// writer that does not keep them): consumers fall back to the entry's
// `created`. remove deletes an entry's usage record with it.
// Origin needs no record of its own: the entry record keeps origin_kind and
// origin_detail (host and tool, or the bundle it came from) and `written` is
// when it arrived here, so `inspect` shows "imported from X at T" from these;
// `created` stays the time it was compiled, wherever that was.
//
// Run record (value in `runs`), one per `kcache build` run, appended in the
// build's final small write transaction; a run with nothing else to write
// leaves it in the file runs.pending beside data.mdb, and a later write
// transaction folds it in (pending_runs_internal.hpp: format, fold mark,
// what power loss may cost). Keys count up from 1 (the last key
// + 1); big-endian so LMDB's bytewise order is run order. At most
// k_run_log_capacity runs are kept: the append deletes the oldest ones.
//
//   field            type         meaning
//   magic            4 bytes      "KCR\x01"
//   version          u16          record format version (1 or 2)
//   time             u64          unix seconds when the run ended
//   command          str          "build"
//   kernels          u32          kernels in the run (its shard)
//   hits             u32          outcome counts, as in build --json
//   compiled         u32
//   stale_replaced   u32
//   failed           u32
//   refused_write    u32
//   wall_us          u64          the run's wall time, microseconds
//   bytes_written    u64          payload bytes written
//   n_phases         u32          then n × (str name, u64 wall_us, u64 cpu_us):
//                                 time per phase summed over kernels
//   remote_hit       u32          [version 2] kernels taken from a remote cache
//   remote_misses    u32          [version 2] summed over the run's remotes
//   remote_refused   u32          [version 2]
//   remote_errors    u32          [version 2] failed requests
//   remote_bytes_read    u64      [version 2]
//   remote_bytes_written u64      [version 2]
//   has_invocation   u8           [version 3] 1: the launcher's command follows
//   tool             str          [version 3, has_invocation] "glslc", "glslangValidator"
//   directory        str          [version 3, has_invocation] where it ran
//   n_args           u32          [version 3, has_invocation] then n × str: the words
//                                 after the program (all strings together at most
//                                 k_max_invocation_bytes)
//   not_cacheable    str          [version 3, has_invocation] why the real program
//                                 ran ("" = served)
//   evicted          u32          [version 4] entries max_size evicted after the run
//   evicted_bytes    u64          [version 4] their key + record bytes
//   record_digest    h128         XXH3-128 of every byte above
//
// A new field is appended before record_digest and bumps the version;
// readers accept k_run_min_version..k_run_max_version. The writer writes
// the lowest version that holds the run: version 2 for a run without an
// invocation or eviction (byte for byte what it wrote before version 3),
// version 3 for one with an invocation, version 4 for one with an eviction.
//
// Damage. LMDB has no checksums; kcache's records carry their own digests.
// - A truncated data.mdb is refused at open as corruption, before the map
//   is read: LMDB maps the file and a page past its end is SIGBUS
//   (lmdb_env.cpp check_file_length). Refused: a tree root past the end
//   (the free and main trees' and each named database's), or any page
//   between the end and the newest meta page's last page that the free-page
//   tree does not list as free. Not simply (last_pg + 1) × page size: LMDB's
//   last page may lie past the end legitimately (pages freed in the
//   transaction that allocated them are never written, and are free;
//   cli.life_gc_scale makes such a store).
// - Damaged pages (a bit flip inside data.mdb) are not detected by LMDB,
//   which has no page checksums, and may crash the process reading them.
//   `kcache verify` walks the store in a child process, so such a store is
//   reported as damaged (docs/reliability.md "A damaged store").
// - An entry record that fails its checks costs that entry alone: get of it
//   is corruption; scans skip it and list it in Reader::damaged(), so other
//   entries, namespace listings and counts keep working and `kcache verify`
//   names every damaged entry.
//
// kcache.lock: an empty file in the store directory. Every open that uses
// LMDB's lock file holds a shared flock(2) on it for as long as the
// environment is open; `kcache compact` takes it exclusively, so no kcache
// process can have the store open while compaction swaps data.mdb, and any
// that starts meanwhile waits (store_lock.cpp).
//
// Leases (lease.cpp): `leases/`, a folder in the store directory, holds one
// file per running build (Store::begin_lease), named `<pid>.<16 hex digits,
// random>`, mode 0644 less the umask, holding ASCII text:
//   "kcache-lease 1\n" "started " DECIMAL "\n" "pid " DECIMAL "\n"
// where started is the build's start in unix seconds. Its holder keeps an
// exclusive flock(2) on it while the build runs; it is written and locked
// under the name `.<name>.tmp` and renamed into place, so a file under its
// final name is either locked by a live holder or dead for good (its
// process ended: the lock went with it). Readers (oldest_lease) ignore
// names starting with '.', test the lock with LOCK_SH | LOCK_NB, remove a
// file they find unlocked, and take a locked file whose text does not parse
// as started at its modification time. Nothing else in the store refers to
// a lease; deleting the folder loses nothing but the protection of builds
// that are running.
#pragma once

#include "kcache/store/store.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::store::internal {

inline constexpr char k_key_separator = '\x1f';
inline constexpr std::string_view k_entries_db = "entries";
inline constexpr std::string_view k_namespaces_db = "namespaces";
inline constexpr std::string_view k_meta_db = "meta";
inline constexpr std::string_view k_usage_db = "usage";
inline constexpr std::string_view k_runs_db = "runs";
inline constexpr std::string_view k_failures_db = "failures";
inline constexpr std::string_view k_schema_key = "schema";
/// The layout version this code writes.
inline constexpr std::string_view k_schema_version = "3";
/// The oldest layout version this code reads (and upgrades when writable).
inline constexpr std::string_view k_schema_min_version = "1";
inline constexpr std::uint16_t k_run_min_version = 1;
inline constexpr std::uint16_t k_run_max_version = 4;
inline constexpr std::size_t k_usage_record_bytes = 16;
inline constexpr std::string_view k_lock_file_name = "kcache.lock";
inline constexpr std::string_view k_leases_dir_name = "leases";
inline constexpr std::uint16_t k_namespace_min_version = 1;
inline constexpr std::uint16_t k_namespace_max_version = 1;

/// invalid_argument unless `ns_name` is "backend/fingerprint" without 0x1f.
Result<void> check_namespace_name(std::string_view ns_name);

/// The `entries` key of `kernel` in `ns_name`. invalid_argument for a bad
/// namespace name, an empty kernel name, or a key over k_max_key_bytes.
Result<std::string> entry_key(std::string_view ns_name, std::string_view kernel);

/// The prefix every `entries` key of `ns_name` starts with (name + 0x1f).
std::string entry_prefix(std::string_view ns_name);

/// entry_key of each item's kernel, in order; the first that cannot be made
/// fails the call.
Result<std::vector<std::string>> entry_keys(std::string_view ns_name, std::span<const RemoveItem> items);

/// Which records a conditional removal judges: remove_unchanged's entries or
/// remove_failures' failure records.
enum class RemovedRecord { entry, failure };

/// The one rule of a conditional removal, for the record stored under `key`
/// (nullopt: none): counts it in `summary` and says whether to delete it. A
/// record whose key is no longer `item.key` was rewritten since the caller
/// listed it and stays (`changed`). An entry that does not decode stays as
/// well (verify names it); a failure record that does not decode goes, as it
/// holds nothing worth keeping.
bool judge_removal(RemovedRecord kind, std::string_view key, std::optional<std::span<const std::uint8_t>> value,
                   const RemoveItem& item, RemoveSummary& summary);

/// Encodes `ns` as a namespace record (current version).
std::vector<std::uint8_t> encode_namespace_record(const Namespace& ns);

/// Decodes a namespace record stored under `key`: corruption for a bad magic,
/// truncation, trailing bytes, digest mismatch or a name that differs from
/// `key`; version_mismatch for an unsupported version.
Result<Namespace> decode_namespace_record(std::string_view key, std::span<const std::uint8_t> bytes);

/// Decodes the failure record stored under `key` (as entry_key made it),
/// checking it names the kernel its key says. Errors as decode_failure, with
/// the key in the message.
Result<Failure> decode_stored_failure(std::string_view key, std::span<const std::uint8_t> value);

/// Decodes the entry record stored under `key` (as entry_key made it),
/// checking it names the kernel its key says. Errors as decode_entry, with
/// the key in the message.
Result<Entry> decode_stored_entry(std::string_view key, std::span<const std::uint8_t> value,
                                  PayloadDigest payload = PayloadDigest::check);
/// As decode_stored_entry, through decode_entry_head: the record's head
/// only, neither digest checked (core/entry.hpp says when that is enough).
Result<EntryHead> decode_stored_entry_head(std::string_view key, std::span<const std::uint8_t> value);

/// One entry of a put, validated and encoded before any transaction starts,
/// so the write transaction holds the writer lock only for the writing.
struct PreparedEntry {
  std::string key;
  std::vector<std::uint8_t> value;
  Key entry_key;
  Hash128 payload_digest;         ///< of the payload as encoded (encode_entry recomputes it)
  std::vector<InputFile> inputs;  ///< a re-put with new input hashes must be written (warm-path refresh)
};

/// Validates and encodes a put batch: invalid_argument (naming the kernel)
/// for a bad namespace, an empty or too-long kernel name, or a payload over
/// k_max_payload_bytes. Nothing is prepared unless every entry is valid.
Result<std::vector<PreparedEntry>> prepare_put(const Namespace& ns, std::span<const Entry> entries);

/// What put does with one prepared entry given what the store holds.
enum class PutAction { write, replace, keep };

/// `keep` when `existing` has the same key (id and ir) and payload digest;
/// `replace` when it differs or fails to decode; `write` when absent.
PutAction classify_put(const PreparedEntry& entry, std::optional<std::span<const std::uint8_t>> existing);

/// Adds one action to a summary.
void count_put(PutSummary& summary, PutAction action);

// --- lifecycle.cpp: usage and run records -------------------------------

/// Whether `version` (the meta "schema" value) is one this code reads.
bool readable_schema(std::string_view version);

/// Encodes a usage record (current version, 16 bytes).
std::vector<std::uint8_t> encode_usage(const EntryUsage& usage);
/// Decodes a usage record stored under `key`: corruption when shorter than
/// 16 bytes.
Result<EntryUsage> decode_usage(std::string_view key, std::span<const std::uint8_t> bytes);

/// The usage record to store for `used_at` given the one stored (if any):
/// nullopt when nothing needs writing (used within k_last_used_resolution,
/// or an older time than recorded).
std::optional<EntryUsage> touch_usage(const std::optional<EntryUsage>& stored, std::uint64_t used_at);

/// The `runs` key of run number `n` (8 bytes, big-endian), and back
/// (nullopt unless exactly 8 bytes).
std::string run_key(std::uint64_t n);
std::optional<std::uint64_t> run_number(std::string_view key);

/// Encodes a run record (current version).
std::vector<std::uint8_t> encode_run(const RunRecord& run);
/// Decodes run `n`'s record: corruption for a bad magic, truncation,
/// trailing bytes or digest mismatch; version_mismatch outside the range.
Result<RunRecord> decode_run(std::uint64_t n, std::span<const std::uint8_t> bytes);

}  // namespace kcache::store::internal
