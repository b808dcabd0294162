#include "kcache/core/timing.hpp"

namespace kcache {

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::expand: return "expand";
    case Phase::hash: return "hash";
    case Phase::lookup: return "lookup";
    case Phase::glslang: return "glslang";
    case Phase::spirv_opt: return "spirv-opt";
    case Phase::spirv_val: return "spirv-val";
    case Phase::pipeline: return "pipeline";
    case Phase::store: return "store";
    case Phase::nvrtc: return "nvrtc";
  }
  return "?";
}

}  // namespace kcache
