// The remote value: what a remote stores under a key (FORMAT.md beside this
// file): a small versioned envelope around one entry record (core
// encode_entry), naming its namespace, optionally signed; from version 2 the
// record is zstd-compressed (a SPIR-V record shrinks ~4x). Values come from
// servers anyone with access can write, so decode_value() treats the bytes
// as hostile (bounded, digest first, a compressed record's declared size
// checked against k_max_value_bytes before anything is allocated); fuzzed by
// tests/fuzz/fuzz_remote_value.cpp. Thread-safety: pure functions.
#pragma once

#include "kcache/bundle/bundle.hpp"
#include "kcache/core/entry.hpp"
#include "kcache/core/namespace.hpp"
#include "kcache/util/error.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::remote {

inline constexpr std::uint16_t k_value_min_version = 1;
inline constexpr std::uint16_t k_value_max_version = 2;
/// The zstd level values are written with (FORMAT.md "Choices": on the
/// benchmark corpus's modules level 9 gives 3.9x at ~0.4 ms a kernel; 19
/// gives 4.6x at ~7 ms, a tenth of a compile, for every kernel written).
inline constexpr int k_value_zstd_level = 9;
/// The largest value read or written: one record of the largest payload plus
/// its metadata (k_max_payload_bytes + 16 MiB).
inline constexpr std::size_t k_max_value_bytes = k_max_payload_bytes + (16u << 20);
/// The most a compressed record may expand: its declared size at most this
/// many times its compressed bytes. zstd can expand a few KiB into 256 MiB
/// of zeros (an 8.7 KB value cost 830 MB); real records compress about 4x
/// (FORMAT.md "Choices"). The writer keeps a record that would compress
/// past it uncompressed, so kcache never writes a value a reader refuses.
inline constexpr std::size_t k_max_value_ratio = 1024;
/// The longest namespace name a value may carry.
inline constexpr std::size_t k_max_value_namespace = 256;

/// A value's signature block.
struct ValueSignature {
  bundle::PublicKey key;
  std::array<std::uint8_t, 64> signature{};
};

/// How a value's record field holds the record (version 2, FORMAT.md).
enum class ValueCompression : std::uint8_t { none = 0, zstd = 1 };

/// A decoded value. `record` is the entry record as the writer signed it:
/// decompressed (version 2), so it is owned, not a view of the input.
struct ValueParts {
  std::uint16_t version = 0;
  std::string ns;  ///< namespace name, "spirv/vulkan1.2"
  std::vector<std::uint8_t> record;
  std::optional<ValueSignature> signature;
  ValueCompression compression = ValueCompression::none;  ///< always none in version 1
};

/// The value for `record` (encode_entry's bytes) of namespace `ns_name`,
/// signed with `sign` when given, in format `version` (the newest by
/// default; 1 only for tests and golden files). Version 2 compresses the
/// record with zstd at k_value_zstd_level and keeps it as it is when that
/// does not make it smaller, or makes it over k_max_value_ratio times smaller. invalid_argument for an unknown version
/// or a record over k_max_value_bytes; io_error when libsodium cannot start or zstd fails.
Result<std::vector<std::uint8_t>> encode_value(std::string_view ns_name, std::span<const std::uint8_t> record,
                                               const bundle::KeyPair* sign = nullptr,
                                               std::uint16_t version = k_value_max_version);

/// Decodes untrusted value bytes: corruption for a bad magic, a digest
/// mismatch, truncation, trailing bytes, an oversized or unprintable
/// namespace, a bad signature flag, and in version 2 an unknown compression,
/// a record over `max_record_bytes` (the caller's bound, at most
/// k_max_value_bytes), a compressed record declaring over k_max_value_ratio
/// times its compressed size (both refused before allocating: a
/// decompression bomb costs nothing) or a record field that is not exactly
/// one zstd frame of exactly the declared size; decompression never
/// allocates more than the declared size and stops as soon as the frame
/// holds more. version_mismatch for a version outside
/// k_value_min_version..k_value_max_version. Does not verify the signature
/// (verify_value does) nor decode the record (decode_entry does).
Result<ValueParts> decode_value(std::span<const std::uint8_t> bytes, std::size_t max_record_bytes = k_max_value_bytes);

/// Whether `parts` is signed by one of `trusted` and the signature covers its
/// version, namespace and record (the decompressed record: what the reader
/// trusts; FORMAT.md says why not the compressed bytes); returns the
/// signer's id. corruption (unsigned,
/// unknown key listing the trusted ids, or not verifying).
Result<bundle::KeyId> verify_value(const ValueParts& parts, std::span<const bundle::PublicKey> trusted);

/// The key a value of `ns_name` with entry key `key` is stored under, after
/// the remote's prefix: "kcache1/NAMESPACE/ID-IR" (hex). Printable ASCII
/// without spaces: a valid Redis key, URL path and relative file path.
std::string value_key(std::string_view prefix, std::string_view ns_name, const Key& key);

/// The key a value of `ns_name` is filed under for direct mode (FORMAT.md
/// "Direct values"), `direct` being engine::direct_key() of its kernel:
/// "kcache1-direct/NAMESPACE/HEX" after the prefix. The value is the same
/// signed value value_key() holds; a reader believes its recorded inputs
/// only when a trusted key signed it.
std::string value_direct_key(std::string_view prefix, std::string_view ns_name, const Hash128& direct);

}  // namespace kcache::remote
