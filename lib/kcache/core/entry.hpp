// The entry record: one compiled kernel with the metadata that explains it.
// The same encoding is the LMDB value in a store and the entry record inside
// a bundle, so the bundle module speaks records and knows nothing of LMDB.
//
// Entry record format, version 3 (all integers little-endian; str = u32
// length + UTF-8 bytes; h128 = 16 raw bytes):
//
//   field            type         meaning
//   magic            4 bytes      "KCE\x01"
//   version          u16          record format version (1 to 3)
//   kernel           str          kernel name, variant suffix included
//   key.id           h128         identity hash (kcache::definition key)
//   key.ir           h128         content hash (expanded source + toolchain)
//   n_id_fields      u32          then n × (str name, str value): what `id` hashed
//   n_ir_fields      u32          then n × (str name, str value): what `ir` hashed
//   n_inputs         u32          then n × (str path, h128 content hash);
//                                 paths relative to the manifest's folder
//   payload_kind     u8           1 = SPIR-V module, 2 = VkPipelineCache blob,
//                                 3 = CUDA cubin (an ELF, namespace cuda/sm_XY),
//                                 4 = CUDA PTX text (namespace cuda/compute_XY);
//                                 3 and 4 need no new record version: a reader
//                                 that predates them refuses the kind
//   payload          u32 + bytes  the artifact
//   payload_digest   h128         XXH3-128 of payload
//   created          u64          unix seconds when compiled
//   origin_kind      u8           1 = built here, 2 = imported, 3 = imported and
//                                 confirmed by a build here (an expansion of
//                                 that checkout's inputs gave its key: the
//                                 build's warm path believes its inputs);
//                                 3 needs no new record version: a reader
//                                 that predates it refuses the kind
//   origin_detail    str          host/tool that built it, or the bundle imported from
//   -- version 2 appends:
//   validation       u8           1 = spirv-val accepted the module; 2 = spirv-val
//                                 did not know something it uses (stored under
//                                 validate = "known"); 3 = not validated
//                                 (validate = "off"). A pipeline-cache entry: 1.
//   validation_note  str          for 2: what the validator did not know (one
//                                 line); else empty
//   -- version 3 appends:
//   diagnostics      str          the compiler's warnings about this module,
//                                 one per line, "FILE:LINE: warning: TEXT" with
//                                 FILE relative to the manifest's folder (what
//                                 a build reports; the glslc launcher shows them
//                                 again on a hit, as glslc would). Not empty:
//                                 a record without warnings is written as
//                                 version 2, which earlier readers read.
//   record_digest    h128         XXH3-128 of every byte above
//
// A version-1 record has no validation fields and reads as validation = 1
// (kcache stored nothing else then); a version-1 or -2 record has no
// diagnostics (none, or not recorded: an earlier kcache kept none).
// Persisted enum values (payload_kind, origin_kind, validation) are
// append-only. A new field is appended before record_digest and bumps the
// version; readers accept versions k_entry_min_version..k_entry_max_version.
#pragma once

#include "kcache/util/bytes.hpp"

#include "kcache/util/error.hpp"
#include "kcache/util/hash.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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

/// A file a definition read, with its content hash, or a path an include
/// search probed and found nothing at (hash == k_absent_input): a header
/// created there later would be read first, so its appearance is a changed
/// input (docs/design.md "Absent include candidates").
struct InputFile {
  std::string path;  ///< relative to the manifest's folder, '/'-separated
  Hash128 hash;
  /// True for a probe that found nothing (k_absent_input).
  bool absent() const;
  bool operator==(const InputFile&) const = default;
};

/// The hash an absent include candidate records: all zeros, which no file's
/// XXH3-128 is in practice. A kcache that predates absent candidates sees a
/// missing file, expands once and finds the same source: it still hits.
inline constexpr Hash128 k_absent_input{};

inline bool InputFile::absent() const { return hash == k_absent_input; }

/// A (name, value) pair recorded for explaining keys.
using Field = std::pair<std::string, std::string>;

/// Appends a field list as every kcache record encodes one (entry records,
/// namespace records, bundle heads): u32 count, then (str name, str value).
void put_fields(util::ByteWriter& w, const std::vector<Field>& fields);
/// Reads a list put_fields wrote; false when truncated, or over `max_fields`
/// fields or `max_string` bytes in a string (checked before allocating).
bool get_fields(util::ByteReader& r, std::vector<Field>& out, std::uint32_t max_fields, std::size_t max_string);
/// Appends a hash as every kcache record encodes one: its 16 raw bytes.
void put_hash(util::ByteWriter& w, const Hash128& h);
/// Reads a hash put_hash wrote; nullopt when fewer than 16 bytes are left.
std::optional<Hash128> get_hash(util::ByteReader& r);

/// What an entry's payload is. Persisted, append-only (core/cuda.hpp says
/// which cuda namespace holds which of cubin and ptx).
enum class PayloadKind : std::uint8_t { spirv = 1, pipeline_cache = 2, cubin = 3, ptx = 4 };
/// Whether `kind` is one of the PayloadKind values (a byte from elsewhere).
bool is_known_payload_kind(std::uint8_t kind);
/// "spirv", "pipeline-cache", "cubin", "ptx".
std::string_view payload_kind_name(PayloadKind kind);
/// Where an entry came from. Persisted, append-only.
enum class OriginKind : std::uint8_t {
  built = 1,      ///< compiled here
  imported = 2,   ///< from a bundle or a remote: its recorded inputs are its own claim
  confirmed = 3,  ///< imported, then its key given again by a build here from this checkout's inputs
};
/// Whether `kind` is one of the OriginKind values (a byte from elsewhere).
bool is_known_origin_kind(std::uint8_t kind);
/// How far a stored module was validated (the kernel's `validate` policy,
/// README "The manifest"): persisted, append-only.
enum class Validation : std::uint8_t {
  validated = 1,              ///< spirv-val accepted it
  validator_unsupported = 2,  ///< spirv-val did not know a capability/extension/opcode it uses
  not_validated = 3,          ///< validate = "off": only its structure was checked
};
/// "validated", "validator_unsupported", "not_validated".
std::string_view validation_name(Validation v);

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
  Validation validation = Validation::validated;  ///< record version 2
  std::string validation_note;                    ///< what the validator did not know (validator_unsupported)
  std::string diagnostics;                        ///< record version 3: compiler warnings, one per line

  bool operator==(const Entry&) const = default;
};

/// The part of an entry that says what it is and what it was made of, up to
/// its payload's length: all a freshness check reads (decode_entry_head).
struct EntryHead {
  std::string kernel;
  Key key;
  std::vector<Field> id_fields;
  std::vector<Field> ir_fields;
  std::vector<InputFile> inputs;
  PayloadKind payload_kind = PayloadKind::spirv;
  std::size_t payload_bytes = 0;
  OriginKind origin_kind = OriginKind::built;  ///< read past the payload, unchecked as the rest
  bool operator==(const EntryHead&) const = default;
};

inline constexpr std::uint16_t k_entry_min_version = 1;
inline constexpr std::uint16_t k_entry_max_version = 3;
/// Upper bound on a decoded payload (a single module or blob), as a defence
/// against hostile records.
inline constexpr std::size_t k_max_payload_bytes = 256u << 20;

/// Encodes an entry (computes both digests): version 3 when it has
/// diagnostics, else version 2.
std::vector<std::uint8_t> encode_entry(const Entry& entry);

/// Whether a digest inside a record is checked again once the record's own
/// digest (always checked) has covered the same bytes: the payload's
/// payload_digest here, a pipeline blob wrapper's blob_digest in the device
/// module. `covered` is for a store whose writer is vouched for (a
/// runtime's KCACHE_OPEN_TRUSTED): the inner digest is then taken as
/// written. Everything else checks.
enum class PayloadDigest { check, covered };

/// Decodes and checks a record from untrusted bytes: corruption for a bad
/// magic, truncation, trailing bytes, oversized fields or a digest mismatch
/// (the payload's only when `payload` says check); version_mismatch for a
/// version outside the supported range.
Result<Entry> decode_entry(std::span<const std::uint8_t> bytes, PayloadDigest payload = PayloadDigest::check);

/// Decodes a record's head without reading its payload or anything after
/// it: the same checks as decode_entry up to the payload's length (magic,
/// version, bounds, known payload kind), but neither digest, so a damaged
/// record can pass. For deciding freshness fast (a warm build of 1,500
/// kernels would otherwise copy and hash every module): a head only ever
/// leads to "fresh, nothing to do" or to a full decode_entry, and whatever
/// reads the payload (get, export, verify, the runtime) decodes it with
/// both digests checked. corruption / version_mismatch as decode_entry.
Result<EntryHead> decode_entry_head(std::span<const std::uint8_t> bytes);

/// Sets `payload_digest` from `payload`.
void seal_payload(Entry& entry);

// What a record from elsewhere (a bundle; later a store being verified) must
// satisfy beyond decoding: decode_entry() proves the bytes are a record,
// validate_entry_record() that what the record says is safe to believe.
// Recorded paths are later opened (freshness re-hashes inputs), kernel names
// and fields are printed and become store keys, so each is bounded and
// checked here, once, rather than at every use.

/// Longest kernel name a record may carry: the manifest's limit (a longer
/// name cannot have been built), well inside the store's 511-byte keys.
inline constexpr std::size_t k_max_kernel_name = 400;
/// Most inputs (source and included files) one record may list.
inline constexpr std::uint32_t k_max_record_inputs = 4096;
/// Most fields in one of a record's field lists (id_fields, ir_fields).
inline constexpr std::uint32_t k_max_record_fields = 4096;
/// The record decoders' cap (entry, failure and namespace records) on any one
/// string they read, checked before allocating: with k_max_record_fields it
/// bounds what a hostile record can make a decoder allocate. The limits
/// below are validation's, checked after decoding.
inline constexpr std::size_t k_max_decoded_string = 64u << 10;
/// Longest field name ("define:NAME", "spec_constant:3", ...).
inline constexpr std::size_t k_max_field_name = 1024;
/// Longest field value (a define or variant value, a toolchain version).
inline constexpr std::size_t k_max_field_value = 64u << 10;
/// Longest origin_detail ("bundle NAME.kcb", a host and tool).
inline constexpr std::size_t k_max_origin_detail = 8u << 10;
/// Longest validation_note (one validator message, cut by its writer).
inline constexpr std::size_t k_max_validation_note = 4u << 10;
/// Longest diagnostics (a module's warnings, cut by their writer:
/// cut_diagnostics).
inline constexpr std::size_t k_max_diagnostics = 32u << 10;

/// `warnings` (lines) as a record keeps them: whole lines up to
/// k_max_diagnostics bytes, then one line saying how many were left out.
std::string cut_diagnostics(std::string_view warnings);

/// Checks a kernel name from elsewhere: 1..k_max_kernel_name bytes,
/// printable UTF-8 (util::is_printable_utf8), and a base name (the part
/// before the first '[', the variant suffix) without '/' or a backslash that is
/// not "." or "..". Variant values after '[' may hold any printable text, as
/// a manifest's may. corruption with a message that shows the name escaped
/// (util::escape_untrusted) and says what is wrong; no "bundle" context.
Result<void> check_kernel_name(std::string_view kernel);

/// Checks what a decoded record says, for records from elsewhere: the kernel
/// name (check_kernel_name); at most k_max_record_fields fields per list,
/// names of at most k_max_field_name and values of at most
/// k_max_field_value bytes, all printable UTF-8; at most k_max_record_inputs
/// inputs, each path util::is_contained_relative_path; the recorded paths
/// among the id fields ("source" and "preamble_file", and "include_dir:N",
/// which may also be "." or end in '/') likewise; origin_detail at most
/// k_max_origin_detail bytes; validation_note at most k_max_validation_note
/// printable bytes; diagnostics at most k_max_diagnostics bytes of printable
/// lines (newlines between them). corruption naming the first problem (which
/// input or field, its value escaped). Pure; what the payload holds is the
/// importer's check.
Result<void> validate_entry_record(const Entry& entry);

/// Checks that a record is filed under the kernel its id fields describe:
/// a `name` field (when recorded) equals `kernel`, and when `variant:K`
/// fields are recorded, `kernel` is its base name followed by
/// "[K1=V1,K2=V2,...]" of exactly those fields in their recorded order (as
/// the manifest names a variant). Labels only: what a build of the kernel
/// is made of is bound by its key. corruption naming both sides. Pure.
Result<void> check_name_fields(std::string_view kernel, const std::vector<Field>& id_fields);

/// How far in the future a date from elsewhere (an entry's `created`, a
/// bundle's creation time) may lie on this machine's clock: 5 minutes of
/// clock skew. A later date is not a build that happened, and would
/// outrank every honest later build (import's rollback rule).
inline constexpr std::uint64_t k_max_future_seconds = 300;

/// Checks `created` (unix seconds) against `now` by k_max_future_seconds;
/// otherwise corruption: "`what` TIME, in the future ..." with both times
/// (`what` as "the entry was built").
Result<void> check_not_future(std::uint64_t created, std::uint64_t now, std::string_view what);

}  // namespace kcache
