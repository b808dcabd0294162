// kcache devices: list the Vulkan devices and their fingerprints.
#include "cli.hpp"

#include "kcache/device/device.hpp"
#include "kcache/report/device_report.hpp"

#include <fmt/format.h>

namespace kcache::cli {
namespace {

struct DevicesArgs {
  bool json = false;
};

int run_devices(const DevicesArgs& args) {
  auto devices = device::list_devices();
  if (!devices) return report_error(devices.error());
  std::optional<std::uint32_t> chosen;
  if (auto d = device::default_device()) chosen = d->index;
  if (args.json) fmt::print("{}", report::devices_json(*devices, chosen));
  else fmt::print("{}", report::devices_text(*devices, chosen));
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
      "With no Vulkan loader or no device this says how to get one and exits with 7.");
  cmd->add_flag("--json", args->json, "print the devices as JSON (schema kcache.devices/1)");
  cmd->callback([args, &action] { action = [args] { return run_devices(*args); }; });
}

}  // namespace kcache::cli
