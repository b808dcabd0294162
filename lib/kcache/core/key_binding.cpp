#include "kcache/core/key_binding.hpp"

#include "kcache/core/cuda.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace kcache {
namespace {

/// The field a SPIR-V record's `validate` policy is recorded under (its id
/// fields, definition::compute_id); absent in a pipeline recipe.
constexpr std::string_view k_validate_field = "validate";

Hash128 ir_hash(const std::vector<Field>& ir_fields, IrRule rule) {
  std::vector<Field> hashed;
  hashed.reserve(ir_fields.size());
  for (const auto& f : ir_fields)
    if (!is_product_field(rule, f.first)) hashed.push_back(f);
  if (rule == IrRule::pipeline) {
    // The recipe's first field names its scheme (device/pipeline_entry.hpp);
    // a record without one cannot match any recipe hash.
    const std::string scheme = ir_fields.empty() ? std::string() : ir_fields.front().second;
    return hash_fields(hashed, pipeline_recipe_prefix(scheme));
  }
  return hash_fields(hashed);
}

const std::string* find_field(const std::vector<Field>& fields, std::string_view name) {
  for (const auto& f : fields)
    if (f.first == name) return &f.second;
  return nullptr;
}

/// Whether a module stored with verdict `v` may carry the policy its id
/// fields record: "strict" admits only validated modules,
/// "known" also modules the validator did not fully know, "off" anything.
Result<void> check_validation(const std::vector<Field>& id_fields, Validation v) {
  const std::string* policy = find_field(id_fields, k_validate_field);
  const std::string_view p = policy ? std::string_view(*policy) : std::string_view("strict");
  const bool allowed =
      p == "off" || (p == "known" && v != Validation::not_validated) || (p == "strict" && v == Validation::validated);
  if (!allowed)
    return fail(Category::corruption,
                "its module's validation ({}) is not what its recorded policy validate = \"{}\" allows: a record "
                "cannot claim a weaker check than its key",
                validation_name(v), util::shown_untrusted(p));
  return {};
}

}  // namespace

Hash128 hash_fields(const std::vector<Field>& fields, const std::optional<Field>& prefix) {
  util::Hasher h;
  if (prefix) h.field(prefix->first, prefix->second);
  for (const auto& [k, v] : fields) h.field(k, v);
  return h.finish();
}

Field pipeline_recipe_prefix(std::string_view scheme) { return {"vulkan-pipeline-recipe", std::string(scheme)}; }

IrRule ir_rule(PayloadKind kind) { return kind == PayloadKind::pipeline_cache ? IrRule::pipeline : IrRule::fields; }
IrRule ir_rule(FailurePhase phase) { return phase == FailurePhase::pipeline ? IrRule::pipeline : IrRule::fields; }

bool is_product_field(IrRule rule, std::string_view name) {
  if (rule == IrRule::fields) return name == k_cuda_lowered_name_field;
  return std::find(std::begin(k_pipeline_product_fields), std::end(k_pipeline_product_fields), name) !=
         std::end(k_pipeline_product_fields);
}

Key bound_key(const Entry& entry) {
  return {hash_fields(entry.id_fields), ir_hash(entry.ir_fields, ir_rule(entry.payload_kind))};
}

Result<void> check_key_binding(const Key& key, const std::vector<Field>& id_fields, const std::vector<Field>& ir_fields,
                               IrRule rule, bool ir_known) {
  if (hash_fields(id_fields) != key.id)
    return fail(Category::corruption,
                "its key ({}) does not match its id fields (they hash to {}): the record's entry point, "
                "specialization constants, options or policy were changed behind its key",
                key.id.hex().substr(0, 16), hash_fields(id_fields).hex().substr(0, 16));
  if (ir_known && ir_hash(ir_fields, rule) != key.ir)
    return fail(Category::corruption,
                "its key's ir ({}) does not match its ir fields (they hash to {}): the record's toolchain, "
                "expanded source or recipe were changed behind its key",
                key.ir.hex().substr(0, 16), ir_hash(ir_fields, rule).hex().substr(0, 16));
  return {};
}

Result<void> check_key_binding(const Entry& entry) {
  KCACHE_CHECK(check_key_binding(entry.key, entry.id_fields, entry.ir_fields, ir_rule(entry.payload_kind)));
  if (entry.payload_kind == PayloadKind::spirv) return check_validation(entry.id_fields, entry.validation);
  if (entry.validation != Validation::validated)
    return fail(Category::corruption, "a {} entry must be recorded as validated, not {}",
                payload_kind_name(entry.payload_kind), validation_name(entry.validation));
  return {};
}

Result<void> check_key_binding(const EntryHead& head) {
  return check_key_binding(head.key, head.id_fields, head.ir_fields, ir_rule(head.payload_kind));
}

Result<void> check_key_binding(const Failure& failure) {
  return check_key_binding(failure.key, failure.id_fields, failure.ir_fields, ir_rule(failure.phase), failure.ir_known);
}

std::optional<std::string> product_difference(const Entry& stored, const Entry& incoming) {
  auto short_hex = [](const Hash128& h) { return h.hex().substr(0, 16); };
  if (stored.payload_kind != incoming.payload_kind)
    return fmt::format("payload kind {} ≠ {}", payload_kind_name(stored.payload_kind),
                       payload_kind_name(incoming.payload_kind));
  if (stored.payload_digest != incoming.payload_digest)
    return fmt::format("payload {} ≠ {}", short_hex(stored.payload_digest), short_hex(incoming.payload_digest));
  if (stored.validation != incoming.validation)
    return fmt::format("validation {} ≠ {}", validation_name(stored.validation), validation_name(incoming.validation));
  if (stored.id_fields != incoming.id_fields) return std::string("id fields differ");
  if (stored.ir_fields != incoming.ir_fields) {
    for (const auto& f : stored.ir_fields)
      if (is_product_field(ir_rule(stored.payload_kind), f.first)) {
        const std::string* other = find_field(incoming.ir_fields, f.first);
        if (!other || *other != f.second)
          return fmt::format("{} {} ≠ {}", f.first, util::shown_untrusted(f.second),
                             other ? util::shown_untrusted(*other) : std::string("<absent>"));
      }
    return std::string("ir fields differ");
  }
  return std::nullopt;
}

}  // namespace kcache
