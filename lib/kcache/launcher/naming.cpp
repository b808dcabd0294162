// Naming a planned command (launcher.hpp): the one-kernel spec it becomes,
// its kernel name and its validate policy.
#include "kcache/launcher/launcher.hpp"

#include "kcache/definition/definition.hpp"

#include <cctype>

namespace kcache::launcher {
namespace {

namespace fs = std::filesystem;

/// The source path relative to the root as a kernel name can hold it: '/'
/// written as '.', other characters a name cannot hold as '_'.
std::string name_of_source(const fs::path& rel) {
  std::string name;
  for (const auto& part : rel) {
    if (!name.empty()) name += '.';
    for (char c : part.string())
      name += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ? c : '_';
  }
  while (name.starts_with('.')) name.erase(0, 1);
  return name.empty() ? std::string("module") : name;
}

}  // namespace

definition::KernelSpec kernel_spec(const Plan& plan, const fs::path& root, std::string name,
                                   definition::ValidatePolicy validate) {
  const auto& c = plan.command;
  definition::KernelSpec spec;
  spec.name = name;
  spec.base_name = std::move(name);
  spec.source = plan.source.lexically_relative(root).generic_string();
  spec.entry = c.entry;
  spec.stage = c.stage;
  spec.language = c.language;
  spec.defines = c.defines;
  for (const auto& dir : plan.include_dirs) {
    auto rel = dir.lexically_relative(root).generic_string();
    spec.include_dirs.push_back(rel.empty() ? "." : rel);
  }
  spec.target = c.target;
  spec.optimize = c.optimize;
  spec.strip = c.strip;
  spec.warnings_as_errors = c.warnings_as_errors && !c.suppress_warnings;
  spec.validate = validate;
  return spec;
}

std::string kernel_name(const Plan& plan, const fs::path& root, definition::ValidatePolicy validate) {
  // The identity hash of the one-kernel spec under a fixed name: every
  // option that changes the module, paths relative to the root.
  const std::string options = definition::compute_id(kernel_spec(plan, root, "k", validate)).hash.hex().substr(0, 16);
  std::string name = name_of_source(plan.source.lexically_relative(root));
  // Within the store's key limit: a long path keeps its end; the options
  // hash, which covers the whole path, keeps two long paths apart.
  const std::size_t room = k_max_kernel_name - options.size() - 1;
  if (name.size() > room) name = name.substr(name.size() - room);
  return name + "@" + options;
}

definition::ValidatePolicy validate_policy(const Plan& plan, const fs::path& root,
                                           const std::vector<settings::ValidateRule>& rules) {
  if (rules.empty()) return definition::ValidatePolicy::strict;
  const fs::path& file = plan.output ? *plan.output : plan.source;
  return settings::validate_policy_for(rules, file.lexically_relative(root).generic_string());
}

}  // namespace kcache::launcher
