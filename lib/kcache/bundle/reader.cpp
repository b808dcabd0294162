// Bundle reader: a pull parser over a byte source. open() reads and checks
// the head without decompressing; next() streams one record at a time out of
// the current zstd frame into a buffer of exactly the indexed record size;
// finish() checks the trailer. Every byte consumed goes through the
// whole-file hasher in order, so finish() compares against exactly what was
// parsed.
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameHeader, ZSTD_FRAMEHEADERSIZE_MAX (exported by libzstd.so)
#include "kcache/bundle/bundle_internal.hpp"
#include "kcache/util/text.hpp"

#include <zstd.h>

#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <istream>

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
  std::unique_ptr<std::uint8_t[]> record;  ///< uninitialised: pages are touched only as zstd fills them
  std::size_t record_cap = 0;
  std::unique_ptr<std::uint8_t[]> stored;  ///< version 2: the transformed record zstd fills, as `record`
  std::size_t stored_cap = 0;

  std::optional<Error> failed;
  bool finished = false;

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
    if (version < k_min_format_version || version > k_max_format_version)
      return fail(Category::version_mismatch,
                  "bundle format version {} is not supported: this kcache reads versions {}..{}{}", version,
                  k_min_format_version, k_max_format_version,
                  version > k_max_format_version ? " (the bundle was written by a newer kcache)" : "");
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
  std::vector<std::uint8_t> unpacked;
  if (version >= 2) {
    unpacked = KCACHE_TRY(internal::decompress_header_body(body, limits));
    body = unpacked;
  }
  header = KCACHE_TRY(internal::decode_header_body(body, version, limits));
  if (is_signed) {
    const std::uint8_t* s = head.data() + internal::k_preamble_size + header_size;
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

  dctx.reset(ZSTD_createDCtx());
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

Result<std::optional<Entry>> BundleReader::Impl::next() {
  const std::size_t n = header.index.size();
  if (next_entry == n) return std::nullopt;
  const std::size_t i = next_entry;
  const IndexEntry& want = header.index[i];
  if (!in_frame) KCACHE_CHECK(start_frame());

  const bool transformed = header.format_version >= 2;
  const std::size_t record_size = static_cast<std::size_t>(want.record_size);
  const std::size_t size = record_size + (transformed ? internal::k_transform_prefix : 0);
  if (record_cap < record_size) {
    record.reset();
    record = std::make_unique_for_overwrite<std::uint8_t[]>(record_size);
    record_cap = record_size;
  }
  if (transformed && stored_cap < size) {
    stored.reset();
    stored = std::make_unique_for_overwrite<std::uint8_t[]>(size);
    stored_cap = size;
  }
  ZSTD_outBuffer dst{transformed ? stored.get() : record.get(), size, 0};
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
  std::span<const std::uint8_t> bytes(record.get(), record_size);
  if (transformed) {
    if (auto ok = internal::restore_record({stored.get(), size}, want, {record.get(), record_size},
                                             header.format_version);
        !ok)
      return corrupt(fmt::format("bundle {}: {}", entry_name(i), ok.error().message));
  }
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
  if (i + 1 == block_end) {
    if (frame_done) {
      in_frame = false;
      ++block;
    } else {
      KCACHE_CHECK(end_frame());
    }
  }
  ++next_entry;
  return std::optional<Entry>(std::move(*entry));
}

Result<void> BundleReader::Impl::finish() {
  while (next_entry < header.index.size()) KCACHE_CHECK(next());
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

std::size_t BundleReader::entries_read() const { return m_impl->next_entry; }
std::uint64_t BundleReader::bytes_read() const { return m_impl->consumed; }

}  // namespace kcache::bundle
