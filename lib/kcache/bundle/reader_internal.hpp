// BundleReader::Impl and the types it holds, declared once for the reader's sources.
//
// Defined by job: reading the format (reader.cpp: head, zstd frames,
// records, trailer, and BundleReader's calls), reading records in batches
// and checking them (reader_batches.cpp), where the bytes come from
// (byte_sources.cpp: the four sources and the open() overloads over them),
// and zstd's allocator for its window (window_allocator.cpp). Internal to the
// bundle module. Thread-safety: as bundle.hpp.
//
// The reader is a pull parser over a byte source. open() reads and checks
// the head without decompressing; next() streams records out of the current
// zstd frame in batches of about k_batch_bytes (read_batch: decompress, on
// the caller's thread, which alone touches the source), and each batch is
// then restored and checked (check_batch: undo the record transform, BLAKE2b
// against the index, decode, validate) on a worker thread while the caller
// reads the next one, so the two halves of the work overlap; entries come
// out one at a time, in index order, and nothing is handed out before its
// check passed. finish() checks the trailer. Every byte consumed goes
// through the whole-file hasher in order, so finish() compares against
// exactly what was parsed.
#pragma once

#include "kcache/bundle/bundle_internal.hpp"
#include "kcache/util/ordered_parallel_map.hpp"

#include <zstd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::bundle {
namespace internal {

/// Where a reader's bytes come from (byte_sources.cpp has the four kinds).
class Source {
 public:
  virtual ~Source() = default;
  /// Up to `n` bytes into `buf`; 0 only at end of input.
  virtual Result<std::size_t> read(std::uint8_t* buf, std::size_t n) = 0;
};

/// zstd's allocator for a reader's decompression context (ZSTD_customMem,
/// opaque unused): blocks of 2 MiB and more on transparent huge pages
/// (window_allocator.cpp). zstd_free takes only what zstd_alloc returned.
void* zstd_alloc(void*, std::size_t size);
void zstd_free(void*, void* address);

struct DCtxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};
using DCtxPtr = std::unique_ptr<ZSTD_DCtx, DCtxFree>;

/// Records up to this many bytes go through the reader's worker in batches
/// of at most this size; a larger record is read and checked on the
/// caller's thread alone, so that the worker's window (4 batches) never
/// multiplies the largest record's memory.
inline constexpr std::size_t k_batch_bytes = 256u << 10;
/// Most check threads a reader starts (memory: 4 batches in flight each).
inline constexpr unsigned k_max_check_workers = 3;

/// Records read (decompressed, in their stored form: version 2 and later
/// transformed) but not yet checked, back to back in one buffer that is
/// reused from batch to batch.
struct Batch {
  std::size_t first = 0;                  ///< index position of its first record
  std::unique_ptr<std::uint8_t[]> bytes;  ///< uninitialised; [0, ends.back()) holds the records
  std::size_t capacity = 0;
  std::vector<std::size_t> ends;        ///< end offset of each record in `bytes`
  std::vector<std::uint64_t> consumed;  ///< bundle bytes consumed once each record was read
  /// Reading stopped with this error: before the record after the last one,
  /// or, when `error_after_last`, at the end of the last record's block (so
  /// that record's own check still comes first, as in a one-at-a-time read).
  std::optional<Error> error;
  bool error_after_last = false;
  std::uint64_t error_consumed = 0;

  std::size_t size() const { return ends.empty() ? 0 : ends.back(); }
  std::span<std::uint8_t> record(std::size_t k) {
    const std::size_t begin = k == 0 ? 0 : ends[k - 1];
    return {bytes.get() + begin, ends[k] - begin};
  }
  std::span<const std::uint8_t> record(std::size_t k) const {
    const std::size_t begin = k == 0 ? 0 : ends[k - 1];
    return {bytes.get() + begin, ends[k] - begin};
  }
  /// Appends room for a record of `n` bytes, keeping the records before it.
  std::span<std::uint8_t> append(std::size_t n) {
    const std::size_t at = size();
    if (capacity < at + n) {
      const std::size_t cap = std::max(at + n, k_batch_bytes);
      auto grown = std::make_unique_for_overwrite<std::uint8_t[]>(cap);
      if (at > 0) std::memcpy(grown.get(), bytes.get(), at);
      bytes = std::move(grown);
      capacity = cap;
    }
    ends.push_back(at + n);
    return {bytes.get() + at, n};
  }
  void reset(std::size_t first_entry) {
    first = first_entry;
    ends.clear();
    consumed.clear();
    error.reset();
    error_after_last = false;
    error_consumed = 0;
  }
};

/// check_batch's verdict on a batch: its first entries.size() records
/// passed; `error` is the first record's failure after them.
struct Checked {
  std::vector<Entry> entries;
  std::optional<Error> error;
};

using CheckWindow = util::OrderedParallelMap<Batch, Checked>;

}  // namespace internal

struct BundleReader::Impl {
  std::unique_ptr<internal::Source> source;
  ReadLimits limits;
  BundleHeader header;
  std::vector<std::uint64_t> block_sizes;  ///< content bytes per block, from the index

  std::vector<std::uint8_t> in;  ///< input buffer: [in_pos, in_end) not yet consumed
  std::size_t in_pos = 0, in_end = 0;
  internal::Blake2b file_hash;  ///< every consumed byte except the trailer digest
  std::uint64_t consumed = 0;

  internal::DCtxPtr dctx;
  std::size_t next_entry = 0;
  std::size_t block = 0;      ///< the current (or next) block
  std::size_t block_end = 0;  ///< first entry after the current block
  bool in_frame = false;

  std::optional<Error> failed;
  bool finished = false;

  // The caller's side of the batches (BundleReader::next).
  unsigned workers = 0;                           ///< check threads wanted (0: check on the caller's thread)
  std::unique_ptr<internal::CheckWindow> window;  ///< started at the first batch that needs it
  std::vector<internal::Batch> spare;             ///< batches handed back, for reuse
  std::optional<internal::Batch> current;         ///< the batch entries are being handed out of
  internal::Checked checked;                      ///< its verdict
  std::size_t handed_in_batch = 0;                ///< its entries handed out so far
  std::size_t handed = 0;                         ///< entries handed out in all
  std::uint64_t shown_consumed = 0;               ///< bytes_read(): consumed as of the last entry handed out
  bool read_failed = false;                       ///< a batch ended with an error: read no further

  /// A kernel name from untrusted bytes, safe to put in a one-line message.
  static std::string printable(std::string_view s) { return internal::shown(s); }

  static tl::unexpected<Error> corrupt(std::string message) {
    return tl::unexpected(Error{Category::corruption, std::move(message)});
  }

  std::string entry_name(std::size_t i) const {
    return fmt::format("entry {} of {} (kernel '{}')", i + 1, header.index.size(), printable(header.index[i].kernel));
  }

  /// Makes at least `want` unconsumed bytes available unless input ends
  /// first; returns how many are available.
  Result<std::size_t> fill(std::size_t want) {
    if (in_end - in_pos >= want) return in_end - in_pos;
    if (in_pos > 0) {
      std::memmove(in.data(), in.data() + in_pos, in_end - in_pos);
      in_end -= in_pos;
      in_pos = 0;
    }
    while (in_end < want) {
      auto got = KCACHE_TRY(source->read(in.data() + in_end, in.size() - in_end));
      if (got == 0) break;
      in_end += got;
    }
    return in_end - in_pos;
  }

  void consume(std::size_t n, bool hash = true) {
    if (hash) file_hash.update({in.data() + in_pos, n});
    in_pos += n;
    consumed += n;
  }

  /// Appends up to `n` bytes to `out`; returns how many arrived (< n only at
  /// end of input).
  Result<std::size_t> read_into(std::vector<std::uint8_t>& out, std::size_t n, bool hash = true) {
    std::size_t done = 0;
    while (done < n) {
      auto avail = KCACHE_TRY(fill(1));
      if (avail == 0) break;
      auto take = std::min(avail, n - done);
      out.insert(out.end(), in.data() + in_pos, in.data() + in_pos + take);
      consume(take, hash);
      done += take;
    }
    return done;
  }

  // reader.cpp
  Result<void> read_head();
  /// read_head's step for a signed bundle: `s` (k_signature_block_size
  /// bytes) becomes header.signature, which must verify under its own key.
  Result<void> verify_signature_block(const std::uint8_t* s);
  Result<void> start_frame();
  Result<void> end_frame();
  /// Bytes record `i` decompresses to: its record_size, plus the transform
  /// prefix from version 2 on.
  std::size_t stored_size(std::size_t i) const {
    return static_cast<std::size_t>(header.index[i].record_size) +
           (internal::traits(header.format_version).transformed_records ? internal::k_transform_prefix : 0);
  }
  Result<bool> read_record(std::size_t i, std::span<std::uint8_t> out);
  Result<void> end_record(std::size_t i, bool frame_done);
  Result<void> finish();

  // reader_batches.cpp
  internal::Batch read_batch(bool single);
  Result<Entry> check_record(std::size_t i, std::span<const std::uint8_t> bytes) const;
  internal::Checked check_batch(const internal::Batch& b) const;
  internal::Checked check_alone(internal::Batch& b) const;
  Result<void> next_batch();
  Result<std::optional<Entry>> next();
};

}  // namespace kcache::bundle
