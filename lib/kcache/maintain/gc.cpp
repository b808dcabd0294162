#include "kcache/maintain/gc.hpp"

#include "kcache/maintain/entry_state.hpp"
#include "kcache/maintain/stats.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

namespace kcache::maintain {

Result<std::vector<store::GcCandidate>> gc_candidates(store::Store& store, const manifest::Manifest* manifest,
                                                      const compile::Toolchain& toolchain) {
  EntryClassifier classifier(manifest, toolchain);
  std::vector<store::GcCandidate> out;
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    for (const auto& info : KCACHE_TRY(reader.namespace_records())) {
      std::string ns = info.ns.name();
      KCACHE_CHECK(reader.scan_facts(ns, [&](Entry&& e, const store::EntryFacts& facts) {
        store::GcCandidate c;
        c.ns = ns;
        c.kernel = e.kernel;
        c.key = e.key;
        c.created = facts.usage && facts.usage->written ? facts.usage->written : e.created;
        c.last_used = facts.usage ? facts.usage->last_used : e.created;
        c.bytes = facts.record_bytes;
        auto state = classifier.classify(info.ns, e);
        c.orphan = state.state == EntryState::orphan;
        c.stale = state.state == EntryState::stale || state.toolchain_stale;
        // Protected: what a build of the manifest would hit, and the device
        // entries of its kernels (the manifest cannot say for which device).
        c.fresh = state.state == EntryState::fresh || (manifest && state.state == EntryState::unknown);
        out.push_back(std::move(c));
        return true;
      }));
      // Failure records go by the same rules (store/gc.hpp GcCandidate::failure).
      KCACHE_CHECK(reader.scan_failures(ns, [&](Failure&& f, std::size_t record_bytes) {
        store::GcCandidate c;
        c.ns = ns;
        c.kernel = f.kernel;
        c.key = f.key;
        c.created = c.last_used = f.created;
        c.bytes = record_bytes;
        c.failure = true;
        auto state = classifier.classify(info.ns, f);
        c.orphan = state.state == EntryState::orphan;
        c.stale = state.state == EntryState::stale || state.toolchain_stale;
        c.fresh = state.state == EntryState::fresh || (manifest && state.state == EntryState::unknown);
        out.push_back(std::move(c));
        return true;
      }));
    }
    return {};
  }));
  return out;
}

Result<store::RemoveSummary> apply_gc(store::Store& store, std::span<const store::GcCandidate> candidates,
                                      const store::GcPlan& plan) {
  // (namespace, failure records?) → what to remove there
  std::map<std::pair<std::string, bool>, std::vector<store::RemoveItem>> by_ns;
  for (const auto& v : plan.remove) {
    const auto& c = candidates[v.index];
    by_ns[{c.ns, c.failure}].push_back({c.kernel, c.key});
  }
  store::RemoveSummary total;
  for (const auto& [where, items] : by_ns) {
    const auto& [ns, failures] = where;
    auto done = failures ? store.remove_failures(ns, items) : store.remove_unchanged(ns, items);
    if (!done)
      return tl::unexpected(std::move(done).error().context(
          fmt::format("gc stopped after removing {} entries (namespace {} unchanged)", total.removed, ns)));
    total.removed += done->removed;
    total.changed += done->changed;
    total.absent += done->absent;
    total.record_bytes += done->record_bytes;
  }
  return total;
}

Result<std::uint64_t> stored_bytes(store::Store& store, const compile::Toolchain& toolchain) {
  std::uint64_t total = 0;
  for (const auto& c : KCACHE_TRY(gc_candidates(store, nullptr, toolchain))) total += c.bytes;
  return total;
}

Result<std::optional<std::uint64_t>> running_builds_since(store::Store& store, const store::Lease* own) {
  auto since = store.oldest_lease(own);
  if (!since) return tl::unexpected(std::move(since).error().context("reading the leases of running builds"));
  return since;
}

Result<std::optional<Eviction>> evict_to_limit(store::Store& store, const manifest::Manifest& manifest,
                                               const compile::Toolchain& toolchain, std::uint64_t limit,
                                               std::uint64_t now, const store::Lease* own) {
  // The pages in use hold every entry's bytes and more: within the limit,
  // the entries are too, and a warm build pays no scan.
  auto space = KCACHE_TRY(store.space());
  const std::uint64_t pages_in_use = space.pages_used > space.pages_free ? space.pages_used - space.pages_free : 0;
  if (space.page_size && pages_in_use * space.page_size <= limit) return std::optional<Eviction>{};
  auto candidates = KCACHE_TRY(gc_candidates(store, &manifest, toolchain));
  store::GcRules rules;
  rules.max_size = limit;
  rules.now = now;
  // After the scan: a build that wrote what the scan saw held its lease first.
  rules.leased_since = KCACHE_TRY(running_builds_since(store, own));
  Eviction out;
  out.limit = limit;
  out.plan = store::plan_gc(candidates, rules);
  if (out.plan.scope_bytes_before <= limit) return std::optional<Eviction>{};
  out.removed = KCACHE_TRY(apply_gc(store, candidates, out.plan));
  for (const auto& v : out.plan.remove)
    out.names.push_back(fmt::format("{} {}", candidates[v.index].ns, candidates[v.index].kernel));
  if (out.removed.removed > 0) {
    // The eviction's own run record: `kcache stats` counts what max_size
    // took, whoever applied it.
    store::UsageBatch batch;
    batch.time = now;
    store::RunRecord run;
    run.time = now;
    run.command = std::string(k_eviction_command);
    run.evicted = static_cast<std::uint32_t>(out.removed.removed);
    run.evicted_bytes = out.removed.record_bytes;
    batch.run = std::move(run);
    KCACHE_CHECK(store.record_usage(batch));
  }
  return std::optional(std::move(out));
}

}  // namespace kcache::maintain
