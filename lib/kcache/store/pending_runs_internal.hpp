// The pending run log: where a build that changed nothing in the store
// leaves its run record, so that a warm no-op build costs no LMDB write
// transaction and no fsync (issue 17: the commit's two fdatasyncs were
// ~9 ms of a 25 ms budget). Internal to the store module; used by
// lmdb_usage.cpp (append, fold) and lmdb_reader.cpp (Reader::runs).
//
// File `runs.pending` in the store directory, beside data.mdb. Integers
// little-endian. Format version 1:
//
//   header (16 bytes)
//     magic          4 bytes   "KCP\x01"
//     version        u16       1
//     reserved       u16       0
//     generation     u64       random, chosen when the file is (re)started
//   then records, appended one write(2) each, never rewritten:
//     length         u32       bytes of the run record that follows
//                              (1..k_max_pending_record)
//     run record     bytes     exactly as in the `runs` database
//                              (layout_internal.hpp "Run record"): magic,
//                              version, fields, XXH3-128 of its bytes
//
// Reading stops at the first record that is torn or damaged (short length,
// length out of range, a run record that fails its own checks): that record
// and everything after it are ignored. A file whose header is not the one
// above holds no runs. Readers never trust the file: it is bounded
// (k_max_pending_file) and parsed, never mapped.
//
// Folding. The next write transaction of record_usage (one that writes usage
// records anyway, or any once the file exceeds k_pending_fold_bytes) copies
// the file's runs past the fold mark into the `runs` database, oldest first
// and before its own run, and sets the mark: meta key "pending_runs" =
// generation u64 + file offset u64 (the end of the last folded record), in
// the same transaction. After the commit the file is restarted with a new
// generation. So a crash between commit and restart folds nothing twice (the
// mark names this generation and offset), and a reader (Reader::runs) shows
// the `runs` database and then the file's runs past the mark: every run once.
// Appends and the fold-and-restart hold an exclusive flock(2) on the file;
// the fold takes it inside LMDB's write lock, appends never take LMDB's, so
// the order is always the same.
//
// Reliability (docs/reliability.md "Promises", the pending run log). Nothing is fsynced:
// power loss may drop runs appended since the last fold, or leave a torn
// tail, which is ignored. Run records are statistics (`kcache stats`); no
// entry, usage record or gc decision depends on them, and the file is never
// read by LMDB, so losing or damaging it cannot corrupt the store.
#pragma once

#include "kcache/store/store.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace kcache::store::internal {

inline constexpr std::string_view k_pending_runs_file = "runs.pending";
inline constexpr std::uint16_t k_pending_runs_version = 1;
inline constexpr std::size_t k_pending_header_bytes = 16;
/// A run record is a few hundred bytes; anything longer is damage.
inline constexpr std::uint32_t k_max_pending_record = 64u << 10;
/// Past this size the next record_usage folds instead of appending (about
/// 700 warm runs: one fsync per ~700 no-op builds).
inline constexpr std::uint64_t k_pending_fold_bytes = 256u << 10;
/// Readers read at most this much of the file (a larger one is damage or
/// another program's; its first k_max_pending_file bytes are used).
inline constexpr std::uint64_t k_max_pending_file = 1u << 20;
/// The meta key of the fold mark.
inline constexpr std::string_view k_meta_pending_runs = "pending_runs";

/// A parsed pending run log.
struct PendingLog {
  std::uint64_t generation = 0;  ///< 0 when the header is missing or not version 1's
  /// The runs in file order, each with the offset just past its record.
  std::vector<std::pair<std::uint64_t, RunRecord>> runs;
  std::uint64_t valid_end = 0;  ///< offset past the last good record (the header's end when none)
};

/// Parses untrusted bytes as a pending run log: the header, then records up
/// to the first torn or damaged one. Never fails: what cannot be read is
/// simply not there.
PendingLog parse_pending_runs(std::span<const std::uint8_t> bytes);
/// The 16-byte header of a log of `generation`.
std::vector<std::uint8_t> encode_pending_header(std::uint64_t generation);
/// One record: u32 length + encode_run(run).
std::vector<std::uint8_t> encode_pending_record(const RunRecord& run);

/// The fold mark (meta "pending_runs"): generation and folded offset.
struct PendingMark {
  std::uint64_t generation = 0;
  std::uint64_t offset = 0;
};
std::vector<std::uint8_t> encode_pending_mark(const PendingMark& mark);
/// nullopt unless exactly 16 bytes (a damaged mark only makes readers show
/// folded runs twice until the next fold rewrites it).
std::optional<PendingMark> decode_pending_mark(std::span<const std::uint8_t> bytes);
/// The runs of `log` past `mark` (all of them when the generations differ).
std::vector<RunRecord> unfolded_runs(PendingLog log, const std::optional<PendingMark>& mark);

/// The pending run log of a store directory, open and flock'ed exclusively
/// for as long as this object lives.
class PendingRunsFile {
 public:
  /// Opens (creating it when `create`) and locks `dir`/runs.pending.
  /// nullopt when it does not exist and !create. io_error otherwise.
  static Result<std::optional<PendingRunsFile>> open_locked(const std::filesystem::path& dir, bool create);
  PendingRunsFile(PendingRunsFile&& o) noexcept : m_path(std::move(o.m_path)), m_fd(std::exchange(o.m_fd, -1)) {}
  PendingRunsFile& operator=(PendingRunsFile&&) = delete;
  ~PendingRunsFile();

  /// Reads and parses the file (bounded by k_max_pending_file).
  Result<PendingLog> read() const;
  /// Appends one run with a single write(2), restarting the file first when
  /// its header is not a valid one. Returns the file's size after. No fsync.
  Result<std::uint64_t> append(const RunRecord& run);
  /// Empties the file and writes a header with a new random generation.
  Result<void> restart();

 private:
  PendingRunsFile(std::filesystem::path path, int fd) : m_path(std::move(path)), m_fd(fd) {}
  std::filesystem::path m_path;
  int m_fd = -1;
};

/// Reads `dir`'s pending run log without locking (a concurrent append shows
/// as a torn tail, which is ignored); an empty log when there is none or it
/// cannot be read (statistics only: never an error for the reader).
PendingLog read_pending_runs(const std::filesystem::path& dir);

}  // namespace kcache::store::internal
