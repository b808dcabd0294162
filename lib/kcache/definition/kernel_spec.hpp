// KernelSpec: one fully expanded manifest kernel (defaults applied, one point
// of the variants' Cartesian product chosen). It holds every option that
// changes the compiled output; the manifest module produces it, the compile
// and pipeline modules consume it. Thread-safety: plain values.
#pragma once

#include "kcache/core/entry.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::definition {

/// Shader stage. Persisted by name (stage_name), never by value.
enum class Stage { compute, vertex, fragment, geometry, tess_control, tess_evaluation, task, mesh };
enum class Language { glsl, hlsl };
enum class Optimize { none, size, performance };

/// Manifest spelling of each enum ("compute", "hlsl", "performance").
std::string_view stage_name(Stage s);
std::string_view language_name(Language l);
std::string_view optimize_name(Optimize o);
std::optional<Stage> parse_stage(std::string_view s);
std::optional<Language> parse_language(std::string_view s);
std::optional<Optimize> parse_optimize(std::string_view s);

/// Supported target environments, "vulkan1.0" .. "vulkan1.3" (kcache::k_spirv_targets).
bool is_known_target(std::string_view target);
inline constexpr std::string_view k_default_target = "vulkan1.2";

/// A specialization constant: constant_id and a 32-bit value. `type` is the
/// manifest value's kind ("bool", "int", "float"); `bits` the 32-bit pattern
/// handed to the driver (VkBool32 for bool, two's complement, IEEE-754).
struct SpecConstant {
  std::uint32_t id = 0;
  std::string type;
  std::uint32_t bits = 0;
  std::string text;  ///< the value as written, for display and keys
  bool operator==(const SpecConstant&) const = default;
};

struct KernelSpec {
  std::string name;            ///< unique; "base[K=v,...]" for variants
  std::string base_name;       ///< the manifest's `name`
  std::vector<Field> variant;  ///< this variant's (key, value), sorted by key
  std::string source;          ///< relative to the manifest's folder, '/'-separated
  std::string entry = "main";
  Stage stage = Stage::compute;
  Language language = Language::glsl;
  std::vector<Field> defines;             ///< sorted by name; variant values included
  std::vector<std::string> include_dirs;  ///< relative to the manifest's folder
  std::string target = std::string(k_default_target);
  Optimize optimize = Optimize::performance;
  std::vector<SpecConstant> spec_constants;  ///< sorted by id
  int manifest_line = 0;                     ///< line of the [[kernel]] in the manifest
};

}  // namespace kcache::definition
