// The remote value: what a remote stores under a key (FORMAT.md beside this
// file): a small versioned envelope around one entry record (core
// encode_entry), naming its namespace, optionally signed. Values come from
// servers anyone with access can write, so decode_value() treats the bytes
// as hostile (bounded, digest first); fuzzed by
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
inline constexpr std::uint16_t k_value_max_version = 1;
/// The largest value read or written: one record of the largest payload plus
/// its metadata (k_max_payload_bytes + 16 MiB).
inline constexpr std::size_t k_max_value_bytes = k_max_payload_bytes + (16u << 20);
/// The longest namespace name a value may carry.
inline constexpr std::size_t k_max_value_namespace = 256;

/// A value's signature block.
struct ValueSignature {
  bundle::PublicKey key;
  std::array<std::uint8_t, 64> signature{};
};

/// A decoded value; `record` borrows from the decoded bytes.
struct ValueParts {
  std::uint16_t version = 0;
  std::string ns;  ///< namespace name, "spirv/vulkan1.2"
  std::span<const std::uint8_t> record;
  std::optional<ValueSignature> signature;
};

/// The value for `record` (encode_entry's bytes) of namespace `ns_name`,
/// signed with `sign` when given. io_error only when libsodium cannot start.
Result<std::vector<std::uint8_t>> encode_value(std::string_view ns_name, std::span<const std::uint8_t> record,
                                               const bundle::KeyPair* sign = nullptr);

/// Decodes untrusted value bytes: corruption for a bad magic, a digest
/// mismatch, truncation, trailing bytes, an oversized or unprintable
/// namespace, a bad signature flag; version_mismatch for a version outside
/// k_value_min_version..k_value_max_version. Does not verify the signature
/// (verify_value does) nor decode the record (decode_entry does).
Result<ValueParts> decode_value(std::span<const std::uint8_t> bytes);

/// Whether `parts` is signed by one of `trusted` and the signature covers its
/// namespace and record; returns the signer's id. corruption (unsigned,
/// unknown key listing the trusted ids, or not verifying).
Result<bundle::KeyId> verify_value(const ValueParts& parts, std::span<const bundle::PublicKey> trusted);

/// The key a value of `ns_name` with entry key `key` is stored under, after
/// the remote's prefix: "kcache1/NAMESPACE/ID-IR" (hex). Printable ASCII
/// without spaces: a valid Redis key, URL path and relative file path.
std::string value_key(std::string_view prefix, std::string_view ns_name, const Key& key);

}  // namespace kcache::remote
