// Shared by compiler.cpp and validate.cpp, inside the compile module only.
// The validator lives in its own source file so that linking validate()
// (the runtime library does, before reflecting a module) pulls in
// SPIRV-Tools' validator but not glslang. Thread-safety: pure functions.
#pragma once

#include "kcache/core/namespace.hpp"

#include <spirv-tools/libspirv.h>

#include <string_view>

namespace kcache::compile {

/// The row of core's target table (k_spirv_targets) for `target`; an
/// unknown target is read as vulkan1.2 (targets are checked where they are
/// parsed).
const SpirvTarget& target_row(std::string_view target);

/// SPIRV-Tools' environment for a SPIR-V target ("vulkan1.2"), as target_row
/// reads it.
spv_target_env tools_env(std::string_view target);

/// A validator message that means "I do not know this" rather than "this is
/// invalid": the module may be fine for a newer toolchain or a driver.
bool is_unsupported_by_validator(std::string_view message);

}  // namespace kcache::compile
