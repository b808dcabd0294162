#include "build_backend.hpp"

#include "kcache/pipeline/device_build.hpp"

namespace kcache::cli {

void BackendArgs::add_to(CLI::App& cmd) {
  cmd.add_option("--backend", backend,
                 "spirv: SPIR-V modules only (portable); vulkan: also create each compute kernel's pipeline on a\n"
                 "device and store its pipeline-cache blob in the device's namespace")
      ->check(CLI::IsMember({"spirv", "vulkan"}))
      ->capture_default_str();
  cmd.add_option("--device", device,
                 "with --backend vulkan: the device (index, name substring or fingerprint id; `kcache devices`);\n"
                 "default: the first discrete GPU, else integrated, virtual, other, software");
}

Result<std::optional<device::DeviceInfo>> BackendArgs::select() const {
  if (backend != "vulkan") {
    if (!device.empty())
      return fail(Category::invalid_argument, "--device only applies to --backend vulkan");
    return std::optional<device::DeviceInfo>{};
  }
  // Cold creation times and later verify hits must not come from the
  // driver's own disk cache (the workers, which compile, do this too).
  device::disable_driver_disk_caches();
  auto d = KCACHE_TRY(device::select_device_or_default(device));
  return std::optional(std::move(d));
}

Result<void> BackendArgs::build(const manifest::Manifest& manifest, store::Store& store,
                                const device::DeviceInfo& device, const pipeline::BuildOptions& options,
                                pipeline::BuildResult& result) const {
  pipeline::DeviceBuildOptions dev;
  dev.jobs = options.jobs;
  dev.origin = options.origin;
  dev.on_receipt = options.on_receipt;
  return pipeline::build_device_stage(manifest, store, device, dev, result);
}

}  // namespace kcache::cli
