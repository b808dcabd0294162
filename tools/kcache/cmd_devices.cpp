// kcache devices: list the Vulkan devices and their fingerprints, then the CUDA devices.
#include "cli.hpp"
#include "seams.hpp"

#include "kcache/device/device.hpp"
#include "kcache/report/device_report.hpp"
#include "kcache/report/report.hpp"

#include <fmt/format.h>

namespace kcache::cli {
namespace {

struct DevicesArgs {
  bool json = false;
  bool verbose = false;
};

int run_devices(const DevicesArgs& args) {
  // CUDA devices: from the driver, or from the test seam's description.
  cuda_device::Survey cuda;
  auto described = seams::described_cuda_devices();
  if (!described) return report_error(described.error());
  if (*described) {
    cuda.library = std::move((*described)->source);
    cuda.devices = std::move((*described)->devices);
    cuda.cuda_version = cuda.devices.front().cuda_version;
  } else {
    cuda = cuda_device::survey(cuda_driver_library());
  }
  auto devices = device::list_devices();
  // No Vulkan: still an error (exit 7) unless there are CUDA devices to list.
  if (!devices && cuda.devices.empty()) return report_error(devices.error());
  const std::vector<device::DeviceInfo> vulkan = devices ? *devices : std::vector<device::DeviceInfo>{};
  std::optional<std::uint32_t> chosen;
  if (devices)
    if (auto d = device::default_device()) chosen = d->index;
  if (args.json) {
    const std::string vulkan_error = devices ? std::string() : devices.error().message;
    fmt::print("{}", report::devices_json(vulkan, chosen, &cuda, devices ? nullptr : &vulkan_error));
    return k_exit_ok;
  }
  fmt::print("{}", report::devices_text(vulkan, chosen));
  fmt::print("{}", report::cuda_devices_text(cuda, args.verbose));
  if (!devices)
    fmt::print(stderr, "{}",
               report::terminal_text(fmt::format("kcache: note: no Vulkan device: {}\n", devices.error().message)));
  return k_exit_ok;
}

}  // namespace

void register_devices(CLI::App& app, Action& action) {
  auto args = std::make_shared<DevicesArgs>();
  auto* cmd = app.add_subcommand("devices", "List the Vulkan devices, with their fingerprints.");
  cmd->description(
      "List every Vulkan device: index, name, type, API and driver version, and its fingerprint:\n"
      "the short id (the store namespace vulkan/<id>) and the full record it hashes (vendorID,\n"
      "deviceID, driverID, driverVersion, driverInfo, UUIDs, pointer size, device profile).\n"
      "A pipeline-cache blob serves only the device whose record matches field for field.\n"
      "Select a device elsewhere with --device SEL: an index, a name substring or a\n"
      "fingerprint id prefix; without it kcache takes the one marked (default): the first\n"
      "discrete GPU, else integrated, virtual, other, then software (CPU) device.\n"
      "CUDA devices follow (cuda:N: name, compute capability and the archs it runs, CUDA driver\n"
      "API version, NVIDIA driver, memory) when libcuda.so.1 is there ($KCACHE_CUDA_DRIVER names\n"
      "another); select one with --device cuda:N in import and verify. Without CUDA nothing is\n"
      "said about it (--verbose: one line why; --json: the \"cuda\" object).\n"
      "With no Vulkan loader or no device (and no CUDA device) this says how to get one and\n"
      "exits with 7.");
  cmd->add_flag("--json", args->json, "print the devices as JSON (schema kcache.devices/1)");
  cmd->add_flag("-v,--verbose", args->verbose, "also say why CUDA is not available when it is not");
  cmd->callback([args, &action] { action = [args] { return run_devices(*args); }; });
}

}  // namespace kcache::cli
