#include "kcache/store/gc.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <numeric>

namespace kcache::store {
namespace {

/// Splits "12h" into 12 and "h"; nullopt without a leading number.
std::optional<std::pair<double, std::string>> split_number(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return std::nullopt;
  std::string number(text.substr(0, i));
  char* end = nullptr;
  double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value) || value < 0) return std::nullopt;
  std::string unit(text.substr(i));
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::pair{value, unit};
}

}  // namespace

Result<std::uint64_t> parse_duration(std::string_view text) {
  auto bad = [&] {
    return fail(Category::invalid_argument,
                "'{}' is not a duration: write a whole number and a unit, s (seconds), m (minutes), h (hours), "
                "d (days) or w (weeks), e.g. 90m, 12h, 30d",
                text);
  };
  auto parts = split_number(text);
  if (!parts || parts->first != std::floor(parts->first)) return bad();
  static const std::pair<std::string_view, std::uint64_t> units[] = {
      {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}, {"w", 7 * 86400}};
  for (auto [unit, seconds] : units)
    if (parts->second == unit) {
      if (parts->first > 1e15 / static_cast<double>(seconds)) return bad();
      return static_cast<std::uint64_t>(parts->first) * seconds;
    }
  return bad();
}

Result<std::uint64_t> parse_size(std::string_view text) {
  auto bad = [&] {
    return fail(Category::invalid_argument,
                "'{}' is not a size: write a number and optionally K, M, G or T (powers of 1024), e.g. 500M, 2G", text);
  };
  auto parts = split_number(text);
  if (!parts) return bad();
  std::string unit = parts->second;
  if (unit.ends_with("ib")) unit.resize(unit.size() - 2);
  else if (unit.size() > 1 && unit.ends_with("b")) unit.pop_back();
  else if (unit == "b") unit.clear();
  static const std::pair<std::string_view, double> units[] = {
      {"", 1}, {"k", 1024.0}, {"m", 1024.0 * 1024}, {"g", 1024.0 * 1024 * 1024}, {"t", 1024.0 * 1024 * 1024 * 1024}};
  for (auto [name, factor] : units)
    if (unit == name) {
      double bytes = parts->first * factor;
      if (bytes > 1e18) return bad();
      return static_cast<std::uint64_t>(std::llround(bytes));
    }
  return bad();
}

std::string_view gc_reason_name(GcReason r) {
  switch (r) {
    case GcReason::stale: return "stale";
    case GcReason::orphan: return "orphan";
    case GcReason::older_than: return "older_than";
    case GcReason::unused_for: return "unused_for";
    case GcReason::max_size: return "max_size";
  }
  return "?";
}

GcPlan plan_gc(std::span<const GcCandidate> candidates, const GcRules& rules) {
  GcPlan plan;
  std::vector<std::size_t> scope;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (!rules.ns || candidates[i].ns == *rules.ns) scope.push_back(i);
  plan.scope_entries = scope.size();
  for (auto i : scope) plan.scope_bytes_before += candidates[i].bytes;

  auto age = [&](std::uint64_t t) { return rules.now > t ? rules.now - t : 0; };
  std::vector<bool> removed(candidates.size(), false);
  std::vector<bool> counted_fresh(candidates.size(), false);
  std::uint64_t remaining = plan.scope_bytes_before;
  auto take = [&](std::size_t i, GcReason why) {
    const auto& c = candidates[i];
    if (c.fresh && !rules.include_fresh) {
      if (!counted_fresh[i]) ++plan.kept_fresh, counted_fresh[i] = true;
      return;
    }
    removed[i] = true;
    remaining -= c.bytes;
    plan.remove.push_back({i, why});
  };

  for (auto i : scope) {
    const auto& c = candidates[i];
    std::optional<GcReason> why;
    if (rules.stale && c.stale) why = GcReason::stale;
    else if (rules.orphans && c.orphan) why = GcReason::orphan;
    else if (rules.older_than && age(c.created) >= *rules.older_than) why = GcReason::older_than;
    else if (rules.unused_for && age(c.last_used) >= *rules.unused_for) why = GcReason::unused_for;
    if (why) take(i, *why);
  }

  if (rules.max_size && remaining > *rules.max_size) {
    // Least recently used first; ties by age, then name, so a plan is
    // deterministic.
    std::vector<std::size_t> order;
    for (auto i : scope)
      if (!removed[i]) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const auto &x = candidates[a], &y = candidates[b];
      return std::tie(x.last_used, x.created, x.ns, x.kernel) < std::tie(y.last_used, y.created, y.ns, y.kernel);
    });
    for (auto i : order) {
      if (remaining <= *rules.max_size) break;
      take(i, GcReason::max_size);
    }
    plan.max_size_reached = remaining <= *rules.max_size;
  }
  plan.scope_bytes_after = remaining;
  return plan;
}

}  // namespace kcache::store
