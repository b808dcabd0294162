// Bundle reader: a pull parser over a byte source. open() reads and checks
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
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameHeader, ZSTD_FRAMEHEADERSIZE_MAX (exported by libzstd.so)
#include "kcache/bundle/bundle_internal.hpp"
#include "kcache/bundle/release.hpp"
#include "kcache/util/ordered_parallel_map.hpp"
#include "kcache/util/text.hpp"
#include "kcache/util/worker_pool.hpp"

#include <zstd.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <istream>
#include <thread>

namespace kcache::bundle {
namespace {

using util::human_bytes;

class Source {
 public:
  virtual ~Source() = default;
  /// Up to `n` bytes into `buf`; 0 only at end of input.
  virtual Result<std::size_t> read(std::uint8_t* buf, std::size_t n) = 0;
};

class FdSource : public Source {
 public:
  explicit FdSource(int fd, bool owned = false) : m_fd(fd), m_owned(owned) {}
  ~FdSource() override {
    if (m_owned) ::close(m_fd);
  }
  Result<std::size_t> read(std::uint8_t* buf, std::size_t n) override {
    for (;;) {
      ssize_t got = ::read(m_fd, buf, n);
      if (got >= 0) return static_cast<std::size_t>(got);
      if (errno != EINTR) return fail(Category::io_error, "reading bundle: {}", std::strerror(errno));
    }
  }

 private:
  int m_fd;
  bool m_owned;
};

class StreamSource : public Source {
 public:
  explicit StreamSource(std::istream& in) : m_in(in) {}
  Result<std::size_t> read(std::uint8_t* buf, std::size_t n) override {
    if (m_in.eof()) return 0;
    m_in.read(reinterpret_cast<char*>(buf), static_cast<std::streamsize>(n));
    if (m_in.bad()) return fail(Category::io_error, "reading bundle: input stream failed");
    return static_cast<std::size_t>(m_in.gcount());
  }

 private:
  std::istream& m_in;
};

class FunctionSource : public Source {
 public:
  explicit FunctionSource(ByteSource read) : m_read(std::move(read)) {}
  Result<std::size_t> read(std::uint8_t* buf, std::size_t n) override { return m_read(buf, n); }

 private:
  ByteSource m_read;
};

class MemorySource : public Source {
 public:
  explicit MemorySource(std::span<const std::uint8_t> bytes) : m_bytes(bytes) {}
  Result<std::size_t> read(std::uint8_t* buf, std::size_t n) override {
    n = std::min(n, m_bytes.size());
    if (n == 0) return 0;  // an empty span may have a null data()
    std::memcpy(buf, m_bytes.data(), n);
    m_bytes = m_bytes.subspan(n);
    return n;
  }

 private:
  std::span<const std::uint8_t> m_bytes;
};

// zstd's decompression window (up to 16 MiB, written once per bundle) is
// its largest allocation; in 4 KiB pages every first touch is a fault, which
// cost about as much as the decompression itself. Allocations of at least
// k_huge_bytes are mapped 2 MiB-aligned and offered to transparent huge
// pages (a hint: where THP is off they are ordinary pages). Each block keeps
// {mapping base, mapping length or 0 for malloc} just before it.
constexpr std::size_t k_huge_bytes = 2u << 20;
constexpr std::size_t k_alloc_header = 16;

void* zstd_alloc(void*, std::size_t size) {
  if (size >= k_huge_bytes) {
    const std::size_t len = size + k_huge_bytes;
    void* base = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base != MAP_FAILED) {
      const auto b = reinterpret_cast<std::uintptr_t>(base);
      auto* p = reinterpret_cast<std::uint8_t*>((b + k_alloc_header + k_huge_bytes - 1) & ~(k_huge_bytes - 1));
      ::madvise(p, size, MADV_HUGEPAGE);
      const std::uintptr_t header[2] = {b, len};
      std::memcpy(p - k_alloc_header, header, sizeof header);
      return p;
    }
  }
  auto* raw = static_cast<std::uint8_t*>(std::malloc(size + k_alloc_header));
  if (!raw) return nullptr;
  const std::uintptr_t header[2] = {reinterpret_cast<std::uintptr_t>(raw), 0};
  std::memcpy(raw, header, sizeof header);
  return raw + k_alloc_header;
}

void zstd_free(void*, void* address) {
  if (!address) return;
  std::uintptr_t header[2];
  std::memcpy(header, static_cast<std::uint8_t*>(address) - k_alloc_header, sizeof header);
  if (header[1] == 0) std::free(reinterpret_cast<void*>(header[0]));
  else ::munmap(reinterpret_cast<void*>(header[0]), header[1]);
}

struct DCtxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};
using DCtxPtr = std::unique_ptr<ZSTD_DCtx, DCtxFree>;

std::uint16_t le16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | p[1] << 8); }
std::uint32_t le32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24;
}
std::uint64_t le64(const std::uint8_t* p) { return std::uint64_t{le32(p)} | std::uint64_t{le32(p + 4)} << 32; }

/// A kernel name from untrusted bytes, safe to put in a one-line message.
std::string printable(std::string_view s) { return internal::shown(s); }

tl::unexpected<Error> corrupt(std::string message) {
  return tl::unexpected(Error{Category::corruption, std::move(message)});
}

/// Records up to this many bytes go through the reader's worker in batches
/// of at most this size; a larger record is read and checked on the
/// caller's thread alone, so that the worker's window (4 batches) never
/// multiplies the largest record's memory.
constexpr std::size_t k_batch_bytes = 256u << 10;
/// Most check threads a reader starts (memory: 4 batches in flight each).
constexpr unsigned k_max_check_workers = 3;

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

}  // namespace

struct BundleReader::Impl {
  std::unique_ptr<Source> source;
  ReadLimits limits;
  BundleHeader header;
  std::vector<std::uint64_t> block_sizes;  ///< content bytes per block, from the index

  std::vector<std::uint8_t> in;  ///< input buffer: [in_pos, in_end) not yet consumed
  std::size_t in_pos = 0, in_end = 0;
  internal::Blake2b file_hash;  ///< every consumed byte except the trailer digest
  std::uint64_t consumed = 0;

  DCtxPtr dctx;
  std::size_t next_entry = 0;
  std::size_t block = 0;      ///< the current (or next) block
  std::size_t block_end = 0;  ///< first entry after the current block
  bool in_frame = false;

  std::optional<Error> failed;
  bool finished = false;

  // The caller's side of the batches (BundleReader::next).
  unsigned workers = 0;                 ///< check threads wanted (0: check on the caller's thread)
  std::unique_ptr<CheckWindow> window;  ///< started at the first batch that needs it
  std::vector<Batch> spare;             ///< batches handed back, for reuse
  std::optional<Batch> current;         ///< the batch entries are being handed out of
  Checked checked;                      ///< its verdict
  std::size_t handed_in_batch = 0;      ///< its entries handed out so far
  std::size_t handed = 0;               ///< entries handed out in all
  std::uint64_t shown_consumed = 0;     ///< bytes_read(): consumed as of the last entry handed out
  bool read_failed = false;             ///< a batch ended with an error: read no further

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

  Result<void> read_head();
  Result<void> start_frame();
  Result<void> end_frame();
  /// Bytes record `i` decompresses to: its record_size, plus the transform
  /// prefix from version 2 on.
  std::size_t stored_size(std::size_t i) const {
    return static_cast<std::size_t>(header.index[i].record_size) +
           (header.format_version >= 2 ? internal::k_transform_prefix : 0);
  }
  Result<bool> read_record(std::size_t i, std::span<std::uint8_t> out);
  Result<void> end_record(std::size_t i, bool frame_done);
  Batch read_batch(bool single);
  Result<Entry> check_record(std::size_t i, std::span<const std::uint8_t> bytes) const;
  Checked check_batch(const Batch& b) const;
  Checked check_alone(Batch& b) const;
  Result<void> next_batch();
  Result<std::optional<Entry>> next();
  Result<void> finish();
};

Result<void> BundleReader::Impl::read_head() {
  if (limits.window_log_max < internal::k_min_window_log || limits.window_log_max > ZSTD_WINDOWLOG_MAX)
    return fail(Category::invalid_argument, "window log limit {} is outside {}..{}", limits.window_log_max,
                internal::k_min_window_log, ZSTD_WINDOWLOG_MAX);
  std::vector<std::uint8_t> head;
  auto got = KCACHE_TRY(read_into(head, internal::k_preamble_size));
  if (got == 0) return corrupt("not a kcache bundle: the input is empty");
  if (std::memcmp(head.data(), internal::k_magic, std::min<std::size_t>(got, 4)) != 0)
    return corrupt("not a kcache bundle: bad magic (expected \"KCB\\x1a\")");
  if (got >= 6) {
    auto version = le16(head.data() + 4);
    if (version == k_release_format_version)
      return fail(Category::version_mismatch,
                  "bundle is a release of several namespaces (format version 4): `kcache import` and `kcache "
                  "inspect` read it; this reads one namespace (versions {}..{})",
                  k_min_format_version, k_max_format_version);
    if ((version < k_min_format_version || version > k_max_format_version) && !is_delta_format(version))
      return fail(Category::version_mismatch,
                  "bundle format version {} is not supported: this kcache reads versions {}..{}, {} (a "
                  "release) and {}..{} (a delta){}",
                  version, k_min_format_version, k_max_format_version, k_release_format_version,
                  k_min_delta_format_version, k_delta_format_version,
                  version > k_delta_format_version ? " (the bundle was written by a newer kcache)" : "");
  }
  if (got < internal::k_preamble_size)
    return corrupt(fmt::format("bundle truncated in its preamble ({} of {} bytes)", got, internal::k_preamble_size));
  const std::uint16_t version = le16(head.data() + 4);
  const std::uint16_t flags = le16(head.data() + 6);
  const std::uint32_t header_size = le32(head.data() + 8);
  if ((flags & ~internal::k_known_flags) != 0)
    return corrupt(fmt::format("bundle header has unknown flags 0x{:04x}", flags));
  if (header_size > limits.max_header_bytes)
    return corrupt(fmt::format("bundle declares a header of {}; limit {}", human_bytes(header_size),
                               human_bytes(limits.max_header_bytes)));
  const bool is_signed = (flags & internal::k_flag_signed) != 0;
  const std::size_t rest = header_size + (is_signed ? internal::k_signature_block_size : 0);
  // Reserving address space is free until pages are touched, and it spares a
  // large index the copies of a growing vector.
  head.reserve(internal::k_preamble_size + rest);
  if (KCACHE_TRY(read_into(head, rest)) < rest)
    return corrupt(fmt::format("bundle truncated in its header ({} of {} bytes)", head.size(),
                               internal::k_preamble_size + rest + internal::k_digest_size));
  std::vector<std::uint8_t> stored;
  if (KCACHE_TRY(read_into(stored, internal::k_digest_size)) < internal::k_digest_size)
    return corrupt("bundle truncated in its header digest");
  // The digest is checked before a single header field is believed, so a
  // damaged header reads as damage, not as whatever its flipped bits say.
  Digest256 stored_digest;
  std::memcpy(stored_digest.bytes.data(), stored.data(), stored_digest.bytes.size());
  if (digest_bytes(head) != stored_digest) return corrupt("bundle header digest mismatch: the header is damaged");

  std::span<const std::uint8_t> body(head.data() + internal::k_preamble_size, header_size);
  std::array<std::uint8_t, internal::k_signature_block_size> signature{};
  if (is_signed) std::memcpy(signature.data(), head.data() + internal::k_preamble_size + header_size, signature.size());
  std::vector<std::uint8_t> unpacked;
  if (version >= 2) {
    unpacked = KCACHE_TRY(internal::decompress_header_body(body, limits));
    body = unpacked;
    // The stored bytes are checked and unpacked: freed before the index is
    // parsed, so the head never costs stored + body + parsed index at once.
    std::vector<std::uint8_t>().swap(head);
  }
  header = KCACHE_TRY(internal::decode_header_body(body, version, limits));
  if (is_signed) {
    const std::uint8_t* s = signature.data();
    if (s[0] != internal::k_signature_ed25519)
      return corrupt(fmt::format("bundle signature algorithm {} is unknown", s[0]));
    SignatureInfo sig;
    std::memcpy(sig.key_id.bytes.data(), s + 1, 8);
    std::memcpy(sig.public_key.bytes.data(), s + 9, 32);
    std::memcpy(sig.signature.data(), s + 41, 64);
    header.signature = sig;
    // A signature that does not verify under its own key is damage or
    // tampering whether or not the caller trusts that key.
    auto ok = verify_signature(header, std::span(&sig.public_key, 1));
    if (!ok) return tl::unexpected(std::move(ok).error());
  }
  block_sizes.reserve(header.block_entry_counts.size());
  // Version 2 stores each record transformed, with a fixed prefix.
  const std::uint64_t per_entry = version >= 2 ? internal::k_transform_prefix : 0;
  std::size_t i = 0;
  for (auto count : header.block_entry_counts) {
    std::uint64_t size = 0;
    for (std::size_t k = 0; k < count; ++k) size += header.index[i++].record_size + per_entry;
    block_sizes.push_back(size);
  }

  dctx.reset(ZSTD_createDCtx_advanced(ZSTD_customMem{zstd_alloc, zstd_free, nullptr}));
  if (!dctx) return fail(Category::io_error, "zstd: cannot allocate a decompression context");
  ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, limits.window_log_max);
  return {};
}

Result<void> BundleReader::Impl::start_frame() {
  const std::size_t b = block;
  const std::string where = fmt::format("block {} of {} (at {})", b + 1, block_sizes.size(), entry_name(next_entry));
  auto avail = KCACHE_TRY(fill(ZSTD_FRAMEHEADERSIZE_MAX));
  if (avail == 0) return corrupt(fmt::format("bundle truncated at the start of {}", where));
  ZSTD_frameHeader zfh{};
  auto r = ZSTD_getFrameHeader(&zfh, in.data() + in_pos, avail);
  if (ZSTD_isError(r)) return corrupt(fmt::format("bundle {} is not a zstd frame: {}", where, ZSTD_getErrorName(r)));
  if (r > 0) return corrupt(fmt::format("bundle truncated in the frame header of {}", where));
  if (zfh.frameType != ZSTD_frame) return corrupt(fmt::format("bundle {} is a skippable frame, not data", where));
  if (zfh.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN)
    return corrupt(fmt::format("bundle {} does not declare its content size", where));
  if (zfh.frameContentSize != block_sizes[b])
    return corrupt(fmt::format("bundle {} declares {} of content ({} bytes) but its index entries total {} bytes",
                               where, human_bytes(zfh.frameContentSize), zfh.frameContentSize, block_sizes[b]));
  const std::uint64_t window_cap = std::uint64_t{1} << header.compression.window_log;
  if (zfh.windowSize > window_cap)
    return corrupt(fmt::format("bundle {} needs a zstd window of {}; the header allows {} (reader limit {})", where,
                               human_bytes(zfh.windowSize), human_bytes(window_cap),
                               human_bytes(std::uint64_t{1} << limits.window_log_max)));
  if (zfh.dictID != 0) return corrupt(fmt::format("bundle {} needs zstd dictionary {}", where, zfh.dictID));
  ZSTD_DCtx_reset(dctx.get(), ZSTD_reset_session_only);
  in_frame = true;
  block_end = next_entry + header.block_entry_counts[b];
  return {};
}

Result<void> BundleReader::Impl::end_frame() {
  // The frame must end here: only its checksum may remain, never more data.
  std::uint8_t scratch[1];
  for (;;) {
    auto avail = KCACHE_TRY(fill(1));
    ZSTD_inBuffer src{in.data() + in_pos, avail, 0};
    ZSTD_outBuffer dst{scratch, sizeof scratch, 0};
    auto r = ZSTD_decompressStream(dctx.get(), &dst, &src);
    consume(src.pos);
    if (ZSTD_isError(r))
      return corrupt(
          fmt::format("bundle block {} does not decompress after its last entry: {}", block + 1, ZSTD_getErrorName(r)));
    if (dst.pos > 0)
      return corrupt(fmt::format("bundle block {} decompresses to more than its declared {} bytes", block + 1,
                                 block_sizes[block]));
    if (r == 0) break;
    if (src.pos == 0) {
      if (avail == 0) return corrupt(fmt::format("bundle truncated at the end of block {}", block + 1));
      return corrupt(fmt::format("bundle block {}: zstd made no progress", block + 1));
    }
  }
  in_frame = false;
  ++block;
  return {};
}

/// Decompresses record `i` (the next one) into `out`, exactly its stored
/// size (stored_size(i)); returns whether its block's frame ended with it.
Result<bool> BundleReader::Impl::read_record(std::size_t i, std::span<std::uint8_t> out) {
  if (!in_frame) KCACHE_CHECK(start_frame());

  const std::size_t size = out.size();
  ZSTD_outBuffer dst{out.data(), size, 0};
  bool frame_done = false;
  while (dst.pos < size) {
    auto avail = KCACHE_TRY(fill(1));
    const std::size_t before = dst.pos;
    ZSTD_inBuffer src{in.data() + in_pos, avail, 0};
    auto r = ZSTD_decompressStream(dctx.get(), &dst, &src);
    consume(src.pos);
    if (ZSTD_isError(r))
      return corrupt(fmt::format("bundle {} does not decompress: zstd: {}", entry_name(i), ZSTD_getErrorName(r)));
    if (r == 0) {
      frame_done = true;
      if (dst.pos < size)
        return corrupt(fmt::format("bundle block {} ends inside {}: its data is shorter than the index says", block + 1,
                                   entry_name(i)));
      break;
    }
    if (src.pos == 0 && dst.pos == before) {
      if (avail == 0) return corrupt(fmt::format("bundle truncated in {}", entry_name(i)));
      return corrupt(fmt::format("bundle {}: zstd made no progress", entry_name(i)));
    }
  }
  // zstd checks a finished frame against its declared size, and that size
  // matched the block's records; checked here too rather than relied upon,
  // since a frame ending early would let the next call start a new frame.
  if (frame_done && i + 1 != block_end)
    return corrupt(fmt::format("bundle block {} ends after {}, before its last entry", block + 1, entry_name(i)));
  return frame_done;
}

/// After record `i`: closes its block's frame when it was the block's last.
Result<void> BundleReader::Impl::end_record(std::size_t i, bool frame_done) {
  if (i + 1 == block_end) {
    if (frame_done) {
      in_frame = false;
      ++block;
    } else {
      KCACHE_CHECK(end_frame());
    }
  }
  return {};
}

/// Reads the next records into a batch (a spare one when there is one):
/// up to k_batch_bytes of them, or with `single` exactly one. Stops at the
/// first error, which the batch carries.
Batch BundleReader::Impl::read_batch(bool single) {
  Batch b;
  if (!spare.empty()) {
    b = std::move(spare.back());
    spare.pop_back();
  }
  b.reset(next_entry);
  const std::size_t n = header.index.size();
  while (next_entry < n) {
    const std::size_t i = next_entry;
    const std::size_t size = stored_size(i);
    if (!b.ends.empty() && (single || b.size() + size > k_batch_bytes)) break;
    auto frame_done = read_record(i, b.append(size));
    if (!frame_done) {
      b.ends.pop_back();
      b.error = std::move(frame_done).error();
      b.error_consumed = consumed;
      break;
    }
    b.consumed.push_back(consumed);
    ++next_entry;
    if (auto ok = end_record(i, *frame_done); !ok) {
      b.error = std::move(ok).error();
      b.error_after_last = true;
      b.error_consumed = consumed;
      break;
    }
  }
  return b;
}

/// Checks record `i` (its bytes as read) against its index entry and decodes
/// it. Touches only the index, so it runs on a worker while the caller reads.
Result<Entry> BundleReader::Impl::check_record(std::size_t i, std::span<const std::uint8_t> bytes) const {
  const IndexEntry& want = header.index[i];
  if (digest_bytes(bytes) != want.digest)
    return corrupt(fmt::format("bundle {} digest mismatch: its bytes differ from the index", entry_name(i)));
  auto entry = decode_entry(bytes);
  if (!entry) return tl::unexpected(std::move(entry).error().context("bundle " + entry_name(i)));
  if (entry->kernel != want.kernel || entry->key != want.key || entry->payload_kind != want.payload_kind ||
      entry->payload.size() != want.payload_size)
    return corrupt(fmt::format("bundle {}: the record (kernel '{}', {} payload bytes) does not match its index entry",
                               entry_name(i), printable(entry->kernel), entry->payload.size()));
  // What the record says (recorded paths, names, fields) is checked here, so
  // that nothing downstream (import, freshness, inspect) sees a record that
  // could lead it outside the project or drive a terminal.
  if (auto ok = validate_entry_record(*entry); !ok)
    return corrupt(fmt::format("bundle {}: {}", entry_name(i), ok.error().message));
  return std::move(*entry);
}

Checked BundleReader::Impl::check_batch(const Batch& b) const {
  Checked out;
  out.entries.reserve(b.ends.size());
  // Version 2 and later: each record is restored here, on the worker, into
  // one buffer for the batch. On the reading thread, restoring was a third
  // of that thread's CPU, which then bounded the whole read on 2 cores.
  // malloc, not new: a program that compiles zero-fills operator new (for
  // deterministic compiles, compile/defined_heap.cpp), which this buffer,
  // overwritten at once, does not need.
  std::unique_ptr<std::uint8_t, decltype(&std::free)> restored(nullptr, &std::free);
  if (header.format_version >= 2) {
    std::uint64_t largest = 0;
    for (std::size_t k = 0; k < b.ends.size(); ++k) largest = std::max(largest, header.index[b.first + k].record_size);
    restored.reset(static_cast<std::uint8_t*>(std::malloc(std::max<std::uint64_t>(largest, 1))));
    if (!restored) {
      out.error = Error{Category::io_error, fmt::format("out of memory restoring {}", entry_name(b.first))};
      return out;
    }
  }
  for (std::size_t k = 0; k < b.ends.size(); ++k) {
    const std::size_t i = b.first + k;
    std::span<const std::uint8_t> record = b.record(k);
    if (header.format_version >= 2) {
      std::span<std::uint8_t> target(restored.get(), static_cast<std::size_t>(header.index[i].record_size));
      if (auto ok = internal::restore_record(record, header.index[i], target, header.format_version); !ok) {
        out.error = Error{Category::corruption, fmt::format("bundle {}: {}", entry_name(i), ok.error().message)};
        break;
      }
      record = target;
    }
    auto entry = check_record(i, record);
    if (!entry) {
      out.error = std::move(entry).error();
      break;
    }
    out.entries.push_back(std::move(*entry));
  }
  return out;
}

/// check_batch for a batch of one record larger than k_batch_bytes, which
/// frees its bytes as soon as they are used: the stored form once restored
/// (versions 2 and 3), the record once decoded (the Entry holds its own
/// copy). So a record costs at most 3 x its size while it is restored
/// (stored form, record, the transform's words), 2 x while it is decoded
/// and its size (the Entry) after; no batch buffer of that size outlives it.
Checked BundleReader::Impl::check_alone(Batch& b) const {
  auto release = [&b] {
    b.bytes.reset();
    b.capacity = 0;
  };
  if (b.ends.size() != 1 || b.record(0).size() <= k_batch_bytes) {
    Checked out = check_batch(b);
    if (b.capacity > k_batch_bytes) release();
    return out;
  }
  Checked out;
  const std::size_t i = b.first;
  std::span<const std::uint8_t> record = b.record(0);
  std::unique_ptr<std::uint8_t, decltype(&std::free)> restored(nullptr, &std::free);
  if (header.format_version >= 2) {
    const auto size = static_cast<std::size_t>(header.index[i].record_size);
    restored.reset(static_cast<std::uint8_t*>(std::malloc(std::max<std::size_t>(size, 1))));
    if (!restored) {
      out.error = Error{Category::io_error, fmt::format("out of memory restoring {}", entry_name(i))};
      release();
      return out;
    }
    std::span<std::uint8_t> target(restored.get(), size);
    auto ok = internal::restore_record(record, header.index[i], target, header.format_version);
    release();
    if (!ok) {
      out.error = Error{Category::corruption, fmt::format("bundle {}: {}", entry_name(i), ok.error().message)};
      return out;
    }
    record = target;
  }
  auto entry = check_record(i, record);
  release();
  if (entry) out.entries.push_back(std::move(*entry));
  else out.error = std::move(entry).error();
  return out;
}

/// Makes `current` the next batch with its verdict: from the worker's
/// window, or read and checked here when the next record is larger than a
/// batch or no worker is wanted (or none could be started).
Result<void> BundleReader::Impl::next_batch() {
  if (current) {
    spare.push_back(std::move(*current));
    current.reset();
  }
  const auto big = [&] {
    return next_entry < header.index.size() && header.index[next_entry].record_size > k_batch_bytes;
  };
  // A window that stopped taking batches still holds the ones before the
  // next record: they come first.
  if (window || (workers > 0 && !big())) {
    if (!window) {
      auto started = CheckWindow::start(workers, [this](const Batch& b) { return check_batch(b); });
      if (started) window = std::move(*started);
      else workers = 0;  // no thread to be had: the same checks, on this thread
    }
    if (window) {
      // The window stops taking batches before a large record (read and
      // checked alone, below) and after an error.
      auto produce = [&]() -> Result<std::optional<Batch>> {
        if (read_failed || next_entry == header.index.size() || big()) return std::optional<Batch>{};
        Batch b = read_batch(false);
        if (b.error) read_failed = true;
        return std::optional<Batch>(std::move(b));
      };
      auto mapped = KCACHE_TRY(window->next(produce));
      if (mapped) {
        current = std::move(mapped->item);
        checked = std::move(mapped->result);
        handed_in_batch = 0;
        return {};
      }
      window.reset();  // drained; a new one starts after the large record
    }
  }
  current = read_batch(big());
  if (current->error) read_failed = true;
  checked = check_alone(*current);
  handed_in_batch = 0;
  return {};
}

Result<std::optional<Entry>> BundleReader::Impl::next() {
  const std::size_t n = header.index.size();
  for (;;) {
    if (current) {
      const std::size_t k = handed_in_batch;
      if (k < checked.entries.size()) {
        // Record k passed its checks, but the read failed closing its block.
        if (k + 1 == current->ends.size() && current->error && current->error_after_last) {
          shown_consumed = current->error_consumed;
          return tl::unexpected(*current->error);
        }
        ++handed_in_batch;
        ++handed;
        shown_consumed = current->consumed[k];
        return std::optional<Entry>(std::move(checked.entries[k]));
      }
      if (checked.error) {
        shown_consumed = current->consumed[k];
        return tl::unexpected(*checked.error);
      }
      if (current->error) {
        shown_consumed = current->error_consumed;
        return tl::unexpected(*current->error);
      }
    }
    if (handed == n) {
      // Every record read: the reading thread is the caller's again.
      window.reset();
      shown_consumed = consumed;
      return std::nullopt;
    }
    KCACHE_CHECK(next_batch());
  }
}

Result<void> BundleReader::Impl::finish() {
  while (KCACHE_TRY(next())) {}
  std::vector<std::uint8_t> t;
  const std::uint64_t trailer_at = consumed;
  if (KCACHE_TRY(read_into(t, 12)) < 12) return corrupt("bundle truncated in its trailer");
  if (std::memcmp(t.data(), internal::k_trailer_magic, 4) != 0)
    return corrupt(fmt::format("bundle trailer missing after the last {}: found other bytes at offset {}",
                               block_sizes.empty() ? "header" : "block", trailer_at));
  if (le64(t.data() + 4) != trailer_at)
    return corrupt(
        fmt::format("bundle trailer records offset {} but sits at offset {}", le64(t.data() + 4), trailer_at));
  const Digest256 computed = file_hash.peek();
  std::vector<std::uint8_t> stored;
  if (KCACHE_TRY(read_into(stored, internal::k_digest_size, /*hash=*/false)) < internal::k_digest_size)
    return corrupt("bundle truncated in its trailer digest");
  if (!std::equal(stored.begin(), stored.end(), computed.bytes.begin()))
    return corrupt("bundle digest mismatch: the file was damaged or altered after it was written");
  auto extra = KCACHE_TRY(fill(1));
  if (extra > 0) return corrupt(fmt::format("bundle has trailing bytes after its trailer (at offset {})", consumed));
  finished = true;
  return {};
}

BundleReader::BundleReader(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
BundleReader::BundleReader(BundleReader&&) noexcept = default;
BundleReader& BundleReader::operator=(BundleReader&&) noexcept = default;
BundleReader::~BundleReader() = default;

Result<BundleReader> BundleReader::start(std::unique_ptr<Impl> impl) {
  impl->in.resize(ZSTD_DStreamInSize());
  KCACHE_CHECK(impl->read_head());
  impl->shown_consumed = impl->consumed;
  // -j semantics: N threads are the caller's and N - 1 checkers; 0 (all
  // cores) is one checker per core beside the reading thread, as import's
  // validators: the checks are the larger half of the work (BLAKE2b,
  // decode), so on 2 cores two checkers keep both busy where one left the
  // reading thread waiting. At most k_max_check_workers either way.
  const unsigned threads = util::worker_threads(impl->limits.threads);  // the one -j rule
  const unsigned wanted = impl->limits.threads ? threads - 1 : (threads > 1 ? threads : 0);
  impl->workers = std::min(wanted, k_max_check_workers);
  return BundleReader(std::move(impl));
}

Result<BundleReader> BundleReader::open(int fd, const ReadLimits& limits) {
  auto impl = std::make_unique<Impl>();
  impl->source = std::make_unique<FdSource>(fd);
  impl->limits = limits;
  return start(std::move(impl));
}

Result<BundleReader> BundleReader::open(std::istream& in, const ReadLimits& limits) {
  auto impl = std::make_unique<Impl>();
  impl->source = std::make_unique<StreamSource>(in);
  impl->limits = limits;
  return start(std::move(impl));
}

Result<BundleReader> BundleReader::open(std::span<const std::uint8_t> bytes, const ReadLimits& limits) {
  auto impl = std::make_unique<Impl>();
  impl->source = std::make_unique<MemorySource>(bytes);
  impl->limits = limits;
  return start(std::move(impl));
}

Result<BundleReader> BundleReader::open(ByteSource source, const ReadLimits& limits) {
  auto impl = std::make_unique<Impl>();
  impl->source = std::make_unique<FunctionSource>(std::move(source));
  impl->limits = limits;
  return start(std::move(impl));
}

Result<BundleReader> BundleReader::open_file(const std::filesystem::path& path, const ReadLimits& limits) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    auto cat = errno == ENOENT ? Category::not_found : Category::io_error;
    return fail(cat, "cannot open bundle {}: {}", path.string(), std::strerror(errno));
  }
  auto impl = std::make_unique<Impl>();
  impl->source = std::make_unique<FdSource>(fd, /*owned=*/true);
  impl->limits = limits;
  auto reader = start(std::move(impl));
  if (!reader) return tl::unexpected(std::move(reader).error().context(path.string()));
  return reader;
}

const BundleHeader& BundleReader::header() const { return m_impl->header; }
BundleHeader BundleReader::take_header() {
  m_impl->window.reset();  // its checks read the index
  return std::move(m_impl->header);
}

Result<std::optional<Entry>> BundleReader::next() {
  if (m_impl->failed) return tl::unexpected(*m_impl->failed);
  auto r = m_impl->next();
  if (!r) m_impl->failed = r.error();
  return r;
}

Result<void> BundleReader::finish() {
  if (m_impl->failed) return tl::unexpected(*m_impl->failed);
  if (m_impl->finished) return {};
  auto r = m_impl->finish();
  if (!r) m_impl->failed = r.error();
  return r;
}

std::size_t BundleReader::entries_read() const { return m_impl->handed; }
std::uint64_t BundleReader::bytes_read() const {
  // While entries remain, the reading side may be a batch ahead of what was
  // handed out; the figure is the one a record-at-a-time read would give.
  return m_impl->handed == m_impl->header.index.size() ? m_impl->consumed : m_impl->shown_consumed;
}

}  // namespace kcache::bundle
