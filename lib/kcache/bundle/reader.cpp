// Bundle reader, the format: head, zstd frames, records, trailer; and BundleReader's calls.
// (reader_internal.hpp: how the reader's work divides between this file and the others.)
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameHeader, ZSTD_FRAMEHEADERSIZE_MAX (exported by libzstd.so)
#include "kcache/bundle/reader_internal.hpp"
#include "kcache/bundle/release.hpp"
#include "kcache/util/text.hpp"
#include "kcache/util/worker_pool.hpp"

#include <zstd.h>

#include <algorithm>
#include <cstring>

namespace kcache::bundle {
namespace {

using util::human_bytes;

std::uint16_t le16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | p[1] << 8); }
std::uint32_t le32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24;
}
std::uint64_t le64(const std::uint8_t* p) { return std::uint64_t{le32(p)} | std::uint64_t{le32(p + 4)} << 32; }

/// read_head's step for a preamble's format version: version_mismatch, with
/// what this kcache reads, for one it does not read here.
Result<void> check_format_version(std::uint16_t version) {
  const auto traits = format_traits(version);
  if (traits && traits->kind == BundleKind::release)
    return fail(Category::version_mismatch,
                "bundle is a release of several namespaces (format version {}): `kcache import` and `kcache "
                "inspect` read it; this reads one namespace's bundle or delta",
                version);
  if (!traits)
    return fail(Category::version_mismatch,
                "bundle format version {} is not supported: this kcache reads versions 1..{} (1..{} one "
                "namespace, {} a release, {}..{} a delta){}",
                version, k_newest_format_version, k_max_format_version, k_release_format_version,
                k_min_delta_format_version, k_delta_format_version,
                version > k_newest_format_version ? " (the bundle was written by a newer kcache)" : "");
  return {};
}

}  // namespace

Result<void> BundleReader::Impl::read_head() {
  if (limits.window_log_max < internal::k_min_window_log || limits.window_log_max > ZSTD_WINDOWLOG_MAX)
    return fail(Category::invalid_argument, "window log limit {} is outside {}..{}", limits.window_log_max,
                internal::k_min_window_log, ZSTD_WINDOWLOG_MAX);
  std::vector<std::uint8_t> head;
  auto got = KCACHE_TRY(read_into(head, internal::k_preamble_size));
  if (got == 0) return corrupt("not a kcache bundle: the input is empty");
  if (std::memcmp(head.data(), internal::k_magic, std::min<std::size_t>(got, 4)) != 0)
    return corrupt("not a kcache bundle: bad magic (expected \"KCB\\x1a\")");
  if (got >= 6) KCACHE_CHECK(check_format_version(le16(head.data() + 4)));
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
  if (internal::traits(version).compressed_head) {
    unpacked = KCACHE_TRY(internal::decompress_header_body(body, limits));
    body = unpacked;
    // The stored bytes are checked and unpacked: freed before the index is
    // parsed, so the head never costs stored + body + parsed index at once.
    std::vector<std::uint8_t>().swap(head);
  }
  header = KCACHE_TRY(internal::decode_header_body(body, version, limits));
  if (is_signed) KCACHE_CHECK(verify_signature_block(signature.data()));
  block_sizes.reserve(header.block_entry_counts.size());
  // Version 2 stores each record transformed, with a fixed prefix.
  const std::uint64_t per_entry = internal::traits(version).transformed_records ? internal::k_transform_prefix : 0;
  std::size_t i = 0;
  for (auto count : header.block_entry_counts) {
    std::uint64_t size = 0;
    for (std::size_t k = 0; k < count; ++k) size += header.index[i++].record_size + per_entry;
    block_sizes.push_back(size);
  }

  dctx.reset(ZSTD_createDCtx_advanced(ZSTD_customMem{internal::zstd_alloc, internal::zstd_free, nullptr}));
  if (!dctx) return fail(Category::io_error, "zstd: cannot allocate a decompression context");
  ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, limits.window_log_max);
  return {};
}

Result<void> BundleReader::Impl::verify_signature_block(const std::uint8_t* s) {
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
  impl->workers = std::min(wanted, internal::k_max_check_workers);
  return BundleReader(std::move(impl));
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
