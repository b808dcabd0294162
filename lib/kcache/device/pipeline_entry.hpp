// The entries of a `vulkan/<fingerprint>` namespace: a wrapped pipeline-cache
// blob plus the recipe it was built from, so that a pipeline can be created
// again from a store alone (verify, the runtime API, import checks), without
// the manifest that built it. Thread-safety: pure functions over values.
//
// A vulkan entry (core/entry.hpp record; nothing new on disk):
//
//   field          value
//   kernel         the kernel's name, the same as its SPIR-V entry's
//   key.id         the SPIR-V entry's key.id (what the kernel is)
//   key.ir         recipe_hash(): what the blob was built from
//   id_fields      the SPIR-V entry's id_fields
//   ir_fields      the recipe, exactly these fields in this order:
//     pipeline_scheme  "1", the version of this recipe (k_pipeline_scheme)
//     spirv_namespace  e.g. "spirv/vulkan1.2": where the module lies, under
//                      the same kernel name
//     spirv_digest     32 hex digits: that module's payload_digest
//     entry            the entry point
//     spec:<id>        one per specialization constant, ascending id: the
//                      SpecValue bits handed to the driver, 16 hex digits
//   inputs         the SPIR-V entry's inputs (for inspect)
//   payload_kind   pipeline_cache; payload = wrap_blob() of the raw blob
//
// The device fingerprint is not in the recipe: it is the namespace. Field
// names are persisted (append only); a recipe of another pipeline_scheme is
// refused with version_mismatch.
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/device/device.hpp"
#include "kcache/util/error.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace kcache::device {

inline constexpr std::string_view k_pipeline_scheme = "1";

/// What a pipeline is created from besides the device.
struct PipelineRecipe {
  std::string spirv_namespace;  ///< "spirv/vulkan1.2"
  util::Hash128 spirv_digest;   ///< payload_digest of the SPIR-V entry
  std::string entry = "main";
  std::vector<SpecValue> spec;  ///< ascending id

  /// The ir_fields listed in the file comment.
  std::vector<Field> fields() const;
  bool operator==(const PipelineRecipe&) const = default;
};

/// key.ir of a vulkan entry: a tagged hash of fields().
util::Hash128 recipe_hash(const PipelineRecipe& recipe);

/// The vulkan entry for `spirv_entry` built with `recipe` into `wrapped_blob`
/// (wrap_blob output). Payload digest sealed; origin "built".
Entry make_pipeline_entry(const Entry& spirv_entry, const PipelineRecipe& recipe,
                          std::vector<std::uint8_t> wrapped_blob, std::uint64_t created, std::string origin);

/// Reads a vulkan entry's recipe from its ir_fields. corruption when a field
/// is missing, repeated, out of order or malformed, or key.ir does not match
/// the fields; version_mismatch for another pipeline_scheme. Says nothing
/// about the payload (see check_blob_against_record).
Result<PipelineRecipe> read_pipeline_recipe(const Entry& entry);

/// Everything that can be checked of a stored blob without a device: the
/// wrapper's own integrity (parse_blob_wrapper), that it was built for
/// `record` (fingerprint hash, pointerSize, driverVersion), and the Vulkan
/// header against the record's vendorID, deviceID and pipelineCacheUUID.
/// corruption / version_mismatch as parse_blob_wrapper; fingerprint_mismatch
/// naming the field when the blob belongs to another record; corruption when
/// the record itself lacks a field or has a malformed one. Used by verify on
/// every stored blob and by import before a bundle's blob is written.
Result<void> check_blob_against_record(std::span<const std::uint8_t> wrapped, const FingerprintRecord& record);

/// A blob of a fingerprint-schema-1 bundle (its wrapper hashes `schema1_record`,
/// deviceUUID included), checked as check_blob_against_record does against
/// that record, then wrapped again for the record's compatibility class, so
/// every card of that class accepts it. Errors as check_blob_against_record.
Result<std::vector<std::uint8_t>> rewrap_schema1_blob(std::span<const std::uint8_t> wrapped,
                                                      const FingerprintRecord& schema1_record);

}  // namespace kcache::device
