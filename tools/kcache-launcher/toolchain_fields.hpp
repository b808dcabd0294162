// The toolchain fields of this build's glslang and SPIRV-Tools, by
// optimisation level, recorded at build time (toolchain_fields_gen.cpp): what
// compile::Toolchain::installed().fields() gives in `kcache`, known here
// without linking either compiler.
#pragma once

#include "kcache/core/entry.hpp"
#include "kcache/definition/kernel_spec.hpp"

#include <vector>

namespace kcache::launcher_tool {

std::vector<Field> toolchain_fields(definition::Optimize level);

}  // namespace kcache::launcher_tool
