// Format version 2's record transform (FORMAT.md "Record transform"): a
// size-preserving rearrangement of one entry record, plus a 14-byte prefix,
// that zstd compresses far better than the record itself. SPIR-V is a stream
// of 32-bit words whose high bytes are mostly zero and whose instruction
// head words (word count << 16 | opcode) repeat; separating head words from
// operands and each from its byte planes turns those into long runs and
// repeats that zstd's match finder sees. Digests the reader can recompute
// and the key the index already holds are zeroed (not removed, so every size
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
#include <cstring>
#include <optional>

namespace kcache::bundle::internal {
namespace {

constexpr std::uint8_t k_form_verbatim = 0;
constexpr std::uint8_t k_form_split = 1;
constexpr std::uint8_t k_elide_key = 1u << 0;
constexpr std::uint8_t k_elide_payload_digest = 1u << 1;
constexpr std::uint8_t k_elide_record_digest = 1u << 2;
constexpr std::uint32_t k_spirv_magic = 0x07230203;
constexpr std::size_t k_spirv_header_words = 5;
constexpr std::size_t k_hash_size = 16;
constexpr std::size_t k_key_size = 32;

std::uint32_t load32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24;
}
void store32(std::uint8_t* p, std::uint32_t v) {
  for (int b = 0; b < 4; ++b) p[b] = static_cast<std::uint8_t>(v >> (8 * b));
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

/// Writes `count` words, taken by `word(i)`, as 4 byte planes at `out`.
template <typename Word>
std::uint8_t* put_planes(std::uint8_t* out, std::size_t count, Word word) {
  for (int b = 0; b < 4; ++b)
    for (std::size_t i = 0; i < count; ++i) *out++ = static_cast<std::uint8_t>(word(i) >> (8 * b));
  return out;
}

std::uint32_t plane_word(const std::uint8_t* planes, std::size_t count, std::size_t i) {
  return std::uint32_t{planes[i]} | std::uint32_t{planes[count + i]} << 8 | std::uint32_t{planes[2 * count + i]} << 16 |
         std::uint32_t{planes[3 * count + i]} << 24;
}

tl::unexpected<Error> bad(std::string_view what) {
  return tl::unexpected(Error{Category::corruption, fmt::format("record transform is corrupt: {}", what)});
}

}  // namespace

void transform_record(std::span<const std::uint8_t> record, const IndexEntry& e,
                      std::span<const std::uint8_t> payload, std::span<std::uint8_t> out) {
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
  // to the operand stream.
  const std::size_t words = psize / 4;
  std::vector<std::uint32_t> heads, operands;
  if (e.payload_kind == PayloadKind::spirv && words >= k_spirv_header_words && load32(payload.data()) == k_spirv_magic) {
    heads.reserve(words / 3);
    operands.reserve(words);
    std::size_t w = 0;
    for (; w < k_spirv_header_words; ++w) operands.push_back(load32(payload.data() + 4 * w));
    while (w < words) {
      const std::uint32_t head = load32(payload.data() + 4 * w);
      const std::size_t count = head >> 16;
      if (count == 0 || count > words - w) break;
      heads.push_back(head);
      for (std::size_t q = 1; q < count; ++q) operands.push_back(load32(payload.data() + 4 * (w + q)));
      w += count;
    }
    for (; w < words; ++w) operands.push_back(load32(payload.data() + 4 * w));
  } else {
    operands.reserve(words);
    for (std::size_t w = 0; w < words; ++w) operands.push_back(load32(payload.data() + 4 * w));
  }

  std::uint8_t* o = out.data();
  o[0] = k_form_split;
  o[1] = elide;
  store32(o + 2, static_cast<std::uint32_t>(key_at));
  store32(o + 6, static_cast<std::uint32_t>(poff));
  store32(o + 10, static_cast<std::uint32_t>(heads.size()));
  o += k_transform_prefix;
  std::memcpy(o, record.data(), poff);
  if (elide & k_elide_key) std::fill(o + key_at, o + key_at + k_key_size, 0);
  o += poff;
  std::memcpy(o, record.data() + tail, size - tail);
  if (elide & k_elide_payload_digest) std::fill(o, o + k_hash_size, 0);
  if (elide & k_elide_record_digest) std::fill(o + (size - tail) - k_hash_size, o + (size - tail), 0);
  o += size - tail;
  o = put_planes(o, heads.size(), [&](std::size_t i) { return heads[i]; });
  o = put_planes(o, operands.size(), [&](std::size_t i) { return operands[i]; });
  std::memcpy(o, payload.data() + 4 * words, psize % 4);
}

Result<void> restore_record(std::span<const std::uint8_t> in, const IndexEntry& e, std::span<std::uint8_t> record) {
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
  if (form != k_form_split) return bad(fmt::format("unknown form {}", form));
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
  const std::uint64_t digests_need = ((elide & k_elide_payload_digest) ? k_hash_size : 0) +
                                     ((elide & k_elide_record_digest) ? k_hash_size : 0);
  if (tail + digests_need > size) return bad("the digests lie outside the record");
  const std::uint64_t words = psize / 4;
  if (n_heads > words) return bad("more instruction words than payload words");

  const std::uint8_t* meta = p + k_transform_prefix;
  std::uint8_t* r = record.data();
  std::memcpy(r, meta, poff);
  std::memcpy(r + tail, meta + poff, size - tail);
  auto zero = [](const std::uint8_t* at, std::size_t n) { return std::all_of(at, at + n, [](auto b) { return b == 0; }); };
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
  auto operand = [&]() { return plane_word(operands, n_operands, next_operand++); };
  if (n_heads > 0) {
    if (n_operands < k_spirv_header_words) return bad("instruction words without a module header");
    for (; w < k_spirv_header_words; ++w) store32(out + 4 * w, operand());
    for (std::uint64_t k = 0; k < n_heads; ++k) {
      const std::uint32_t head = plane_word(heads, n_heads, k);
      const std::uint64_t count = head >> 16;
      if (count == 0 || count > words - w || count - 1 > n_operands - next_operand)
        return bad(fmt::format("instruction {} has a bad word count", k + 1));
      store32(out + 4 * w++, head);
      for (std::uint64_t q = 1; q < count; ++q) store32(out + 4 * w++, operand());
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
