// Internals of the bundle module shared by its reader, writer, tests and
// fuzz target: layout constants, the head encoder/decoder, the streaming
// BLAKE2b hasher and hooks that let tests assemble hostile bundles (frames
// with lying sizes, huge windows) with correct digests. Not for callers
// outside the module's own sources and tests. Thread-safety: as bundle.hpp.
#pragma once

#include "kcache/bundle/bundle.hpp"
#include "kcache/util/bytes.hpp"

#include <sodium.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::bundle::internal {

/// format_traits of a version its caller already checked (the reader's
/// preamble check, the writer's options); an unknown one reads as version
/// 1's layout rather than undefined behaviour.
inline FormatTraits traits(std::uint16_t version) { return format_traits(version).value_or(FormatTraits{}); }

// FORMAT.md "Head".
inline constexpr std::uint8_t k_magic[4] = {'K', 'C', 'B', 0x1a};
inline constexpr std::uint8_t k_trailer_magic[4] = {'K', 'C', 'B', 'T'};
inline constexpr std::size_t k_preamble_size = 4 + 2 + 2 + 4;
inline constexpr std::size_t k_signature_block_size = 1 + 8 + 32 + 64;
inline constexpr std::size_t k_digest_size = 32;
inline constexpr std::size_t k_trailer_size = 4 + 8 + k_digest_size;
inline constexpr std::uint16_t k_flag_signed = 1u << 0;
inline constexpr std::uint16_t k_known_flags = k_flag_signed;
inline constexpr std::uint8_t k_codec_zstd = 1;
inline constexpr std::uint8_t k_codec_flag_ldm = 1u << 0;
inline constexpr std::uint8_t k_signature_ed25519 = 1;
/// Caps on header strings and field lists, as in the entry record.
inline constexpr std::size_t k_max_string = 64u << 10;
inline constexpr std::size_t k_max_base_name = k_max_delta_base_name;
inline constexpr std::uint32_t k_max_fields = 4096;
inline constexpr int k_min_window_log = 10;
inline constexpr std::uint32_t k_max_block_bytes = 1u << 30;
/// zstd level of a version-2 or 3 head (compress_header_body). 9: on the
/// 400-kernel benchmark corpus's 54 KB index, 30.6 KB in 3.5 ms where
/// level 19 saved 0.5 KB more for 16 ms (FORMAT.md "Header body, versions 2 and 3").
inline constexpr int k_head_level = 9;
/// Smallest possible encode_entry() output: fixed fields with empty strings
/// and lists (used to reject index entries that cannot be records).
inline constexpr std::uint64_t k_min_record_size = 4 + 2 + 4 + 16 + 16 + 4 + 4 + 4 + 1 + 4 + 16 + 8 + 1 + 4 + 16;
inline constexpr char k_manifest_domain[] = "kcache bundle manifest";

/// Appends what names a bundle's content: backend, fingerprint, fingerprint
/// record, tool versions. Shared by the head and the signed manifest.
void put_identity(util::ByteWriter& w, const BundleHeader& h);
/// Appends a delta bundle's base fields as format `version` (5 or 6) has
/// them. Shared by the head and the signed manifest.
void put_delta(util::ByteWriter& w, const DeltaBase& d, std::uint16_t version);
/// Appends one index entry. Shared by the head and the signed manifest.
void put_index_entry(util::ByteWriter& w, const IndexEntry& e);

/// Untrusted text (a kernel name, a field from a bundle) for a message:
/// util::escape_untrusted of at most its first 120 bytes (cut at a character
/// boundary, "..." appended when cut), so no message carries control
/// characters or grows with a hostile field.
std::string shown(std::string_view text);

/// Streaming BLAKE2b-256 (libsodium crypto_generichash).
class Blake2b {
 public:
  Blake2b();
  void update(std::span<const std::uint8_t> data);
  /// The digest of everything so far; the hasher is left untouched (works on
  /// a copy of the state), so hashing may continue.
  Digest256 peek() const;

 private:
  crypto_generichash_state m_state;
};

/// Calls sodium_init() once; false when libsodium cannot initialise.
bool sodium_ready();

/// Header body bytes (FORMAT.md "Header body") of `h` as it stands: uses its
/// compression and block_entry_counts, does not validate.
std::vector<std::uint8_t> encode_header_body(const BundleHeader& h);

/// The whole head: preamble, header body, signature block when `h.signature`
/// is set, head digest. Does not validate (tests use it to build hostile
/// heads with correct digests).
std::vector<std::uint8_t> encode_head(const BundleHeader& h);

/// Parses a header body of format `version`; corruption on any malformed or
/// out-of-limit field. Leaves `signature` empty.
Result<BundleHeader> decode_header_body(std::span<const std::uint8_t> body, std::uint16_t version,
                                        const ReadLimits& limits);

/// Semantic checks shared by writer and reader: the namespace
/// (check_foreign_namespace: backend, known spirv target, short fingerprint
/// derived from the record, printable record), kernels unique, sizes
/// consistent, block counts summing to the entry count. `from_elsewhere`
/// (the reader) adds the rules for names from another machine: printable
/// tool versions and check_kernel_name for every index entry. The writer
/// leaves those to the reader, so that it can still write any name a store
/// holds and the refusal comes where the bundle is read. corruption with a
/// message, untrusted text escaped.
Result<void> check_header(const BundleHeader& h, bool from_elsewhere);

/// Bytes format versions 2 and 3 put before each transformed record
/// (FORMAT.md "Record transform"); a block's content is the sum of
/// record_size + this.
inline constexpr std::size_t k_transform_prefix = 14;

/// Format 2 and 3: writes the transformed form of `record` (the encode_entry
/// bytes that index entry `e` describes; `payload` is the entry's payload) to
/// `out`, which holds exactly record.size() + k_transform_prefix bytes.
/// `format_version` 3 codes a SPIR-V module's operands as differences (form
/// 2, "delta"); 2 writes form 1 ("split").
void transform_record(std::span<const std::uint8_t> record, const IndexEntry& e, std::span<const std::uint8_t> payload,
                      std::span<std::uint8_t> out, std::uint16_t format_version);

/// Inverse of transform_record from untrusted bytes of a bundle of
/// `format_version`: rebuilds into `record` (exactly e.record_size bytes)
/// what `in` encodes. corruption when `in` cannot be a transform for `e` (a
/// form that version does not define, a region outside the record, a bad
/// word count, a non-zero elided field); the caller still checks the rebuilt
/// bytes against the index digest.
Result<void> restore_record(std::span<const std::uint8_t> in, const IndexEntry& e, std::span<std::uint8_t> record,
                            std::uint16_t format_version);

/// Format 2's head body: encode_header_body's bytes as one zstd frame that
/// declares its content size (FORMAT.md "Header body, versions 2 and 3").
std::vector<std::uint8_t> compress_header_body(std::span<const std::uint8_t> body);

/// Inverse of compress_header_body for untrusted bytes: exactly one frame,
/// content size declared and at most limits.max_header_bytes (checked
/// before allocating), window within limits.window_log_max. corruption
/// otherwise.
Result<std::vector<std::uint8_t>> decompress_header_body(std::span<const std::uint8_t> stored,
                                                         const ReadLimits& limits);

/// Appends the trailer for `bytes` (everything before it) to `bytes`.
void append_trailer(std::vector<std::uint8_t>& bytes);

/// Compresses `data` as one zstd frame with a content checksum. Test hook for
/// hostile blocks: with `declare_size` false the frame declares no content
/// size; `window_log` is forced as given. Tests patch the result to lie.
std::vector<std::uint8_t> compress_frame(std::span<const std::uint8_t> data, int level, int window_log,
                                         bool declare_size);

}  // namespace kcache::bundle::internal
