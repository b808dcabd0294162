#include "kcache/pipeline/collect.hpp"

#include "kcache/pipeline/explain.hpp"
#include "kcache/pipeline/freshness.hpp"

#include <map>
#include <set>

namespace kcache::pipeline {

Result<std::vector<store::GcCandidate>> gc_candidates(store::Store& store, const manifest::Manifest* manifest) {
  std::map<std::string, const definition::KernelSpec*> by_name;
  if (manifest)
    for (const auto& k : manifest->kernels) by_name.emplace(k.name, &k);
  std::optional<definition::FileCache> files;
  if (manifest) files.emplace(manifest->root);

  std::vector<store::GcCandidate> out;
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    for (const auto& info : KCACHE_TRY(reader.namespaces())) {
      std::string ns = info.ns.name();
      KCACHE_CHECK(reader.scan_facts(ns, [&](Entry&& e, const store::EntryFacts& facts) {
        store::GcCandidate c;
        c.ns = ns;
        c.kernel = e.kernel;
        c.key = e.key;
        c.created = facts.usage && facts.usage->written ? facts.usage->written : e.created;
        c.last_used = facts.usage ? facts.usage->last_used : e.created;
        c.bytes = facts.record_bytes;
        c.stale = !toolchain_changes(e).empty();
        if (manifest) {
          auto it = by_name.find(e.kernel);
          if (it == by_name.end()) {
            c.orphan = true;
          } else if (info.ns.backend == "spirv") {
            if (spirv_namespace(it->second->target).name() != ns) c.orphan = true;
            else if (!c.stale) {
              auto a = assess(*it->second, e, *files);
              c.fresh = a.state == Freshness::fresh;
              c.stale = !c.fresh;
            }
          } else {
            c.fresh = true;
          }
        }
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
  std::map<std::string, std::vector<store::RemoveItem>> by_ns;
  for (const auto& v : plan.remove) {
    const auto& c = candidates[v.index];
    by_ns[c.ns].push_back({c.kernel, c.key});
  }
  store::RemoveSummary total;
  for (const auto& [ns, items] : by_ns) {
    auto done = store.remove_unchanged(ns, items);
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

}  // namespace kcache::pipeline
