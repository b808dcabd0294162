// The report of `kcache build --check-reproducible` (build/reproducible.hpp),
// as text and JSON. Every string ends with a newline.
//
// Thread-safety: pure functions over their arguments.
#pragma once

#include "kcache/engine/reproducible.hpp"

#include <string>

namespace kcache::report {

/// One line per kernel that is not reproducible (name, both sizes and
/// digests, the first differing byte) or failed, then the counts and a
/// verdict; a clean run is the counts line only.
std::string reproducible_text(const engine::ReproducibleResult& result);

/// Schema "kcache.reproducible/1": {"kernels": [{kernel, namespace, key:
/// {id, ir}, state, bytes: [a, b], digests: [a, b], first_difference?,
/// error?}], "counts": {reproducible, differs, failed}, "differs": [names],
/// "wall_ms"}.
std::string reproducible_json(const engine::ReproducibleResult& result);

}  // namespace kcache::report
