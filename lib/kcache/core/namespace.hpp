// Namespaces: backend + target fingerprint. A namespace is a key prefix inside
// a store and a field of a bundle, never a path (docs/design.md "Fingerprints and
// namespaces"). Thread-safety: plain values.
#pragma once

#include "kcache/util/error.hpp"

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kcache {

/// The full fingerprint record: ordered (field, value) pairs. For backend
/// `spirv` it is {target}; for `vulkan` it lists every property that makes a
/// pipeline-cache blob invalid for a GPU model and driver build (vendorID,
/// deviceID, driverID, driverVersion, driverInfo, driverUUID,
/// pipelineCacheUUID, pointerSize, ...; device/device_info.cpp says why each).
/// Kept whole in the store and in bundles so a refusal can name each
/// differing field.
struct FingerprintRecord {
  std::vector<std::pair<std::string, std::string>> fields;

  bool operator==(const FingerprintRecord&) const = default;
  /// Value of `field`, or nullptr.
  const std::string* find(std::string_view field) const;
};

/// One field that differs between two fingerprint records.
struct FieldDifference {
  std::string field;
  std::string ours;    ///< value in the first record ("<absent>" if missing)
  std::string theirs;  ///< value in the second record ("<absent>" if missing)
};

/// Every field whose value differs, in `a`'s order then fields only in `b`.
std::vector<FieldDifference> diff_fingerprints(const FingerprintRecord& a, const FingerprintRecord& b);

/// The differences in words, "; "-separated: "driverVersion: bundle 580 ≠
/// target 575" with labels "bundle" and "target", "driverVersion: 580 ≠ 575"
/// without.
std::string describe_differences(const std::vector<FieldDifference>& diffs, std::string_view ours_label = {},
                                 std::string_view theirs_label = {});

/// Whether `field` names one physical card rather than its compatibility
/// class: deviceUUID, deviceLUID, pciBus. Such fields are provenance; kcache
/// 0.1.0 still put deviceUUID into vulkan records (fingerprint schema 1).
bool is_per_card_field(std::string_view field);

/// `record` without per-card fields: the compatibility class alone.
FingerprintRecord compatible_record(const FingerprintRecord& record);

/// Whether `record` was written under fingerprint schema 1 (it has a
/// per-card field), so its namespace id named one card.
bool has_per_card_fields(const FingerprintRecord& record);

/// A backend plus fingerprint. `fingerprint` is the short form used in the
/// namespace name: the target env for spirv (e.g. "vulkan1.2"), the first 16
/// hex digits of the record's hash for vulkan.
struct Namespace {
  std::string backend;
  std::string fingerprint;
  FingerprintRecord record;

  /// "backend/fingerprint", e.g. "spirv/vulkan1.2" (the store's key prefix).
  std::string name() const { return backend + "/" + fingerprint; }
  bool operator==(const Namespace&) const = default;
};

/// The namespace of the portable SPIR-V backend for a target env.
Namespace spirv_namespace(std::string_view target);

/// Builds a vulkan-backend namespace from a device's record; per-card fields
/// are dropped (compatible_record), so every card of one GPU model and driver
/// build, and a schema-1 record of any of them, gives the same namespace. The
/// short fingerprint is derived from the record's hash.
Namespace vulkan_namespace(FingerprintRecord record);

/// The short id a vulkan namespace with exactly this record was given when it
/// was written: the hash of every field as recorded, so a schema-1 record
/// (deviceUUID included) gives its old id and a current record its
/// vulkan_namespace() id. What stored and shipped names are checked against.
std::string recorded_vulkan_id(const FingerprintRecord& record);

/// A SPIR-V target environment kcache compiles for, and the versions it
/// stands for: the Vulkan version, and the SPIR-V version the compilers emit
/// for it (the newest that Vulkan version takes; glslc's --target-spv).
struct SpirvTarget {
  std::string_view name;  ///< "vulkan1.2": a manifest's `target`, a spirv namespace's fingerprint
  int vulkan_minor;       ///< Vulkan 1.<vulkan_minor>
  int spirv_minor;        ///< SPIR-V 1.<spirv_minor>
};

/// Every target kcache compiles for, oldest first: the one table the
/// manifest, the compilers, from-commands, the runtime and the bundle checks
/// read.
inline constexpr std::array<SpirvTarget, 4> k_spirv_targets = {
    {{"vulkan1.0", 0, 0}, {"vulkan1.1", 1, 3}, {"vulkan1.2", 2, 5}, {"vulkan1.3", 3, 6}}};

/// The row of k_spirv_targets named `name`; nullptr for any other text.
const SpirvTarget* find_spirv_target(std::string_view name);

/// Whether `target` is one of k_spirv_targets.
bool is_known_spirv_target(std::string_view target);

/// "vulkan1.0, vulkan1.1, vulkan1.2, vulkan1.3": the targets, for a message.
std::string spirv_target_names();

/// Checks a namespace that came from elsewhere (a bundle's head; a store
/// being verified): backend `spirv` with a known target and exactly the
/// record {target}, or `vulkan` whose short fingerprint is
/// recorded_vulkan_id(record), or `cuda` (check_cuda_namespace, core/cuda.hpp);
/// record fields at most 4096, each name and
/// value printable UTF-8 (util::is_printable_utf8) of at most 64 KiB. So a
/// namespace from elsewhere can neither invent a target nor carry text that
/// drives a terminal. corruption naming what is wrong, untrusted text
/// escaped (util::escape_untrusted); no "bundle" context.
Result<void> check_foreign_namespace(const Namespace& ns);

/// Splits "backend/fingerprint"; invalid_argument when malformed.
Result<std::pair<std::string, std::string>> parse_namespace_name(std::string_view name);

}  // namespace kcache
