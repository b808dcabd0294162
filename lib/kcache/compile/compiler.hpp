// In-process compilation (docs/architecture.md "Modules"): glslang for GLSL/HLSL →
// SPIR-V, spvtools::Optimizer, spvtools::SpirvTools::Validate. This module is
// the only one that links glslang and SPIRV-Tools.
//
// Thread-safety: every function may be called from many threads at once;
// glslang's process-wide state is initialised once, on first use.
#pragma once

#include "kcache/core/timing.hpp"
#include "kcache/definition/definition.hpp"
#include "kcache/definition/kernel_spec.hpp"
#include "kcache/util/error.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kcache::compile {

/// Versions that go into every `ir` and into `kcache --version`.
struct ToolchainVersions {
  std::string glslang;      ///< e.g. "12.0.0"
  std::string spirv_tools;  ///< e.g. "v2023.1 ..."
};

/// The toolchain as keys see it: compiler versions and the optimiser's exact
/// pass list per level. installed() describes the glslang and SPIRV-Tools
/// linked in; a test passes another (a newer version string) to simulate an
/// upgrade without installing one.
class Toolchain {
 public:
  explicit Toolchain(ToolchainVersions versions);
  /// The linked-in compilers.
  static const Toolchain& installed();
  const ToolchainVersions& versions() const { return m_versions; }
  /// The toolchain fields hashed into `ir` for a kernel optimised at `level`.
  const std::vector<Field>& fields(definition::Optimize level) const;

 private:
  ToolchainVersions m_versions;
  std::vector<std::vector<Field>> m_fields;  ///< by Optimize
};

/// The versions of the linked-in glslang and SPIRV-Tools.
ToolchainVersions linked_versions();

/// Expands a kernel: runs glslang's preprocessor with the kernel's defines,
/// resolving `#include "x"` relative to the including file then the include
/// dirs, and `#include <x>` from the include dirs, reading through `files`.
/// compile_failed with the user's file:line when preprocessing fails.
Result<definition::Definition> expand(const definition::KernelSpec& spec, definition::FileCache& files,
                                      PhaseTimes& times);

/// A compiled kernel.
struct Compiled {
  std::vector<std::uint32_t> spirv;
  std::string warnings;  ///< glslang's warnings, if any, one per line
  /// How far it was validated (the kernel's `validate` policy), for its entry.
  Validation validation = Validation::validated;
  std::string validation_note;  ///< validator_unsupported: what spirv-val did not know (validation_note())
};

/// Compiles `def` (the exact bytes expand() read, its preamble included) to
/// SPIR-V, strips debug info when `spec.strip` (spvtools' strip-debug pass,
/// first, as glslc -O), optimises it at the kernel's level and validates it
/// for its target under `spec.validate`. Errors: compile_failed
/// (glslang/optimiser, messages name the user's file:line),
/// validation_failed (invalid module), validator_unsupported (the validator
/// does not know a capability or instruction the module uses, and the policy
/// is strict). Under "known" such a module is returned with
/// Compiled::validation = validator_unsupported; under "off" it is not
/// validated (not_validated).
Result<Compiled> compile(const definition::KernelSpec& spec, const definition::Definition& def, PhaseTimes& times);

/// The largest module validate() hands to spirv-val, in bytes and in
/// instructions. spirv-val's memory grows with both (about 150 bytes per
/// one-word instruction: a 128 MiB module of OpNoLine peaked at 5 GB after
/// 30 s), so a larger module is refused before it is parsed, and every
/// validation stays inside lib/kcache/bundle/FORMAT.md "Memory". Compilers
/// emit modules far below either.
inline constexpr std::size_t k_max_validated_module_bytes = 16u << 20;
inline constexpr std::size_t k_max_validated_instructions = 1u << 20;

/// Validates a module for a target env ("vulkan1.2"); used on import, by
/// verify, and by the runtime before it reflects a module. Links only
/// SPIRV-Tools' validator (validate.cpp), not glslang. validation_failed,
/// before spirv-val runs, for a module over k_max_validated_module_bytes or
/// k_max_validated_instructions.
Result<void> validate(std::span<const std::uint32_t> spirv, std::string_view target);

/// Validates a module under the policy it was stored with (its entry's
/// "validate" id field): strict = validate(); known = validate() but a
/// validator_unsupported result is accepted after check_structure(); off =
/// check_structure() only.
/// Returns what was found; `note`, when given, receives the validator's
/// message (validation_note()) for validator_unsupported.
Result<Validation> validate_under(std::span<const std::uint32_t> spirv, std::string_view target,
                                  definition::ValidatePolicy policy, std::string* note = nullptr);

/// What `validate = "off"` still checks: the 5-word header (magic, an id
/// bound in range), that every instruction's word count is non-zero and
/// fits, and that the result type and result id of every opcode the SPIR-V
/// headers know are non-zero and below the bound. validation_failed
/// otherwise. Says nothing about what the module means.
Result<void> check_structure(std::span<const std::uint32_t> spirv);

/// A validator message as an entry's validation_note: one line (control
/// characters become spaces, runs of spaces one), at most ~1 KiB.
std::string validation_note(std::string_view message);

/// Views payload bytes as SPIR-V words; corruption when the length is not a
/// multiple of 4 or the magic number is wrong.
Result<std::vector<std::uint32_t>> spirv_words(std::span<const std::uint8_t> bytes);

}  // namespace kcache::compile
