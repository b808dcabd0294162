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
};

/// Compiles `def` (the exact bytes expand() read) to SPIR-V, optimises it at
/// the kernel's level and validates it for its target. Errors:
/// compile_failed (glslang/optimiser, messages name the user's file:line),
/// validation_failed (invalid module), validator_unsupported (the validator
/// does not know a capability or instruction the module uses).
Result<Compiled> compile(const definition::KernelSpec& spec, const definition::Definition& def, PhaseTimes& times);

/// Validates a module for a target env ("vulkan1.2"); used on import.
Result<void> validate(std::span<const std::uint32_t> spirv, std::string_view target);

/// Views payload bytes as SPIR-V words; corruption when the length is not a
/// multiple of 4 or the magic number is wrong.
Result<std::vector<std::uint32_t>> spirv_words(std::span<const std::uint8_t> bytes);

}  // namespace kcache::compile
