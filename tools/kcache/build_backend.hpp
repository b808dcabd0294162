// The `--backend` and `--device` options of `kcache build`, and the device
// stage they add after the SPIR-V stage (lib/kcache/pipeline/device_build.hpp).
// Kept apart from cmd_build.cpp so the build command only forwards to it.
#pragma once

#include "cli.hpp"

#include "kcache/device/device.hpp"
#include "kcache/manifest/manifest.hpp"
#include "kcache/pipeline/build.hpp"

#include <optional>
#include <string>

namespace kcache::cli {

struct BackendArgs {
  std::string backend = "spirv";
  std::string device;

  /// Adds --backend and --device to `cmd`.
  void add_to(CLI::App& cmd);
  /// The device of a vulkan build (nullopt for spirv), chosen before anything
  /// compiles so a missing device fails fast: device_unavailable (exit 7)
  /// with how to get one, not_found / invalid_argument for a bad --device;
  /// invalid_argument for --device without --backend vulkan.
  Result<std::optional<device::DeviceInfo>> select() const;
  /// Runs the device stage on `device` after the SPIR-V stage, appending its
  /// receipts to `result`. Errors as pipeline::build_device_stage.
  Result<void> build(const manifest::Manifest& manifest, store::Store& store, const device::DeviceInfo& device,
                     const pipeline::BuildOptions& options, pipeline::BuildResult& result) const;
};

}  // namespace kcache::cli
