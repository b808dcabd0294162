#include "kcache/maintain/entry_state.hpp"

#include "kcache/engine/explain.hpp"
#include "kcache/engine/record_rules.hpp"

namespace kcache::maintain {

std::string_view entry_state_name(EntryState s) {
  switch (s) {
    case EntryState::unknown: return "-";
    case EntryState::fresh: return "fresh";
    case EntryState::stale: return "stale";
    case EntryState::orphan: return "orphan";
  }
  return "?";
}

EntryClassifier::EntryClassifier(const manifest::Manifest* manifest, const compile::Toolchain& toolchain)
    : m_manifest(manifest), m_toolchain(toolchain) {
  if (!manifest) return;
  m_files.emplace(manifest->root);
  for (const auto& k : manifest->kernels) {
    for (const engine::RecordRules* rules : engine::all_record_rules())
      for (auto& ns : rules->namespaces_of(k)) m_wanted[{std::move(ns), k.name}] = &k;
    m_by_name.emplace(k.name, &k);
  }
}

const definition::KernelSpec* EntryClassifier::wanted(const std::string& ns, const std::string& kernel) const {
  auto it = m_wanted.find({ns, kernel});
  return it == m_wanted.end() ? nullptr : it->second;
}

Classification EntryClassifier::classify(const Namespace& ns, const Entry& entry) {
  return classify_recorded(ns, entry.kernel, engine::recorded(entry));
}

Classification EntryClassifier::classify(const Namespace& ns, const Failure& failure) {
  return classify_recorded(ns, failure.kernel, engine::recorded(failure));
}

Classification EntryClassifier::classify_recorded(const Namespace& ns, const std::string& kernel,
                                                  const engine::Recorded& stored) {
  Classification c;
  // A backend no stage of this kcache writes (a newer kcache's): unknown.
  const engine::RecordRules* rules = engine::record_rules(ns.backend);
  if (!rules) return c;
  if (auto why = rules->stale_namespace(ns)) {
    c.state = EntryState::stale;
    c.toolchain_stale = true;
    c.changes.push_back(std::move(*why));
    return c;
  }
  auto toolchain = rules->toolchain_changes(stored, m_toolchain);
  c.toolchain_stale = !toolchain.empty();
  if (!m_manifest) {
    if (c.toolchain_stale) {
      c.state = EntryState::stale;
      c.changes = std::move(toolchain);
    }
    return c;
  }
  auto named = m_by_name.find(kernel);
  if (named == m_by_name.end()) {
    c.state = EntryState::orphan;
    return c;
  }
  // A namespace the manifest does not place kernels in (a device's): the
  // manifest names the kernel but not the device.
  if (rules->namespaces_of(*named->second).empty()) return c;
  const definition::KernelSpec* spec = wanted(ns.name(), kernel);
  if (!spec) {
    c.state = EntryState::orphan;  // built for a target (or arch) the manifest no longer uses for it
    return c;
  }
  auto a = rules->assess(*spec, ns, stored, *m_files, m_toolchain);
  c.state = a.state == engine::Freshness::fresh ? EntryState::fresh : EntryState::stale;
  if (c.state == EntryState::stale) c.changes = engine::essential_changes(std::move(a.changes));
  return c;
}

}  // namespace kcache::maintain
