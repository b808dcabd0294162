// Pieces more than one report of this module renders, and the two ways a
// report leaves it: JSON through json_text, text through terminal_text
// (report.hpp). Internal to report/. Thread-safety: pure functions.
#pragma once

#include "kcache/engine/freshness.hpp"
#include "kcache/engine/secondary.hpp"
#include "kcache/report/report.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kcache::report::internal {

/// [{"field", "kind", "stored", "current"}, ...]: why an entry is stale.
nlohmann::json changes_json(const std::vector<engine::Change>& changes);

/// The one way a report becomes JSON: indented, one trailing newline. Never
/// throws: strings from a store or bundle may hold invalid UTF-8, which is
/// written as U+FFFD rather than failing the command after it acted (gc).
std::string json_text(const nlohmann::json& j);
std::string json_text(const nlohmann::ordered_json& j);

/// What each remote of a build did, as build_json's "remotes" array
/// (remote_report.cpp).
nlohmann::json remotes_value(const std::vector<engine::SecondaryStats>& remotes);

}  // namespace kcache::report::internal
