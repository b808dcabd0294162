#include "kcache/maintain/entry_state.hpp"

#include "kcache/build/cuda_stage.hpp"
#include "kcache/build/explain.hpp"
#include "kcache/core/cuda.hpp"

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
    if (k.language == definition::Language::cuda)
      for (const auto& arch : k.arch) m_wanted[{cuda_namespace(arch).name(), k.name}] = &k;
    else m_wanted[{spirv_namespace(k.target).name(), k.name}] = &k;
    m_by_name.emplace(k.name, &k);
  }
}

const definition::KernelSpec* EntryClassifier::wanted(const std::string& ns, const std::string& kernel) const {
  auto it = m_wanted.find({ns, kernel});
  return it == m_wanted.end() ? nullptr : it->second;
}

Classification EntryClassifier::classify(const Namespace& ns, const Entry& entry) {
  return classify_recorded(ns, entry.kernel, build::toolchain_changes(entry, m_toolchain),
                           [&](const definition::KernelSpec& spec) {
                             if (ns.backend == k_cuda_backend)
                               return build::assess_cuda(spec, ns.fingerprint, build::recorded(entry), *m_files);
                             return build::assess(spec, entry, *m_files, m_toolchain);
                           });
}

Classification EntryClassifier::classify(const Namespace& ns, const Failure& failure) {
  return classify_recorded(ns, failure.kernel, build::toolchain_changes(failure, m_toolchain),
                           [&](const definition::KernelSpec& spec) {
                             if (ns.backend == k_cuda_backend)
                               return build::assess_cuda(spec, ns.fingerprint, build::recorded(failure), *m_files);
                             return build::assess(spec, failure, *m_files, m_toolchain);
                           });
}

Classification EntryClassifier::classify_recorded(
    const Namespace& ns, const std::string& kernel, std::vector<build::Change> toolchain,
    const std::function<build::Assessment(const definition::KernelSpec&)>& assess) {
  Classification c;
  if (ns.backend == "vulkan" && has_per_card_fields(ns.record)) {
    c.state = EntryState::stale;
    c.toolchain_stale = true;
    c.changes.push_back({"fingerprint", "schema 1 (one card: deviceUUID in the id)",
                         "schema 2 (GPU model and driver): " + vulkan_namespace(ns.record).name()});
    return c;
  }
  c.toolchain_stale = !toolchain.empty();
  if (!m_manifest) {
    if (c.toolchain_stale) {
      c.state = EntryState::stale;
      c.changes = std::move(toolchain);
    }
    return c;
  }
  if (!m_by_name.contains(kernel)) {
    c.state = EntryState::orphan;
    return c;
  }
  // A device namespace: the manifest names its kernels but not the device.
  if (ns.backend != "spirv" && ns.backend != k_cuda_backend) return c;
  const definition::KernelSpec* spec = wanted(ns.name(), kernel);
  if (!spec) {
    c.state = EntryState::orphan;  // built for a target the manifest no longer uses for it
    return c;
  }
  auto a = assess(*spec);
  c.state = a.state == build::Freshness::fresh ? EntryState::fresh : EntryState::stale;
  if (c.state == EntryState::stale) c.changes = build::essential_changes(std::move(a.changes));
  return c;
}

}  // namespace kcache::maintain
