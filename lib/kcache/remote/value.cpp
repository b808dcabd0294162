#include "kcache/remote/value.hpp"

#include "kcache/util/bytes.hpp"
#include "kcache/util/hash.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <cstring>

#include <zstd.h>

namespace kcache::remote {
namespace {

constexpr std::uint8_t k_magic[4] = {'K', 'C', 'V', 0x01};
/// Domain separation: a value signature can never pass as a bundle's.
constexpr char k_domain[] = "kcache remote value v1";

/// The bytes a signature covers: domain, version, namespace, record.
std::vector<std::uint8_t> signed_bytes(std::uint16_t version, std::string_view ns,
                                       std::span<const std::uint8_t> record) {
  util::ByteWriter w;
  w.reserve(record.size() + ns.size() + 48);
  w.raw(util::as_bytes(std::string_view(k_domain, sizeof k_domain)));
  w.u16(version);
  w.str(ns);
  w.blob(record);
  return w.take();
}

tl::unexpected<Error> corrupt(std::string_view what) { return fail(Category::corruption, "remote value: {}", what); }

}  // namespace

Result<std::vector<std::uint8_t>> encode_value(std::string_view ns_name, std::span<const std::uint8_t> record,
                                               const bundle::KeyPair* sign, std::uint16_t version) {
  if (version < k_value_min_version || version > k_value_max_version)
    return fail(Category::invalid_argument, "remote value version {} is not one this kcache writes ({}..{})", version,
                k_value_min_version, k_value_max_version);
  if (record.size() > k_max_value_bytes)
    return fail(Category::invalid_argument, "a record of {} bytes is over the remote value limit of {} bytes",
                record.size(), k_max_value_bytes);
  // Version 2: the record field holds one zstd frame (with its content size)
  // unless that is not smaller than the record.
  std::vector<std::uint8_t> packed;
  auto compression = ValueCompression::none;
  if (version >= 2) {
    packed.resize(ZSTD_compressBound(record.size()));
    std::size_t n = ZSTD_compress(packed.data(), packed.size(), record.data(), record.size(), k_value_zstd_level);
    if (ZSTD_isError(n)) return fail(Category::io_error, "compressing a remote value: zstd: {}", ZSTD_getErrorName(n));
    packed.resize(n);
    // Past the ratio a reader would take it for a bomb: keep it as it is.
    if (n < record.size() && record.size() / k_max_value_ratio <= n) compression = ValueCompression::zstd;
  }
  auto field = compression == ValueCompression::zstd ? std::span<const std::uint8_t>(packed) : record;
  util::ByteWriter w;
  w.reserve(field.size() + ns_name.size() + 160);
  w.raw(k_magic);
  w.u16(version);
  w.str(ns_name);
  w.blob(field);
  if (sign) {
    auto sig = KCACHE_TRY(bundle::sign_detached(signed_bytes(version, ns_name, record), *sign));
    w.u8(1);
    w.raw(sign->public_key.bytes);
    w.raw(sig);
  } else {
    w.u8(0);
  }
  if (version >= 2) {
    w.u8(static_cast<std::uint8_t>(compression));
    w.u32(static_cast<std::uint32_t>(record.size()));
  }
  w.raw(util::hash_bytes(w.bytes()).bytes);
  return w.take();
}

Result<ValueParts> decode_value(std::span<const std::uint8_t> bytes, std::size_t max_record_bytes) {
  const std::size_t allowed = std::min(max_record_bytes, k_max_value_bytes);
  if (bytes.size() > k_max_value_bytes) return corrupt(fmt::format("over {} bytes", k_max_value_bytes));
  if (bytes.size() < 4 + 2 + 4 + 4 + 1 + 16) return corrupt("shorter than its fixed fields");
  if (std::memcmp(bytes.data(), k_magic, 4) != 0) return corrupt("bad magic (not a kcache remote value)");
  auto body = bytes.first(bytes.size() - 16);
  util::ByteReader r(body);
  r.raw(4);
  ValueParts parts;
  parts.version = *r.u16();
  if (parts.version < k_value_min_version || parts.version > k_value_max_version)
    return fail(Category::version_mismatch, "remote value has version {}, outside the supported range {}..{}",
                parts.version, k_value_min_version, k_value_max_version);
  Hash128 stored;
  std::memcpy(stored.bytes.data(), bytes.data() + body.size(), 16);
  if (util::hash_bytes(body) != stored) return corrupt("digest mismatch (damaged in storage or in transit)");
  auto ns = r.str(k_max_value_namespace);
  if (!ns) return corrupt("truncated or oversized namespace");
  if (!util::is_printable_utf8(*ns)) return corrupt("unprintable namespace " + util::shown_untrusted(*ns));
  parts.ns = std::move(*ns);
  auto field = r.blob(k_max_value_bytes);
  if (!field) return corrupt("truncated record");
  auto flag = r.u8();
  if (!flag || *flag > 1) return corrupt("bad signature flag");
  if (*flag == 1) {
    auto key = r.raw(32);
    auto sig = r.raw(64);
    if (!key || !sig) return corrupt("truncated signature");
    ValueSignature s;
    std::memcpy(s.key.bytes.data(), key->data(), 32);
    std::memcpy(s.signature.data(), sig->data(), 64);
    parts.signature = s;
  }
  std::uint64_t record_size = field->size();
  if (parts.version >= 2) {
    auto compression = r.u8();
    auto size = r.u32();
    if (!compression || !size) return corrupt("truncated compression fields");
    if (*compression > 1) return corrupt(fmt::format("unknown compression {}", *compression));
    parts.compression = static_cast<ValueCompression>(*compression);
    record_size = *size;
  }
  if (r.failed()) return corrupt("truncated");
  if (r.remaining() != 0) return corrupt("trailing bytes");
  if (record_size > allowed)
    return corrupt(fmt::format("declares a record of {} bytes, over the limit of {}", record_size, allowed));
  if (parts.compression == ValueCompression::none) {
    if (record_size != field->size())
      return corrupt(fmt::format("declares a record of {} bytes but holds {}", record_size, field->size()));
    parts.record.assign(field->begin(), field->end());
    return parts;
  }
  // Bounded before anything is allocated: the declared size against the
  // allowed one (above) and against the ratio (a bomb within the size limit
  // is a few KiB declaring hundreds of MiB), then the frame's own content
  // size against the declared one, and the output buffer is exactly that
  // size: zstd stops as soon as the frame would write past its end.
  if (record_size / k_max_value_ratio > field->size())
    return corrupt(fmt::format("declares a record of {} bytes in {} compressed bytes, more than {} times as many",
                               record_size, field->size(), k_max_value_ratio));
  if (ZSTD_findFrameCompressedSize(field->data(), field->size()) != field->size())
    return corrupt("the compressed record is not exactly one zstd frame");
  auto content = ZSTD_getFrameContentSize(field->data(), field->size());
  if (content != record_size)
    return corrupt(fmt::format("the compressed record's frame does not declare the record's {} bytes", record_size));
  parts.record.resize(record_size);
  std::size_t n = ZSTD_decompress(parts.record.data(), parts.record.size(), field->data(), field->size());
  if (ZSTD_isError(n))
    return corrupt(fmt::format("the compressed record does not decompress: {}", ZSTD_getErrorName(n)));
  if (n != record_size) return corrupt(fmt::format("the compressed record holds {} bytes, not {}", n, record_size));
  return parts;
}

Result<bundle::KeyId> verify_value(const ValueParts& parts, std::span<const bundle::PublicKey> trusted) {
  if (!parts.signature) return corrupt("unsigned, and only values signed by a trusted key are accepted (--trust)");
  bool known = false;
  for (const auto& k : trusted) known = known || k == parts.signature->key;
  auto id = bundle::key_id(parts.signature->key);
  if (!known) {
    std::string ids;
    for (const auto& k : trusted) ids += (ids.empty() ? "" : ", ") + bundle::key_id(k).hex();
    return corrupt(fmt::format("signed by key {}, which is not trusted (trusted: {})", id.hex(), ids));
  }
  if (!bundle::verify_detached(signed_bytes(parts.version, parts.ns, parts.record), parts.signature->signature,
                               parts.signature->key))
    return corrupt(
        fmt::format("the signature by key {} does not verify: the value was changed after signing", id.hex()));
  return id;
}

std::string value_key(std::string_view prefix, std::string_view ns_name, const Key& key) {
  const char* sep = prefix.empty() || prefix.ends_with('/') ? "" : "/";
  return fmt::format("{}{}kcache1/{}/{}-{}", prefix, sep, ns_name, key.id.hex(), key.ir.hex());
}

std::string value_direct_key(std::string_view prefix, std::string_view ns_name, const Hash128& direct) {
  const char* sep = prefix.empty() || prefix.ends_with('/') ? "" : "/";
  return fmt::format("{}{}kcache1-direct/{}/{}", prefix, sep, ns_name, direct.hex());
}

}  // namespace kcache::remote
