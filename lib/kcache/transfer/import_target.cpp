// Which fingerprint each section of an imported bundle must match: a device, a --fingerprint, or its own.
#include "kcache/transfer/import_internal.hpp"

#include "kcache/core/cuda.hpp"
#include "kcache/cuda_device/cuda_device.hpp"
#include "kcache/device/device.hpp"
#include "kcache/util/text.hpp"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kcache::transfer::internal {
namespace {

/// A cuda bundle's target: its own record (a cubin serves every device of
/// its arch), checked against a CUDA device when one is named.
Result<Target> resolve_cuda_target(const Namespace& bundle_ns, const ImportTarget& t) {
  if (t.fingerprint && *t.fingerprint != bundle_ns.fingerprint)
    return fail(Category::fingerprint_mismatch,
                "bundle namespace {} does not match the target: arch: bundle {} ≠ target {}", bundle_ns.name(),
                bundle_ns.fingerprint, util::escape_untrusted(*t.fingerprint));
  if (!t.device) return Target{bundle_ns.record, fmt::format("its own arch {}", bundle_ns.fingerprint)};
  std::vector<cuda_device::DeviceInfo> devices;
  if (t.cuda_devices) {
    devices = *t.cuda_devices;
  } else {
    auto found = cuda_device::survey(t.cuda_library);
    if (!found.available())
      return fail(Category::device_unavailable, "cannot check cuda bundle {} against this machine: {}",
                  bundle_ns.name(), found.absent);
    devices = std::move(found.devices);
  }
  auto dev = KCACHE_TRY(cuda_device::select_device(devices, *t.device));
  KCACHE_CHECK(cuda_device::check_runs(bundle_ns.record, dev));
  return Target{bundle_ns.record,
                fmt::format("CUDA device {} '{}' (compute capability {}, CUDA {})", dev.ordinal, dev.name,
                            dev.compute_capability(), cuda_device::cuda_version_text(dev.cuda_version))};
}

Result<Target> resolve_target(store::Store& store, const Namespace& bundle_ns, const ImportTarget& t) {
  if (bundle_ns.backend == k_cuda_backend) return resolve_cuda_target(bundle_ns, t);
  if (bundle_ns.backend == "spirv") {
    if (t.device)
      return fail(Category::invalid_argument,
                  "--device applies to vulkan bundles; this bundle is {} (portable SPIR-V): use --fingerprint "
                  "TARGET_ENV to require a target environment",
                  bundle_ns.name());
    // SPIR-V is portable: without an explicit target, the bundle's own
    // target environment is what every module is validated against.
    if (!t.fingerprint) return Target{bundle_ns.record, fmt::format("its own target {}", bundle_ns.fingerprint)};
    return Target{spirv_namespace(*t.fingerprint).record, fmt::format("--fingerprint {}", *t.fingerprint)};
  }
  if (t.fingerprint) {
    if (*t.fingerprint == bundle_ns.fingerprint)
      return Target{bundle_ns.record, fmt::format("--fingerprint {}", *t.fingerprint)};
    // The store may know the full record of the wanted namespace: then every
    // differing field can be named, not just the fingerprint id.
    std::optional<Namespace> known;
    KCACHE_CHECK(store.read([&](store::Reader& r) -> Result<void> {
      for (auto& info : KCACHE_TRY(r.namespace_records()))
        if (info.ns.backend == bundle_ns.backend && info.ns.fingerprint == *t.fingerprint) known = info.ns;
      return {};
    }));
    if (known) return Target{known->record, fmt::format("namespace {} of the store", known->name())};
    FingerprintRecord only_id{{{"fingerprint", *t.fingerprint}}};
    FingerprintRecord bundle_id{{{"fingerprint", bundle_ns.fingerprint}}};
    return fail(Category::fingerprint_mismatch, "bundle namespace {} does not match the target: {}", bundle_ns.name(),
                describe_differences(diff_fingerprints(bundle_id, only_id), "bundle", "target"));
  }
  auto dev = device::select_device_or_default(t.device.value_or(""));
  if (!dev) {
    auto e = std::move(dev).error();
    if (e.category == Category::device_unavailable)
      e.message = fmt::format(
          "cannot check vulkan bundle {} against this machine: {} (or pass --fingerprint FP "
          "to import for a known fingerprint)",
          bundle_ns.name(), e.message);
    return tl::unexpected(std::move(e));
  }
  return Target{dev->record(), fmt::format("device '{}' ({})", dev->name, dev->fingerprint())};
}

}  // namespace

/// The target a section of a bundle is checked against. In a release, a
/// SPIR-V section is portable (its own target environment); --device and
/// --fingerprint name the device the release's vulkan and CUDA sections are
/// for.
ImportTarget section_target(const ImportTarget& given, const Namespace& ns, bool in_release) {
  if (in_release && ns.backend == "spirv") return {};
  return given;
}

/// The namespace a section's entries go to. A vulkan bundle of fingerprint
/// schema 1 (its record names one card) goes to its compatibility class,
/// where every card of that GPU model and driver finds it.
Namespace destination(const Namespace& ns) { return ns.backend == "vulkan" ? vulkan_namespace(ns.record) : ns; }

/// Checks `ns` (a section as the bundle has it) against its target; the
/// target in words.
Result<Target> check_target(store::Store& store, const Namespace& ns, const ImportTarget& t, const std::string& label) {
  auto target = KCACHE_TRY(resolve_target(store, destination(ns), t));
  if (auto diffs = diff_fingerprints(compatible_record(ns.record), compatible_record(target.record)); !diffs.empty())
    return fail(Category::fingerprint_mismatch, "{} ({}) does not match {}: {}", label, ns.name(), target.text,
                describe_differences(diffs, "bundle", "target"));
  return target;
}

}  // namespace kcache::transfer::internal
