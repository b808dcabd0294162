// Pieces of JSON more than one report of this module renders.
// Internal to report/. Thread-safety: pure functions.
#pragma once

#include "kcache/build/freshness.hpp"

#include <nlohmann/json.hpp>

#include <vector>

namespace kcache::report::internal {

/// [{"field", "kind", "stored", "current"}, ...]: why an entry is stale.
nlohmann::json changes_json(const std::vector<build::Change>& changes);

}  // namespace kcache::report::internal
