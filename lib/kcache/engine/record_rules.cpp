// The registry of the stages' read-side rules (contract in record_rules.hpp).
#include "kcache/engine/record_rules.hpp"

#include "kcache/engine/stage.hpp"

#include <array>

namespace kcache::engine {

std::optional<Change> RecordRules::stale_namespace(const Namespace&) const { return std::nullopt; }

std::vector<Change> RecordRules::toolchain_changes(const Recorded&, const compile::Toolchain&) const { return {}; }

std::span<const RecordRules* const> all_record_rules() {
  static const std::array<const RecordRules*, 3> rules = {&spirv_record_rules(), &pipeline_record_rules(),
                                                          &cuda_record_rules()};
  return rules;
}

const RecordRules* record_rules(std::string_view backend) {
  for (const RecordRules* rules : all_record_rules())
    if (rules->backend() == backend) return rules;
  return nullptr;
}

}  // namespace kcache::engine
