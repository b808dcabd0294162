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
//     pipeline_scheme  "2", the version of this recipe (k_pipeline_scheme)
//     spirv_namespace  e.g. "spirv/vulkan1.2": where the module lies, under
//                      the same kernel name
//     spirv_digest     32 hex digits: that module's payload_digest
//     entry            the entry point
//     spec:<id>        one per specialization constant, ascending id: the
//                      SpecValue bits handed to the driver, 16 hex digits
//                  then the interface the pipeline was created with, as the
//                  device stage reflected it from the module (product fields,
//                  core/key_binding.hpp: not hashed into key.ir, since the
//                  recipe determines them), exactly these three:
//     bindings         "SET.BINDING:TYPExCOUNT" per descriptor binding,
//                      ascending (set, binding), separated by one space
//                      ("" for none); TYPE a VkDescriptorType value
//     push_constants   the push-constant range's size in bytes, at offset 0
//     specialization   "ID:HEX" per specialization constant the pipeline is
//                      specialized with (every one the module declares,
//                      defaults included), ascending id, separated by one
//                      space; HEX the bytes of its VkSpecializationInfo data,
//                      in order (their count is the constant's size)
//   inputs         the SPIR-V entry's inputs (for inspect)
//   payload_kind   pipeline_cache; payload = wrap_blob() of the raw blob
//
// Scheme 1 (kcache 0.1 up to this change) is scheme 2 without the three
// interface fields; it is still read (read_pipeline_interface gives nullopt:
// a runtime reflects the module itself). The interface lets a trusted
// runtime serve a kernel without reflecting it at every lookup; verify
// checks it against the module.
//
// The device fingerprint is not in the recipe: it is the namespace. Field
// names are persisted (append only); a recipe of another pipeline_scheme is
// refused with version_mismatch.
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/device/device.hpp"
#include "kcache/util/error.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::device {

/// The scheme kcache writes; it reads this one and "1".
inline constexpr std::string_view k_pipeline_scheme = "2";

/// What a pipeline is created from besides the device.
struct PipelineRecipe {
  std::string spirv_namespace;  ///< "spirv/vulkan1.2"
  util::Hash128 spirv_digest;   ///< payload_digest of the SPIR-V entry
  std::string entry = "main";
  std::vector<SpecValue> spec;                          ///< ascending id
  std::string scheme = std::string(k_pipeline_scheme);  ///< as read; "1" for an older entry

  /// The recipe's ir_fields listed in the file comment (no interface).
  std::vector<Field> fields() const;
  bool operator==(const PipelineRecipe&) const = default;
};

/// key.ir of a vulkan entry: a tagged hash of fields().
util::Hash128 recipe_hash(const PipelineRecipe& recipe);

/// What a compute pipeline is created with besides its module and device:
/// its layout and specialization, as reflection gives them
/// (reflect_pipeline_interface). Layout-compatible with kcache.h's
/// kcache_binding, and spec_entries with VkSpecializationMapEntry.
struct PipelineInterface {
  struct Binding {
    std::uint32_t set = 0;
    std::uint32_t binding = 0;
    std::uint32_t descriptor_type = 0;  ///< VkDescriptorType
    std::uint32_t count = 1;            ///< 1 for a runtime-sized array
    bool operator==(const Binding&) const = default;
  };
  struct SpecEntry {
    std::uint32_t constant_id = 0;
    std::uint32_t offset = 0;  ///< into spec_data
    std::size_t size = 0;      ///< 1, 2, 4 or 8
    bool operator==(const SpecEntry&) const = default;
  };
  std::vector<Binding> bindings;  ///< ascending (set, binding), no duplicates
  std::uint32_t push_constant_size = 0;
  std::vector<SpecEntry> spec_entries;  ///< ascending id, data packed in order
  std::vector<std::uint8_t> spec_data;

  /// The three interface fields listed in the file comment.
  std::vector<Field> fields() const;
  bool operator==(const PipelineInterface&) const = default;
};

/// The interface the device stage creates `entry` of `spirv` with under
/// `spec` (unset constants at their defaults): reflection of the module,
/// which trusts its input, so only for a module that passed spirv-val.
/// invalid_argument as Device::build_pipeline.
Result<PipelineInterface> reflect_pipeline_interface(std::span<const std::uint32_t> spirv, std::string_view entry,
                                                     std::span<const SpecValue> spec);

/// The vulkan entry for `spirv_entry` built with `recipe` into `wrapped_blob`
/// (wrap_blob output), its pipeline created with `interface`. Payload digest
/// sealed; origin "built".
Entry make_pipeline_entry(const Entry& spirv_entry, const PipelineRecipe& recipe, const PipelineInterface& interface,
                          std::vector<std::uint8_t> wrapped_blob, std::uint64_t created, std::string origin);

/// The specialization a SPIR-V entry's id fields record
/// ("spec_constant:<id>" = "<type>:<text>", definition.cpp), converted as
/// the device stage converts a manifest's (engine::spec_values): 32 bits, a
/// negative int sign-extended; ascending id. What a runtime lookup and a
/// deployment file take when no blob recipe names the values. corruption
/// naming the kernel and the field for a malformed one.
Result<std::vector<SpecValue>> spec_values_from_fields(const Entry& e);

/// Reads a vulkan entry's recipe from its ir_fields. corruption when a field
/// is missing, repeated, out of order or malformed, or key.ir does not match
/// the fields; version_mismatch for a pipeline_scheme other than 1 and 2.
/// Says nothing about the payload (see check_blob_against_record).
Result<PipelineRecipe> read_pipeline_recipe(const Entry& entry);

/// The interface a scheme-2 entry records, or nullopt for scheme 1.
/// corruption when a field is missing, out of order or malformed (as
/// read_pipeline_recipe, which this does not repeat). That it is the
/// module's own is verify's check (reflect_pipeline_interface), not this.
Result<std::optional<PipelineInterface>> read_pipeline_interface(const Entry& entry);

/// Checks that the interface `pipeline` records (scheme 2; scheme 1 records
/// none: nothing to check) is the one reflect_pipeline_interface gives
/// `spirv`, its module, for `recipe` (entry point, specialization). `spirv`
/// must have passed spirv-val: reflection trusts what it parses. corruption
/// naming both interfaces, or why the module cannot be reflected. The one
/// check of import and of every verify (defined in reflect.cpp).
Result<void> check_pipeline_interface(const Entry& pipeline, const PipelineRecipe& recipe,
                                      std::span<const std::uint32_t> spirv);

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
