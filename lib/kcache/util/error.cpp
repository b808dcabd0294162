#include "kcache/util/error.hpp"

namespace kcache {

std::string_view category_name(Category c) {
  switch (c) {
    case Category::not_found: return "not_found";
    case Category::invalid_argument: return "invalid_argument";
    case Category::corruption: return "corruption";
    case Category::io_error: return "io_error";
    case Category::version_mismatch: return "version_mismatch";
    case Category::fingerprint_mismatch: return "fingerprint_mismatch";
    case Category::compile_failed: return "compile_failed";
    case Category::validation_failed: return "validation_failed";
    case Category::validator_unsupported: return "validator_unsupported";
    case Category::device_unavailable: return "device_unavailable";
    case Category::store_full: return "store_full";
    case Category::read_only: return "read_only";
    case Category::busy: return "busy";
    case Category::ambiguous: return "ambiguous";
  }
  return "unknown";
}

}  // namespace kcache
