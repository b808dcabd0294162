// Head encoding and decoding, checks shared by writer and reader, digests.
// The layout is FORMAT.md's; keep the two in step.
#include "kcache/bundle/bundle_internal.hpp"
#include "kcache/util/text.hpp"

#include "kcache/util/bytes.hpp"

#include <sodium.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <set>

namespace kcache::bundle {

std::optional<FormatTraits> format_traits(std::uint16_t version) {
  // The one table of FORMAT.md "Versions": each number, its kind and what
  // its layout has. A new version is a new row, never a changed one.
  switch (version) {
    case 1: return FormatTraits{BundleKind::namespace_bundle, false, false, false, false};
    case 2: return FormatTraits{BundleKind::namespace_bundle, true, true, false, false};
    case 3: return FormatTraits{BundleKind::namespace_bundle, true, true, true, false};
    case 4: return FormatTraits{BundleKind::release, false, false, false, false};
    case 5: return FormatTraits{BundleKind::delta, true, true, true, false};
    case 6: return FormatTraits{BundleKind::delta, true, true, true, true};
    default: return std::nullopt;
  }
}

bool is_delta_format(std::uint16_t version) {
  const auto t = format_traits(version);
  return t && t->kind == BundleKind::delta;
}

using util::ByteReader;
using util::ByteWriter;

std::string library_versions() {
  return std::string("zstd ") + ZSTD_versionString() + "\nlibsodium " + sodium_version_string();
}

std::string Digest256::hex() const { return util::to_hex(bytes); }
std::string KeyId::hex() const { return util::to_hex(bytes); }

Digest256 digest_bytes(std::span<const std::uint8_t> data) {
  internal::Blake2b h;
  h.update(data);
  return h.peek();
}

IndexEntry index_entry(const Entry& entry) {
  auto record = encode_entry(entry);
  return IndexEntry{entry.kernel,         entry.key,     entry.payload_kind,
                    entry.payload.size(), record.size(), digest_bytes(record)};
}

std::uint64_t BundleHeader::total_record_bytes() const {
  std::uint64_t n = 0;
  for (const auto& e : index) n += e.record_size;
  return n;
}

std::uint64_t BundleHeader::total_payload_bytes() const {
  std::uint64_t n = 0;
  for (const auto& e : index) n += e.payload_size;
  return n;
}

BundleHeader make_header(Namespace ns, std::vector<Field> tool_versions, std::uint64_t created,
                         std::span<const Entry> entries) {
  BundleHeader h;
  h.ns = std::move(ns);
  h.tool_versions = std::move(tool_versions);
  h.created = created;
  h.index.reserve(entries.size());
  for (const auto& e : entries) h.index.push_back(index_entry(e));
  return h;
}

EntrySource entries_from(std::span<const Entry> entries) {
  return [entries](std::size_t i) -> Result<Entry> {
    if (i >= entries.size()) return fail(Category::invalid_argument, "entry {} requested of {}", i, entries.size());
    return entries[i];
  };
}

namespace internal {

std::string shown(std::string_view text) { return util::shown_untrusted(text); }

Blake2b::Blake2b() {
  sodium_ready();
  crypto_generichash_init(&m_state, nullptr, 0, k_digest_size);
}

void Blake2b::update(std::span<const std::uint8_t> data) {
  if (!data.empty()) crypto_generichash_update(&m_state, data.data(), data.size());
}

Digest256 Blake2b::peek() const {
  crypto_generichash_state copy = m_state;
  Digest256 d;
  crypto_generichash_final(&copy, d.bytes.data(), d.bytes.size());
  sodium_memzero(&copy, sizeof copy);
  return d;
}

bool sodium_ready() {
  // sodium_init is itself idempotent and thread-safe; the static only saves
  // the call and remembers a failure.
  static const bool ok = sodium_init() >= 0;
  return ok;
}

void put_identity(ByteWriter& w, const BundleHeader& h) {
  w.str(h.ns.backend);
  w.str(h.ns.fingerprint);
  put_fields(w, h.ns.record.fields);
  put_fields(w, h.tool_versions);
}

void put_delta(ByteWriter& w, const DeltaBase& d, std::uint16_t version) {
  w.raw(d.base_digest.bytes);
  w.u32(d.base_entries);
  w.u32(static_cast<std::uint32_t>(d.kept.size()));
  for (const auto& k : d.kept) w.str(k);
  w.raw(d.kept_digest.bytes);
  w.u32(static_cast<std::uint32_t>(d.removed.size()));
  for (const auto& k : d.removed) w.str(k);
  if (!traits(version).delta_base_keys) return;
  // Counts are the kept and removed lists' (check_header makes them agree).
  w.str(d.base_name);
  for (auto tag : d.kept_tags) w.u32(tag);
  for (const auto& key : d.removed_keys) {
    w.raw(key.id.bytes);
    w.raw(key.ir.bytes);
  }
}

void put_index_entry(ByteWriter& w, const IndexEntry& e) {
  w.str(e.kernel);
  w.raw(e.key.id.bytes);
  w.raw(e.key.ir.bytes);
  w.u8(static_cast<std::uint8_t>(e.payload_kind));
  w.u64(e.payload_size);
  w.u64(e.record_size);
  w.raw(e.digest.bytes);
}

namespace {

template <std::size_t N>
bool get_array(ByteReader& r, std::array<std::uint8_t, N>& out) {
  auto b = r.raw(N);
  if (!b) return false;
  std::memcpy(out.data(), b->data(), N);
  return true;
}

/// Bytes an index entry takes at least: empty kernel name.
constexpr std::uint64_t k_min_index_entry = 4 + 16 + 16 + 1 + 8 + 8 + k_digest_size;

tl::unexpected<Error> bad_header(std::string_view what) {
  return fail(Category::corruption, "bundle header is corrupt: {}", what);
}

std::string entry_name(std::size_t i, std::size_t n, std::string_view kernel) {
  return fmt::format("entry {} of {} (kernel '{}')", i + 1, n, shown(kernel));
}

}  // namespace

std::vector<std::uint8_t> encode_header_body(const BundleHeader& h) {
  ByteWriter w;
  // The content fields here (identity, created, index) are the signed
  // manifest's too (signing.cpp signed_manifest): both use put_identity and
  // put_index_entry, so a field added to one is added to the other.
  w.u64(h.created);
  put_identity(w, h);
  w.u8(k_codec_zstd);
  w.u32(static_cast<std::uint32_t>(static_cast<std::int32_t>(h.compression.level)));
  w.u8(static_cast<std::uint8_t>(h.compression.window_log));
  w.u8(h.compression.long_distance ? k_codec_flag_ldm : 0);
  w.u32(h.compression.block_bytes);
  w.u32(static_cast<std::uint32_t>(h.index.size()));
  w.u64(h.total_record_bytes());
  w.u32(static_cast<std::uint32_t>(h.block_entry_counts.size()));
  for (auto c : h.block_entry_counts) w.u32(c);
  for (const auto& e : h.index) put_index_entry(w, e);
  if (is_delta_format(h.format_version) && h.delta) put_delta(w, *h.delta, h.format_version);
  return w.take();
}

std::vector<std::uint8_t> compress_header_body(std::span<const std::uint8_t> body) {
  // The index is mostly kernel names that share long prefixes, and the keys
  // and digests that zstd cannot shrink: level 19 gained under 2% of the
  // head at 5x level 9's time (k_head_level).
  return compress_frame(body, k_head_level, k_max_window_log, /*declare_size=*/true);
}

Result<std::vector<std::uint8_t>> decompress_header_body(std::span<const std::uint8_t> stored,
                                                         const ReadLimits& limits) {
  const auto content = ZSTD_getFrameContentSize(stored.data(), stored.size());
  if (content == ZSTD_CONTENTSIZE_ERROR) return bad_header("its body is not a zstd frame");
  if (content == ZSTD_CONTENTSIZE_UNKNOWN) return bad_header("its body does not declare its size");
  if (content > limits.max_header_bytes)
    return fail(Category::corruption, "bundle declares a header of {}; limit {}", util::human_bytes(content),
                util::human_bytes(limits.max_header_bytes));
  if (ZSTD_findFrameCompressedSize(stored.data(), stored.size()) != stored.size())
    return bad_header("its body is not exactly one zstd frame");
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> dctx(ZSTD_createDCtx(), &ZSTD_freeDCtx);
  if (!dctx) return fail(Category::io_error, "zstd: cannot allocate a decompression context");
  ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, limits.window_log_max);
  std::vector<std::uint8_t> body(static_cast<std::size_t>(content));
  auto got = ZSTD_decompressDCtx(dctx.get(), body.data(), body.size(), stored.data(), stored.size());
  if (ZSTD_isError(got))
    return bad_header(fmt::format("its body does not decompress: zstd: {}", ZSTD_getErrorName(got)));
  if (got != content) return bad_header("its body is shorter than it declares");
  return body;
}

std::vector<std::uint8_t> encode_head(const BundleHeader& h) {
  auto body = encode_header_body(h);
  if (traits(h.format_version).compressed_head) body = compress_header_body(body);
  ByteWriter w;
  w.raw(k_magic);
  w.u16(h.format_version);
  w.u16(h.signature ? k_flag_signed : 0);
  w.u32(static_cast<std::uint32_t>(body.size()));
  w.raw(body);
  if (h.signature) {
    w.u8(k_signature_ed25519);
    w.raw(h.signature->key_id.bytes);
    w.raw(h.signature->public_key.bytes);
    w.raw(h.signature->signature);
  }
  auto digest = digest_bytes(w.bytes());
  w.raw(digest.bytes);
  return w.take();
}

Result<BundleHeader> decode_header_body(std::span<const std::uint8_t> body, std::uint16_t version,
                                        const ReadLimits& limits) {
  // Versions 1 and 2 share this layout; version 2 stores it compressed
  // (decompress_header_body) and encodes block content differently.
  BundleHeader h;
  h.format_version = version;
  ByteReader r(body);
  auto created = r.u64();
  auto backend = r.str(k_max_string);
  auto fingerprint = r.str(k_max_string);
  if (!created || !backend || !fingerprint) return bad_header("truncated before the fingerprint record");
  h.created = *created;
  h.ns.backend = std::move(*backend);
  h.ns.fingerprint = std::move(*fingerprint);
  if (!get_fields(r, h.ns.record.fields, k_max_fields, k_max_string)) return bad_header("bad fingerprint record");
  if (!get_fields(r, h.tool_versions, k_max_fields, k_max_string)) return bad_header("bad tool version list");

  auto codec = r.u8();
  auto level = r.u32();
  auto window_log = r.u8();
  auto codec_flags = r.u8();
  auto block_bytes = r.u32();
  auto entry_count = r.u32();
  auto total = r.u64();
  auto block_count = r.u32();
  if (!block_count) return bad_header("truncated in the compression and count fields");
  if (*codec != k_codec_zstd) return bad_header(fmt::format("unknown compression codec {}", *codec));
  if ((*codec_flags & ~k_codec_flag_ldm) != 0)
    return bad_header(fmt::format("unknown compression flags 0x{:02x}", *codec_flags));
  if (*window_log < k_min_window_log || *window_log > limits.window_log_max)
    return fail(Category::corruption, "bundle declares a zstd window of 2^{} bytes ({}); limit {}", *window_log,
                util::human_bytes(std::uint64_t{1} << std::min<int>(*window_log, 63)),
                util::human_bytes(std::uint64_t{1} << limits.window_log_max));
  h.compression = {static_cast<std::int32_t>(*level), *window_log, (*codec_flags & k_codec_flag_ldm) != 0,
                   *block_bytes};

  if (*entry_count > limits.max_entries)
    return fail(Category::corruption, "bundle declares {} entries; limit {}", *entry_count, limits.max_entries);
  if (*total > limits.max_total_bytes)
    return fail(Category::corruption, "bundle declares {} of entries after decompression ({} bytes); limit {}",
                util::human_bytes(*total), *total, util::human_bytes(limits.max_total_bytes));
  // Counts are checked against the bytes that are there before anything is
  // reserved, so a 12-byte lie cannot make the reader allocate gigabytes.
  if (*block_count > *entry_count || std::uint64_t{*block_count} * 4 > r.remaining())
    return bad_header(fmt::format("{} blocks for {} entries", *block_count, *entry_count));
  h.block_entry_counts.reserve(*block_count);
  for (std::uint32_t b = 0; b < *block_count; ++b) h.block_entry_counts.push_back(*r.u32());
  if (std::uint64_t{*entry_count} * k_min_index_entry > r.remaining())
    return bad_header(fmt::format("declares {} entries but has room for at most {} index entries", *entry_count,
                                  r.remaining() / k_min_index_entry));

  h.index.reserve(*entry_count);
  std::uint64_t sum = 0;
  for (std::uint32_t i = 0; i < *entry_count; ++i) {
    IndexEntry e;
    auto kernel = r.str(k_max_string);
    if (!kernel) return bad_header(fmt::format("truncated in index entry {} of {}", i + 1, *entry_count));
    e.kernel = std::move(*kernel);
    auto kind = (get_array(r, e.key.id.bytes) && get_array(r, e.key.ir.bytes)) ? r.u8() : std::nullopt;
    auto payload_size = r.u64();
    auto record_size = r.u64();
    if (!kind || !payload_size || !record_size || !get_array(r, e.digest.bytes))
      return bad_header(fmt::format("truncated in index {}", entry_name(i, *entry_count, e.kernel)));
    if (!is_known_payload_kind(*kind))
      return bad_header(fmt::format("{} has unknown payload kind {}", entry_name(i, *entry_count, e.kernel), *kind));
    e.payload_kind = static_cast<PayloadKind>(*kind);
    e.payload_size = *payload_size;
    e.record_size = *record_size;
    if (e.record_size > limits.max_record_bytes)
      return fail(Category::corruption, "bundle {} declares size {}; limit {}", entry_name(i, *entry_count, e.kernel),
                  util::human_bytes(e.record_size), util::human_bytes(limits.max_record_bytes));
    if (__builtin_add_overflow(sum, e.record_size, &sum) || sum > *total)
      return bad_header(fmt::format("entry sizes exceed the declared total of {} bytes", *total));
    h.index.push_back(std::move(e));
  }
  if (sum != *total) return bad_header(fmt::format("entry sizes total {} bytes, header declares {}", sum, *total));
  if (is_delta_format(version)) {
    DeltaBase d;
    auto names = [&](std::vector<std::string>& out, std::string_view what) -> Result<void> {
      auto count = r.u32();
      // Each name takes at least its 4-byte length.
      if (!count || std::uint64_t{*count} * 4 > r.remaining() || *count > limits.max_entries)
        return bad_header(fmt::format("bad count of {} kernels", what));
      out.reserve(*count);
      for (std::uint32_t i = 0; i < *count; ++i) {
        auto name = r.str(k_max_string);
        if (!name) return bad_header(fmt::format("truncated in the {} kernels", what));
        out.push_back(std::move(*name));
      }
      return {};
    };
    auto base = r.raw(k_digest_size);
    auto base_entries = r.u32();
    if (!base || !base_entries) return bad_header("truncated in its delta base");
    std::memcpy(d.base_digest.bytes.data(), base->data(), k_digest_size);
    d.base_entries = *base_entries;
    KCACHE_CHECK(names(d.kept, "kept"));
    auto kept_digest = r.raw(k_digest_size);
    if (!kept_digest) return bad_header("truncated in its delta base");
    std::memcpy(d.kept_digest.bytes.data(), kept_digest->data(), k_digest_size);
    KCACHE_CHECK(names(d.removed, "removed"));
    if (traits(version).delta_base_keys) {
      auto base_name = r.str(k_max_base_name);
      if (!base_name) return bad_header("truncated in its delta base's name");
      d.base_name = std::move(*base_name);
      // 4 bytes per kept tag, 32 per removed key: checked against the bytes
      // left before anything is reserved.
      if (std::uint64_t{d.kept.size()} * 4 + std::uint64_t{d.removed.size()} * 32 > r.remaining())
        return bad_header("truncated in its delta base's kept tags and removed keys");
      d.kept_tags.reserve(d.kept.size());
      for (std::size_t i = 0; i < d.kept.size(); ++i) d.kept_tags.push_back(*r.u32());
      d.removed_keys.resize(d.removed.size());
      for (auto& key : d.removed_keys) get_array(r, key.id.bytes), get_array(r, key.ir.bytes);
    }
    h.delta = std::move(d);
  }
  if (r.remaining() != 0) return bad_header(fmt::format("{} unexpected bytes after the index", r.remaining()));
  KCACHE_CHECK(check_header(h, /*from_elsewhere=*/true));
  return h;
}

Result<void> check_header(const BundleHeader& h, bool from_elsewhere) {
  const auto& ns = h.ns;
  if (const auto t = format_traits(h.format_version); !t || t->kind == BundleKind::release)
    return fail(Category::corruption, "bundle format version {} is not one of a namespace's bundle", h.format_version);
  // Backend, target, record and its text: one rule for every namespace that
  // comes from elsewhere (core/namespace.hpp).
  if (auto ok = check_foreign_namespace(ns); !ok) return tl::unexpected(std::move(ok).error().context("bundle"));
  auto too_long = [](const std::vector<Field>& fs) {
    return fs.size() > k_max_fields || std::any_of(fs.begin(), fs.end(), [](const Field& f) {
             return f.first.size() > k_max_string || f.second.size() > k_max_string;
           });
  };
  if (ns.fingerprint.size() > k_max_string || too_long(ns.record.fields) || too_long(h.tool_versions))
    return fail(Category::corruption, "bundle header has a field list or string over its limit");
  for (const auto& [name, value] : h.tool_versions)
    if (from_elsewhere && (!util::is_printable_utf8(name) || !util::is_printable_utf8(value)))
      return fail(Category::corruption, "bundle tool version '{}' = '{}' holds control characters or invalid UTF-8",
                  shown(name), shown(value));
  if (h.index.size() > UINT32_MAX) return fail(Category::corruption, "too many entries for one bundle");
  if (is_delta_format(h.format_version) != h.delta.has_value())
    return fail(Category::corruption, "bundle format version {} {} delta fields", h.format_version,
                h.delta ? "cannot carry" : "lacks its");
  if (h.delta && traits(h.format_version).delta_base_keys) {
    // What a reader finds after version 5's fields: one tag per kept and one
    // key per removed kernel, and a file name that messages print.
    const auto& d = *h.delta;
    if (d.kept_tags.size() != d.kept.size() || d.removed_keys.size() != d.removed.size())
      return fail(Category::corruption, "bundle delta has {} tags for {} kept and {} keys for {} removed kernels",
                  d.kept_tags.size(), d.kept.size(), d.removed_keys.size(), d.removed.size());
    if (d.base_name.size() > k_max_base_name || !util::is_printable_utf8(d.base_name) ||
        d.base_name.find_first_of("/\\") != std::string::npos)
      return fail(Category::corruption, "bundle delta names its base '{}': not a file name of at most {} bytes",
                  shown(d.base_name), k_max_base_name);
  }
  if (h.delta) {
    // Kept and removed kernels are BASE's: named once, never in the index
    // (an entry there is added or replaced).
    std::set<std::string_view> seen;
    for (const auto& e : h.index) seen.insert(e.kernel);
    for (const auto* list : {&h.delta->kept, &h.delta->removed})
      for (const auto& k : *list) {
        if (auto ok = from_elsewhere ? check_kernel_name(k) : Result<void>{}; !ok)
          return fail(Category::corruption, "bundle delta: {}", ok.error().message);
        if (!seen.insert(k).second) return fail(Category::corruption, "bundle delta names kernel '{}' twice", shown(k));
      }
    if (h.delta->kept.size() + h.delta->removed.size() > h.delta->base_entries)
      return fail(Category::corruption, "bundle delta keeps and removes {} of a base of {} entries",
                  h.delta->kept.size() + h.delta->removed.size(), h.delta->base_entries);
  }

  const std::size_t n = h.index.size();
  for (std::size_t i = 0; i < n; ++i) {
    const auto& e = h.index[i];
    // The index names every kernel before anything is decompressed, so a
    // name that is too long, would drive a terminal or looks like a path is
    // refused here; each record must then carry the same name.
    if (auto ok = from_elsewhere ? check_kernel_name(e.kernel) : Result<void>{}; !ok)
      return fail(Category::corruption, "bundle entry {} of {}: {}", i + 1, n, ok.error().message);
    if (e.payload_size > k_max_payload_bytes || e.record_size < e.payload_size + k_min_record_size)
      return fail(Category::corruption,
                  "bundle {} has inconsistent sizes: record {} bytes cannot hold a {}-byte payload",
                  entry_name(i, n, e.kernel), e.record_size, e.payload_size);
  }
  // Duplicate names: sort (name hash, position) pairs, comparing names only
  // on equal hashes, so equal names end up adjacent. 16 bytes per entry and
  // integer compares: a million-entry index costs little time or memory.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> order;
  order.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    order.emplace_back(std::hash<std::string_view>{}(h.index[i].kernel), static_cast<std::uint32_t>(i));
  std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    int c = h.index[a.second].kernel.compare(h.index[b.second].kernel);
    return c != 0 ? c < 0 : a.second < b.second;
  });
  for (std::size_t k = 1; k < n; ++k)
    if (order[k].first == order[k - 1].first && h.index[order[k].second].kernel == h.index[order[k - 1].second].kernel)
      return fail(Category::corruption, "duplicate key: kernel '{}' appears as entries {} and {}",
                  shown(h.index[order[k].second].kernel), order[k - 1].second + 1, order[k].second + 1);

  std::uint64_t covered = 0;
  for (std::size_t b = 0; b < h.block_entry_counts.size(); ++b) {
    if (h.block_entry_counts[b] == 0)
      return fail(Category::corruption, "bundle header is corrupt: block {} holds no entries", b + 1);
    covered += h.block_entry_counts[b];
  }
  if (covered != n)
    return fail(Category::corruption, "bundle header is corrupt: blocks hold {} entries, index has {}", covered, n);
  return {};
}

void append_trailer(std::vector<std::uint8_t>& bytes) {
  ByteWriter w;
  w.raw(k_trailer_magic);
  w.u64(bytes.size());
  bytes.insert(bytes.end(), w.bytes().begin(), w.bytes().end());
  auto d = digest_bytes(bytes);
  bytes.insert(bytes.end(), d.bytes.begin(), d.bytes.end());
}

std::vector<std::uint8_t> compress_frame(std::span<const std::uint8_t> data, int level, int window_log,
                                         bool declare_size) {
  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> cctx(ZSTD_createCCtx(), &ZSTD_freeCCtx);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_windowLog, window_log);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  // contentSizeFlag off: a single ZSTD_e_end call would otherwise declare it.
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_contentSizeFlag, declare_size ? 1 : 0);
  if (declare_size) ZSTD_CCtx_setPledgedSrcSize(cctx.get(), data.size());
  std::vector<std::uint8_t> out(ZSTD_compressBound(data.size()) + 64);
  ZSTD_outBuffer o{out.data(), out.size(), 0};
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  for (;;) {
    auto r = ZSTD_compressStream2(cctx.get(), &o, &in, ZSTD_e_end);
    if (ZSTD_isError(r) || r == 0) break;
  }
  out.resize(o.pos);
  return out;
}

}  // namespace internal
}  // namespace kcache::bundle
