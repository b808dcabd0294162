#include "kcache/maintain/inspect.hpp"

#include "kcache/device/device.hpp"
#include "kcache/engine/record_rules.hpp"
#include "kcache/util/worker_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <set>

namespace kcache::maintain {

Result<StoreReport> inspect_store(store::Store& store, const manifest::Manifest* manifest,
                                  const compile::Toolchain& toolchain) {
  StoreReport report;
  report.with_manifest = manifest != nullptr;
  EntryClassifier classifier(manifest, toolchain);
  std::set<std::pair<std::string, std::string>> seen;

  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    report.namespaces = KCACHE_TRY(reader.namespaces());
    for (const auto& info : report.namespaces) {
      std::string ns = info.ns.name();
      NamespaceSummary summary;
      summary.ns = ns;
      KCACHE_CHECK(reader.scan_facts(ns, [&](Entry&& e, const store::EntryFacts& facts) {
        EntryRow row{ns, e.kernel, e.key, e.payload.size(), e.created, e.origin_kind, e.origin_detail};
        row.record_bytes = facts.record_bytes;
        if (facts.usage) row.written = facts.usage->written, row.last_used = facts.usage->last_used;
        ++summary.entries;
        summary.record_bytes += facts.record_bytes;
        summary.payload_bytes += e.payload.size();
        summary.oldest = summary.entries == 1 ? e.created : std::min(summary.oldest, e.created);
        summary.newest = std::max(summary.newest, e.created);
        summary.last_used = std::max(summary.last_used, row.last_used);
        auto origin = std::find_if(summary.origins.begin(), summary.origins.end(), [&](const OriginSummary& o) {
          return o.kind == e.origin_kind && o.detail == e.origin_detail;
        });
        if (origin == summary.origins.end())
          origin = summary.origins.insert(summary.origins.end(), OriginSummary{e.origin_kind, e.origin_detail});
        ++origin->entries;
        origin->latest_written = std::max(origin->latest_written, row.written);
        auto c = classifier.classify(info.ns, e);
        row.state = c.state;
        row.changes = std::move(c.changes);
        if (c.state == EntryState::fresh || c.state == EntryState::stale) seen.insert({ns, e.kernel});
        report.entries.push_back(std::move(row));
        return true;
      }));
      KCACHE_CHECK(reader.scan_failures(ns, [&](Failure&&, std::size_t) {
        ++summary.failure_records;
        return true;
      }));
      report.summaries.push_back(std::move(summary));
    }
    report.damaged = reader.damaged();
    return {};
  }));
  for (const auto& [key, spec] : classifier.wanted())
    if (!seen.count(key)) report.missing.push_back(key);
  for (const auto& e : report.entries) ++report.state_counts[e.state];
  report.missing_count = report.missing.size();
  return report;
}

namespace {

/// Why a cuda namespace is foreign here, by the rule `verify --device cuda:N`
/// uses (cuda_device::check_runs); nullopt when some local device runs it.
std::optional<std::string> cuda_foreign_reason(const Namespace& ns,
                                               const Result<std::vector<cuda_device::DeviceInfo>>& devices) {
  if (!devices) return "no local CUDA device to match: " + devices.error().message;
  if (devices->empty()) return std::string("no local CUDA device to match");
  std::string why;
  for (const auto& d : *devices) {
    auto runs = cuda_device::check_runs(ns.record, d);
    if (runs) return std::nullopt;
    why += (why.empty() ? "" : "; ") + runs.error().message;  // names the device
  }
  return "runs on none of this machine's CUDA devices: " + why;
}

}  // namespace

void mark_foreign(StoreReport& report, const manifest::Manifest* manifest,
                  const Result<std::vector<FingerprintRecord>>& local_devices,
                  const Result<std::vector<cuda_device::DeviceInfo>>& cuda_devices) {
  std::set<std::string> targets;
  if (manifest)
    for (const auto& k : manifest->kernels) targets.insert(spirv_namespace(k.target).name());
  for (std::size_t i = 0; i < report.namespaces.size() && i < report.summaries.size(); ++i) {
    const Namespace& ns = report.namespaces[i].ns;
    NamespaceSummary& summary = report.summaries[i];
    summary.foreign = false;  // decided afresh, so that a report can be marked again
    summary.foreign_reason.clear();
    if (ns.backend == "spirv") {
      if (manifest && !targets.count(ns.name())) {
        summary.foreign = true;
        summary.foreign_reason = fmt::format("no kernel of {} targets {}", manifest->path.string(), ns.fingerprint);
      }
    } else if (ns.backend == k_cuda_backend) {
      if (auto why = cuda_foreign_reason(ns, cuda_devices)) {
        summary.foreign = true;
        summary.foreign_reason = std::move(*why);
      }
    } else if (has_per_card_fields(ns.record)) {
      summary.foreign = true;
      summary.foreign_reason = fmt::format(
          "fingerprint schema changed: this namespace's id named one card (deviceUUID); its GPU model and driver "
          "are now {} — rebuild or re-import there; kcache gc --stale removes these entries",
          vulkan_namespace(ns.record).name());
    } else if (!local_devices) {
      summary.foreign = true;
      summary.foreign_reason = "no local device to match: " + local_devices.error().message;
    } else if (std::find(local_devices->begin(), local_devices->end(), ns.record) == local_devices->end()) {
      summary.foreign = true;
      summary.foreign_reason = "its fingerprint matches none of this machine's devices";
    }
  }
}

Result<std::vector<FingerprintRecord>> local_device_records() {
  return device::list_devices().map([](const std::vector<device::DeviceInfo>& devices) {
    std::vector<FingerprintRecord> records;
    for (const auto& d : devices)  // one namespace per device profile
      for (auto profile : device::k_device_profiles) records.push_back(d.with_profile(profile).record());
    return records;
  });
}

void apply_filter(StoreReport& report, const InspectFilter& filter) {
  if (!filter.any()) return;
  report.filtered = true;
  std::set<std::string> foreign;
  for (const auto& s : report.summaries)
    if (s.foreign) foreign.insert(s.ns);
  std::erase_if(report.entries, [&](const EntryRow& e) {
    return !((filter.stale && e.state == EntryState::stale) || (filter.orphans && e.state == EntryState::orphan) ||
             (filter.foreign && foreign.count(e.ns)));
  });
  if (filter.foreign && !filter.stale && !filter.orphans) {
    for (std::size_t i = report.namespaces.size(); i-- > 0;)
      if (!foreign.count(report.namespaces[i].ns.name())) {
        report.namespaces.erase(report.namespaces.begin() + static_cast<std::ptrdiff_t>(i));
        if (i < report.summaries.size())
          report.summaries.erase(report.summaries.begin() + static_cast<std::ptrdiff_t>(i));
      }
    std::erase_if(report.damaged, [&](const store::DamagedEntry& d) { return !foreign.count(d.ns); });
  }
  report.missing.clear();
}

Result<KernelReport> inspect_kernel(store::Store& store, const std::string& kernel, const manifest::Manifest* manifest,
                                    const compile::Toolchain& toolchain) {
  KernelReport out;
  out.kernel = kernel;
  const definition::KernelSpec* spec = nullptr;
  if (manifest) {
    out.manifest_path = manifest->path.string();
    for (const auto& k : manifest->kernels)
      if (k.name == kernel) spec = &k;
  }
  out.in_manifest = spec != nullptr;
  std::optional<definition::FileCache> files;
  if (manifest) files.emplace(manifest->root);
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    for (const auto& info : KCACHE_TRY(reader.namespace_records()))
      if (auto e = KCACHE_TRY(reader.get(info.ns.name(), kernel))) {
        const engine::RecordRules* rules = engine::record_rules(info.ns.backend);
        auto changes =
            rules ? rules->toolchain_changes(engine::recorded(*e), toolchain) : std::vector<engine::Change>{};
        out.stored.push_back({info.ns.name(), std::move(*e), std::move(changes)});
      }
    if (spec) {
      engine::Explainer explainer(reader, *files, toolchain);
      out.explanation = KCACHE_TRY(explainer.explain(*spec));
    }
    return {};
  }));
  if (out.stored.empty() && !spec)
    return fail(Category::not_found, "kernel '{}' is neither in the store{}", kernel,
                manifest ? fmt::format(" nor in {}", manifest->path.string())
                         : " nor in a manifest (pass --manifest to compare with one)");
  return out;
}

Result<std::vector<engine::Explanation>> explain_manifest(store::Store& store, const manifest::Manifest& manifest,
                                                          const compile::Toolchain& toolchain, unsigned jobs) {
  definition::FileCache files(manifest.root);
  const auto& kernels = manifest.kernels;
  std::vector<engine::Explanation> all(kernels.size());
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::optional<Error> first_error;
  // One snapshot and one Explainer per thread (an Explainer is bound to its
  // reader's thread); kernels are handed out one at a time so that a slow
  // one (an expansion, a variant search) does not hold up a whole share.
  auto work = [&] {
    auto read = store.read([&](store::Reader& reader) -> Result<void> {
      engine::Explainer explainer(reader, files, toolchain);
      for (std::size_t i; !stop && (i = next.fetch_add(1)) < kernels.size();)
        all[i] = KCACHE_TRY(explainer.explain(kernels[i]));
      return {};
    });
    if (!read) {
      stop = true;
      std::lock_guard lock(mutex);
      if (!first_error) first_error = std::move(read).error();
    }
  };
  // One call of `work` per thread (each drains `next`); a thread the OS
  // refuses leaves its share to the others (parallel_for).
  const std::size_t threads = std::min<std::size_t>(util::worker_threads(jobs), kernels.size());
  util::parallel_for(threads, static_cast<unsigned>(threads), [&](std::size_t) { work(); });
  if (first_error) return tl::unexpected(std::move(*first_error));
  return all;
}

}  // namespace kcache::maintain
