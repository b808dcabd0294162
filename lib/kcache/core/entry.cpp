#include "kcache/core/entry.hpp"

#include "kcache/util/bytes.hpp"

#include <cstring>

namespace kcache {
namespace {

constexpr std::uint8_t k_magic[4] = {'K', 'C', 'E', 1};
// Caps for counts and strings: generous for real kernels, small enough that a
// hostile record cannot make the decoder allocate much.
constexpr std::uint32_t k_max_fields = 4096;
constexpr std::size_t k_max_string = 64 << 10;

void put_hash(util::ByteWriter& w, const Hash128& h) { w.raw(h.bytes); }

std::optional<Hash128> get_hash(util::ByteReader& r) {
  auto bytes = r.raw(16);
  if (!bytes) return std::nullopt;
  Hash128 h;
  std::memcpy(h.bytes.data(), bytes->data(), 16);
  return h;
}

tl::unexpected<Error> corrupt(std::string_view what) {
  return fail(Category::corruption, "entry record is corrupt: {}", what);
}

}  // namespace

void put_fields(util::ByteWriter& w, const std::vector<Field>& fields) {
  w.u32(static_cast<std::uint32_t>(fields.size()));
  for (const auto& [k, v] : fields) {
    w.str(k);
    w.str(v);
  }
}

bool get_fields(util::ByteReader& r, std::vector<Field>& out, std::uint32_t max_fields, std::size_t max_string) {
  auto n = r.u32();
  // Each field takes at least 8 bytes (two empty strings), so a count the
  // remaining bytes cannot hold is refused before anything is reserved.
  if (!n || *n > max_fields || std::uint64_t{*n} * 8 > r.remaining()) return false;
  out.reserve(*n);
  for (std::uint32_t i = 0; i < *n; ++i) {
    auto k = r.str(max_string);
    auto v = r.str(max_string);
    if (!k || !v) return false;
    out.emplace_back(std::move(*k), std::move(*v));
  }
  return true;
}

void seal_payload(Entry& entry) { entry.payload_digest = util::hash_bytes(entry.payload); }

std::vector<std::uint8_t> encode_entry(const Entry& entry) {
  util::ByteWriter w;
  w.raw(k_magic);
  w.u16(k_entry_max_version);
  w.str(entry.kernel);
  put_hash(w, entry.key.id);
  put_hash(w, entry.key.ir);
  put_fields(w, entry.id_fields);
  put_fields(w, entry.ir_fields);
  w.u32(static_cast<std::uint32_t>(entry.inputs.size()));
  for (const auto& in : entry.inputs) {
    w.str(in.path);
    put_hash(w, in.hash);
  }
  w.u8(static_cast<std::uint8_t>(entry.payload_kind));
  w.blob(entry.payload);
  put_hash(w, util::hash_bytes(entry.payload));
  w.u64(entry.created);
  w.u8(static_cast<std::uint8_t>(entry.origin_kind));
  w.str(entry.origin_detail);
  put_hash(w, util::hash_bytes(w.bytes()));
  return w.take();
}

Result<Entry> decode_entry(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < 4 + 2 + 16) return corrupt("shorter than its fixed fields");
  if (std::memcmp(bytes.data(), k_magic, 4) != 0) return corrupt("bad magic");
  util::ByteReader r(bytes.first(bytes.size() - 16));
  r.raw(4);
  auto version = r.u16();
  if (*version < k_entry_min_version || *version > k_entry_max_version)
    return fail(Category::version_mismatch, "entry record version {} is outside the supported range {}..{}", *version,
                k_entry_min_version, k_entry_max_version);
  Hash128 stored;
  std::memcpy(stored.bytes.data(), bytes.data() + bytes.size() - 16, 16);
  if (util::hash_bytes(bytes.first(bytes.size() - 16)) != stored) return corrupt("record digest mismatch");

  Entry e;
  auto kernel = r.str(k_max_string);
  auto id = get_hash(r);
  auto ir = get_hash(r);
  if (!kernel || !id || !ir) return corrupt("truncated key");
  e.kernel = std::move(*kernel);
  e.key = {*id, *ir};
  if (!get_fields(r, e.id_fields, k_max_fields, k_max_string) ||
      !get_fields(r, e.ir_fields, k_max_fields, k_max_string))
    return corrupt("bad field list");
  auto n_inputs = r.u32();
  if (!n_inputs || *n_inputs > k_max_fields) return corrupt("bad input list");
  for (std::uint32_t i = 0; i < *n_inputs; ++i) {
    auto path = r.str(k_max_string);
    auto hash = get_hash(r);
    if (!path || !hash) return corrupt("truncated input list");
    e.inputs.push_back({std::move(*path), *hash});
  }
  auto kind = r.u8();
  if (!kind || (*kind != 1 && *kind != 2)) return corrupt("unknown payload kind");
  e.payload_kind = static_cast<PayloadKind>(*kind);
  auto payload = r.blob(k_max_payload_bytes);
  auto digest = get_hash(r);
  auto created = r.u64();
  auto origin = r.u8();
  auto detail = r.str(k_max_string);
  if (!payload || !digest || !created || !origin || !detail) return corrupt("truncated");
  if (*origin != 1 && *origin != 2) return corrupt("unknown origin kind");
  if (r.remaining() != 0) return corrupt("trailing bytes");
  e.payload.assign(payload->begin(), payload->end());
  e.payload_digest = *digest;
  if (util::hash_bytes(e.payload) != e.payload_digest) return corrupt("payload digest mismatch");
  e.created = *created;
  e.origin_kind = static_cast<OriginKind>(*origin);
  e.origin_detail = std::move(*detail);
  return e;
}

}  // namespace kcache
