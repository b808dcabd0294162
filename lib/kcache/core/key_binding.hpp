// The key binds everything (docs/design.md "Keys"): a record's key is the
// hash of the fields it records, so a record whose fields were changed
// behind an unchanged key (another entry point, specialization constant or
// validation policy, a forged ir) is refused wherever a record comes from
// elsewhere (import, a remote, a store being verified) and before the build
// believes a stored one.
//
// What a key cannot cover is what compiling produces: the payload, its
// validation verdict and (CUDA) the lowered symbol. Those are the record's
// product; the same key with another product is a conflict, never a newer
// version (same_product).
//
// The hash rules, one per record family, are stated once here and used by
// every writer (definition::compute_id / compute_ir / compute_cuda_ir and the
// device stage's pipeline recipe hash):
//   key.id = hash_fields(id_fields)
//   key.ir = hash_fields(ir_fields)                      SPIR-V modules, CUDA
//            (CUDA entries: less the product field lowered_name)
//   key.ir = hash_fields(ir_fields, pipeline prefix)     pipeline-cache blobs
//            (less the product fields of the pipeline interface the device
//            stage reflected: bindings, push_constants, specialization)
//
// Thread-safety: pure functions.
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/core/failure.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache {

/// The hash of a field list: each (name, value) hashed as one tagged,
/// length-delimited field, in order, after an optional leading `prefix`
/// field. The one rule behind every key half.
Hash128 hash_fields(const std::vector<Field>& fields, const std::optional<Field>& prefix = std::nullopt);

/// The leading field of a pipeline recipe's hash, which keeps a pipeline's
/// ir apart from any module's: ("vulkan-pipeline-recipe", scheme).
Field pipeline_recipe_prefix(std::string_view scheme);

/// Which hash rule a record's ir follows.
enum class IrRule {
  fields,    ///< hash_fields(ir_fields), less product fields (SPIR-V, CUDA)
  pipeline,  ///< the pipeline recipe's rule (pipeline_recipe_prefix)
};
/// The rule for an entry of `kind`.
IrRule ir_rule(PayloadKind kind);
/// The rule for a failure record of `phase` (a pipeline's failure records
/// the recipe).
IrRule ir_rule(FailurePhase phase);

/// The product fields of a pipeline entry, in their recorded order: the
/// interface its pipeline was created with (device/pipeline_entry.hpp).
inline constexpr std::string_view k_pipeline_product_fields[] = {"bindings", "push_constants", "specialization"};

/// Whether `name` is a product field of a record of `rule`: recorded among
/// the ir fields because a runtime reads it there, but made by the compile,
/// not hashed into ir (core/cuda.hpp's lowered_name; a pipeline's interface).
bool is_product_field(IrRule rule, std::string_view name);

/// The key an entry's fields hash to by its payload kind's rule: what
/// check_key_binding compares with the recorded key.
Key bound_key(const Entry& entry);

/// Checks that `key` is the hash of the recorded fields by `rule` (the ir
/// half only when `ir_known`). corruption naming the half that does not
/// match: "its key does not match its id fields (...)".
Result<void> check_key_binding(const Key& key, const std::vector<Field>& id_fields, const std::vector<Field>& ir_fields,
                               IrRule rule, bool ir_known = true);
/// check_key_binding for an entry, plus what its key fixes about its
/// product: a SPIR-V module's validation verdict is one its recorded
/// `validate` policy allows (a policy of "on" stores only validated modules).
Result<void> check_key_binding(const Entry& entry);
Result<void> check_key_binding(const EntryHead& head);
Result<void> check_key_binding(const Failure& failure);

/// How two records of one key differ in what the key cannot cover: their
/// payload, validation verdict, product fields (lowered_name) or the fields
/// themselves. nullopt when they are the same build; else one line naming
/// the first difference with both values ("payload 1a2b… ≠ 3c4d…").
std::optional<std::string> product_difference(const Entry& stored, const Entry& incoming);

}  // namespace kcache
