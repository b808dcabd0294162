#include "kcache/definition/kernel_spec.hpp"

#include "kcache/core/namespace.hpp"

#include <array>
#include <utility>

namespace kcache::definition {
namespace {

template <typename E, std::size_t N>
std::optional<E> lookup(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view s) {
  for (const auto& [value, name] : table)
    if (name == s) return value;
  return std::nullopt;
}

template <typename E, std::size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& table, E e) {
  for (const auto& [value, name] : table)
    if (value == e) return name;
  return "?";
}

constexpr std::array<std::pair<Stage, std::string_view>, 8> k_stages{{
    {Stage::compute, "compute"},
    {Stage::vertex, "vertex"},
    {Stage::fragment, "fragment"},
    {Stage::geometry, "geometry"},
    {Stage::tess_control, "tess_control"},
    {Stage::tess_evaluation, "tess_evaluation"},
    {Stage::task, "task"},
    {Stage::mesh, "mesh"},
}};
constexpr std::array<std::pair<Language, std::string_view>, 3> k_languages{{
    {Language::glsl, "glsl"},
    {Language::hlsl, "hlsl"},
    {Language::cuda, "cuda"},
}};
constexpr std::array<std::pair<Optimize, std::string_view>, 3> k_optimize{{
    {Optimize::none, "none"},
    {Optimize::size, "size"},
    {Optimize::performance, "performance"},
}};
constexpr std::array<std::pair<ValidatePolicy, std::string_view>, 3> k_validate{{
    {ValidatePolicy::strict, "strict"},
    {ValidatePolicy::known, "known"},
    {ValidatePolicy::off, "off"},
}};

}  // namespace

std::string_view stage_name(Stage s) { return name_of(k_stages, s); }
std::string_view language_name(Language l) { return name_of(k_languages, l); }
std::string_view optimize_name(Optimize o) { return name_of(k_optimize, o); }
std::optional<Stage> parse_stage(std::string_view s) { return lookup(k_stages, s); }
std::optional<Language> parse_language(std::string_view s) { return lookup(k_languages, s); }
std::optional<Optimize> parse_optimize(std::string_view s) { return lookup(k_optimize, s); }
std::string_view validate_policy_name(ValidatePolicy v) { return name_of(k_validate, v); }
std::optional<ValidatePolicy> parse_validate_policy(std::string_view s) { return lookup(k_validate, s); }

ValidatePolicy recorded_validate_policy(const std::vector<Field>& id_fields) {
  for (const auto& [k, v] : id_fields)
    if (k == "validate") return parse_validate_policy(v).value_or(ValidatePolicy::strict);
  return ValidatePolicy::strict;
}

std::string escape_preamble(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  return out;
}

bool is_known_target(std::string_view t) { return kcache::is_known_spirv_target(t); }

}  // namespace kcache::definition
