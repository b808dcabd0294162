#include "kcache/engine/run.hpp"

#include "kcache/engine/cuda_stage.hpp"
#include "kcache/engine/device_stage.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <set>

namespace kcache::engine {
namespace {

Result<std::vector<std::string>> dependencies(const manifest::Manifest& manifest, store::Store& store,
                                              const BuildResult& result) {
  namespace fs = std::filesystem;
  const fs::path root = fs::absolute(manifest.root);
  std::set<std::string> deps{fs::absolute(manifest.path).lexically_normal().string()};
  for (const auto& spec : manifest.kernels) deps.insert((root / spec.source).lexically_normal().string());
  KCACHE_CHECK(store.read([&](store::Reader& reader) -> Result<void> {
    for (const auto& r : result.receipts) {
      auto entry = reader.get_head(r.ns, r.kernel);  // its inputs: no payload needed
      if (!entry || !*entry) {
        // A failed kernel: its source is listed above, and a remembered
        // failure's includes too, so that editing one reruns the build.
        if (auto failure = reader.failure(r.ns, r.kernel); failure && *failure)
          for (const auto& input : (*failure)->inputs)
            if (!input.absent()) deps.insert((root / input.path).lexically_normal().string());
        continue;
      }
      // Absent include candidates are not listed: make and ninja treat a
      // missing prerequisite as out of date, every time.
      for (const auto& input : (*entry)->inputs)
        if (!input.absent()) deps.insert((root / input.path).lexically_normal().string());
    }
    return {};
  }));
  return std::vector<std::string>(deps.begin(), deps.end());
}

}  // namespace

Result<RunResult> run(const manifest::Manifest& manifest, store::Store& store, const RunOptions& options) {
  RunResult out;
  // Before the first lookup: what this build writes is then never older
  // than its lease, so no eviction elsewhere plans it away; nor are its hits
  // once record_run has stamped their last use (before that, a hit of an old
  // entry is left to the caller's recheck_stored).
  // The manifest's [vulkan] device_profile: how the device is created, so
  // which namespace its pipelines go to. Checked before anything is built.
  std::optional<device::DeviceInfo> device = options.device;
  if (device && !manifest.device_profile.empty()) {
    auto profile = device::parse_device_profile(manifest.device_profile);
    if (!profile)
      return tl::unexpected(std::move(profile).error().context(manifest.path.string() + ": [vulkan] device_profile"));
    device = device->with_profile(*profile);
  }
  out.lease = KCACHE_TRY(store.begin_lease(options.build.clock->now()));
  out.result = KCACHE_TRY(build(manifest, store, options.build));
  if (device) {
    DeviceBuildOptions dev;
    // The card is provenance: its namespace is its GPU model and driver, so
    // the entry says which card of that class built it.
    dev.origin = fmt::format("{}, device {} (deviceUUID {})", options.build.origin, device->name,
                             device::uuid_text(device->device_uuid));
    dev.worker = options.worker;
    KCACHE_CHECK(build_device_stage(manifest, store, *device, options.build, dev, out.result));
    out.device = device;
  }
  // After the device stage, whose receipts are the SPIR-V stage's.
  KCACHE_CHECK(build_cuda_stage(manifest, store, options.build, out.result));
  // One small write transaction after every stage.
  if (options.record_usage)
    if (auto recorded =
            record_run(store, out.result, *options.build.clock, options.invocation ? &*options.invocation : nullptr);
        !recorded)
      out.record_warning = std::move(recorded).error();
  if (options.collect_dependencies) out.dependencies = KCACHE_TRY(dependencies(manifest, store, out.result));
  return out;
}

}  // namespace kcache::engine
