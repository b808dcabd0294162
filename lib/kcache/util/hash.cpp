#include "kcache/util/hash.hpp"

#include "kcache/util/hash_xxh3_avx2.hpp"
#include "kcache/util/text.hpp"

#include <xxhash.h>

#include <cstring>

namespace kcache::util {
namespace {

Hash128 from_xxh(XXH128_hash_t h) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, h);
  Hash128 out;
  std::memcpy(out.bytes.data(), canonical.digest, 16);
  return out;
}

}  // namespace

std::string Hash128::hex() const { return to_hex(bytes); }

std::optional<Hash128> Hash128::from_hex(std::string_view text) {
  Hash128 out;
  if (!util::from_hex(text, out.bytes)) return std::nullopt;
  return out;
}

namespace {

/// One-shot XXH3-128: on AVX2 where the CPU has it (the bundle reader hashes
/// every record and payload twice, about a tenth of its CPU on SSE2), else
/// the library's own. Both give the same value.
Hash128 xxh3_128(const void* data, std::size_t size) {
#ifdef KCACHE_XXH3_AVX2
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) {
    Hash128 out;
    unsigned char canonical[16];
    internal::xxh3_128_avx2(data, size, canonical);
    std::memcpy(out.bytes.data(), canonical, 16);
    return out;
  }
#endif
  return from_xxh(XXH3_128bits(data, size));
}

}  // namespace

Hash128 hash_bytes(std::span<const std::uint8_t> data) { return xxh3_128(data.data(), data.size()); }

Hash128 hash_string(std::string_view text) { return xxh3_128(text.data(), text.size()); }

Hash128 hash_bytes_baseline(std::span<const std::uint8_t> data) {
  return from_xxh(XXH3_128bits(data.data(), data.size()));
}

Hasher::Hasher(bool keep_dump) : m_state(XXH3_createState()), m_keep_dump(keep_dump) {
  XXH3_128bits_reset(static_cast<XXH3_state_t*>(m_state));
}

Hasher::~Hasher() { XXH3_freeState(static_cast<XXH3_state_t*>(m_state)); }

void Hasher::update(const void* data, std::size_t size) {
  XXH3_128bits_update(static_cast<XXH3_state_t*>(m_state), data, size);
}

void Hasher::field(std::string_view tag, std::string_view value) {
  // Encoding: tag bytes, 0x00, 8-byte little-endian length, value bytes.
  // The length prefix makes the encoding prefix-free whatever the value holds.
  update(tag.data(), tag.size());
  const std::uint8_t zero = 0;
  update(&zero, 1);
  std::uint8_t len[8];
  std::uint64_t n = value.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<std::uint8_t>(n >> (8 * i));
  update(len, sizeof len);
  update(value.data(), value.size());
  if (m_keep_dump) {
    m_dump.append(tag).append("=");
    if (value.size() > 200 || value.find('\n') != std::string_view::npos) {
      m_dump.append("<")
          .append(std::to_string(value.size()))
          .append(" bytes, xxh3 ")
          .append(hash_string(value).hex())
          .append(">");
    } else {
      m_dump.append(value);
    }
    m_dump.append("\n");
  }
}

void Hasher::field(std::string_view tag, const Hash128& value) { field(tag, value.hex()); }

Hash128 Hasher::finish() { return from_xxh(XXH3_128bits_digest(static_cast<XXH3_state_t*>(m_state))); }

}  // namespace kcache::util
