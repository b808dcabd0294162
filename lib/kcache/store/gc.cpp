#include "kcache/store/gc.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kcache::store {
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
  std::vector<bool> counted_kept(candidates.size(), false);
  std::uint64_t remaining = plan.scope_bytes_before;
  auto take = [&](std::size_t i, GcReason why) {
    const auto& c = candidates[i];
    if (c.fresh && !rules.include_fresh) {
      if (!counted_kept[i]) ++plan.kept_fresh, counted_kept[i] = true;
      return;
    }
    if (rules.leased_since && std::max(c.created, c.last_used) >= *rules.leased_since) {
      if (!counted_kept[i]) ++plan.kept_leased, counted_kept[i] = true;
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
