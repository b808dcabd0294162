// The entry record: one compiled kernel with the metadata that explains it.
// The same encoding is the LMDB value in a store and the entry record inside
// a bundle, so the bundle module speaks records and knows nothing of LMDB.
//
// Entry record format, version 1 (all integers little-endian; str = u32
// length + UTF-8 bytes; h128 = 16 raw bytes):
//
//   field            type         meaning
//   magic            4 bytes      "KCE\x01"
//   version          u16          record format version (1)
//   kernel           str          kernel name, variant suffix included
//   key.id           h128         identity hash (kcache::definition key)
//   key.ir           h128         content hash (expanded source + toolchain)
//   n_id_fields      u32          then n × (str name, str value): what `id` hashed
//   n_ir_fields      u32          then n × (str name, str value): what `ir` hashed
//   n_inputs         u32          then n × (str path, h128 content hash);
//                                 paths relative to the manifest's folder
//   payload_kind     u8           1 = SPIR-V module, 2 = VkPipelineCache blob
//   payload          u32 + bytes  the artifact
//   payload_digest   h128         XXH3-128 of payload
//   created          u64          unix seconds when compiled
//   origin_kind      u8           1 = built here, 2 = imported
//   origin_detail    str          host/tool that built it, or the bundle imported from
//   record_digest    h128         XXH3-128 of every byte above
//
// Persisted enum values (payload_kind, origin_kind) are append-only. A new
// field is appended before record_digest and bumps the version; readers accept
// versions k_entry_min_version..k_entry_max_version.
#pragma once

#include "kcache/util/bytes.hpp"

#include "kcache/util/error.hpp"
#include "kcache/util/hash.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace kcache {

using util::Hash128;

/// The two halves of a cache key (docs/design.md "Keys").
struct Key {
  Hash128 id;  ///< what identifies the kernel: name, variant values, options
  Hash128 ir;  ///< what it is made of: expanded source, toolchain
  auto operator<=>(const Key&) const = default;
};

/// A file a definition read, with its content hash.
struct InputFile {
  std::string path;  ///< relative to the manifest's folder, '/'-separated
  Hash128 hash;
  bool operator==(const InputFile&) const = default;
};

/// A (name, value) pair recorded for explaining keys.
using Field = std::pair<std::string, std::string>;

/// Appends a field list as every kcache record encodes one (entry records,
/// namespace records, bundle heads): u32 count, then (str name, str value).
void put_fields(util::ByteWriter& w, const std::vector<Field>& fields);
/// Reads a list put_fields wrote; false when truncated, or over `max_fields`
/// fields or `max_string` bytes in a string (checked before allocating).
bool get_fields(util::ByteReader& r, std::vector<Field>& out, std::uint32_t max_fields, std::size_t max_string);

enum class PayloadKind : std::uint8_t { spirv = 1, pipeline_cache = 2 };
enum class OriginKind : std::uint8_t { built = 1, imported = 2 };

/// A compiled kernel with its metadata.
struct Entry {
  std::string kernel;
  Key key;
  std::vector<Field> id_fields;
  std::vector<Field> ir_fields;
  std::vector<InputFile> inputs;
  PayloadKind payload_kind = PayloadKind::spirv;
  std::vector<std::uint8_t> payload;
  Hash128 payload_digest;
  std::uint64_t created = 0;
  OriginKind origin_kind = OriginKind::built;
  std::string origin_detail;

  bool operator==(const Entry&) const = default;
};

inline constexpr std::uint16_t k_entry_min_version = 1;
inline constexpr std::uint16_t k_entry_max_version = 1;
/// Upper bound on a decoded payload (a single module or blob), as a defence
/// against hostile records.
inline constexpr std::size_t k_max_payload_bytes = 256u << 20;

/// Encodes an entry in the current record version (computes both digests).
std::vector<std::uint8_t> encode_entry(const Entry& entry);

/// Decodes and checks a record from untrusted bytes: corruption for a bad
/// magic, truncation, trailing bytes, oversized fields or a digest mismatch;
/// version_mismatch for a version outside the supported range.
Result<Entry> decode_entry(std::span<const std::uint8_t> bytes);

/// Sets `payload_digest` from `payload`.
void seal_payload(Entry& entry);

}  // namespace kcache
