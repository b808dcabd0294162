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
/// cuda: compiled by NVRTC to cubin/PTX (build/cuda_stage.hpp), never by glslang.
enum class Language { glsl, hlsl, cuda };
enum class Optimize { none, size, performance };
/// What a module must pass to be stored (manifest `validate`): strict =
/// spirv-val accepts it; known = spirv-val accepts it or only does not know a
/// capability/extension/opcode it uses (stored, flagged); off = not validated
/// (only its structure is checked). Persisted by name, never by value.
enum class ValidatePolicy { strict, known, off };

/// Manifest spelling of each enum ("compute", "hlsl", "performance").
std::string_view stage_name(Stage s);
std::string_view language_name(Language l);
std::string_view optimize_name(Optimize o);
std::string_view validate_policy_name(ValidatePolicy v);
std::optional<Stage> parse_stage(std::string_view s);
std::optional<Language> parse_language(std::string_view s);
std::optional<Optimize> parse_optimize(std::string_view s);
std::optional<ValidatePolicy> parse_validate_policy(std::string_view s);
/// The policy an entry was stored under, from its id fields ("validate";
/// absent in entries older than the field: strict, all kcache then knew).
ValidatePolicy recorded_validate_policy(const std::vector<Field>& id_fields);

/// A preamble as one printable line, for keys and display: '\\' → "\\\\",
/// '\n' → "\\n", '\t' → "\\t" (injective, so two preambles never share a key).
std::string escape_preamble(std::string_view text);

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
  /// sorted by name; variant values included. A name may be function-like
  /// ("TWICE(x)"); neither name nor value holds a control character.
  std::vector<Field> defines;
  std::vector<std::string> include_dirs;  ///< relative to the manifest's folder
  std::string target = std::string(k_default_target);
  Optimize optimize = Optimize::performance;
  std::vector<SpecConstant> spec_constants;  ///< sorted by id
  std::vector<std::string> extensions;       ///< `#extension NAME : enable` lines, in manifest order
  std::string preamble;       ///< text after #version (may hold '\n' and '\t', no other control character)
  std::string preamble_file;  ///< relative to the manifest's folder, "" for none; read after `preamble`
  bool strip = true;          ///< debug info removed (glslc -O's strip-debug pass); manifest default: optimize != none
  ValidatePolicy validate = ValidatePolicy::strict;
  /// A compile that gives warnings fails (glslc -Werror without -w). In the
  /// key, so an entry's warnings cannot be stripped to turn a failure into
  /// a hit: an honest entry under such a key has none.
  bool warnings_as_errors = false;
  int manifest_line = 0;  ///< line of the [[kernel]] in the manifest
  // language = "cuda" only (the GLSL-only fields above keep their defaults):
  std::vector<std::string> arch;           ///< "sm_90", "compute_90" (core/cuda.hpp), manifest order, no duplicates
  std::vector<std::string> nvrtc_options;  ///< extra NVRTC options, manifest order (manifest refuses the unsafe ones)
};

}  // namespace kcache::definition
