// The store's layout: how entries and namespace records are keyed and
// encoded. Shared by the LMDB and memory stores so both apply exactly the
// same rules (key limits, duplicate detection, corruption checks); callers
// outside this module use store.hpp. Thread-safety: pure functions.
//
// Store layout version 1 (meta "schema" = "1"). One LMDB environment per
// store directory (data.mdb + lock.mdb), with three named databases:
//
//   database     key                               value
//   entries      namespace name, 0x1f, kernel name  entry record (core/entry.hpp)
//   namespaces   namespace name ("spirv/vulkan1.2") namespace record (below)
//   meta         "schema"                           ASCII store layout version, "1"
//
// Keys compare bytewise (LMDB's default), so a namespace's entries are
// contiguous and in kernel-name order. Namespace names never contain 0x1f,
// so the separator cannot make two (namespace, kernel) pairs collide. A key
// is at most k_max_key_bytes (LMDB's compiled-in limit); longer ones are
// refused before any write. `meta` has room for later keys; an unknown key is
// ignored, an unknown schema value is a version_mismatch.
//
// Namespace record format, version 1 (integers little-endian; str = u32
// length + UTF-8 bytes; h128 = 16 raw bytes):
//
//   field            type         meaning
//   magic            4 bytes      "KCN\x01"
//   version          u16          record format version (1)
//   backend          str          "spirv", "vulkan"
//   fingerprint      str          short form used in the namespace name
//   n_fields         u32          then n × (str name, str value): the full
//                                 FingerprintRecord, in its order
//   record_digest    h128         XXH3-128 of every byte above
//
// A new field is appended before record_digest and bumps the version;
// readers accept k_namespace_min_version..k_namespace_max_version.
#pragma once

#include "kcache/store/store.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::store::internal {

inline constexpr char k_key_separator = '\x1f';
inline constexpr std::string_view k_entries_db = "entries";
inline constexpr std::string_view k_namespaces_db = "namespaces";
inline constexpr std::string_view k_meta_db = "meta";
inline constexpr std::string_view k_schema_key = "schema";
/// The layout version this code writes; readers accept exactly this for now.
inline constexpr std::string_view k_schema_version = "1";
inline constexpr std::uint16_t k_namespace_min_version = 1;
inline constexpr std::uint16_t k_namespace_max_version = 1;

/// invalid_argument unless `ns_name` is "backend/fingerprint" without 0x1f.
Result<void> check_namespace_name(std::string_view ns_name);

/// The `entries` key of `kernel` in `ns_name`. invalid_argument for a bad
/// namespace name, an empty kernel name, or a key over k_max_key_bytes.
Result<std::string> entry_key(std::string_view ns_name, std::string_view kernel);

/// The prefix every `entries` key of `ns_name` starts with (name + 0x1f).
std::string entry_prefix(std::string_view ns_name);

/// Encodes `ns` as a namespace record (current version).
std::vector<std::uint8_t> encode_namespace_record(const Namespace& ns);

/// Decodes a namespace record stored under `key`: corruption for a bad magic,
/// truncation, trailing bytes, digest mismatch or a name that differs from
/// `key`; version_mismatch for an unsupported version.
Result<Namespace> decode_namespace_record(std::string_view key, std::span<const std::uint8_t> bytes);

/// Decodes the entry record stored under `key` (as entry_key made it),
/// checking it names the kernel its key says. Errors as decode_entry, with
/// the key in the message.
Result<Entry> decode_stored_entry(std::string_view key, std::span<const std::uint8_t> value);

/// One entry of a put, validated and encoded before any transaction starts,
/// so the write transaction holds the writer lock only for the writing.
struct PreparedEntry {
  std::string key;
  std::vector<std::uint8_t> value;
  Key entry_key;
  Hash128 payload_digest;  ///< of the payload as encoded (encode_entry recomputes it)
  std::vector<InputFile> inputs;  ///< a re-put with new input hashes must be written (warm-path refresh)
};

/// Validates and encodes a put batch: invalid_argument (naming the kernel)
/// for a bad namespace, an empty or too-long kernel name, or a payload over
/// k_max_payload_bytes. Nothing is prepared unless every entry is valid.
Result<std::vector<PreparedEntry>> prepare_put(const Namespace& ns, std::span<const Entry> entries);

/// What put does with one prepared entry given what the store holds.
enum class PutAction { write, replace, keep };

/// `keep` when `existing` has the same key (id and ir) and payload digest;
/// `replace` when it differs or fails to decode; `write` when absent.
PutAction classify_put(const PreparedEntry& entry, std::optional<std::span<const std::uint8_t>> existing);

/// Adds one action to a summary.
void count_put(PutSummary& summary, PutAction action);

}  // namespace kcache::store::internal
