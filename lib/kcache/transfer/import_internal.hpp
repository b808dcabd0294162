// The steps of import_bundle that its source files share (import.cpp and the
// import_*.cpp files it calls), inside the transfer module only. Each
// declaration's definition says more; transfer.hpp is the module's contract.
#pragma once

#include "kcache/transfer/transfer.hpp"
#include "kcache/util/ordered_parallel_map.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kcache::transfer::internal {

// ---- import_target.cpp: the fingerprint a section must match ----

/// The record a bundle must match and a description of where it came from.
struct Target {
  FingerprintRecord record;
  std::string text;
};

/// The target a section of a bundle is checked against (`given`, or none for a release's SPIR-V section).
ImportTarget section_target(const ImportTarget& given, const Namespace& ns, bool in_release);

/// The namespace a section of namespace `ns` writes its entries to.
Namespace destination(const Namespace& ns);

/// Checks `ns` against its target; the target, or fingerprint_mismatch naming every differing field.
Result<Target> check_target(store::Store& store, const Namespace& ns, const ImportTarget& t, const std::string& label);

// ---- import_modules.cpp: the SPIR-V modules a pipeline is checked against ----

/// A SPIR-V module a pipeline may be built from: the store's, or one of an
/// earlier section of the same release.
struct ModuleRef {
  util::Hash128 digest;  ///< its payload_digest
  /// Its bytes, for the pipeline interface check; null when not held (the
  /// store's module in a namespace a release carries: that section carries
  /// the modules of the release's pipelines).
  std::shared_ptr<const std::vector<std::uint8_t>> payload;
  bool strict = true;      ///< stored under validate = "strict": its pipelines' interface is checked (as verify)
  bool validated = false;  ///< spirv-val accepted it in this import
};

/// The SPIR-V modules a vulkan bundle's pipelines were built from, by
/// (spirv namespace, kernel). A pipeline entry is useless without its module
/// (the runtime and verify create the pipeline from it), and a trusted
/// runtime believes the interface it records, so import checks both.
using SpirvModules = std::map<std::pair<std::string, std::string>, ModuleRef>;

/// `e` as a ModuleRef: its digest and recorded policy, its bytes when `with_payload`.
ModuleRef module_ref(const Entry& e, bool with_payload, bool validated);

/// The store's modules of the kernels `header` indexes, with their bytes.
Result<SpirvModules> spirv_modules(store::Store& store, const bundle::BundleHeader& header);

/// Every SPIR-V module the store holds, with bytes only outside the namespaces in `carried`.
Result<SpirvModules> all_spirv_modules(store::Store& store, const std::set<std::string>& carried);

/// Whether `modules` holds the module `pipeline` was built from, and its recorded interface is that module's.
Result<void> check_pipeline_module(const Entry& pipeline, const SpirvModules& modules);

// ---- import_conflicts.cpp: a bundle's entries against the store's ----

/// What the conflict rules need of a stored entry (its payload is not kept).
/// A stored entry without its payload (its digest stands for it): what the
/// conflict rules compare.
using StoredFacts = Entry;
using StoredEntries = std::map<std::string, StoredFacts, std::less<>>;

/// The stored entries of `ns_name` that `header` indexes, damaged ones left out, from one snapshot.
Result<StoredEntries> stored_entries(store::Store& store, const std::string& ns_name,
                                     const bundle::BundleHeader& header);

/// Every stored entry of `ns_name`, payloads dropped, from one snapshot.
Result<StoredEntries> stored_namespace(store::Store& store, const std::string& ns_name);

/// The conflict between `incoming` and the stored entry of its name, if the conflict rules see one.
std::optional<ImportConflict> find_conflict(const Entry& incoming, const StoredFacts& stored);

/// The refusal (validation_failed) a conflict makes without --replace, in words.
Error conflict_error(const ImportConflict& c);

/// What importing `incoming` does to a store holding `stored`: imported, already_present or replaced.
ImportAction classify(const Entry& incoming, const StoredEntries& stored);

// ---- import_delta.cpp: what a delta bundle removes ----

/// What the store holds of the kernels delta `d` keeps and removes; corruption for a damaged record.
Result<HeldEntries> held_entries(store::Store& store, const std::string& ns_name, const bundle::DeltaBase& d);

// ---- import_entry.cpp: the checks every imported entry passes ----

/// check_entry_payload's result, and for a SPIR-V module what this store's
/// validator found under the entry's policy: the imported entry's flag.
struct PayloadChecked {
  std::vector<std::uint8_t> payload;
  std::optional<Validation> validation;
  std::string note;
};

/// What an import asks of each entry beyond its payload's checks.
struct EntryRules {
  definition::ValidatePolicy allow = definition::ValidatePolicy::strict;  ///< weakest policy accepted
  std::uint64_t now = 0;                                                  ///< for check_not_future
  const SpirvModules* modules = nullptr;  ///< a vulkan section's: its pipelines' modules
};

/// Every check of `e` (a section of namespace `ns`) under `rules`; the payload to store and validation found.
Result<PayloadChecked> check_for_import(const Entry& e, const Namespace& ns, const FingerprintRecord& target,
                                        const EntryRules& rules);

/// Validates entries on worker threads while the caller's thread reads
/// them, handing results back in bundle order.
using ValidatorWindow = util::OrderedParallelMap<Entry, Result<PayloadChecked>>;

/// Bytes the validators may hold at once beyond one entry. With typical
/// records (kilobytes) the window's count (4 per thread) binds; with large
/// records or modules this does, so that -j never multiplies the largest
/// one (FORMAT.md "Memory").
inline constexpr std::uint64_t k_validate_budget = 64u << 20;

/// The bytes validating an entry of `kind` with `payload` bytes may hold at once.
std::uint64_t validation_cost(PayloadKind kind, std::uint64_t payload);

}  // namespace kcache::transfer::internal
