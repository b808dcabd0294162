// Format versions 2 and 3's record transform (FORMAT.md "Record
// transform"): a size-preserving rearrangement of one entry record, plus a
// 14-byte prefix, that zstd compresses far better than the record itself.
// SPIR-V is a stream of 32-bit words whose high bytes are mostly zero and
// whose instruction head words (word count << 16 | opcode) repeat;
// separating head words from operands and each from its byte planes turns
// those into long runs and repeats that zstd's match finder sees. Version 3
// also codes each operand as the difference from the same operand of the
// previous instruction with the same opcode (ids mostly grow by small steps,
// types and pointers repeat), so nearly every operand becomes a small number
// whose high planes are zero: a fast zstd level then beats zstd -19 on the
// raw modules (FORMAT.md "Choices"). Digests the reader can recompute and
// the key the index already holds are zeroed (not removed, so every size
// stays known from the index).
//
// The writer never relies on the record layout: it finds the payload and
// the key by search and zeroes a digest only after checking that it is the
// value the reader will recompute. Whatever the reader rebuilds is checked
// against the index digest (BLAKE2b) afterwards, so the transform can cost
// ratio, never correctness.
#include "kcache/bundle/bundle_internal.hpp"
#include "kcache/util/hash.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <optional>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kcache::bundle::internal {
namespace {

constexpr std::uint8_t k_form_verbatim = 0;
constexpr std::uint8_t k_form_split = 1;
constexpr std::uint8_t k_form_delta = 2;  // version 3
constexpr std::uint8_t k_elide_key = 1u << 0;
constexpr std::uint8_t k_elide_payload_digest = 1u << 1;
constexpr std::uint8_t k_elide_record_digest = 1u << 2;
constexpr std::uint32_t k_spirv_magic = 0x07230203;
constexpr std::size_t k_spirv_header_words = 5;
constexpr std::size_t k_hash_size = 16;
constexpr std::size_t k_key_size = 32;
/// Operand contexts of the delta form: (opcode mod 512) x (operand index,
/// capped at 7). 16 KiB of state, reset per record.
constexpr std::size_t k_delta_opcodes = 512;
constexpr std::size_t k_delta_positions = 8;
using DeltaState = std::array<std::uint32_t, k_delta_opcodes * k_delta_positions>;

std::size_t delta_context(std::uint32_t head, std::size_t operand) {
  return (head & 0xffffu) % k_delta_opcodes * k_delta_positions + std::min(operand, k_delta_positions - 1);
}
/// Small differences of either sign become small unsigned numbers.
std::uint32_t zigzag(std::uint32_t d) { return d << 1 ^ (0u - (d >> 31)); }
std::uint32_t unzigzag(std::uint32_t z) { return z >> 1 ^ (0u - (z & 1)); }

std::uint32_t load32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24;
}
void store32(std::uint8_t* p, std::uint32_t v) {
  // One 4-byte store where the host is little-endian: the byte loop was not
  // merged by the compiler and was the restore loop's largest cost.
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(p, &v, 4);
  } else {
    for (int b = 0; b < 4; ++b) p[b] = static_cast<std::uint8_t>(v >> (8 * b));
  }
}

/// Offset of `payload` inside `record`: the first place where it follows its
/// own u32 length (how every record version stores it). nullopt if absent.
std::optional<std::size_t> find_payload(std::span<const std::uint8_t> record, std::span<const std::uint8_t> payload) {
  const std::size_t n = payload.size();
  if (n == 0 || record.size() < n + 4) return std::nullopt;
  for (std::size_t off = 4; off + n <= record.size(); ++off)
    if (load32(record.data() + off - 4) == n && std::memcmp(record.data() + off, payload.data(), n) == 0) return off;
  return std::nullopt;
}

/// Stores word `i` of `count` words kept as 4 byte planes at `planes`
/// (byte 0 of every word, then byte 1, ...).
void put_plane_word(std::uint8_t* planes, std::size_t count, std::size_t i, std::uint32_t v) {
  planes[i] = static_cast<std::uint8_t>(v);
  planes[count + i] = static_cast<std::uint8_t>(v >> 8);
  planes[2 * count + i] = static_cast<std::uint8_t>(v >> 16);
  planes[3 * count + i] = static_cast<std::uint8_t>(v >> 24);
}

std::uint32_t plane_word(const std::uint8_t* planes, std::size_t count, std::size_t i) {
  return std::uint32_t{planes[i]} | std::uint32_t{planes[count + i]} << 8 | std::uint32_t{planes[2 * count + i]} << 16 |
         std::uint32_t{planes[3 * count + i]} << 24;
}

/// Words 0..count-1 of `count` words kept as 4 byte planes (put_plane_word)
/// into `dst`.
void gather_planes(const std::uint8_t* planes, std::size_t count, std::uint32_t* dst) {
  const std::uint8_t* b0 = planes;
  const std::uint8_t* b1 = b0 + count;
  const std::uint8_t* b2 = b1 + count;
  const std::uint8_t* b3 = b2 + count;
  std::size_t i = 0;
#if defined(__SSE2__)
  // 16 words at a time: interleave the planes' bytes (b0 b1 -> 16-bit
  // halves, b2 b3 -> 16-bit halves, then the halves into words). -O2 left
  // the scalar loop below byte by byte, the largest part of a restore.
  for (; i + 16 <= count; i += 16) {
    const __m128i p0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + i));
    const __m128i p1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b1 + i));
    const __m128i p2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b2 + i));
    const __m128i p3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b3 + i));
    const __m128i lo01 = _mm_unpacklo_epi8(p0, p1), hi01 = _mm_unpackhi_epi8(p0, p1);
    const __m128i lo23 = _mm_unpacklo_epi8(p2, p3), hi23 = _mm_unpackhi_epi8(p2, p3);
    auto* out = reinterpret_cast<__m128i*>(dst + i);
    _mm_storeu_si128(out + 0, _mm_unpacklo_epi16(lo01, lo23));
    _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(lo01, lo23));
    _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(hi01, hi23));
    _mm_storeu_si128(out + 3, _mm_unpackhi_epi16(hi01, hi23));
  }
#endif
  for (; i < count; ++i) dst[i] = plane_word(planes, count, i);
}

tl::unexpected<Error> bad(std::string_view what) {
  return tl::unexpected(Error{Category::corruption, fmt::format("record transform is corrupt: {}", what)});
}

}  // namespace

void transform_record(std::span<const std::uint8_t> record, const IndexEntry& e, std::span<const std::uint8_t> payload,
                      std::span<std::uint8_t> out, std::uint16_t format_version) {
  std::fill(out.begin(), out.begin() + k_transform_prefix, 0);
  auto payload_at = find_payload(record, payload);
  if (!payload_at) {
    out[0] = k_form_verbatim;
    std::memcpy(out.data() + k_transform_prefix, record.data(), record.size());
    return;
  }
  const std::size_t poff = *payload_at, psize = payload.size(), size = record.size();
  std::uint8_t elide = 0;
  std::size_t key_at = 0;
  std::array<std::uint8_t, k_key_size> key;
  std::memcpy(key.data(), e.key.id.bytes.data(), 16);
  std::memcpy(key.data() + 16, e.key.ir.bytes.data(), 16);
  if (auto it = std::search(record.begin(), record.begin() + poff, key.begin(), key.end());
      it != record.begin() + poff) {
    elide |= k_elide_key;
    key_at = static_cast<std::size_t>(it - record.begin());
  }
  const std::size_t tail = poff + psize;  // first byte after the payload
  const std::size_t last = size - k_hash_size;
  if (tail + k_hash_size <= last &&
      std::memcmp(record.data() + tail, util::hash_bytes(payload).bytes.data(), k_hash_size) == 0)
    elide |= k_elide_payload_digest;
  if (std::memcmp(record.data() + last, util::hash_bytes(record.first(last)).bytes.data(), k_hash_size) == 0)
    elide |= k_elide_record_digest;

  // Instruction head words go to their own stream; everything else
  // (the 5-word header, operands, anything after a malformed instruction)
  // to the operand stream, in version 3 each instruction operand as its
  // difference from the last one in its context. A first walk finds where
  // the well-formed instructions end, so that both streams' planes are
  // written in place in one pass.
  const std::size_t words = psize / 4;
  const std::uint8_t* p = payload.data();
  std::size_t n_heads = 0, end = 0;
  if (e.payload_kind == PayloadKind::spirv && words >= k_spirv_header_words && load32(p) == k_spirv_magic) {
    end = k_spirv_header_words;
    while (end < words) {
      const std::size_t count = load32(p + 4 * end) >> 16;
      if (count == 0 || count > words - end) break;
      ++n_heads;
      end += count;
    }
  }
  const bool delta = traits(format_version).delta_records && n_heads > 0;

  std::uint8_t* o = out.data();
  o[0] = delta ? k_form_delta : k_form_split;
  o[1] = elide;
  store32(o + 2, static_cast<std::uint32_t>(key_at));
  store32(o + 6, static_cast<std::uint32_t>(poff));
  store32(o + 10, static_cast<std::uint32_t>(n_heads));
  o += k_transform_prefix;
  std::memcpy(o, record.data(), poff);
  if (elide & k_elide_key) std::fill(o + key_at, o + key_at + k_key_size, 0);
  o += poff;
  std::memcpy(o, record.data() + tail, size - tail);
  if (elide & k_elide_payload_digest) std::fill(o, o + k_hash_size, 0);
  if (elide & k_elide_record_digest) std::fill(o + (size - tail) - k_hash_size, o + (size - tail), 0);
  o += size - tail;

  const std::size_t n_operands = words - n_heads;
  std::uint8_t* const head_planes = o;
  std::uint8_t* const operand_planes = o + 4 * n_heads;
  std::size_t h = 0, k = 0, w = 0;
  if (n_heads > 0) {
    for (; w < k_spirv_header_words; ++w) put_plane_word(operand_planes, n_operands, k++, load32(p + 4 * w));
    DeltaState last{};
    while (w < end) {
      const std::uint32_t head = load32(p + 4 * w);
      const std::size_t count = head >> 16;
      put_plane_word(head_planes, n_heads, h++, head);
      for (std::size_t q = 0; q + 1 < count; ++q) {
        std::uint32_t v = load32(p + 4 * (w + 1 + q));
        if (delta) {
          std::uint32_t& prev = last[delta_context(head, q)];
          const std::uint32_t d = zigzag(v - prev);
          prev = v;
          v = d;
        }
        put_plane_word(operand_planes, n_operands, k++, v);
      }
      w += count;
    }
  }
  for (; w < words; ++w) put_plane_word(operand_planes, n_operands, k++, load32(p + 4 * w));
  std::memcpy(operand_planes + 4 * n_operands, p + 4 * words, psize % 4);
}

Result<void> restore_record(std::span<const std::uint8_t> in, const IndexEntry& e, std::span<std::uint8_t> record,
                            std::uint16_t format_version) {
  const std::size_t size = record.size();
  if (in.size() != size + k_transform_prefix || size != e.record_size) return bad("size differs from the index");
  const std::uint8_t* p = in.data();
  const std::uint8_t form = p[0];
  if (form == k_form_verbatim) {
    if (std::any_of(p + 1, p + k_transform_prefix, [](std::uint8_t b) { return b != 0; }))
      return bad("a verbatim record's prefix is not zero");
    std::memcpy(record.data(), p + k_transform_prefix, size);
    return {};
  }
  if (form != k_form_split && !(form == k_form_delta && traits(format_version).delta_records))
    return bad(fmt::format("unknown form {} for format version {}", form, format_version));
  const bool delta = form == k_form_delta;
  const std::uint8_t elide = p[1];
  const std::uint64_t key_at = load32(p + 2), poff = load32(p + 6), n_heads = load32(p + 10);
  const std::uint64_t psize = e.payload_size;
  if ((elide & ~(k_elide_key | k_elide_payload_digest | k_elide_record_digest)) != 0)
    return bad(fmt::format("unknown flags 0x{:02x}", elide));
  // Every region must lie inside the record, in order: key < payload <
  // payload digest <= record digest.
  if (size < k_hash_size || poff + psize > size) return bad("the payload lies outside the record");
  const std::uint64_t tail = poff + psize;
  if ((elide & k_elide_key) ? key_at + k_key_size > poff : key_at != 0) return bad("bad key offset");
  const std::uint64_t digests_need =
      ((elide & k_elide_payload_digest) ? k_hash_size : 0) + ((elide & k_elide_record_digest) ? k_hash_size : 0);
  if (tail + digests_need > size) return bad("the digests lie outside the record");
  const std::uint64_t words = psize / 4;
  if (n_heads > words) return bad("more instruction words than payload words");

  const std::uint8_t* meta = p + k_transform_prefix;
  std::uint8_t* r = record.data();
  std::memcpy(r, meta, poff);
  std::memcpy(r + tail, meta + poff, size - tail);
  auto zero = [](const std::uint8_t* at, std::size_t n) {
    return std::all_of(at, at + n, [](auto b) { return b == 0; });
  };
  if ((elide & k_elide_key) && !zero(r + key_at, k_key_size)) return bad("an elided key is not zero");
  if ((elide & k_elide_payload_digest) && !zero(r + tail, k_hash_size)) return bad("an elided digest is not zero");
  if ((elide & k_elide_record_digest) && !zero(r + size - k_hash_size, k_hash_size))
    return bad("an elided digest is not zero");

  // Rebuild the payload: header words from the operands, then each head
  // word followed by its operands, then the remaining operands.
  const std::uint8_t* heads = meta + (size - psize);
  const std::uint64_t n_operands = words - n_heads;
  const std::uint8_t* operands = heads + 4 * n_heads;
  std::uint8_t* out = r + poff;
  std::uint64_t w = 0, next_operand = 0;
  // The planes gathered into words first, in sequential passes: the walk
  // below then reads one word per operand and per head (about a quarter of
  // the reader's CPU before this).
  // Kept per thread up to k_kept_words, so that small records reuse them;
  // a larger payload gets buffers of its own, freed on return, so that one
  // large record does not hold its size for the rest of the read.
  constexpr std::uint64_t k_kept_words = 256u << 10;
  thread_local std::vector<std::uint32_t> kept_operands, kept_heads;
  std::vector<std::uint32_t> own_operands, own_heads;
  auto& operand_words = n_operands <= k_kept_words ? kept_operands : own_operands;
  auto& head_words = n_heads <= k_kept_words ? kept_heads : own_heads;
  if (operand_words.size() < n_operands) operand_words.resize(static_cast<std::size_t>(n_operands));
  if (head_words.size() < n_heads) head_words.resize(static_cast<std::size_t>(n_heads));
  gather_planes(operands, static_cast<std::size_t>(n_operands), operand_words.data());
  gather_planes(heads, static_cast<std::size_t>(n_heads), head_words.data());
  const std::uint32_t* operand_at = operand_words.data();
  auto operand = [&]() { return operand_at[next_operand++]; };
  if (n_heads > 0) {
    if (n_operands < k_spirv_header_words) return bad("instruction words without a module header");
    for (; w < k_spirv_header_words; ++w) store32(out + 4 * w, operand());
    DeltaState last{};
    for (std::uint64_t k = 0; k < n_heads; ++k) {
      const std::uint32_t head = head_words[k];
      const std::uint64_t count = head >> 16;
      if (count == 0 || count > words - w || count - 1 > n_operands - next_operand)
        return bad(fmt::format("instruction {} has a bad word count", k + 1));
      store32(out + 4 * w++, head);
      if (delta) {
        // delta_context(head, q) row by row: operands 0..6 each have their
        // own slot, every later one shares slot 7 (a running sum).
        std::uint32_t* row = &last[delta_context(head, 0)];
        const std::uint32_t* src = operand_at + next_operand;
        std::uint8_t* dst = out + 4 * w;
        const std::size_t operands = static_cast<std::size_t>(count - 1);
        const std::size_t own = std::min(operands, k_delta_positions - 1);
        std::size_t q = 0;
        for (; q < own; ++q) {
          row[q] += unzigzag(src[q]);
          store32(dst + 4 * q, row[q]);
        }
        if (q < operands) {
          std::uint32_t shared = row[k_delta_positions - 1];
          for (; q < operands; ++q) {
            shared += unzigzag(src[q]);
            store32(dst + 4 * q, shared);
          }
          row[k_delta_positions - 1] = shared;
        }
        next_operand += operands;
        w += operands;
      } else {
        for (std::uint64_t q = 1; q < count; ++q) store32(out + 4 * w++, operand());
      }
    }
  }
  if (words - w != n_operands - next_operand) return bad("instruction and operand words do not add up");
  while (w < words) store32(out + 4 * w++, operand());
  std::memcpy(out + 4 * words, operands + 4 * n_operands, psize % 4);

  if (elide & k_elide_key) {
    std::memcpy(r + key_at, e.key.id.bytes.data(), 16);
    std::memcpy(r + key_at + 16, e.key.ir.bytes.data(), 16);
  }
  if (elide & k_elide_payload_digest) {
    auto h = util::hash_bytes({r + poff, static_cast<std::size_t>(psize)});
    std::memcpy(r + tail, h.bytes.data(), k_hash_size);
  }
  if (elide & k_elide_record_digest) {
    auto h = util::hash_bytes({r, size - k_hash_size});
    std::memcpy(r + size - k_hash_size, h.bytes.data(), k_hash_size);
  }
  return {};
}

}  // namespace kcache::bundle::internal
