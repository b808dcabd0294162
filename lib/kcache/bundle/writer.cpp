// Bundle writer: head first (built from the caller's index, signed when
// asked), then one zstd frame per block, streamed record by record, then the
// trailer. Holds the head, one compression context, one record and a small
// output buffer: nothing proportional to the payload (FORMAT.md "Memory").
#include "kcache/bundle/bundle_internal.hpp"
#include "kcache/util/file.hpp"
#include "kcache/util/text.hpp"

#include "kcache/util/bytes.hpp"

#include <zstd.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <ostream>

namespace kcache::bundle {
namespace {

using internal::Blake2b;

/// Where bundle bytes go. Every byte passes through the whole-file hasher on
/// its way out, so the trailer digest covers exactly what was written.
class Sink {
 public:
  virtual ~Sink() = default;
  Result<void> write(std::span<const std::uint8_t> data) {
    if (data.empty()) return {};
    m_hash.update(data);
    m_written += data.size();
    return put(data);
  }
  std::uint64_t written() const { return m_written; }
  Digest256 digest() const { return m_hash.peek(); }

 protected:
  virtual Result<void> put(std::span<const std::uint8_t> data) = 0;

 private:
  Blake2b m_hash;
  std::uint64_t m_written = 0;
};

class FdSink final : public Sink {
 public:
  explicit FdSink(int fd) : m_fd(fd) {}

 protected:
  Result<void> put(std::span<const std::uint8_t> data) override {
    if (!util::write_all(m_fd, data)) return fail(Category::io_error, "writing bundle: {}", std::strerror(errno));
    return {};
  }

 private:
  int m_fd;
};

class StreamSink final : public Sink {
 public:
  explicit StreamSink(std::ostream& out) : m_out(out) {}

 protected:
  Result<void> put(std::span<const std::uint8_t> data) override {
    m_out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    if (!m_out) return fail(Category::io_error, "writing bundle: output stream failed");
    return {};
  }

 private:
  std::ostream& m_out;
};

struct CCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
using CCtxPtr = std::unique_ptr<ZSTD_CCtx, CCtxFree>;

tl::unexpected<Error> zstd_error(std::size_t code, std::string_view where) {
  return fail(Category::io_error, "compressing bundle {}: zstd: {}", where, ZSTD_getErrorName(code));
}

Result<void> check_options(const WriteOptions& o) {
  if (o.level < ZSTD_minCLevel() || o.level > ZSTD_maxCLevel() || o.level == 0)
    return fail(Category::invalid_argument, "compression level {} is outside {}..{} (0 excluded)", o.level,
                ZSTD_minCLevel(), ZSTD_maxCLevel());
  if (o.window_log < internal::k_min_window_log || o.window_log > k_max_window_log)
    return fail(Category::invalid_argument, "zstd window log {} is outside {}..{}", o.window_log,
                internal::k_min_window_log, k_max_window_log);
  if (o.format_version < k_min_format_version || o.format_version > k_max_format_version)
    return fail(Category::invalid_argument, "bundle format version {} cannot be written: this kcache writes {}..{}",
                o.format_version, k_min_format_version, k_max_format_version);
  if (o.block_bytes == 0 || o.block_bytes > internal::k_max_block_bytes)
    return fail(Category::invalid_argument, "block size {} is outside 1..{}", o.block_bytes,
                internal::k_max_block_bytes);
  return {};
}

/// Greedy partition: a block takes entries until the next one would pass
/// `target`; a record larger than `target` gets a block of its own. Readers
/// do not depend on how blocks were chosen, only on the counts.
std::vector<std::uint32_t> plan_blocks(const std::vector<IndexEntry>& index, std::uint64_t target) {
  std::vector<std::uint32_t> counts;
  std::uint64_t size = 0;
  for (const auto& e : index) {
    if (counts.empty() || (size > 0 && size + e.record_size > target)) {
      counts.push_back(0);
      size = 0;
    }
    ++counts.back();
    size += e.record_size;
  }
  return counts;
}

Result<void> set_param(ZSTD_CCtx* c, ZSTD_cParameter p, int v) {
  auto r = ZSTD_CCtx_setParameter(c, p, v);
  if (ZSTD_isError(r)) return zstd_error(r, "(setting parameters)");
  return {};
}

Result<void> write_impl(Sink& sink, const BundleHeader& in_header, const EntrySource& entry_at,
                        const WriteOptions& options) {
  KCACHE_CHECK(check_options(options));
  BundleHeader h;
  // A delta is written as version 6 (version 3's encoding plus its fields),
  // or 5 on request.
  if (in_header.delta && !is_delta_format(options.delta_format_version))
    return fail(Category::invalid_argument, "a delta bundle is written as format version {} or {}, not {}",
                k_min_delta_format_version, k_delta_format_version, options.delta_format_version);
  h.format_version =
      in_header.delta ? options.delta_format_version : static_cast<std::uint16_t>(options.format_version);
  h.delta = in_header.delta;
  h.ns = in_header.ns;
  h.tool_versions = in_header.tool_versions;
  h.created = in_header.created;
  h.index = in_header.index;
  h.compression = {options.level, options.window_log, options.long_distance, options.block_bytes};
  h.block_entry_counts = plan_blocks(h.index, options.block_bytes);
  if (auto ok = internal::check_header(h, /*from_elsewhere=*/false); !ok)
    return fail(Category::invalid_argument, "cannot write bundle: {}", ok.error().message);
  // A head the default reader limit refuses would make a bundle nobody can
  // import: refused here, before a byte is written.
  if (const auto body = internal::encode_header_body(h).size(); body > ReadLimits{}.max_header_bytes)
    return fail(Category::invalid_argument,
                "cannot write bundle: its {} entries make a header of {}, over the {} a reader accepts; export "
                "them in several bundles",
                h.index.size(), util::human_bytes(body), util::human_bytes(ReadLimits{}.max_header_bytes));
  if (options.sign) {
    if (!internal::sodium_ready()) return fail(Category::io_error, "libsodium failed to initialise");
    SignatureInfo sig;
    sig.public_key = options.sign->public_key;
    sig.key_id = key_id(sig.public_key);
    auto manifest = signed_manifest(h);
    crypto_sign_detached(sig.signature.data(), nullptr, manifest.data(), manifest.size(),
                         options.sign->secret_key.bytes.data());
    h.signature = sig;
  }
  KCACHE_CHECK(sink.write(internal::encode_head(h)));

  CCtxPtr cctx(ZSTD_createCCtx());
  if (!cctx) return fail(Category::io_error, "zstd: cannot allocate a compression context");
  KCACHE_CHECK(set_param(cctx.get(), ZSTD_c_compressionLevel, options.level));
  KCACHE_CHECK(set_param(cctx.get(), ZSTD_c_windowLog, options.window_log));
  KCACHE_CHECK(set_param(cctx.get(), ZSTD_c_enableLongDistanceMatching, options.long_distance ? 1 : 0));
  KCACHE_CHECK(set_param(cctx.get(), ZSTD_c_checksumFlag, 1));
  KCACHE_CHECK(set_param(cctx.get(), ZSTD_c_contentSizeFlag, 1));
  std::vector<std::uint8_t> out(ZSTD_CStreamOutSize());
  const bool transformed = internal::traits(h.format_version).transformed_records;
  const std::uint64_t per_entry = transformed ? internal::k_transform_prefix : 0;
  std::vector<std::uint8_t> stored;  // version 2: the transformed record

  const std::size_t n = h.index.size();
  std::size_t i = 0;
  for (std::size_t b = 0; b < h.block_entry_counts.size(); ++b) {
    const std::size_t first = i, last = i + h.block_entry_counts[b];
    std::uint64_t block_size = 0;
    for (std::size_t k = first; k < last; ++k) block_size += h.index[k].record_size + per_entry;
    ZSTD_CCtx_reset(cctx.get(), ZSTD_reset_session_only);
    // The pledged size makes zstd declare the content size in the frame
    // header (readers require it) and shrinks the window for small blocks.
    if (auto r = ZSTD_CCtx_setPledgedSrcSize(cctx.get(), block_size); ZSTD_isError(r))
      return zstd_error(r, fmt::format("block {}", b + 1));
    for (; i < last; ++i) {
      const IndexEntry& want = h.index[i];
      auto entry = KCACHE_TRY(entry_at(i));
      auto record = encode_entry(entry);
      if (record.size() != want.record_size || (options.check_records && digest_bytes(record) != want.digest))
        return fail(Category::invalid_argument,
                    "entry {} of {} (kernel '{}') does not match its index entry (record of {} bytes, index says "
                    "{}): did it change between the index pass and the write?",
                    i + 1, n, entry.kernel, record.size(), want.record_size);
      const bool end = i + 1 == last;
      ZSTD_inBuffer src{record.data(), record.size(), 0};
      if (transformed) {
        stored.resize(record.size() + internal::k_transform_prefix);
        internal::transform_record(record, want, entry.payload, stored, h.format_version);
        src = {stored.data(), stored.size(), 0};
      }
      for (;;) {
        ZSTD_outBuffer dst{out.data(), out.size(), 0};
        auto r = ZSTD_compressStream2(cctx.get(), &dst, &src, end ? ZSTD_e_end : ZSTD_e_continue);
        if (ZSTD_isError(r)) return zstd_error(r, fmt::format("entry {} of {}", i + 1, n));
        KCACHE_CHECK(sink.write({out.data(), dst.pos}));
        if (end ? r == 0 : src.pos == src.size) break;
      }
    }
  }

  util::ByteWriter trailer;
  trailer.raw(internal::k_trailer_magic);
  trailer.u64(sink.written());
  KCACHE_CHECK(sink.write(trailer.bytes()));
  auto digest = sink.digest();
  KCACHE_CHECK(sink.write(digest.bytes));
  return {};
}

}  // namespace

Result<void> write_bundle(int fd, const BundleHeader& header, const EntrySource& entry_at,
                          const WriteOptions& options) {
  FdSink sink(fd);
  return write_impl(sink, header, entry_at, options);
}

Result<void> write_bundle(std::ostream& out, const BundleHeader& header, const EntrySource& entry_at,
                          const WriteOptions& options) {
  StreamSink sink(out);
  KCACHE_CHECK(write_impl(sink, header, entry_at, options));
  out.flush();
  if (!out) return fail(Category::io_error, "writing bundle: output stream failed");
  return {};
}

Result<void> write_bundle_file(const std::filesystem::path& path, const BundleHeader& header,
                               const EntrySource& entry_at, const WriteOptions& options) {
  auto file = KCACHE_TRY(util::AtomicFile::create(path));
  FdSink sink(file.fd());
  if (auto ok = write_impl(sink, header, entry_at, options); !ok)
    return tl::unexpected(std::move(ok).error().context(path.string()));
  return file.commit();
}

}  // namespace kcache::bundle
