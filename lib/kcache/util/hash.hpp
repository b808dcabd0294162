// Hashing for keys, input files and entry digests.
//
// XXH3-128 is used for everything that stays inside kcache's own trust
// boundary (keys, input-file hashes, store entry digests): it is fast enough
// that the warm path can hash every input file. Anything that crosses
// machines is additionally protected by a cryptographic digest in the bundle
// module. Thread-safety: a Hasher is single-threaded; the free functions are
// pure.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kcache::util {

/// A 128-bit hash value; compared and printed as 32 lowercase hex digits.
struct Hash128 {
  std::array<std::uint8_t, 16> bytes{};

  auto operator<=>(const Hash128&) const = default;
  /// 32 lowercase hex digits.
  std::string hex() const;
  /// Parses 32 hex digits; nullopt on anything else.
  static std::optional<Hash128> from_hex(std::string_view text);
};

/// XXH3-128 of a byte range.
Hash128 hash_bytes(std::span<const std::uint8_t> data);
/// XXH3-128 of a string's bytes.
Hash128 hash_string(std::string_view text);
/// hash_bytes through libxxhash's own (baseline) code path, never the AVX2
/// one: for tests that the two agree.
Hash128 hash_bytes_baseline(std::span<const std::uint8_t> data);

/// Streaming hasher over *tagged, delimited* fields, so that adjacent fields
/// cannot run together ("ab"+"c" and "a"+"bc" hash differently) and a value
/// moved from one field to another changes the hash. Optionally keeps a
/// human-readable dump of exactly what was hashed, for explaining a changed
/// key (as ccache's hasher does).
class Hasher {
 public:
  explicit Hasher(bool keep_dump = false);
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  /// Adds `tag` (a short, fixed field name) and `value` as one field.
  void field(std::string_view tag, std::string_view value);
  /// Adds a field whose value is a hash (recorded by its hex in the dump).
  void field(std::string_view tag, const Hash128& value);
  /// The hash of all fields so far. The hasher may be used no further.
  Hash128 finish();
  /// "tag=value" lines of everything hashed (empty unless keep_dump).
  const std::string& dump() const { return m_dump; }

 private:
  void update(const void* data, std::size_t size);
  void* m_state;
  bool m_keep_dump;
  std::string m_dump;
};

}  // namespace kcache::util
